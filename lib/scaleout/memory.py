"""Memory of data-parallel training: model states, ZeRO sharding, activations, GPU counts.

Taught in chapter 6, "ZeRO sharding" (``chapters/06_zero.ipynb``). Units: bytes (GB = 1e9
bytes), seconds; ``params`` (the paper's psi) is a count of parameters; ``dp`` (N_d) is the
data-parallel degree, the number of ranks that share one set of model states.

Sources:

* Model states and ZeRO-DP: Rajbhandari, Rasley, Ruwase, He, "ZeRO: Memory Optimizations
  Toward Training Trillion Parameter Models", SC20 (arXiv 1910.02054). Section 3.1: mixed
  precision Adam keeps 2 psi (fp16 parameters) + 2 psi (fp16 gradients) + K psi (fp32
  master parameters, momentum, variance; K = 12) bytes. Section 5 and Figure 1: stage 1
  (P_os) shards the optimizer states, stage 2 (P_os+g) also the gradients, stage 3
  (P_os+g+p) also the parameters. Section 7: communication per step 2 psi for plain DP and
  stages 1-2, 3 psi for stage 3.
* Megatron's accountings: Megatron-Core developer guide, "Distributed Optimizer"
  (https://docs.nvidia.com/megatron-core/developer-guide/latest/distrib_optimizer.html),
  table of theoretical bytes per parameter: fp16 parameters and gradients 20 (4 + 16/d with
  the distributed optimizer), 16-bit parameters with fp32 gradients 18 (6 + 12/d), fp32
  parameters and gradients 16 (8 + 8/d). bf16 training keeps fp32 gradients: Megatron-LM
  ``megatron/training/arguments.py`` sets ``accumulate_allreduce_grads_in_fp32`` for bf16
  ("bfloat16 requires gradient accumulation and all-reduce to be done in fp32").
* Activations: Korthikanti et al., "Reducing Activation Recomputation in Large Transformer
  Models", MLSys 2023 (arXiv 2205.05198), Section 4 and Table 2 (attention scores stored).
  FlashAttention (Dao et al., NeurIPS 2022, arXiv 2205.14135) stores no s x s matrix; the
  backward recomputes it from Q, K, V and per-row softmax statistics (one fp32 logsumexp
  per query row and head in FlashAttention-2, Dao 2023, arXiv 2307.08691).
* ZeRO-3 prefetch and overlap: PyTorch, "FSDP Notes" (the first all-gather cannot overlap
  with anything; prefetching allocates the next all-gather's output while the current one
  is in use).
* Parameter count of a GPT layer stack and the model presets: Narayanan et al., SC21
  (arXiv 2104.04473), Section 5.1 and Table 1.
* :func:`greedy_partition` replays PyTorch's ``torch/distributed/optim/
  zero_redundancy_optimizer.py``, ``ZeroRedundancyOptimizer._partition_parameters``.

Limits (beyond them a function raises ``ValueError``): :func:`zero3_step` takes at most
:data:`MAX_STEP_LAYERS` layers (its frames hold one entry per layer); :func:`greedy_partition`
at most :data:`MAX_TENSORS` tensors over at most :data:`MAX_RANKS` ranks; array inputs at
most ``checks.MAX_ELEMENTS`` elements. The closed forms take any finite positive input and
raise if the result overflows float64.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from . import checks, hardware, overlap, transformer

#: GPU memory in bytes assumed when none is named (an H100 SXM's 80 GB, from hardware).
DEFAULT_GPU_BYTES = hardware.gpu("H100-SXM").memory_gb * 1e9
STAGES = (0, 1, 2, 3)
STAGE_NAMES = {0: "plain DP", 1: "ZeRO-1 (P_os)", 2: "ZeRO-2 (P_os+g)", 3: "ZeRO-3 (P_os+g+p)"}
OPTIMIZERS = ("adam", "sgd_momentum", "sgd")
PRECISIONS = ("mixed", "fp32", "megatron-bf16", "megatron-fp16")
RECOMPUTE = ("none", "selective", "full")
KINDS = ("parameters", "gradients", "optimizer states")
# First stage at which each kind of state is sharded (ZeRO section 5, Figure 1).
SHARDED_FROM = {"parameters": 3, "gradients": 2, "optimizer states": 1}
# Collectives of one training step and their volume per rank, in units of psi elements
# (ZeRO section 7.2: ring all-reduce = reduce-scatter + all-gather, psi each).
COMM_PATTERN = {
    0: (("allreduce", "gradients", 2),),
    1: (("reducescatter", "gradients", 1), ("allgather", "updated parameters", 1)),
    2: (("reducescatter", "gradients", 1), ("allgather", "updated parameters", 1)),
    3: (
        ("allgather", "parameters, before each layer's forward", 1),
        ("allgather", "parameters, before each layer's backward", 1),
        ("reducescatter", "gradients", 1),
    ),
}
#: Most layers :func:`zero3_step` replays (its frames hold per-layer tuples).
MAX_STEP_LAYERS = 256
#: Most tensors and ranks :func:`greedy_partition` partitions (a million tensors, the book's
#: 65,536 ranks).
MAX_TENSORS, MAX_RANKS = 2**20, 65536
#: Most layers :func:`zero3_peak_bytes` and :func:`exposed_comm_seconds` split a model into.
MAX_LAYERS = 2**20
Z3_OPS = ("", "all-gather", "compute", "reduce-scatter", "update")
Z3_GRADS = ("none", "full", "shard")


# Overflow is reported by _out (checks.finite_result), not as a numpy warning.
_QUIET = np.errstate(over="ignore", invalid="ignore")


def _reals(name: str, x) -> np.ndarray:
    """A finite real number or array > 0."""
    return checks.array(name, x, low=0.0, low_open=True)


def _counts(name: str, x, high: int | None = None) -> np.ndarray:
    """An integer or integer array >= 1 (and <= high)."""
    return checks.array(name, x, integer=True, low=1, high=high).astype(np.float64)


def _stage(stage) -> int:
    return checks.integer("stage", stage, 0, 3)


def _out(name: str, x):
    """A float for 0-d results, else a float64 array; ValueError if it overflowed."""
    with np.errstate(over="ignore", invalid="ignore"):
        x = np.asarray(x, dtype=np.float64)
    checks.finite_result(name, x)
    return float(x) if x.ndim == 0 else x


@dataclass(frozen=True)
class State:
    """One kind of tensor kept per parameter: its name, kind (a member of ``KINDS``) and
    bytes per parameter."""

    name: str
    kind: str
    bytes_per_param: float

    def __post_init__(self):
        checks.text("name", self.name)
        checks.choice("kind", self.kind, KINDS)
        checks.nonnegative("bytes_per_param", self.bytes_per_param)


def states_per_param(optimizer: str = "adam", precision: str = "mixed", k=None):
    """The tensors kept for every parameter, as a tuple of :class:`State`.

    Four accountings (``precision``), each state classified by the ZeRO stage that shards it
    (``kind``: parameters from stage 3, gradients from 2, optimizer states from 1):

    * ``"mixed"``, the ZeRO paper's (section 3.1): fp16/bf16 parameters and gradients
      (2 bytes each) and an fp32 master copy (4 bytes) for the optimizer, plus fp32 momentum
      (Adam and SGD with momentum) and variance (Adam): K = 12, 8, 4 bytes for adam,
      sgd_momentum, sgd; 16 bytes per parameter with Adam.
    * ``"megatron-bf16"``, Megatron-LM's bf16 training: bf16 parameters (2) and an fp32
      gradient buffer (4; ``main_grad``, it replaces the bf16 gradient), then the fp32 master
      copy and the moments as above: 18 bytes per parameter with Adam; the distributed
      optimizer (= ZeRO-1) shards master and moments: 6 + 12/d.
    * ``"megatron-fp16"``, Megatron-LM's fp16 training: fp16 parameters and gradients (2 + 2)
      and, inside the optimizer, an fp32 copy of the gradient (4) beside the fp32 master
      copy and the moments: 20 bytes per parameter with Adam, 4 + 16/d distributed.
    * ``"fp32"``: 4-byte parameters and gradients, no master copy: K = 8, 4, 0 (Megatron's
      third row: 16 bytes with Adam, 8 + 8/d distributed).

    ``k`` (bytes >= 0) replaces the optimizer states by one entry of k bytes, the paper's K.
    """
    checks.choice("optimizer", optimizer, OPTIMIZERS)
    checks.choice("precision", precision, PRECISIONS)
    optim = [State("fp32 master parameters", "optimizer states", 4)]
    if precision == "mixed":
        states = [
            State("fp16 parameters", "parameters", 2),
            State("fp16 gradients", "gradients", 2),
        ]
    elif precision == "megatron-bf16":
        states = [
            State("bf16 parameters", "parameters", 2),
            State("fp32 gradient buffer (main_grad)", "gradients", 4),
        ]
    elif precision == "megatron-fp16":
        states = [
            State("fp16 parameters", "parameters", 2),
            State("fp16 gradients", "gradients", 2),
        ]
        optim.insert(0, State("fp32 gradient copy (optimizer)", "optimizer states", 4))
    else:
        states = [
            State("fp32 parameters", "parameters", 4),
            State("fp32 gradients", "gradients", 4),
        ]
        optim = []
    if optimizer in ("adam", "sgd_momentum"):
        optim.append(State("fp32 momentum", "optimizer states", 4))
    if optimizer == "adam":
        optim.append(State("fp32 variance", "optimizer states", 4))
    if k is not None:
        k = checks.nonnegative("k", k, high=1e6)
        optim = [State(f"optimizer states (K = {k:g})", "optimizer states", k)]
    return tuple(states + optim)


def bytes_per_param(optimizer: str = "adam", precision: str = "mixed", k=None) -> float:
    """Model-state bytes per parameter without sharding, the sum of :func:`states_per_param`:
    16 for Adam in the ZeRO paper's accounting, 18 and 20 for Megatron's bf16 and fp16."""
    return float(sum(s.bytes_per_param for s in states_per_param(optimizer, precision, k)))


@dataclass(frozen=True)
class ModelStates:
    """Bytes of model states held by one device. ``breakdown`` maps each state's name to its
    bytes per device; ``parameters``, ``gradients`` and ``optimizer_states`` add them up by
    kind. Arrays when the inputs were arrays."""

    params: object
    stage: int
    dp: object
    breakdown: dict
    parameters: object
    gradients: object
    optimizer_states: object

    def __post_init__(self):
        _reals("params", self.params)
        _stage(self.stage)
        checks.array("dp", self.dp, low=1.0)
        if not isinstance(self.breakdown, Mapping):
            raise checks.fail("breakdown", "a mapping of state name -> bytes", self.breakdown)
        for name, b in self.breakdown.items():
            checks.text("breakdown key", name)
            checks.array(f"breakdown[{name!r}]", b, low=0.0)
        for kind in ("parameters", "gradients", "optimizer_states"):
            checks.array(kind, getattr(self, kind), low=0.0)

    @property
    def total(self):
        """All model-state bytes on one device."""
        return _out("total", np.asarray(self.parameters) + self.gradients + self.optimizer_states)


def _split(optimizer, k, precision):
    """{kind: bytes per parameter} of :func:`states_per_param`."""
    by_kind = dict.fromkeys(KINDS, 0.0)
    for s in states_per_param(optimizer, precision, k):
        by_kind[s.kind] += s.bytes_per_param
    return by_kind


@_QUIET
def model_state_bytes(params, stage: int, dp=1, optimizer="adam", k=None, precision="mixed"):
    """Model-state bytes per device for ZeRO ``stage`` (0 = plain DP) over ``dp`` ranks.

    ZeRO section 5 (Table 1, Figure 1), with K from :func:`states_per_param`:
    stage 0: (2 + 2 + K) psi; stage 1: 4 psi + K psi / N_d; stage 2: 2 psi + (2 + K) psi / N_d;
    stage 3: (2 + 2 + K) psi / N_d. With ``precision="megatron-bf16"`` stage 1 is Megatron's
    distributed optimizer, 6 psi + 12 psi / d. Vectorised over ``params`` and ``dp``.
    """
    psi, n = _reals("params", params), _counts("dp", dp)
    stage = _stage(stage)
    breakdown, by_kind = {}, dict.fromkeys(KINDS, 0.0)
    for s in states_per_param(optimizer, precision, k):
        sharded = stage >= SHARDED_FROM[s.kind]
        b = s.bytes_per_param * psi / (n if sharded else 1.0) + 0.0 * n
        breakdown[s.name] = _out(s.name, b)
        by_kind[s.kind] = by_kind[s.kind] + b
    return ModelStates(
        _out("params", psi), stage, _out("dp", n), breakdown,
        *(_out(kind, by_kind[kind]) for kind in KINDS),
    )  # fmt: skip


@_QUIET
def device_bytes(params, stage, dp=1, activation_bytes=0.0, optimizer="adam", k=None,
                 precision="mixed"):  # fmt: skip
    """Memory per device: the model states of :func:`model_state_bytes` plus
    ``activation_bytes`` (ZeRO-DP does not shard activations). Vectorised like it."""
    act = checks.array("activation_bytes", activation_bytes, low=0.0)
    states = model_state_bytes(params, stage, dp, optimizer, k, precision).total
    return _out("device bytes", states + act)


@_QUIET
def zero3_peak_bytes(params, layers, dp, prefetch=1, optimizer="adam", k=None,
                     precision="mixed"):  # fmt: skip
    """Peak model-state bytes per device under ZeRO-3 with ``layers`` equal layers: the
    sharded states (:func:`model_state_bytes`, stage 3) plus what is materialised in full
    during the backward pass, at least ``1 + prefetch`` gathered layers of parameters (the
    layer computing and the ``prefetch`` layers already being all-gathered; FSDP's default
    prefetches one) and the layer's unreduced gradient, before its reduce-scatter:
    states / N_d + (1 + prefetch) p psi / L + g psi / L, with p and g the parameter and
    gradient bytes of ``precision``. At most all ``layers`` can be gathered at once.
    """
    psi, nl = _reals("params", params), _counts("layers", layers, MAX_LAYERS)
    pre = checks.array("prefetch", prefetch, integer=True, low=0, high=MAX_LAYERS)
    by_kind = _split(optimizer, k, precision)
    states = model_state_bytes(params, 3, dp, optimizer, k, precision).total
    gathered = np.minimum(1.0 + pre, nl)
    layer = psi / nl
    return _out("peak bytes", states + layer * (gathered * by_kind["parameters"]
                                                + by_kind["gradients"]))  # fmt: skip


@_QUIET
def comm_volume(params, stage: int, dp=None):
    """Elements each rank sends per training step (psi units): 2 psi for plain DP and ZeRO
    stages 1-2, 3 psi for stage 3 (ZeRO section 7.2; see ``COMM_PATTERN``). With ``dp`` the
    ring algorithms' exact factor (dp - 1) / dp is applied."""
    psi, stage = _reals("params", params), _stage(stage)
    volume = psi * sum(v for _, _, v in COMM_PATTERN[stage])
    if dp is not None:
        n = _counts("dp", dp)
        volume = volume * (n - 1) / n
    return _out("volume", volume)


#: Bytes per element of the data types a collective carries.
DTYPE_BYTES = {"fp32": 4, "bf16": 2, "fp16": 2, "fp8": 1}


def comm_bytes(params, stage: int, param_dtype: str = "bf16", grad_dtype: str = "fp32", dp=None):
    """Bytes each rank sends per training step: :func:`comm_volume`'s elements, each
    collective at its own data type (parameter all-gathers in ``param_dtype``, gradient
    all-reduces and reduce-scatters in ``grad_dtype``).

    The defaults are Megatron-LM's bf16 training (bf16 parameters, gradients reduced in fp32:
    ``accumulate_allreduce_grads_in_fp32``) and TorchTitan's FSDP2 (``param_dtype`` bf16,
    ``reduce_dtype`` fp32). Then plain DP sends 8 psi bytes, ZeRO-1/2 6 psi and ZeRO-3 8 psi:
    ZeRO-3 costs 1.0x DP and 1.33x ZeRO-2, not the 1.5x of the element count."""
    psi, stage = _reals("params", params), _stage(stage)
    p_bytes = DTYPE_BYTES[checks.choice("param_dtype", param_dtype, tuple(DTYPE_BYTES))]
    g_bytes = DTYPE_BYTES[checks.choice("grad_dtype", grad_dtype, tuple(DTYPE_BYTES))]
    per_elem = sum(v * (p_bytes if what.startswith(("parameters", "updated")) else g_bytes)
                   for _, what, v in COMM_PATTERN[stage])  # fmt: skip
    volume = psi * per_elem
    if dp is not None:
        n = _counts("dp", dp)
        volume = volume * (n - 1) / n
    return _out("volume", volume)


@_QUIET
def exposed_comm_seconds(comm_seconds, compute_seconds, pieces=1):
    """Communication time that overlap cannot hide, in seconds.

    Communication and computation are each cut into ``pieces`` equal parts (ZeRO-3: one per
    layer and pass) on two resources, the network and the GPU; part i must be communicated
    before it is computed (all-gather, then compute), while part i + 1 is communicated
    during part i's compute. The step then takes c + (n - 1) max(c, k) + k for parts of
    c = C/n and k = K/n seconds, so the exposed communication (step minus compute) is

        max(C, K) - K + min(C, K) / n,

    never below C - K: overlap hides at most min(C, K). With one piece nothing overlaps
    (C); with many, C - K when communication is the longer, C/n (the first all-gather)
    when compute is. Vectorised.
    """
    c = checks.array("comm_seconds", comm_seconds, low=0.0)
    k = checks.array("compute_seconds", compute_seconds, low=0.0)
    n = _counts("pieces", pieces, MAX_LAYERS)
    return _out("exposed seconds", overlap.pieces(c, k, n))  # the rule lives in overlap


#: The forward pass's share of a ZeRO-3 micro-batch's communication and of its compute, one
#: third of each. Of the three psi-sized collectives the forward runs one all-gather, the
#: backward the other all-gather and the reduce-scatter; the backward costs about twice the
#: forward's FLOPs. The backward has the rest.
ZERO3_FORWARD_SHARE = 1.0 / 3.0


@_QUIET
def zero3_exposed_seconds(comm_seconds, compute_seconds, layers):
    """Communication of one ZeRO-3 micro-batch that layer-by-layer overlap leaves exposed.

    Each pass is its own pipeline of ``layers`` pieces (:func:`exposed_comm_seconds` with
    ``pieces=layers``): its first all-gather cannot overlap with anything (FSDP notes).
    The forward carries :data:`ZERO3_FORWARD_SHARE` of the communication ``comm_seconds``
    (C) and of the compute ``compute_seconds`` (K), the backward the rest; the result is the
    sum over the two passes. Both passes have the same ratio C/K, and the exposed time is
    homogeneous in (C, K), so the sum equals ``exposed_comm_seconds(C, K, layers)``:
    max(C, K) - K + min(C, K) / L. Vectorised.
    """
    c = checks.array("comm_seconds", comm_seconds, low=0.0)
    k = checks.array("compute_seconds", compute_seconds, low=0.0)
    _counts("layers", layers, MAX_LAYERS)
    f = ZERO3_FORWARD_SHARE
    forward = exposed_comm_seconds(f * c, f * k, layers)
    backward = exposed_comm_seconds((1 - f) * c, (1 - f) * k, layers)
    return _out("exposed seconds", np.asarray(forward) + backward)


@_QUIET
def activation_bytes_per_layer(
    seq, batch, hidden, heads, recompute="none", tp=1, sequence_parallel=False,
    flash_attention=False,
):  # fmt: skip
    """Activation bytes of one transformer layer kept for the backward pass.

    Korthikanti et al. 2022, Table 2 (16-bit activations, 1-byte dropout masks; s = ``seq``,
    b = ``batch`` (micro-batch), h = ``hidden``, a = ``heads``, t = ``tp``):
    none: s b h (10 + 24/t + 5 a s/(h t)), or s b h (34/t + 5 a s/(h t)) with sequence
    parallelism; selective (recompute only the attention core): drop the 5 a s/(h t) term;
    full (keep only each layer's input): 2 s b h. With t = 1: s b h (34 + 5 a s / h).

    The 5 a s / h term is the attention core's a x s x s matrices per sequence: the softmax
    output (2 bytes per element), the dropout mask (1) and the dropout output (2); the raw
    scores Q K^T are not kept. ``flash_attention=True`` models FlashAttention (Dao et al.
    2022), which never stores them: the core keeps only one fp32 softmax statistic
    (logsumexp) per query row and head, 4 a s b / t bytes = s b h (4 a / (h t)), in place
    of the 5 a s / (h t) term. Korthikanti et al.'s (and Narayanan et al.'s) published runs
    stored the matrices (the default here); current stacks use FlashAttention.
    """
    _counts("seq", seq), _counts("batch", batch)  # integer counts here
    _counts("hidden", hidden), _counts("heads", heads), _counts("tp", tp)
    return transformer.activation_bytes(seq, batch, hidden, heads, recompute, tp,
                                        sequence_parallel, flash_attention)  # fmt: skip


@_QUIET
def activation_bytes(layers, seq, batch, hidden, heads, recompute="none", tp=1,
                     sequence_parallel=False, flash_attention=False):  # fmt: skip
    """Peak activation bytes of ``layers`` transformer layers during the backward pass
    (embeddings and the output layer, a few percent for large models, left out).

    Without recomputation and with selective recomputation: layers x
    :func:`activation_bytes_per_layer`. With full recomputation the layers keep only their
    inputs (2 s b h each, Korthikanti et al.'s 2 s b h L), but the backward of each layer
    first reruns its forward, so while that layer's gradient is computed its full
    activations (:func:`activation_bytes_per_layer` with ``recompute="none"`` and the same
    attention) sit beside the checkpoints: layers x 2 s b h + one layer's full activations.
    """
    n = _counts("layers", layers)
    per_layer = activation_bytes_per_layer(seq, batch, hidden, heads, recompute, tp,
                                           sequence_parallel, flash_attention)  # fmt: skip
    if recompute == "full":
        working = activation_bytes_per_layer(seq, batch, hidden, heads, "none", tp,
                                             sequence_parallel, flash_attention)  # fmt: skip
        return _out("activation bytes", n * per_layer + working)
    return _out("activation bytes", n * per_layer)


@_QUIET
def transformer_params(layers, hidden, seq=2048, vocab=51200):
    """Parameters of a GPT model, 12 l h^2 (1 + 13/(12 h) + (V + s)/(12 l h)) (Narayanan et
    al. 2021, Section 5.1). Vectorised."""
    return transformer.gpt_params(layers, hidden, seq, vocab)


@dataclass(frozen=True)
class Transformer:
    """A GPT configuration of Narayanan et al. 2021, Table 1 (V = 51200, s = 2048)."""

    name: str
    layers: int
    hidden: int
    heads: int
    seq: int = 2048
    vocab: int = 51200

    def __post_init__(self):
        checks.text("name", self.name)
        for key in ("layers", "hidden", "heads", "seq", "vocab"):
            checks.integer(key, getattr(self, key), 1, 2**31)

    @property
    def shape(self) -> transformer.Transformer:
        """This GPT as a :class:`scaleout.transformer.Transformer` (the library's one model
        shape), when its sizes are within that record's limits."""
        return transformer.Transformer(self.layers, self.hidden, self.heads, seq=self.seq,
                                       vocab=self.vocab, name=self.name)  # fmt: skip

    @property
    def params(self) -> float:
        """The parameter count, from :func:`transformer_params`."""
        return transformer_params(self.layers, self.hidden, self.seq, self.vocab)


#: Narayanan et al. 2021, Table 1, from :data:`scaleout.transformer.NARAYANAN_TABLE1`.
TRANSFORMERS = {
    name: Transformer(m.name, m.layers, m.hidden, m.heads, m.seq, m.vocab)
    for name, m in transformer.NARAYANAN_TABLE1.items()
}


def gpus_to_hold(total_bytes, gpu_bytes=DEFAULT_GPU_BYTES, usable_fraction=1.0):
    """Fewest GPUs of ``gpu_bytes`` whose usable memory (``usable_fraction`` of it, in
    (0, 1]) adds up to ``total_bytes``: ceil(total / (gpu x fraction)). Vectorised."""
    total, gpu = _reals("total_bytes", total_bytes), _reals("gpu_bytes", gpu_bytes)
    frac = checks.array("usable_fraction", usable_fraction, low=0.0, high=1.0, low_open=True)
    return _out("GPUs", _ceil_div(total, gpu * frac))


def _ceil_div(num, den):
    """ceil(num / den) without float noise: 24e12 / 60e9 gives 400, not 401."""
    with np.errstate(over="ignore", invalid="ignore"):
        n = np.ceil(num / den)
        return np.where((n - 1) * den >= num * (1 - 1e-12), n - 1, n)


def min_dp_to_fit(params, stage, gpu_bytes=DEFAULT_GPU_BYTES, activation_bytes=0.0,
                  optimizer="adam", k=None, precision="mixed",
                  usable_fraction=1.0):  # fmt: skip
    """Smallest N_d at which model states + ``activation_bytes`` fit in ``usable_fraction``
    of ``gpu_bytes`` per device, or None if no N_d does (the unsharded part alone is too big).

    Solves replicated + sharded / N_d + activations <= usable for N_d, with the split of
    :func:`model_state_bytes`.
    """
    frac = checks.fraction("usable_fraction", usable_fraction, open_low=True)
    usable = checks.positive("gpu_bytes", gpu_bytes) * frac
    act = checks.nonnegative("activation_bytes", activation_bytes)
    psi = checks.positive("params", params)
    stage = _stage(stage)
    replicated = sharded = 0.0
    for s in states_per_param(optimizer, precision, k):
        if stage >= SHARDED_FROM[s.kind]:
            sharded += s.bytes_per_param * psi
        else:
            replicated += s.bytes_per_param * psi
    checks.finite_result("model-state bytes", replicated + sharded)
    room = usable - replicated - act
    if sharded == 0:
        return 1 if room >= 0 else None
    if room <= 0:
        return None
    need = float(_ceil_div(sharded, room))
    checks.finite_result("N_d", need)
    return max(1, int(need))


def greedy_partition(numels, dp: int):
    """Which rank owns each tensor when ``torch.distributed.optim.ZeroRedundancyOptimizer``
    shards optimizer states over ``dp`` ranks: tensors sorted by size (largest first, stable),
    each given to the rank with the fewest elements so far (lowest rank on ties). Replays
    ``ZeroRedundancyOptimizer._partition_parameters``. Returns (owner per tensor, elements
    per rank) as int arrays. At most ``MAX_TENSORS`` tensors and ``MAX_RANKS`` ranks; a heap
    of (elements, rank) finds the emptiest rank in O(log dp)."""
    sizes = checks.array("numels", numels, ndim=1, integer=True, low=0, max_size=MAX_TENSORS)
    dp = checks.integer("dp", dp, 1, MAX_RANKS)
    if sizes.sum(dtype=object) >= 2**62:
        raise checks.fail("numels", "tensor sizes adding up to less than 2**62", numels)
    owner, per_rank = np.zeros(len(sizes), dtype=np.int64), np.zeros(dp, dtype=np.int64)
    heap = [(0, r) for r in range(dp)]  # already a heap: sorted
    for i in np.argsort(-sizes, kind="stable"):
        load, rank = heapq.heappop(heap)  # fewest elements, lowest rank first: _get_min_index
        owner[i] = rank
        per_rank[rank] = load + int(sizes[i])
        heapq.heappush(heap, (int(per_rank[rank]), rank))
    return owner, per_rank


@dataclass(frozen=True)
class Zero3Frame:
    """One moment of a ZeRO-3 step, the same on every rank. Per layer: ``gathered`` (the full
    parameters are materialised), ``grad`` ("none", "full": this rank's unreduced gradient of
    the whole layer, "shard": the reduced gradient of its own shard), ``updated``."""

    title: str
    op: str  # "", "all-gather", "compute", "reduce-scatter", "update"
    layer: int  # the layer acted on, -1 for none or all
    gathered: tuple
    grad: tuple
    updated: tuple

    def __post_init__(self):
        checks.text("title", self.title)
        checks.choice("op", self.op, Z3_OPS)
        for key in ("gathered", "grad", "updated"):
            value = getattr(self, key)
            if not isinstance(value, tuple) or not 1 <= len(value) <= MAX_STEP_LAYERS:
                raise checks.fail(key, f"a tuple of 1 to {MAX_STEP_LAYERS} entries", value)
        layers = len(self.gathered)
        if len(self.grad) != layers or len(self.updated) != layers:
            raise checks.fail("grad, updated", f"tuples of {layers} entries like gathered",
                              (len(self.grad), len(self.updated)))  # fmt: skip
        checks.integer("layer", self.layer, -1, layers - 1)
        for g, u, x in zip(self.gathered, self.updated, self.grad, strict=True):
            checks.boolean("gathered entry", g)
            checks.boolean("updated entry", u)
            checks.choice("grad entry", x, Z3_GRADS)


def zero3_step(layers: int, dp: int, prefetch: int = 0):
    """The frames of one ZeRO-3 training step over ``layers`` equal layers and ``dp`` ranks
    (ZeRO section 5.3 and 7.2.2; FSDP, Zhao et al. 2023, Section 3): forward, per layer,
    all-gather then compute and free; backward, in reverse, all-gather, compute the full
    local gradient, reduce-scatter it and free; then each rank updates only its shard.

    With ``prefetch`` = q >= 1 the all-gathers of the next q layers run while a layer
    computes (FSDP's default prefetches one): only the first gather of each pass stands
    alone, and up to 1 + q layers are gathered at once. At most ``MAX_STEP_LAYERS`` layers.
    """
    layers = checks.integer("layers", layers, 1, MAX_STEP_LAYERS)
    dp = checks.integer("dp", dp, 1, MAX_RANKS)
    prefetch = checks.integer("prefetch", prefetch, 0, MAX_STEP_LAYERS)
    gathered, grad, updated = [False] * layers, ["none"] * layers, [False] * layers
    frames = []

    def add(title, op, layer):
        frames.append(Zero3Frame(title, op, layer, tuple(gathered), tuple(grad), tuple(updated)))

    def ahead(order, j):
        """The layers gathered while order[j] computes: it and the next ``prefetch``."""
        return order[j : j + 1 + prefetch]

    def names(ls):
        return ", ".join(str(x) for x in ls)

    add(f"start: each of {dp} ranks holds 1/{dp} of every layer and of its optimizer states",
        "", -1)  # fmt: skip
    for phase, order in (("forward", list(range(layers))), ("backward", list(range(layers))[::-1])):
        again = " again" if phase == "backward" else ""
        for j, i in enumerate(order):
            if prefetch == 0 or j == 0:
                gathered[i] = True
                add(f"{phase}: all-gather layer {i}'s parameters{again}", "all-gather", i)
            nxt = ahead(order, j)[1:]
            for x in nxt:
                gathered[x] = True
            meanwhile = f" while all-gathering layer {names(nxt)}" if nxt else ""
            if phase == "forward":
                if prefetch == 0:
                    gathered[i] = False
                    add(f"forward: compute layer {i}, then free the gathered shards", "compute", i)
                else:
                    add(f"forward: compute layer {i}{meanwhile}", "compute", i)
                    gathered[i] = False
            else:
                grad[i] = "full"
                add(f"backward: compute layer {i}'s gradient on each rank's own data{meanwhile}",
                    "compute", i)  # fmt: skip
                gathered[i], grad[i] = False, "shard"
                add(f"backward: reduce-scatter layer {i}'s gradient, free parameters",
                    "reduce-scatter", i)  # fmt: skip
        if phase == "forward":
            gathered[:] = [False] * layers  # prefetched for a next layer that does not exist
    updated[:] = [True] * layers
    add("optimizer: each rank updates only its own shard with its own Adam states", "update", -1)
    return frames
