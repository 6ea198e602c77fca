"""What an MoE layer's all-to-alls and expert GEMMs cost.

Taught in chapter 7. Two parts, each behind one labelled interface.

**The network** (:class:`~scaleout.moe.Network`, :func:`~scaleout.moe.alltoall_seconds`).
One function prices an all-to-all of given bytes per rank pair over ranks laid out in
nodes of ``gpus_per_node`` (rank r on node ``r // gpus_per_node``). Bytes to a rank of the
same node go over NVLink (through NVSwitch, every pair at once), bytes to another node
over the GPU's own NIC (its rail; rail-optimised fabrics, chapter 11). Every message of an
all-to-all is in flight at once (NCCL posts them as one group of sends and receives), so
each rank waits for its busiest direction of its busiest link::

    t_rank = [alpha_nvlink] + [alpha_network]
             + max(max(nvlink out, nvlink in) / B_nvlink,
                   max(network out, network in) / B_network)

(each alpha counted when that link carries bytes), and the all-to-all ends with its
slowest rank, ``max_r t_rank``. For even traffic on one link this is the costmodel's
``alltoall`` ``pairwise`` bandwidth term (Thakur et al. 2005) with one latency instead of
``p - 1``. The model leaves out PXN (NCCL forwarding inter-node bytes over NVLink to the
GPU on the destination's rail), congestion in the network core, incast and per-message
costs. :func:`~scaleout.moe.two_hop_seconds` prices DeepSeek-V3's node-deduplicated
dispatch the same way. This is the book's all-to-all model, not NCCL's (NCCL's tuner
prices no point-to-point operation); ``scaleout.nccl`` codes the same model for even
traffic, and chapter 10 compares it with published all-to-all measurements, chapter 7
with DeepEP's (:mod:`scaleout.moe.deepep`). The :class:`~scaleout.moe.Network` takes its
rates and latencies from the book's NCCL model (:func:`~scaleout.moe.nccl_network`,
chapter 10: what NCCL grants a GPU on NVLink and on its rail, Simple-protocol latencies,
a post overhead per remote peer), so that for even traffic
:func:`~scaleout.moe.alltoall_seconds` equals ``nccl.predict("alltoall", ...)`` whenever
the network is the bottleneck (``scaleout.nccl`` adds PXN's NVLink hop, which matters
only when NVLink is); or from nominal :mod:`scaleout.hardware` link presets
(:func:`~scaleout.moe.network`); or from a system's published figures
(``scaleout.moe.H800_NETWORK``). Latencies are the Simple protocol's: for messages of at
most 16 KiB per peer NCCL switches to LL, which this model does not.

**The experts' compute.** Each rank runs its experts on the copies it received, and the
layer waits for the most loaded rank. :func:`~scaleout.moe.expert_gemm_seconds` prices
every expert GEMM (forward, input gradient, weight gradient) with the book's compute
model (:func:`scaleout.compute.gemm_seconds`, chapter 14: tile and wave quantization, a
measured ceiling), so thin per-expert GEMMs run below peak as they do on a GPU;
:func:`~scaleout.moe.expert_compute_seconds` is the bound at a given FLOP rate,
``matmuls x 2 x tokens x hidden x ffn`` FLOPs forward (2 matmuls for the book's ReLU
experts, 3 for SwiGLU: Mixtral, DeepSeek-V3) and twice that backward.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import checks
from .. import hardware as H
from ..hardware import H100_SXM_BF16_DENSE_FLOPS
from .dispatch import MAX_EP, MAX_TOKEN_BYTES, DispatchPlan
from .routing import Routing

#: Most FLOP/s a GPU may be given, 1e18 (far beyond any chip).
MAX_FLOPS = 1e18


@dataclass(frozen=True)
class Network:
    """What one GPU gets, per direction: ``nvlink_gb_per_s`` to the GPUs of its node,
    ``network_gb_per_s`` to other nodes (its NIC), with a latency per link kind, for
    ``gpus_per_node`` GPUs per node; ``per_peer_s`` is paid once per remote peer a rank
    sends to (NCCL's proxy thread posts every network message). ``source`` says where the
    figures come from."""

    gpus_per_node: int
    nvlink_gb_per_s: float
    network_gb_per_s: float
    nvlink_alpha_s: float
    network_alpha_s: float
    source: str
    per_peer_s: float = 0.0

    def __post_init__(self):
        checks.integer("gpus_per_node", self.gpus_per_node, 1, MAX_EP)
        checks.positive("nvlink_gb_per_s", self.nvlink_gb_per_s, 1e6)
        checks.positive("network_gb_per_s", self.network_gb_per_s, 1e6)
        checks.nonnegative("nvlink_alpha_s", self.nvlink_alpha_s, H.MAX_ALPHA_S)
        checks.nonnegative("network_alpha_s", self.network_alpha_s, H.MAX_ALPHA_S)
        checks.text("source", self.source, 1000)
        checks.nonnegative("per_peer_s", self.per_peer_s, H.MAX_ALPHA_S)


def nccl_network(machine) -> Network:
    """The :class:`~scaleout.moe.Network` of ``machine``, an ``scaleout.nccl`` topology
    (chapter 10), a :class:`scaleout.machine.Machine` or a preset name
    (:func:`scaleout.machine.as_topology`), as
    that package's p2p model prices all-to-all: NVLink at what NCCL's ring search grants
    one GPU inside a node (``nccl.p2p.nvlink_gb_per_s``, e.g. 360 GB/s on an H100), the
    network at ``min(PCIe, NIC)`` per NIC shared by the node's GPUs
    (``nccl.p2p.network_gb_per_s``); latencies of the Simple protocol, NCCL's base plus
    NVLink hop, the network hop on top, and the proxy's post overhead per remote peer
    (``getNetOverhead``), all from the pinned release's ``tuning.cc``."""
    from ..machine import as_topology
    from ..nccl import constants as NC
    from ..nccl import p2p

    topo = as_topology(machine)
    if topo.nics_per_node == 0:
        raise checks.fail("machine", "a topology with NICs", topo.name)
    base = NC.BASE_LAT[NC.RING, NC.SIMPLE] + NC.HW_LAT[NC.HW_NVLINK, NC.RING, NC.SIMPLE]
    hop = NC.HW_LAT[NC.HW_NET, NC.RING, NC.SIMPLE]
    post = NC.value("net_overhead_us")[NC.CPU_INDEX[topo.cpu]]
    src = f"scaleout.nccl topology {topo.name} (NCCL {NC.RELEASE} tuning.cc, p2p model)"
    return Network(topo.gpus_per_node, p2p.nvlink_gb_per_s(machine=topo),
                   p2p.network_gb_per_s(machine=topo), float(base) * 1e-6, float(hop) * 1e-6,
                   src, float(post) * 1e-6)  # fmt: skip


def as_network(machine) -> Network:
    """``machine`` as a :class:`~scaleout.moe.Network`: a Network as is, anything else (an
    ``scaleout.nccl`` topology, a :class:`scaleout.machine.Machine`, a preset name) through
    :func:`~scaleout.moe.nccl_network`."""
    return machine if isinstance(machine, Network) else nccl_network(machine)


def network(intra="nvlink4-h100", inter="nic-400g", gpus_per_node=8) -> Network:
    """A :class:`~scaleout.moe.Network` from two link presets of :mod:`scaleout.hardware` (nominal
    per-direction rates: a DGX H100 by default, 450 GB/s NVLink and one 400 Gb/s NIC per
    GPU)."""
    nv = H.link(checks.choice("intra", intra, tuple(H.LINKS)))
    nic = H.link(checks.choice("inter", inter, tuple(H.LINKS)))
    g = checks.integer("gpus_per_node", gpus_per_node, 1, MAX_EP)
    src = f"scaleout.hardware presets {nv.name} ({nv.source}) and {nic.name} ({nic.source})"
    return Network(g, nv.gb_per_s, nic.gb_per_s, nv.alpha_s, nic.alpha_s, src[:1000])


@dataclass(frozen=True)
class AllToAllTime:
    """One all-to-all: ``seconds`` (the slowest rank); per rank ``rank_seconds``,
    ``nvlink_bytes`` and ``network_bytes`` (its busiest direction on each link); and
    ``bottleneck``, the link the slowest rank waits for (``"NVLink"``, ``"network"``, or
    ``"none"`` when nothing leaves a rank)."""

    seconds: float
    rank_seconds: np.ndarray
    nvlink_bytes: np.ndarray
    network_bytes: np.ndarray
    bottleneck: str

    def __post_init__(self):
        checks.nonnegative("seconds", self.seconds)
        for name in ("rank_seconds", "nvlink_bytes", "network_bytes"):
            object.__setattr__(self, name, checks.array(name, getattr(self, name), ndim=1, low=0))
        checks.choice("bottleneck", self.bottleneck, ("NVLink", "network", "none"))


def _time(nv: np.ndarray, nw: np.ndarray, peers: np.ndarray, net: Network) -> AllToAllTime:
    """Each rank waits for its busiest link direction (NVLink and network concurrently)."""
    t_nv, t_nw = nv / (net.nvlink_gb_per_s * 1e9), nw / (net.network_gb_per_s * 1e9)
    t = np.maximum(t_nv, t_nw) + net.nvlink_alpha_s * (nv > 0) + net.network_alpha_s * (nw > 0)
    t = t + net.per_peer_s * peers
    t = checks.finite_result("the all-to-all time", t)
    r = int(np.argmax(t))
    which = "none" if nv[r] + nw[r] == 0 else ("network" if t_nw[r] >= t_nv[r] else "NVLink")
    return AllToAllTime(float(t.max()), t, nv, nw, which)


def alltoall_seconds(pair_bytes, *, machine) -> AllToAllTime:
    """Seconds of an all-to-all that sends ``pair_bytes[i, j]`` from rank i to rank j
    (square, ranks in nodes of ``machine.gpus_per_node``) on ``machine`` (a
    :class:`~scaleout.moe.Network` or what :func:`~scaleout.moe.as_network` turns into
    one); see the module docstring."""
    b = checks.array("pair_bytes", pair_bytes, ndim=2, low=0.0, high=2.0**60)
    p = b.shape[0]
    if b.shape != (p, p) or p > MAX_EP:
        raise checks.fail("pair_bytes", f"a square matrix of at most {MAX_EP} ranks", b.shape)
    net = as_network(machine)
    node = np.arange(p) // net.gpus_per_node
    same = node[:, None] == node[None, :]
    off = b * ~np.eye(p, dtype=bool)  # a rank's bytes to itself stay in its memory
    nv = np.maximum((off * same).sum(axis=1), (off * same).sum(axis=0))
    nw = np.maximum((off * ~same).sum(axis=1), (off * ~same).sum(axis=0))
    return _time(nv, nw, ((off > 0) & ~same).sum(axis=1), net)


def _copy_gpus(routing: Routing, ep: int) -> np.ndarray:
    """(tokens, k) the GPU of each kept copy (-1 where dropped), experts in contiguous
    blocks of ``n_experts / ep`` per rank."""
    return np.where(routing.kept, routing.experts // (routing.n_experts // ep), -1)


def _two_hop(gpu: np.ndarray, ep: int, g: int, tb: float) -> tuple:
    """Bytes of the node-deduplicated dispatch of copies to ``gpu`` (tokens, k) (-1:
    dropped), tokens in ``ep`` equal contiguous blocks, ranks in nodes of ``g``:
    ``(network_out, network_in, nvlink_out, nvlink_in, remote_peers)``, each (ep,)."""
    t, nodes = gpu.shape[0], ep // g
    if t * ep > checks.MAX_ELEMENTS:
        raise checks.fail("tokens x ep", f"at most {checks.MAX_ELEMENTS}", t * ep)
    src = np.arange(t) // (t // ep)  # (t,) rank of each token
    hit = np.zeros((t, ep), dtype=bool)
    rows = np.repeat(np.arange(t), gpu.shape[1])
    flat = gpu.ravel()
    hit[rows[flat >= 0], flat[flat >= 0]] = True  # token -> GPU
    node_hit = hit.reshape(t, nodes, g).any(axis=2)  # token -> node
    own = src // g
    remote = node_hit.copy()
    remote[np.arange(t), own] = False
    net_out = np.bincount(src, weights=remote.sum(axis=1), minlength=ep) * tb
    relay = np.arange(nodes)[None, :] * g + (src % g)[:, None]  # (t, nodes): rail peers
    net_in = np.bincount(relay[remote], minlength=ep) * tb
    # NVLink: from the relay (remote nodes) or the source (own node) to each GPU hit,
    # except the GPU that already holds the token
    holder = np.where(np.arange(ep)[None, :] // g == own[:, None], src[:, None],
                      (np.arange(ep) // g)[None, :] * g + (src % g)[:, None])  # fmt: skip
    forward = hit & (holder != np.arange(ep)[None, :])
    nv_out = np.bincount(holder[forward], minlength=ep) * tb
    nv_in = forward.sum(axis=0) * tb
    peers = remote.reshape(ep, t // ep, nodes).any(axis=1).sum(axis=1)  # remote nodes
    return net_out, net_in, nv_out, nv_in, peers


def _check_two_hop(routing: Routing, ep, gpus_per_node, token_bytes) -> tuple:
    checks.instance("routing", routing, Routing)
    ep = checks.integer("ep", ep, 1, MAX_EP)
    for what, n in (("experts", routing.n_experts), ("tokens", routing.tokens)):
        if n % ep:
            raise checks.fail("ep", f"a divisor of the {n} {what}", ep)
    g = checks.integer("gpus_per_node", gpus_per_node, 1, ep)
    if ep % g:
        raise checks.fail("gpus_per_node", f"a divisor of ep = {ep}", g)
    tb = checks.positive("token_bytes", token_bytes, MAX_TOKEN_BYTES)
    return ep, g, tb


def two_hop_bytes(routing: Routing, ep, gpus_per_node, token_bytes=1.0) -> tuple:
    """Per-rank bytes of a node-deduplicated dispatch (DeepSeek-V3 report, Sec. 3.2.2;
    DeepEP's normal kernels): a token goes over the network *once* to each other node that
    holds one of its experts, to the GPU with its own in-node index (its rail), which
    forwards it over NVLink once to each GPU there that holds one of its experts; inside
    its own node it goes once to each such GPU. Returns ``(network_out, network_in,
    nvlink_out, nvlink_in)``, each (ep,) bytes. Experts and tokens in contiguous blocks per
    rank, ranks in nodes of ``gpus_per_node``."""
    ep, g, tb = _check_two_hop(routing, ep, gpus_per_node, token_bytes)
    return _two_hop(_copy_gpus(routing, ep), ep, g, tb)[:4]


def two_hop_time(gpu, ep, token_bytes=1.0, *, machine) -> AllToAllTime:
    """:func:`~scaleout.moe.two_hop_seconds` from the GPU of every copy: ``gpu`` (tokens,
    k) integers, -1 for a dropped copy, tokens in ``ep`` equal contiguous blocks (one per
    rank). For routings built in pieces (one per rank) that no single
    :class:`~scaleout.moe.Routing` holds. ``machine`` as in
    :func:`~scaleout.moe.alltoall_seconds`."""
    net = as_network(machine)
    ep = checks.integer("ep", ep, 1, MAX_EP)
    gpu = checks.array("gpu", gpu, ndim=2, integer=True, low=-1, high=ep - 1)
    if gpu.shape[0] % ep or gpu.shape[0] == 0 or gpu.shape[1] > 64:
        raise checks.fail("gpu", f"(tokens, k <= 64) with tokens a multiple of ep = {ep}",
                          gpu.shape)  # fmt: skip
    g = checks.integer("gpus_per_node", net.gpus_per_node, 1, ep)
    if ep % g:
        raise checks.fail("ep", f"a multiple of machine.gpus_per_node = {g}", ep)
    tb = checks.positive("token_bytes", token_bytes, MAX_TOKEN_BYTES)
    net_out, net_in, nv_out, nv_in, peers = _two_hop(gpu.astype(np.int64), ep, g, tb)
    return _time(np.maximum(nv_out, nv_in), np.maximum(net_out, net_in), peers, net)


def two_hop_seconds(routing: Routing, ep, token_bytes=1.0, *, machine) -> AllToAllTime:
    """Seconds of the node-deduplicated dispatch of :func:`~scaleout.moe.two_hop_bytes` on
    ``machine`` (as in :func:`~scaleout.moe.alltoall_seconds`; the combine sends the same
    bytes back): network and NVLink hops pipelined, each rank waiting for its busiest
    direction of each link, as in :func:`~scaleout.moe.alltoall_seconds`."""
    net = as_network(machine)
    ep, g, tb = _check_two_hop(routing, ep, net.gpus_per_node, token_bytes)
    net_out, net_in, nv_out, nv_in, peers = _two_hop(_copy_gpus(routing, ep), ep, g, tb)
    return _time(np.maximum(nv_out, nv_in), np.maximum(net_out, net_in), peers, net)


@dataclass(frozen=True)
class LayerAllToAll:
    """The four all-to-alls of one MoE layer and micro-batch: dispatch and combine in the
    forward pass; in the backward, the gradient of the combine travels like a dispatch
    and the gradient of the dispatch like a combine. Seconds each, and the bytes the
    busiest rank sends in all four."""

    dispatch: float
    combine: float
    dispatch_backward: float
    combine_backward: float
    busiest_rank_bytes: float

    def __post_init__(self):
        for name in (
            "dispatch",
            "combine",
            "dispatch_backward",
            "combine_backward",
            "busiest_rank_bytes",
        ):
            checks.nonnegative(name, getattr(self, name))  # fmt: skip

    @property
    def forward(self) -> float:
        return self.dispatch + self.combine

    @property
    def backward(self) -> float:
        return self.dispatch_backward + self.combine_backward

    @property
    def total(self) -> float:
        return self.forward + self.backward


def layer_alltoall(plan: DispatchPlan, combine_token_bytes=None, *, machine) -> LayerAllToAll:
    """Price the four all-to-alls of ``plan`` on ``machine`` (as in
    :func:`~scaleout.moe.alltoall_seconds`). The dispatch sends
    ``plan.token_bytes`` per copy, the combine ``combine_token_bytes`` (default the same;
    DeepSeek-V3 dispatches FP8 and combines BF16). The backward all-to-alls carry
    gradients at the combine's precision."""
    checks.instance("plan", plan, DispatchPlan)
    net = as_network(machine)
    cb = plan.token_bytes if combine_token_bytes is None else combine_token_bytes
    cb = checks.positive("combine_token_bytes", cb, 2.0**22)
    copies = plan.tokens
    forward = alltoall_seconds(copies * plan.token_bytes, machine=net)
    back = alltoall_seconds(copies.T * cb, machine=net)
    grad_combine = alltoall_seconds(copies * cb, machine=net)  # the combine's gradient: a dispatch
    sent = copies * ~np.eye(plan.ep, dtype=bool)
    busiest = float(np.max(sent.sum(axis=1) * (plan.token_bytes + cb) + sent.sum(axis=0) * 2 * cb))
    return LayerAllToAll(forward.seconds, back.seconds, grad_combine.seconds, back.seconds,
                         busiest)  # fmt: skip


def expert_flops(tokens, hidden, ffn, matmuls=2):
    """Forward FLOPs of running ``tokens`` copies through one expert:
    ``matmuls x 2 x tokens x hidden x ffn`` (vectorised over ``tokens``)."""
    t = checks.array("tokens", tokens, low=0.0, high=2.0**50)
    h = checks.integer("hidden", hidden, 1, 2**20)
    f = checks.integer("ffn", ffn, 1, 2**20)
    m = checks.integer("matmuls", matmuls, 1, 3)
    return checks.as_output(2.0 * m * t * h * f)


@dataclass(frozen=True)
class ExpertCompute:
    """Seconds of the expert GEMMs per rank, forward and backward (twice the forward), and
    the slowest rank's forward and backward (the layer waits for it)."""

    rank_forward: np.ndarray
    forward: float
    backward: float

    def __post_init__(self):
        rank_forward = checks.array("rank_forward", self.rank_forward, ndim=1, low=0)
        object.__setattr__(self, "rank_forward", rank_forward)
        checks.nonnegative("forward", self.forward)
        checks.nonnegative("backward", self.backward)

    @property
    def total(self) -> float:
        return self.forward + self.backward


def expert_compute_seconds(
    plan: DispatchPlan, hidden, ffn, matmuls=2, peak_flops=H100_SXM_BF16_DENSE_FLOPS, efficiency=1.0
) -> ExpertCompute:
    """The expert GEMMs of ``plan``: each rank computes the copies it receives. Default
    ``peak_flops``: H100 SXM dense BF16 (scaleout.tensor_parallel's datasheet constant);
    ``efficiency`` in (0, 1] scales it (a lower bound on time at 1)."""
    checks.instance("plan", plan, DispatchPlan)
    peak = checks.positive("peak_flops", peak_flops, MAX_FLOPS)
    eff = checks.fraction("efficiency", efficiency, open_low=True)
    received = plan.tokens.sum(axis=0)  # copies each rank computes
    fwd = np.asarray(expert_flops(received, hidden, ffn, matmuls)) / (peak * eff)
    fwd = checks.finite_result("the compute time", np.atleast_1d(fwd))
    return ExpertCompute(fwd, float(fwd.max()), 2.0 * float(fwd.max()))


def _expert_gemms(m: int, hidden: int, ffn: int, matmuls: int) -> list[tuple[int, int, int]]:
    """(m, n, k) of one expert's forward GEMMs on m copies: up (and gate) h -> h_f, then
    down h_f -> h; each (m x k) by (k x n)."""
    return [(m, ffn, hidden)] * (matmuls - 1) + [(m, hidden, ffn)]


def expert_gemm_seconds(plan: DispatchPlan, hidden, ffn, gpu="H100-SXM", dtype="bf16",
                        matmuls=3) -> ExpertCompute:  # fmt: skip
    """The expert GEMMs of ``plan`` priced by the book's compute model
    (:func:`scaleout.compute.gemm_time`, chapter 14: tile and wave quantization, a measured
    ceiling, the HBM bound) on ``gpu`` (a ``scaleout.hardware.GPUS`` name). Each rank
    runs its ``experts / ep`` experts one after another on the copies each receives
    (rounded up to whole copies): ``matmuls - 1`` GEMMs of h -> h_f and one of h_f -> h
    forward; backward, for each, the input gradient (m, k, n) and the weight gradient
    (k, n, m). Grouped-GEMM kernels that run all local experts in one launch are not
    modelled: they fill the SMs a thin GEMM leaves idle, but not past the roofline of each
    expert's product, which with few copies per expert is bound by reading its weights
    (128 copies x 7168 x 2048 in bf16: at most 40 % of an H100's peak, chapter 7)."""
    from .. import compute

    checks.instance("plan", plan, DispatchPlan)
    h = checks.integer("hidden", hidden, 1, 2**20)
    f = checks.integer("ffn", ffn, 1, 2**20)
    mm = checks.choice("matmuls", matmuls, (2, 3))
    received = plan.per_expert.sum(axis=0)  # (experts,) copies each expert computes
    per = plan.experts_per_rank
    fwd, bwd = np.zeros(plan.ep), np.zeros(plan.ep)
    for e, copies in enumerate(received):
        m = int(np.ceil(copies - 1e-9))
        if m == 0:
            continue
        for mm_, n, k in _expert_gemms(m, h, f, mm):
            fwd[e // per] += compute.gemm_seconds(mm_, n, k, gpu, dtype)
            bwd[e // per] += compute.gemm_seconds(mm_, k, n, gpu, dtype)  # input gradient
            bwd[e // per] += compute.gemm_seconds(k, n, mm_, gpu, dtype)  # weight gradient
    fwd = checks.finite_result("the compute time", fwd)
    return ExpertCompute(fwd, float(fwd.max()), float(checks.finite_result("the time", bwd).max()))
