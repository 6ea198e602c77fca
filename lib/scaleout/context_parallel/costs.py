"""Costs of context parallelism per transformer layer: bytes, time with overlap, memory.

Taught in chapter 8 (``chapters/08_context_parallel.ipynb``). Units: bytes, seconds, FLOPs.
``seq`` is the whole sequence (tokens), ``cp`` the context-parallel degree, ``tp`` the
tensor-parallel degree inside it (each rank has heads/tp query heads and max(1, kv_heads/tp)
key/value heads), ``batch`` sequences per micro-batch, ``dtype_bytes`` per value (2: bf16).

Schemes (:data:`~scaleout.context_parallel.costs.SCHEMES`), forward and backward of one layer's
attention core:

* ``"ring"`` (Liu et al. 2023; Megatron-Core CP): cp - 1 K/V transfers forward, each
  overlapped with the block computed meanwhile; a step lasts max(compute, transfer). The
  backward pass sends K/V around again and the K/V gradients too (cp transfers: they end
  on their owner), as Megatron-Core describes ("gathers KV again in backward", gradients
  reduce-scattered around the ring) and zhuzilin/ring-flash-attention implements
  (``zigzag_ring_flash_attn_backward``).
* ``"ulysses"`` (Jacobs et al. 2023): all-to-all of Q, K, V before and of the output after
  (backward: of the output's gradient and of Q, K, V's), not overlapped; compute balanced.
  Needs heads/tp and kv heads/tp divisible by cp.
* ``"allgather"`` (Llama 3, arXiv 2407.21783, Sec. 3.3.2): all-gather of K and V, exposed,
  then local attention; backward all-gathers again and reduce-scatters the K/V gradients.
* ``"hybrid"`` (USP, Fang & Zhao 2024, arXiv 2405.07719; Megatron-LM's ``a2a+p2p``):
  Ulysses over ``ulysses`` ranks inside a server, ring over cp/ulysses across servers.

Compute: chapter 14's FlashAttention price (:mod:`scaleout.compute.flash`, one function for
both chapters): 4 d FLOPs per visible query-key pair and head forward (QK^T and PV,
FlashAttention-2, Dao 2023, Sec. 4.1), 2.5 times that backward (five matrix products instead
of two, same source), the forward at ``flops_per_s`` (default
:data:`~scaleout.context_parallel.costs.ATTENTION_FORWARD_FLOPS_PER_S`) and the backward at
``backward_flops_per_s`` (default
:data:`~scaleout.context_parallel.costs.ATTENTION_BACKWARD_FLOPS_PER_S`): FlashAttention-3's
measured rates on an H100, one per pass. The pairs per step come from
:func:`~scaleout.context_parallel.ring_work` (with ``documents``, a causal mask per packed
document). Transfers are priced by :func:`~scaleout.context_parallel.transfer_seconds` (chapter
10's NCCL model). Not modelled: kernel launch and merge costs, the lower efficiency of the small
blocks a balanced layout cuts, contention between the transfer and the kernel for memory
bandwidth, and all-gathers split into head groups so that one overlaps the previous group's
attention (zhuzilin/ring-flash-attention's ``llama3_flash_attn_varlen_func``): the model exposes
the whole all-gather.

The rest of the layer: :func:`~scaleout.context_parallel.layer_gemm_seconds` prices its weight
GEMMs for the rank's tokens with chapter 14's compute model (:func:`scaleout.compute.layer_time`),
:func:`~scaleout.context_parallel.activation_bytes_per_rank` counts its activations with chapter
15's count (:func:`scaleout.planner.step.activation_bytes`).

Limits: ``seq`` at most :data:`~scaleout.context_parallel.ring.MAX_SEQ`, ``cp`` at most
:data:`~scaleout.context_parallel.ring.MAX_CP`, ``batch`` at most
:data:`~scaleout.context_parallel.costs.MAX_BATCH`, ``flops_per_s`` in
:data:`~scaleout.context_parallel.costs.FLOPS_RANGE`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import checks, compute
from .. import transformer as TF
from ..hardware import H100_SXM_BF16_DENSE_FLOPS
from .network import cluster, transfer_seconds
from .ring import LAYOUTS, MAX_CP, MAX_SEQ, ring_work

__all__ = [
    "ATTENTION_BACKWARD_FLOPS_PER_S",
    "ATTENTION_FORWARD_FLOPS_PER_S",
    "BACKWARD_FACTOR",
    "FLOPS_RANGE",
    "MAX_BATCH",
    "MODELS",
    "PEAK_FLOPS_PER_S",
    "SCHEMES",
    "AttentionShape",
    "AttentionTime",
    "activation_bytes_per_rank",
    "attention_flops",
    "attention_seconds",
    "ideal_seconds",
    "layer_gemm_flops",
    "layer_gemm_seconds",
    "model",
    "overlap_threshold_tokens",
    "traffic_bytes",
    "ulysses_degree",
]

#: The context-parallel schemes priced (module docstring).
SCHEMES = ("ring", "ulysses", "allgather", "hybrid")
#: Most sequences per micro-batch.
MAX_BATCH = 4096
#: Backward FLOPs over forward FLOPs of attention (FlashAttention-2, Dao 2023, Sec. 4.1):
#: :data:`scaleout.compute.flash.BACKWARD_FACTOR`, the one FlashAttention price of the book.
BACKWARD_FACTOR = compute.flash.BACKWARD_FACTOR
#: The attention kernel's forward rate in FLOP/s, FlashAttention-3's on an H100 SXM5, causal,
#: head dimension 128, 16K tokens, 616 TFLOP/s
#: (:data:`scaleout.compute.flash.FA3_FORWARD_FLOPS_PER_S`, sourced there: Shah et al.
#: 2024, Fig. 5d).
ATTENTION_FORWARD_FLOPS_PER_S = compute.FA3_FORWARD_FLOPS_PER_S
#: The attention kernel's backward rate in FLOP/s (FLOPs counted as 2.5 x the forward's),
#: 561 TFLOP/s (:data:`scaleout.compute.flash.FA3_BACKWARD_FLOPS_PER_S`: Shah et al. 2024, Fig. 6,
#: measured without the causal mask, so optimistic).
ATTENTION_BACKWARD_FLOPS_PER_S = compute.FA3_BACKWARD_FLOPS_PER_S
#: Range of FLOP rates accepted (1 GFLOP/s to 1 EFLOP/s per GPU).
FLOPS_RANGE = (1e9, 1e18)
#: The H100 SXM's dense bf16 peak (datasheet), for utilisation figures.
PEAK_FLOPS_PER_S = H100_SXM_BF16_DENSE_FLOPS


@dataclass(frozen=True)
class AttentionShape:
    """A model's attention: query ``heads``, ``kv_heads`` (grouped-query attention),
    ``head_dim``; ``hidden`` and ``ffn`` (SwiGLU width) and ``layers`` for the rest of it."""

    name: str
    heads: int
    kv_heads: int
    head_dim: int
    hidden: int
    ffn: int
    layers: int

    def __post_init__(self):
        checks.text("name", self.name, 60)
        for key in ("heads", "kv_heads", "head_dim", "hidden", "ffn", "layers"):
            checks.integer(key, getattr(self, key), 1, 2**20)
        if self.heads % self.kv_heads:
            raise checks.fail("kv_heads", f"a divisor of heads ({self.heads})", self.kv_heads)


def _from_registry(key: str, name: str) -> AttentionShape:
    m = TF.MODELS[name]
    return AttentionShape(key, m.heads, m.g, m.head_dim, m.hidden, m.f, m.layers)


#: Llama 3 8B, 70B and 405B from :data:`scaleout.transformer.MODELS` (Dubey et al., "The
#: Llama 3 Herd of Models", arXiv 2407.21783, Table 3: layers, model dimension, FFN
#: dimension, attention heads, key/value heads); the head dimension is the model dimension
#: over the heads, 128.
MODELS: dict[str, AttentionShape] = {
    key: _from_registry(key, name)
    for key, name in (("llama3-8b", "Llama 3 8B"), ("llama3-70b", "Llama 3 70B"),
                      ("llama3-405b", "Llama 3 405B"))
}  # fmt: skip


def model(name) -> AttentionShape:
    """An :class:`~scaleout.context_parallel.AttentionShape` given itself or by name (a key of
    :data:`~scaleout.context_parallel.costs.MODELS`)."""
    if isinstance(name, AttentionShape):
        return name
    return MODELS[checks.choice("model", name, tuple(MODELS))]


@dataclass(frozen=True)
class AttentionTime:
    """One layer's attention core under a scheme, per rank, in seconds: ``forward`` and
    ``backward`` (wall time), ``compute`` (attention kernels, both passes), ``comm`` (every
    transfer's duration, added), ``exposed`` (wall time minus compute: what overlap did not
    hide), and ``bytes_forward`` / ``bytes_backward`` each rank sends."""

    scheme: str
    forward: float
    backward: float
    compute: float
    comm: float
    exposed: float
    bytes_forward: float
    bytes_backward: float

    def __post_init__(self):
        checks.choice("scheme", self.scheme, SCHEMES)
        for key in ("forward", "backward", "compute", "comm", "exposed", "bytes_forward",
                    "bytes_backward"):  # fmt: skip
            checks.nonnegative(key, getattr(self, key), 1e30)

    @property
    def total(self) -> float:
        """Forward plus backward, seconds."""
        return self.forward + self.backward


def _shape(m, tp, cp, scheme, ulysses):
    """(heads per rank, kv heads per rank, ulysses degree, ring degree), checked."""
    m = model(m)
    tp = checks.integer("tp", tp, 1, 1024)
    if m.heads % tp:
        raise checks.fail("tp", f"a divisor of the model's {m.heads} heads", tp)
    if m.kv_heads % tp and tp % m.kv_heads:
        raise checks.fail("tp", f"a divisor or multiple of its {m.kv_heads} kv heads", tp)
    heads, kv = m.heads // tp, max(1, m.kv_heads // tp)
    u = {"ring": 1, "allgather": 1, "ulysses": cp}.get(scheme)
    if u is None:
        u = checks.integer("ulysses", ulysses, 1, MAX_CP)
        if cp % u:
            raise checks.fail("ulysses", f"a divisor of cp ({cp})", u)
    if heads % u or kv % u:
        raise checks.fail("cp" if scheme == "ulysses" else "ulysses",
                          f"a divisor of the heads per rank ({heads} query, {kv} key/value heads)"
                          " for Ulysses' all-to-all", u)  # fmt: skip
    return m, heads, kv, u, cp // u


def _common(scheme, seq, cp, batch, dtype_bytes, layout):
    scheme = checks.choice("scheme", scheme, SCHEMES)
    seq = checks.integer("seq", seq, 1, MAX_SEQ)
    cp = checks.integer("cp", cp, 1, MAX_CP)
    batch = checks.integer("batch", batch, 1, MAX_BATCH)
    dtype_bytes = checks.integer("dtype_bytes", dtype_bytes, 1, 8)
    layout = checks.choice("layout", layout, LAYOUTS)
    return scheme, seq, cp, batch, dtype_bytes, layout


def attention_flops(seq, m="llama3-8b", batch=1, tp=1, causal=True) -> float:
    """Forward FLOPs of one layer's attention core on one GPU without CP: 4 d per visible
    pair and head; s(s+1)/2 pairs with the causal mask, s^2 without
    (:func:`scaleout.compute.attention_flops`, chapter 14's FlashAttention price)."""
    seq = checks.integer("seq", seq, 1, MAX_SEQ)
    m, heads, _, _, _ = _shape(m, tp, 1, "ring", 1)
    batch = checks.integer("batch", batch, 1, MAX_BATCH)
    return compute.attention_flops(seq, heads, m.head_dim, batch, checks.boolean("causal", causal))


def layer_gemm_flops(seq, m="llama3-8b", batch=1, tp=1) -> float:
    """Forward FLOPs of one layer's matrix products for ``seq`` tokens on one of ``tp``
    GPUs: 2 per weight and token, weights h (a d) for Q, 2 h (g d) for K and V, (a d) h for
    the output and 3 h f for a SwiGLU MLP (a heads, g kv heads, f the FFN width)."""
    seq = checks.integer("seq", seq, 1, MAX_SEQ)
    m = model(m)
    batch = checks.integer("batch", batch, 1, MAX_BATCH)
    tp = checks.integer("tp", tp, 1, 1024)
    weights = m.hidden * m.head_dim * (2 * m.heads + 2 * m.kv_heads) + 3 * m.hidden * m.ffn
    return 2.0 * seq * batch * weights / tp


def traffic_bytes(scheme, seq, cp, m="llama3-8b", tp=1, batch=1, dtype_bytes=2, ulysses=1):
    """Bytes each rank sends per layer, ``(forward, backward)``.

    ring over r ranks: (r - 1) K/V blocks of 2 (s/r) g d values forward; backward the same
    again plus r blocks of K/V gradients. Ulysses over u ranks: ((u-1)/u) of a send buffer
    of (s/cp)(a + 2g) d values (Q, K, V) plus (s/cp) a d (output), each way. all-gather:
    ((cp-1)/cp) of 2 s g d forward, twice that backward (gather again, reduce-scatter the
    gradients). a, g: query and kv heads per rank (after tensor parallelism)."""
    scheme, seq, cp, batch, dtype_bytes, _ = _common(scheme, seq, cp, batch, dtype_bytes,
                                                     "zigzag")  # fmt: skip
    m, heads, kv, u, r = _shape(m, tp, cp, scheme, ulysses)
    value = batch * m.head_dim * dtype_bytes
    if scheme == "allgather":
        gathered = 2.0 * seq * kv * value
        return gathered * (cp - 1) / cp, 2 * gathered * (cp - 1) / cp
    block = 2.0 * (seq / r) * (kv / u) * value  # one K/V block of the ring
    ring_fwd, ring_bwd = (r - 1) * block, (r - 1) * block + (r if r > 1 else 0) * block
    a2a = (seq / cp) * ((heads + 2 * kv) + heads) * value * (u - 1) / u
    return ring_fwd + a2a, ring_bwd + a2a


def _rates(flops_per_s, backward_flops_per_s):
    fwd = checks.real("flops_per_s", flops_per_s, *FLOPS_RANGE)
    bwd = checks.real("backward_flops_per_s", backward_flops_per_s, *FLOPS_RANGE)
    return fwd, bwd


def attention_seconds(scheme, seq, cp, m="llama3-8b", tp=1, batch=1,
                      layout="zigzag", ulysses=1, dtype_bytes=2,
                      flops_per_s=ATTENTION_FORWARD_FLOPS_PER_S,
                      backward_flops_per_s=ATTENTION_BACKWARD_FLOPS_PER_S,
                      documents=None, *, machine="dgx-h100") -> AttentionTime:  # fmt: skip
    """One layer's attention core under ``scheme`` on ``cp`` ranks of ``machine`` (every
    ``tp``-th GPU, after tensor parallelism), forward and backward, with the overlap of
    the module docstring: a ring step lasts max(block compute, transfer), the last one
    compute only (backward: plus the final K/V-gradient transfer home); all-to-alls and
    all-gathers add their time. ``layout`` shards the ring's sequence; ``documents``
    (lengths adding up to ``seq``) packs documents with a causal mask each
    (:func:`~scaleout.context_parallel.ring_work`). The forward computes at
    ``flops_per_s``, the backward at ``backward_flops_per_s``."""
    scheme, seq, cp, batch, dtype_bytes, layout = _common(scheme, seq, cp, batch, dtype_bytes,
                                                          layout)  # fmt: skip
    m, heads, kv, u, r = _shape(m, tp, cp, scheme, ulysses)
    net = cluster(machine)
    rate, back_rate = _rates(flops_per_s, backward_flops_per_s)
    slower = BACKWARD_FACTOR * rate / back_rate  # backward seconds per forward second
    fwd_bytes, bwd_bytes = traffic_bytes(scheme, seq, cp, m, tp, batch, dtype_bytes, u)
    per_pair = 4.0 * m.head_dim * (heads / u) * batch / rate  # seconds per visible pair
    if scheme == "allgather":
        work = ring_work(seq, cp, layout, documents=documents)
        compute = float(work.sum(axis=1).max()) * per_pair  # each rank: its queries, all keys
        gathered = 2.0 * seq * kv * batch * m.head_dim * dtype_bytes
        ag = transfer_seconds("allgather", gathered, cp, tp, machine=net)
        rs = transfer_seconds("reducescatter", gathered, cp, tp, machine=net)
        fwd, bwd = ag + compute, ag + slower * compute + rs
        both = (1 + slower) * compute
        return AttentionTime(scheme, fwd, bwd, both, 2 * ag + rs, max(0.0, fwd + bwd - both),
                             fwd_bytes, bwd_bytes)  # fmt: skip
    # Ulysses part (u ranks, innermost after tensor parallelism): both all-to-alls, each pass.
    value = batch * m.head_dim * dtype_bytes
    qkv = (seq / cp) * (heads + 2 * kv) * value
    out = (seq / cp) * heads * value
    a2a = (transfer_seconds("alltoall", qkv, u, tp, machine=net)
           + transfer_seconds("alltoall", out, u, tp, machine=net))  # fmt: skip
    # Ring part (r ranks of stride tp * u).
    steps = ring_work(seq, r, layout, documents=documents).max(axis=0) * per_pair  # busiest rank
    block = 2.0 * (seq / r) * (kv / u) * value
    hop = transfer_seconds("p2p", block, r, tp * u, machine=net)
    fwd = float(np.maximum(steps[:-1], hop).sum() + steps[-1]) + a2a
    back = slower * steps
    bwd = float(np.maximum(back[:-1], 2 * hop).sum() + back[-1]) + (hop if r > 1 else 0.0) + a2a
    compute = float(steps.sum() * (1 + slower))
    comm = 2 * a2a + (r - 1) * hop + (2 * r - 1) * hop if r > 1 else 2 * a2a
    return AttentionTime(scheme, fwd, bwd, compute, comm, max(0.0, fwd + bwd - compute),
                         fwd_bytes, bwd_bytes)  # fmt: skip


def overlap_threshold_tokens(m="llama3-8b", tp=1, cross_node=False, batch=1, dtype_bytes=2,
                             causal=True, flops_per_s=ATTENTION_FORWARD_FLOPS_PER_S, *,
                             machine="dgx-h100") -> float:  # fmt: skip
    """Fewest tokens per rank n = s/cp at which a forward ring step's K/V transfer hides
    behind its block: transfer(2 n g d B bytes) <= k n^2 d a 4 / F (k = 1/2 for a balanced
    causal step, 1 without the mask; F the forward rate: a backward step, 2.5 times the
    FLOPs against two transfers, hides sooner whenever the backward rate is at most 1.25 F,
    as FlashAttention-3's is), with the transfer priced by
    :func:`~scaleout.context_parallel.transfer_seconds` (``"p2p"``, inside a server or, with
    ``cross_node``, between two) and solved by bisection. For multi-head attention without
    the mask and 2-byte values it is Liu et al.'s condition, block size >= F / bandwidth
    (FLOPs over bytes per second; Liu, Zaharia & Abbeel 2023, Sec. 3), plus the latency."""
    m, heads, kv, _, _ = _shape(m, tp, 1, "ring", 1)
    net = cluster(machine)
    cross = checks.boolean("cross_node", cross_node)
    batch = checks.integer("batch", batch, 1, MAX_BATCH)
    dtype_bytes = checks.integer("dtype_bytes", dtype_bytes, 1, 8)
    rate = checks.real("flops_per_s", flops_per_s, *FLOPS_RANGE)
    share = 0.5 if checks.boolean("causal", causal) else 1.0
    per_n2 = share * 4.0 * m.head_dim * heads * batch / rate  # seconds of compute per n^2
    per_token = 2.0 * kv * m.head_dim * batch * dtype_bytes  # K/V bytes per token
    stride = net.gpus_per_node if cross else 1
    if not cross and net.gpus_per_node < 2:
        raise checks.fail("cross_node", "True on a machine with one GPU per server", cross)

    def hidden(n):
        return per_n2 * n * n >= transfer_seconds("p2p", per_token * n, 2, stride, machine=net)

    low, high = 0.0, float(MAX_SEQ)
    if not hidden(high):
        raise checks.fail("flops_per_s", "a rate at which some block below MAX_SEQ hides", rate)
    for _ in range(200):  # the transfer is affine in n (piecewise): one crossing
        mid = (low + high) / 2
        low, high = (low, mid) if hidden(mid) else (mid, high)
        if high - low <= 1e-9 * high:
            break
    return high


def ulysses_degree(cp, m="llama3-8b", tp=1, *, machine="dgx-h100") -> int:
    """The Ulysses degree of the hybrid (USP) on ``cp`` ranks: the largest divisor u of cp
    that divides the query and key/value heads per rank (after ``tp``-way tensor
    parallelism) and whose u ranks fit in one server of ``machine`` next to the tensor-parallel
    group (u x tp <= GPUs per server), so the all-to-alls stay on NVLink and the ring of
    cp / u ranks crosses the servers (Fang & Zhao 2024, Sec. 3: Ulysses inside, ring
    across). 1 when nothing larger fits: the hybrid is then a plain ring."""
    cp = checks.integer("cp", cp, 1, MAX_CP)
    m, heads, kv, _, _ = _shape(m, tp, 1, "ring", 1)
    room = max(1, cluster(machine).gpus_per_node // int(tp))
    return max(u for u in range(1, min(cp, room) + 1)
               if cp % u == 0 and heads % u == 0 and kv % u == 0)  # fmt: skip


def ideal_seconds(seq, cp, m="llama3-8b", tp=1, batch=1,
                  flops_per_s=ATTENTION_FORWARD_FLOPS_PER_S,
                  backward_flops_per_s=ATTENTION_BACKWARD_FLOPS_PER_S) -> float:  # fmt: skip
    """Perfect scaling of one layer's causal attention core: one GPU's FlashAttention time
    (:func:`scaleout.compute.flash_attention_time` on an H100 at ``flops_per_s`` forward and
    ``backward_flops_per_s`` backward: the FLOPs of
    :func:`~scaleout.context_parallel.attention_flops` plus 2.5 times them, at those rates, or
    the HBM time of Q, K, V and O where longer) over cp ranks, nothing exposed. The efficiency of a
    scheme is this over its :attr:`AttentionTime.total`."""
    cp = checks.integer("cp", cp, 1, MAX_CP)
    seq = checks.integer("seq", seq, 1, MAX_SEQ)
    m, heads, kv, _, _ = _shape(m, tp, 1, "ring", 1)
    batch = checks.integer("batch", batch, 1, MAX_BATCH)
    rate, back_rate = _rates(flops_per_s, backward_flops_per_s)
    fa = compute.flash_attention_time(seq, heads, m.head_dim, "H100-SXM", batch, kv_heads=kv,
                                      forward_flops_per_s=rate,
                                      backward_flops_per_s=back_rate)  # fmt: skip
    return float((fa.forward_s + fa.backward_s) / cp)


def layer_gemm_seconds(tokens, m="llama3-8b", tp=1, batch=1, gpu="H100-SXM") -> float:
    """Forward plus backward seconds of one layer's weight GEMMs (Q, K, V, output
    projection, SwiGLU MLP) for ``tokens`` tokens per sequence on one of ``tp``
    tensor-parallel GPUs, from chapter 14's compute model: :func:`scaleout.compute.layer_time`
    (tile and wave quantization at a measured ceiling) of a
    :class:`scaleout.compute.Layer` of the model's shape, its ``"gemm"`` parts. The same
    FLOPs as 3 x :func:`~scaleout.context_parallel.layer_gemm_flops`."""
    m = model(m)
    tokens = checks.integer("tokens", tokens, 1, compute.MAX_DIM)
    batch = checks.integer("batch", batch, 1, compute.MAX_MICROBATCH)
    layer = compute.Layer(m.hidden, m.heads, tokens, m.kv_heads, m.ffn, swiglu=True)
    timing = compute.layer_time(layer, batch, gpu, t=tp, sp=True, flash=True)
    return float(timing.seconds(kind="gemm"))


def activation_bytes_per_rank(seq, cp, m="llama3-8b", batch=1, tp=1, flash_attention=True):
    """Activation bytes one layer keeps per rank for the backward pass, with the sequence
    split over ``cp`` ranks (and ``tp``-way tensor parallelism with sequence parallelism).

    Everything but the attention core is the library's count,
    :func:`scaleout.transformer.activation_bytes` with selective recomputation (Korthikanti et
    al. 2022, Table 2, term by term for grouped-query attention and a SwiGLU MLP), on the
    rank's s/cp tokens: linear in them, so it is taken per token and multiplied. It keeps
    Table 2's two 1-byte dropout masks per token and hidden unit, which Llama, trained
    without dropout, does not have: 2 of its 36 bytes per token and hidden unit for Llama 3
    8B without tensor parallelism, an overcount of 6 %. The core is this chapter's:
    FlashAttention's one fp32 statistic per query row and head, 4 a (s/cp) b / t (ring and
    Ulysses attention are built on it); without FlashAttention the score-sized tensors
    5 a (s/cp) s b / t, each local query row against all s keys."""
    seq = checks.integer("seq", seq, 1, MAX_SEQ)
    cp = checks.integer("cp", cp, 1, MAX_CP)
    if seq % cp:
        raise checks.fail("seq", f"a multiple of cp ({cp})", seq)
    m = model(m)
    batch = checks.integer("batch", batch, 1, MAX_BATCH)
    tp = checks.integer("tp", tp, 1, 1024)
    flash = checks.boolean("flash_attention", flash_attention)
    local = seq // cp
    # one token (s = 1) of the rank's s/cp: rotary positions, untied embeddings; the
    # vocabulary does not enter the activations
    per_token = TF.activation_bytes(1, batch, m.hidden, m.heads, "selective", tp, True, flash,
                                    m.kv_heads, m.ffn, swiglu=True)  # fmt: skip
    core = 4.0 * m.heads * local * batch / tp if flash else 5.0 * m.heads * local * seq * batch / tp
    return float(checks.finite_result("activation bytes", float(per_token) * local + core))
