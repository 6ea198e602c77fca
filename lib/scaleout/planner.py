"""Planning 3D parallelism: search (tensor, pipeline, data) partitions against a cost model.

Taught in chapter 14, "Putting it together" (``chapters/14_planner.ipynb``). Nothing here
is a new cost model: every term comes from an earlier chapter's module.

* Parameters ``P = 12 l h^2 (1 + 13/(12h) + (V+s)/(12 l h))`` and FLOPs per iteration with
  full recomputation ``96 B s l h^2 (1 + s/(6h) + V/(16 l h))``: Narayanan et al., SC21
  (arXiv 2104.04473), Section 5.1 and Appendix (``memory.transformer_params``). Without
  recomputation the layers run 3 instead of 4 forward-equivalents: ``72 B s l h^2 (1 +
  s/(6h)) + 6 B s h V``; selective recomputation (Korthikanti et al. 2022, Section 5)
  re-runs only the attention core, ``4 B s^2 h`` per layer.
* Memory per GPU: ZeRO model states of the GPU's ``P/(t p)`` parameters over ``d`` ranks
  (``memory.model_state_bytes``) plus activations of ``min(p, m)`` micro-batches in flight
  on the first 1F1B stage (Narayanan et al. Section 2.2.1) times ``l/p`` layers of
  ``memory.activation_bytes_per_layer`` (Korthikanti et al. Table 2).
* Step time = compute + bubble + tensor-, pipeline- and data-parallel communication, none
  overlapped (an upper bound on exposed communication):
  compute = executed FLOPs / (n x ``achievable_fraction`` x peak); the 1F1B bubble is
  ``pipeline.bubble_closed_form("1f1b", p, m)`` = (p-1)/m of the compute;
  TP = ``tensor_parallel.layer_comm_seconds`` per layer and micro-batch (inside a server
  while t <= GPUs per server, on the NICs beyond; full recomputation repeats the forward
  all-reduces); PP = two stage-to-stage transfers per micro-batch (forward activation,
  backward gradient) with Megatron's scatter-gather (``tensor_parallel.stage_transfer``,
  Narayanan et al. Section 4.1); DP = ``tensor_parallel.collective_seconds("allreduce")``
  of the 2-byte gradients of ``P/(t p)`` parameters over d ranks, scaled by
  ``memory.comm_volume`` for the ZeRO stage (1.5x for stage 3).
* Rank layout: Megatron's order, tensor-parallel ranks adjacent, then data, then pipeline
  (``megatron/core/parallel_state.py``, ``initialize_model_parallel``).

Units: seconds, bytes, FLOP/s. ``achievable_fraction`` is an explicit input: the fraction
of peak FLOP/s the kernels reach; the model does not predict it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from . import costmodel as M
from . import hardware as H
from . import memory as MEM
from . import pipeline as PP
from . import tensor_parallel as TP

RECOMPUTE = MEM.RECOMPUTE
A100_BF16_DENSE_FLOPS = 312e12  # NVIDIA A100 datasheet: BF16 Tensor Core 312 TFLOPS (dense)
DTYPE_BYTES = 2  # fp16/bf16 activations and gradients


def _int(name: str, value, low: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < low:
        raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
    return int(value)


def _pos(name: str, value, high: float = math.inf) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= high:
        raise ValueError(f"{name} must be a number in (0, {high:g}], got {value!r}")
    return float(value)


@dataclass(frozen=True)
class Model:
    """A GPT model: ``layers`` l, ``hidden`` h, ``heads`` a, ``seq`` s, ``vocab`` V."""

    name: str
    layers: int
    hidden: int
    heads: int
    seq: int = 2048
    vocab: int = 51200

    def __post_init__(self):
        for key in ("layers", "hidden", "heads", "seq", "vocab"):
            _int(key, getattr(self, key))
        if self.hidden % self.heads:
            raise ValueError(
                f"heads must divide hidden (the head size h/a is an integer), got "
                f"hidden={self.hidden}, heads={self.heads}: change one of them"
            )

    @property
    def params(self) -> float:
        """Parameters, Narayanan et al. Section 5.1 (``memory.transformer_params``)."""
        return float(MEM.transformer_params(self.layers, self.hidden, self.seq, self.vocab))

    def flops(self, batch, recompute: str = "full") -> float:
        """FLOPs of one iteration on ``batch`` sequences (multiply-add = 2 FLOPs).

        ``"full"``: Narayanan et al.'s 96 B s l h^2 (1 + s/(6h) + V/(16 l h));
        ``"none"``: 72 B s l h^2 (1 + s/(6h)) + 6 B s h V (the model FLOPs, used for MFU);
        ``"selective"``: that plus 4 B s^2 h per layer (the attention core run again)."""
        if recompute not in RECOMPUTE:
            raise ValueError(f"recompute must be one of {RECOMPUTE}, got {recompute!r}")
        b = np.asarray(batch, dtype=np.float64)
        s, nl, h, v = self.seq, self.layers, self.hidden, self.vocab
        if recompute == "full":
            return 96.0 * b * s * nl * h * h * (1 + s / (6 * h) + v / (16 * nl * h))
        model = 72.0 * b * s * nl * h * h * (1 + s / (6 * h)) + 6.0 * b * s * h * v
        return model + (4.0 * b * s * s * h * nl if recompute == "selective" else 0.0)


@dataclass(frozen=True)
class Cluster:
    """GPUs, servers, per-GPU memory and peak FLOP/s, links (``hardware.link`` names)."""

    name: str
    gpus: int
    gpus_per_server: int = 8
    gpu_bytes: float = 80e9
    peak_flops: float = A100_BF16_DENSE_FLOPS
    intra: str = "nvlink3-a100"
    inter: str = "nic-200g"

    def __post_init__(self):
        _int("gpus", self.gpus)
        _int("gpus_per_server", self.gpus_per_server)
        _pos("gpu_bytes", self.gpu_bytes)
        _pos("peak_flops", self.peak_flops)
        H.link(self.intra), H.link(self.inter)  # noqa: B018 (validates the names)


@dataclass(frozen=True)
class Plans:
    """Plans as parallel numpy columns, one row per plan (seconds, bytes, FLOP/s)."""

    t: np.ndarray
    p: np.ndarray
    d: np.ndarray
    b: np.ndarray  # micro-batch size
    m: np.ndarray  # micro-batches per step
    zero: np.ndarray
    recompute: np.ndarray  # strings
    memory_bytes: np.ndarray
    fits: np.ndarray
    compute_s: np.ndarray
    bubble_s: np.ndarray
    tp_s: np.ndarray
    pp_s: np.ndarray
    dp_s: np.ndarray
    step_s: np.ndarray
    flops_per_gpu: np.ndarray  # executed FLOP/s per GPU (Narayanan et al.'s metric)
    mfu: np.ndarray  # model FLOPs (no recomputation) / (n peak step)
    extra: dict = field(default_factory=dict)

    PARTS = ("compute_s", "bubble_s", "tp_s", "pp_s", "dp_s")

    def __len__(self) -> int:
        return len(self.t)

    def take(self, index) -> Plans:
        cols = {k: getattr(self, k)[index] for k in self.__dataclass_fields__ if k != "extra"}
        return Plans(**cols, extra=self.extra)

    def row(self, i: int) -> dict:
        """Plan ``i`` as a dict of Python scalars."""
        out = {}
        for k in self.__dataclass_fields__:
            if k != "extra":
                v = getattr(self, k)[i]
                out[k] = v.item() if hasattr(v, "item") else v
        return out


def _divisors(n: int) -> list[int]:
    return [k for k in range(1, n + 1) if n % k == 0]


def candidates(model: Model, cluster: Cluster, global_batch: int, achievable_fraction: float,
               *, usable_fraction: float = 0.9, max_microbatch: int = 8, zero_stages=(0, 1),
               recompute=RECOMPUTE, ts=None, ps=None) -> Plans:  # fmt: skip
    """Every (t, p, d, b, m, ZeRO stage, recomputation) with t p d = GPUs, t dividing heads
    and hidden, p dividing layers, d dividing ``global_batch``, b (<= ``max_microbatch``)
    dividing B/d; with memory, ``fits`` (<= ``usable_fraction`` of the GPU) and the step
    time breakdown of the module docstring. ``ts``/``ps`` restrict t and p. Unsorted."""
    if not isinstance(model, Model) or not isinstance(cluster, Cluster):
        raise ValueError("model must be a planner.Model and cluster a planner.Cluster")
    batch = _int("global_batch", global_batch)
    frac = _pos("achievable_fraction", achievable_fraction, 1.0)
    usable = _pos("usable_fraction", usable_fraction, 1.0)
    mb_max = _int("max_microbatch", max_microbatch)
    stages = tuple(zero_stages)
    if not stages or any(s not in MEM.STAGES for s in stages):
        raise ValueError(f"zero_stages must be a non-empty subset of {MEM.STAGES}, got {stages}")
    recs = tuple(recompute)
    if not recs or any(r not in RECOMPUTE for r in recs):
        raise ValueError(f"recompute must be a non-empty subset of {RECOMPUTE}, got {recs}")
    n, g = cluster.gpus, cluster.gpus_per_server
    nl, h, a, s = model.layers, model.hidden, model.heads, model.seq
    rows = []
    for t in _divisors(n):
        if math.gcd(h, a) % t or (ts is not None and t not in ts):
            continue
        for p in _divisors(n // t):
            if nl % p or (ps is not None and p not in ps):
                continue
            d = n // (t * p)
            if batch % d:
                continue
            rows += [(t, p, d, b, batch // (d * b)) for b in _divisors(batch // d) if b <= mb_max]
    if not rows:
        raise ValueError(
            f"no (t, p, d) with t p d = gpus = {n}, t | gcd(hidden, heads), p | layers and "
            f"d | global_batch = {batch}: change gpus or global_batch"
        )
    base = np.array(rows, dtype=np.int64)
    k = len(base)
    combos = [(z, r) for z in stages for r in recs]
    grid = np.repeat(base, len(combos), axis=0)
    t, p, d, b, m = grid.T
    zero = np.tile(np.array([z for z, _ in combos]), k)
    rec = np.tile(np.array([r for _, r in combos]), k)
    links = dict(gpus_per_server=g, intra=cluster.intra, inter=cluster.inter)

    # Memory: ZeRO model states of P / (t p) parameters over d, plus in-flight activations.
    params_gpu = model.params / (t * p)
    states = np.zeros(len(t))
    for z in stages:
        sel = zero == z
        states[sel] = MEM.model_state_bytes(params_gpu[sel], z, d[sel]).total
    act = np.zeros(len(t))
    for r in recs:
        sel = rec == r
        per_layer = MEM.activation_bytes_per_layer(s, b[sel], h, a, r, t[sel])
        act[sel] = np.minimum(p[sel], m[sel]) * (nl // p[sel]) * per_layer
    mem = states + act
    fits = mem <= usable * cluster.gpu_bytes

    # Compute and bubble (pipeline.bubble_closed_form for each distinct (p, m)).
    flops = np.array([model.flops(batch, r) for r in rec])
    compute = flops / (n * frac * cluster.peak_flops)
    bub = {
        (pi, mi): PP.bubble_closed_form("1f1b", pi, mi) for pi, mi in set(zip(p, m, strict=True))
    }
    bubble = compute * np.array([bub[key] for key in zip(p, m, strict=True)])

    # Tensor parallelism: per layer and micro-batch, l/p layers, m micro-batches.
    tp_layer = {}
    for ti, bi in set(zip(t, b, strict=True)):
        sec = TP.layer_comm_seconds(int(bi), s, h, int(ti), DTYPE_BYTES, **links)
        tp_layer[(ti, bi)] = (sec.forward, sec.backward)
    fw, bw = np.array([tp_layer[key] for key in zip(t, b, strict=True)]).T
    tp_s = (nl // p) * m * (fw * np.where(rec == "full", 2, 1) + bw)

    # Pipeline: 2 transfers per micro-batch when p > 1 (scatter-gather, Sec. 4.1).
    nv, nic = H.link(cluster.intra), H.link(cluster.inter)
    msg = b.astype(np.float64) * s * h * DTYPE_BYTES
    across = t * d >= g  # next stage is t d ranks away: another server
    link_alpha = np.where(across, nic.alpha_s, nv.alpha_s)
    link_beta = np.where(across, nic.beta_s_per_byte, nv.beta_s_per_byte)
    send = M.collective_time("broadcast", "binomial", msg / t, 2, link_alpha, link_beta)
    gather = np.zeros(len(t))
    for ti in set(t):
        sel = (t == ti) & (ti > 1)
        if np.any(sel):
            gather[sel] = TP.collective_seconds("allgather", msg[sel], int(ti), **links)
    pp_s = np.where(p > 1, 2.0 * m * (send + gather), 0.0)

    # Data parallelism: gradients of P/(t p) parameters over d ranks placed t apart.
    scale = {z: MEM.comm_volume(1.0, z) / MEM.comm_volume(1.0, 0) for z in stages}
    dp_s = np.zeros(len(t))
    for ti in set(t):
        for di in set(d[t == ti]):
            sel = (t == ti) & (d == di)
            if di > 1:
                dp_links = dict(links, gpus_per_server=max(1, g // int(ti)))
                dp_s[sel] = TP.collective_seconds(
                    "allreduce", params_gpu[sel] * DTYPE_BYTES, int(di), **dp_links
                )
    dp_s = dp_s * np.array([scale[z] for z in zero])

    step = compute + bubble + tp_s + pp_s + dp_s
    model_flops = model.flops(batch, "none")
    return Plans(
        t, p, d, b, m, zero, rec, mem, fits, compute, bubble, tp_s, pp_s, dp_s, step,
        flops / (n * step), model_flops / (n * cluster.peak_flops * step),
        extra=dict(model=model, cluster=cluster, global_batch=batch,
                   achievable_fraction=frac, usable_fraction=usable),
    )  # fmt: skip


def search(model: Model, cluster: Cluster, global_batch: int, achievable_fraction: float,
           **options) -> Plans:  # fmt: skip
    """The plans of :func:`candidates` that fit memory, fastest first (ties: fewer t, then
    fewer p). Raises ValueError if none fits."""
    return search_plans(candidates(model, cluster, global_batch, achievable_fraction, **options))


def search_plans(plans: Plans) -> Plans:
    """The fitting plans of ``plans`` (from :func:`candidates`), fastest first."""
    fit = np.flatnonzero(plans.fits)
    if fit.size == 0:
        least = float(plans.memory_bytes.min()) / 1e9
        gpu = plans.extra["cluster"].gpu_bytes
        raise ValueError(
            f"no plan fits in {gpu / 1e9:g} GB per GPU (the smallest needs "
            f"{least:.1f} GB): use more GPUs, a smaller model, or allow ZeRO stages / "
            f"recomputation"
        )
    order = np.lexsort((plans.p[fit], plans.t[fit], plans.step_s[fit]))
    return plans.take(fit[order])


def best_per_tp(plans: Plans):
    """(ts, ps, best step seconds as a len(ts) x len(ps) array, NaN where nothing fits or
    the (t, p) pair is impossible) from :func:`candidates` output: the heatmap's data."""
    ts, ps = np.unique(plans.t), np.unique(plans.p)
    grid = np.full((len(ts), len(ps)), np.nan)
    ok = plans.fits
    for i, t in enumerate(ts):
        for j, p in enumerate(ps):
            sel = ok & (plans.t == t) & (plans.p == p)
            if np.any(sel):
                grid[i, j] = plans.step_s[sel].min()
    return ts, ps, grid


def possible_per_tp(plans: Plans):
    """Boolean len(ts) x len(ps) array: the (t, p) pair exists (fitting or not)."""
    ts, ps = np.unique(plans.t), np.unique(plans.p)
    return np.array([[np.any((plans.t == t) & (plans.p == p)) for p in ps] for t in ts])


# ------------------------------------------------------------------ presets and data

GPT3 = Model("GPT-3 175B", 96, 12288, 96)  # Brown et al. 2020, Table 2.1
ONE_T = Model("1T", 128, 25600, 160)  # Narayanan et al. 2021, Table 1
LLAMA70 = Model("70B-class (Llama-2-70B shape)", 80, 8192, 64, seq=4096, vocab=32000)

SELENE_FLOPS_NOTE = "A100 80 GB, 312 TFLOP/s BF16 dense; DGX A100: NVLink 3, 8 x 200 Gb/s"


def a100_cluster(gpus: int) -> Cluster:
    """DGX A100 servers (8 GPUs, NVLink 3, one 200 Gb/s HDR NIC per GPU), as Selene."""
    return Cluster(f"{gpus} A100", gpus)


def h100_cluster(gpus: int) -> Cluster:
    """DGX H100 servers (8 GPUs, NVLink 4, one 400 Gb/s NIC per GPU), 989 TFLOP/s dense."""
    return Cluster(f"{gpus} H100", gpus, peak_flops=TP.H100_SXM_BF16_DENSE_FLOPS,
                   intra="nvlink4-h100", inter="nic-400g")  # fmt: skip


PRESETS = {
    "GPT-3 175B, 1,024 A100": (GPT3, a100_cluster(1024), 1536),
    "1T, 3,072 A100": (ONE_T, a100_cluster(3072), 3072),
    "70B-class, 256 H100": (LLAMA70, h100_cluster(256), 512),
}


@dataclass(frozen=True)
class Published:
    """A row of Narayanan et al. 2021, Table 1 (weak scaling on Selene, A100 80 GB)."""

    name: str  # the memory.TRANSFORMERS key
    t: int
    p: int
    gpus: int
    batch: int
    tflops_per_gpu: float  # achieved teraFLOP/s per GPU (96-formula FLOPs / time)

    @property
    def d(self) -> int:
        return self.gpus // (self.t * self.p)

    @property
    def model(self) -> Model:
        return model_from_table(self.name)


NARAYANAN_TABLE1 = tuple(
    Published(*row)
    for row in (
        ("1.7B", 1, 1, 32, 512, 137), ("3.6B", 2, 1, 64, 512, 138),
        ("7.5B", 4, 1, 128, 512, 142), ("18.4B", 8, 1, 256, 1024, 135),
        ("39.1B", 8, 2, 512, 1536, 138), ("76.1B", 8, 4, 1024, 1792, 140),
        ("145.6B", 8, 8, 1536, 2304, 148), ("310.1B", 8, 16, 1920, 2160, 155),
        ("529.6B", 8, 35, 2520, 2520, 163), ("1T", 8, 64, 3072, 3072, 163),
    )
)  # fmt: skip

TRANSFORMER_NAMES = tuple(MEM.TRANSFORMERS)


def model_from_table(name: str) -> Model:
    """The ``memory.TRANSFORMERS`` configuration ``name`` (Narayanan et al. Table 1)."""
    if name not in MEM.TRANSFORMERS:
        raise ValueError(f"name must be one of {list(MEM.TRANSFORMERS)}, got {name!r}")
    c = MEM.TRANSFORMERS[name]
    return Model(c.name, c.layers, c.hidden, c.heads, c.seq, c.vocab)


@dataclass(frozen=True)
class Validation:
    """One row of Table 1 beside the planner (throughputs in TFLOP/s per GPU)."""

    published: Published
    predicted_same: float  # the published (t, p, d), full recomputation, best b
    best_t: int
    best_p: int
    best_d: int
    best_b: int
    best_zero: int
    best_recompute: str
    predicted_best: float  # executed FLOP/s per GPU of the planner's best plan
    best_mfu: float
    same_mfu: float
    speedup: float  # published plan's predicted step time / best plan's


def validate(achievable_fraction: float, **options) -> list[Validation]:
    """For every row of ``NARAYANAN_TABLE1``: the published plan evaluated by the cost
    model (as the paper ran it: full recomputation, no ZeRO) and the planner's best."""
    out = []
    for pub in NARAYANAN_TABLE1:
        model, cluster = model_from_table(pub.name), a100_cluster(pub.gpus)
        best = search(model, cluster, pub.batch, achievable_fraction, **options)
        same = search(model, cluster, pub.batch, achievable_fraction, ts=[pub.t], ps=[pub.p],
                      zero_stages=(0,), recompute=("full",))  # fmt: skip
        r = best.row(0)
        out.append(Validation(
            pub, same.flops_per_gpu[0] / 1e12, r["t"], r["p"], r["d"], r["b"], r["zero"],
            r["recompute"], r["flops_per_gpu"] / 1e12, r["mfu"], float(same.mfu[0]),
            float(same.step_s[0] / r["step_s"]),
        ))  # fmt: skip
    return out


def training_days(tokens: float, params: float, gpus: int, flops_per_gpu: float) -> float:
    """End-to-end training time 8 T P / (n X) in days (Narayanan et al. 2021, Section 5.1:
    T tokens, P parameters, n GPUs, X achieved FLOP/s per GPU, full recomputation)."""
    t, p = _pos("tokens", tokens), _pos("params", params)
    n, x = _int("gpus", gpus), _pos("flops_per_gpu", flops_per_gpu)
    return 8.0 * t * p / (n * x) / 86400.0
