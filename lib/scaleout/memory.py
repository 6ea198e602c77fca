"""Memory of data-parallel training: model states, ZeRO sharding, activations, GPU counts.

Taught in chapter 6, "ZeRO sharding" (``chapters/06_zero.ipynb``). Units: bytes (GB = 1e9
bytes); ``params`` (the paper's psi) is a count of parameters; ``dp`` (N_d) is the
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
  Models", MLSys 2023 (arXiv 2205.05198), Section 4 and Table 2.
* Parameter count of a GPT layer stack and the model presets: Narayanan et al., SC21
  (arXiv 2104.04473), Section 5.1 and Table 1.
* :func:`greedy_partition` replays PyTorch's ``torch/distributed/optim/
  zero_redundancy_optimizer.py``, ``ZeroRedundancyOptimizer._partition_parameters``.
"""

from __future__ import annotations

import math
import operator
from dataclasses import dataclass

import numpy as np

from . import checks

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


@dataclass(frozen=True)
class State:
    """One kind of tensor kept per parameter: its name, kind (a member of ``KINDS``) and
    bytes per parameter."""

    name: str
    kind: str
    bytes_per_param: float


def _positive(name: str, x, integer: bool = False, low: float = 0.0) -> np.ndarray:
    """x as a float array; ValueError unless finite and > low (>= 1 and whole if integer)."""
    try:
        arr = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a real number or array, got {x!r}") from None
    if isinstance(x, bool) or not np.all(np.isfinite(arr)) or np.any(arr <= low):
        raise ValueError(f"{name} must be finite and > {low:g}, got {x!r}")
    if integer and (np.any(arr < 1) or np.any(arr != np.round(arr))):
        raise ValueError(f"{name} must be a whole number >= 1, got {x!r}")
    return arr


def _out(x):
    x = np.asarray(x, dtype=np.float64)
    return float(x) if x.ndim == 0 else x


def _choice(name: str, value, allowed):
    if value not in allowed:
        raise ValueError(f"{name} must be one of {allowed}, got {value!r}")
    return value


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
        k = checks.nonnegative("k", k)
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

    @property
    def total(self):
        """All model-state bytes on one device."""
        return _out(np.asarray(self.parameters) + self.gradients + self.optimizer_states)


def model_state_bytes(params, stage: int, dp=1, optimizer="adam", k=None, precision="mixed"):
    """Model-state bytes per device for ZeRO ``stage`` (0 = plain DP) over ``dp`` ranks.

    ZeRO section 5 (Table 1, Figure 1), with K from :func:`states_per_param`:
    stage 0: (2 + 2 + K) psi; stage 1: 4 psi + K psi / N_d; stage 2: 2 psi + (2 + K) psi / N_d;
    stage 3: (2 + 2 + K) psi / N_d. Vectorised over ``params`` and ``dp`` (broadcast).
    """
    psi = _positive("params", params)
    n = _positive("dp", dp, integer=True)
    if stage not in STAGES or isinstance(stage, bool):
        raise ValueError(
            f"stage must be one of {STAGES} (0 = plain data parallelism), got {stage!r}"
        )
    breakdown, by_kind = {}, dict.fromkeys(KINDS, 0.0)
    for s in states_per_param(optimizer, precision, k):
        sharded = stage >= SHARDED_FROM[s.kind]
        b = s.bytes_per_param * psi / (n if sharded else 1.0) + 0.0 * n
        breakdown[s.name] = _out(b)
        by_kind[s.kind] = by_kind[s.kind] + b
    return ModelStates(
        _out(psi), stage, _out(n), breakdown,
        *(_out(by_kind[kind]) for kind in KINDS),
    )  # fmt: skip


def device_bytes(params, stage, dp=1, activation_bytes=0.0, optimizer="adam", k=None,
                 precision="mixed"):  # fmt: skip
    """Memory per device: the model states of :func:`model_state_bytes` plus
    ``activation_bytes`` (ZeRO-DP does not shard activations). Vectorised like it."""
    act = np.asarray(activation_bytes, dtype=np.float64)
    if not np.all(np.isfinite(act)) or np.any(act < 0):
        raise ValueError(f"activation_bytes must be finite and >= 0, got {activation_bytes!r}")
    return _out(model_state_bytes(params, stage, dp, optimizer, k, precision).total + act)


def comm_volume(params, stage: int, dp=None):
    """Elements each rank sends per training step (psi units): 2 psi for plain DP and ZeRO
    stages 1-2, 3 psi for stage 3 (ZeRO section 7.2; see ``COMM_PATTERN``). With ``dp`` the
    ring algorithms' exact factor (dp - 1) / dp is applied."""
    psi = _positive("params", params)
    if stage not in STAGES or isinstance(stage, bool):
        raise ValueError(f"stage must be one of {STAGES}, got {stage!r}")
    volume = psi * sum(v for _, _, v in COMM_PATTERN[stage])
    if dp is not None:
        n = _positive("dp", dp, integer=True)
        volume = volume * (n - 1) / n
    return _out(volume)


def activation_bytes_per_layer(
    seq, batch, hidden, heads, recompute="none", tp=1, sequence_parallel=False
):
    """Activation bytes of one transformer layer kept for the backward pass.

    Korthikanti et al. 2022, Table 2 (fp16 activations, 1-byte dropout masks; s = ``seq``,
    b = ``batch`` (micro-batch), h = ``hidden``, a = ``heads``, t = ``tp``):
    none: s b h (10 + 24/t + 5 a s/(h t)), or s b h (34/t + 5 a s/(h t)) with sequence
    parallelism; selective (recompute only the attention core): drop the 5 a s/(h t) term;
    full (keep only each layer's input): 2 s b h. With t = 1: s b h (34 + 5 a s / h).
    """
    s, b, h, a = (
        _positive(n, v)
        for n, v in zip("seq batch hidden heads".split(), (seq, batch, hidden, heads), strict=True)
    )
    t = _positive("tp", tp, integer=True)
    _choice("recompute", recompute, RECOMPUTE)
    sbh = s * b * h
    if recompute == "full":
        return _out(2.0 * sbh + 0.0 * t * a)
    linear = 34.0 / t if sequence_parallel else 10.0 + 24.0 / t
    attention = 5.0 * a * s / (h * t) if recompute == "none" else 0.0
    return _out(sbh * (linear + attention))


def activation_bytes(layers, seq, batch, hidden, heads, recompute="none", tp=1,
                     sequence_parallel=False):  # fmt: skip
    """Activation bytes of ``layers`` transformer layers (embeddings and the output layer,
    a few percent for large models, left out): layers x :func:`activation_bytes_per_layer`."""
    n = _positive("layers", layers, integer=True)
    per_layer = activation_bytes_per_layer(seq, batch, hidden, heads, recompute, tp,
                                           sequence_parallel)  # fmt: skip
    return _out(n * per_layer)


@dataclass(frozen=True)
class Transformer:
    """A GPT configuration of Narayanan et al. 2021, Table 1 (V = 51200, s = 2048)."""

    name: str
    layers: int
    hidden: int
    heads: int
    seq: int = 2048
    vocab: int = 51200

    @property
    def params(self) -> float:
        """The parameter count, from :func:`transformer_params`."""
        return transformer_params(self.layers, self.hidden, self.seq, self.vocab)


def transformer_params(layers, hidden, seq=2048, vocab=51200):
    """Parameters of a GPT model, 12 l h^2 (1 + 13/(12 h) + (V + s)/(12 l h)) (Narayanan et
    al. 2021, Section 5.1). Vectorised."""
    nl, h = _positive("layers", layers, integer=True), _positive("hidden", hidden, integer=True)
    s, v = _positive("seq", seq, integer=True), _positive("vocab", vocab, integer=True)
    return _out(12 * nl * h**2 * (1 + 13 / (12 * h) + (v + s) / (12 * nl * h)))


TRANSFORMERS = {
    m.name: m
    for m in (
        Transformer("1.7B", 24, 2304, 24), Transformer("3.6B", 30, 3072, 32),
        Transformer("7.5B", 36, 4096, 32), Transformer("18.4B", 40, 6144, 48),
        Transformer("39.1B", 48, 8192, 64), Transformer("76.1B", 60, 10240, 80),
        Transformer("145.6B", 80, 12288, 96), Transformer("310.1B", 96, 16384, 128),
        Transformer("529.6B", 105, 20480, 128), Transformer("1T", 128, 25600, 160),
    )
}  # fmt: skip


def gpus_to_hold(total_bytes, gpu_bytes=80e9, usable_fraction=1.0):
    """Fewest GPUs of ``gpu_bytes`` whose usable memory (``usable_fraction`` of it, in
    (0, 1]) adds up to ``total_bytes``: ceil(total / (gpu x fraction)). Vectorised."""
    total, gpu = _positive("total_bytes", total_bytes), _positive("gpu_bytes", gpu_bytes)
    frac = _positive("usable_fraction", usable_fraction)
    if np.any(frac > 1):
        raise ValueError(f"usable_fraction must lie in (0, 1], got {usable_fraction!r}")
    return _out(_ceil_div(total, gpu * frac))


def _ceil_div(num, den):
    """ceil(num / den) without float noise: 24e12 / 60e9 gives 400, not 401."""
    n = np.ceil(num / den)
    return np.where((n - 1) * den >= num * (1 - 1e-12), n - 1, n)


def min_dp_to_fit(params, stage, gpu_bytes=80e9, activation_bytes=0.0, optimizer="adam",
                  k=None, precision="mixed", usable_fraction=1.0):  # fmt: skip
    """Smallest N_d at which model states + ``activation_bytes`` fit in ``usable_fraction``
    of ``gpu_bytes`` per device, or None if no N_d does (the unsharded part alone is too big).

    Solves replicated + sharded / N_d + activations <= usable for N_d, with the split of
    :func:`model_state_bytes`.
    """
    if not 0 < usable_fraction <= 1:
        raise ValueError(f"usable_fraction must lie in (0, 1], got {usable_fraction!r}")
    usable = float(_positive("gpu_bytes", gpu_bytes)) * usable_fraction
    if activation_bytes < 0 or not math.isfinite(activation_bytes):
        raise ValueError(f"activation_bytes must be finite and >= 0, got {activation_bytes!r}")
    psi = float(_positive("params", params))
    if stage not in STAGES or isinstance(stage, bool):
        raise ValueError(f"stage must be one of {STAGES}, got {stage!r}")
    replicated = sharded = 0.0
    for s in states_per_param(optimizer, precision, k):
        if stage >= SHARDED_FROM[s.kind]:
            sharded += s.bytes_per_param * psi
        else:
            replicated += s.bytes_per_param * psi
    room = usable - replicated - activation_bytes
    if sharded == 0:
        return 1 if room >= 0 else None
    if room <= 0:
        return None
    return max(1, int(_ceil_div(sharded, room)))


def greedy_partition(numels, dp: int):
    """Which rank owns each tensor when ``torch.distributed.optim.ZeroRedundancyOptimizer``
    shards optimizer states over ``dp`` ranks: tensors sorted by size (largest first, stable),
    each given to the rank with the fewest elements so far (lowest rank on ties). Replays
    ``ZeroRedundancyOptimizer._partition_parameters``. Returns (owner per tensor, elements
    per rank) as int arrays."""
    sizes = [operator.index(x) for x in numels]
    if not sizes or any(x < 0 for x in sizes):
        raise ValueError(f"numels must be a non-empty list of tensor sizes >= 0, got {numels!r}")
    if isinstance(dp, bool) or not isinstance(dp, int) or dp < 1:
        raise ValueError(f"dp must be an integer >= 1, got {dp!r}")
    owner, per_rank = np.zeros(len(sizes), dtype=np.int64), np.zeros(dp, dtype=np.int64)
    for i in sorted(range(len(sizes)), key=lambda j: -sizes[j]):
        rank = int(np.argmin(per_rank))  # first minimum, like _get_min_index
        owner[i] = rank
        per_rank[rank] += sizes[i]
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


def zero3_step(layers: int, dp: int):
    """The frames of one ZeRO-3 training step over ``layers`` equal layers and ``dp`` ranks
    (ZeRO section 5.3 and 7.2.2; FSDP, Zhao et al. 2023, Section 3): forward, per layer,
    all-gather then compute and free; backward, in reverse, all-gather, compute the full
    local gradient, reduce-scatter it and free; then each rank updates only its shard."""
    for name, v in (("layers", layers), ("dp", dp)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"{name} must be an integer >= 1, got {v!r}")
    gathered, grad, updated = [False] * layers, ["none"] * layers, [False] * layers
    frames = []

    def add(title, op, layer):
        frames.append(Zero3Frame(title, op, layer, tuple(gathered), tuple(grad), tuple(updated)))

    add(f"start: each of {dp} ranks holds 1/{dp} of every layer and of its optimizer states",
        "", -1)  # fmt: skip
    for i in range(layers):
        gathered[i] = True
        add(f"forward: all-gather layer {i}'s parameters", "all-gather", i)
        gathered[i] = False
        add(f"forward: compute layer {i}, then free the gathered shards", "compute", i)
    for i in reversed(range(layers)):
        gathered[i] = True
        add(f"backward: all-gather layer {i}'s parameters again", "all-gather", i)
        grad[i] = "full"
        add(f"backward: compute layer {i}'s gradient on each rank's own data", "compute", i)
        gathered[i], grad[i] = False, "shard"
        add(f"backward: reduce-scatter layer {i}'s gradient, free parameters", "reduce-scatter", i)
    updated[:] = [True] * layers
    add("optimizer: each rank updates only its own shard with its own Adam states", "update", -1)
    return frames
