"""One plan's step: its time, broken down, and its memory per GPU.

:func:`predict` builds the step from the parts the book teaches, for a :class:`Plan`
(t, p, d, micro-batch b, v chunks, ZeRO stage, recomputation, sequence parallelism, TP
overlap, DP overlap, the memory accounting, FlashAttention):

* per layer and micro-batch, compute (:mod:`scaleout.planner.compute_term`, and with
  ``non_gemm`` the memory-bound work it leaves out, :mod:`scaleout.planner.non_gemm`: bias
  gradients, gradient accumulation, the embedding; all multiplied by the GPU
  generation's calibration ``k``) plus the exposed TP communication
  (:func:`scaleout.planner.comm.tp_exposed`; full recomputation repeats the forward's);
* a stage runs ``l/p`` layers; the last one also the output layer and the loss; each
  micro-batch crosses ``v`` chunk boundaries each way (:func:`~scaleout.planner.comm.pp_seconds`);
* the pipeline: ``m`` micro-batches of the slowest stage plus the bubble of
  :func:`scaleout.pipeline.bubble_closed_form` (1F1B, or interleaved with ``v`` chunks:
  ``(p-1)/(v m)``) of the mean stage;
* then the exposed DP traffic (:func:`~scaleout.planner.comm.dp_exposed`; ZeRO-3's
  all-gathers repeat per micro-batch, prefetched one layer ahead, each pass its own
  pipeline of the stage's layers as in chapter 6: :func:`scaleout.memory.zero3_exposed_seconds`)
  and the optimizer step (Adam, and with ``non_gemm`` the per-step gradient passes of
  :mod:`~scaleout.planner.non_gemm`).

Memory (the first stage, which holds the most micro-batches, or the last, which holds the
logits): :func:`scaleout.memory.model_state_bytes` with the run's accounting
(``precision``: the ZeRO paper's 16 B/param ``"mixed"``, Megatron's 18 / 20 B/param
``"megatron-bf16"`` / ``"megatron-fp16"``; ZeRO-1 with them is Megatron's distributed
optimizer), ZeRO-3's peak with one prefetched layer (:func:`scaleout.memory.zero3_peak_bytes`),
plus :func:`scaleout.memory.activation_bytes_per_layer` (Korthikanti et al. Table 2, with
recomputation, SP and FlashAttention) for ``l/p`` layers of ``min(p, m)`` micro-batches
in flight (1F1B, Narayanan et al. Sec. 2.2.1), times ``1 + (p-1)/(p v)`` interleaved
(Korthikanti et al. Sec. 4.2.3); with full recomputation one layer's full activations on
top (the layer being recomputed). Not counted: embeddings' activations, NCCL and
allocator buffers, fragmentation (hence ``usable_fraction``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .. import checks
from .. import memory as MEM
from .. import pipeline as PP
from .. import transformer as TF
from . import comm as C
from .compute_term import layer_times, logits_seconds, optimizer_seconds
from .model import RECOMPUTE, Cluster, Model
from .non_gemm import GRAD_BYTES, non_gemm_seconds

OVERLAPS = ("none", "megatron", "pipelined")
PRECISIONS = ("mixed", "megatron-bf16", "megatron-fp16")
PARTS = ("compute", "bubble", "tp", "pp", "dp", "optimizer")
MAX_V = 64


@dataclass(frozen=True)
class Plan:
    """How a step is run: ``t`` tensor-parallel GPUs, ``p`` pipeline stages, ``d``
    data-parallel replicas, micro-batch ``b``, ``v`` model chunks per GPU (interleaved
    schedule when > 1), ZeRO stage ``zero`` (0-3), ``recompute`` (none / selective /
    full), sequence parallelism ``sp``, TP ``overlap`` (none / megatron / pipelined),
    bucketed DP overlap ``dp_overlap``, the memory accounting ``precision``, ``flash``
    (FlashAttention), Megatron's ``scatter_gather`` between stages, and ``regather``: with
    sequence parallelism, whether the backward pass all-gathers each block's input again
    (``None``: as the implementation does, yes under Megatron's and TE's overlap, no for
    ``"none"``, the book's own layers; ``True`` with ``overlap="none"``: Megatron-LM run
    without its async overlap, as the calculon transcription of Korthikanti et al.'s
    Table 5 sets it, ``seq_par_ag_redo`` without ``tensor_par_overlap``)."""

    t: int
    p: int
    d: int
    b: int
    v: int = 1
    zero: int = 0
    recompute: str = "full"
    sp: bool = False
    overlap: str = "none"
    dp_overlap: bool = True
    precision: str = "megatron-bf16"
    flash: bool = True
    scatter_gather: bool = True
    regather: bool | None = None

    def __post_init__(self):
        for key, high in (("t", 1024), ("p", PP.MAX_STAGES), ("d", C.nccl.topo.MAX_RANKS),
                          ("b", 4096), ("v", MAX_V)):  # fmt: skip
            checks.integer(key, getattr(self, key), 1, high)
        checks.choice("zero", self.zero, MEM.STAGES)
        checks.choice("recompute", self.recompute, RECOMPUTE)
        checks.choice("overlap", self.overlap, OVERLAPS)
        checks.choice("precision", self.precision, PRECISIONS)
        for key in ("sp", "dp_overlap", "flash", "scatter_gather"):
            checks.boolean(key, getattr(self, key))
        if self.overlap == "pipelined" and not self.sp:
            raise checks.fail("overlap", "'none' or 'megatron' without sequence parallelism "
                              "(TE's pipelined overlap needs sp=True)", self.overlap)  # fmt: skip
        if self.regather is not None:
            checks.boolean("regather", self.regather)
            if self.regather and not self.sp:
                raise checks.fail("regather", "None or False without sequence parallelism",
                                  self.regather)  # fmt: skip
            if not self.regather and self.overlap != "none":
                raise checks.fail("regather", "None or True with Megatron's or TE's overlap "
                                  "(they always re-gather the input)", self.regather)  # fmt: skip
        if self.sp and self.t == 1:
            raise checks.fail("sp", "False when t = 1 (nothing to split)", self.sp)
        if self.v > 1 and self.p == 1:
            raise checks.fail("v", "1 when p = 1 (interleaving needs stages)", self.v)

    @property
    def gpus(self) -> int:
        return self.t * self.p * self.d

    @property
    def regathers(self) -> bool:
        """Whether the backward pass re-gathers each block's input (see ``regather``)."""
        if self.regather is not None:
            return self.regather
        return self.sp and self.overlap != "none"


@dataclass(frozen=True)
class Prediction:
    """A plan's predicted step: ``step_s``, the breakdown along the critical path
    (``parts``: compute, bubble, exposed tp / pp / dp, optimizer, seconds, adding up to
    ``step_s``), the communication hidden by overlap (``hidden``), memory per GPU
    (``memory_bytes``, ``fits``), ``m`` micro-batches, and throughputs."""

    plan: Plan
    m: int
    step_s: float
    parts: dict = field(default_factory=dict)
    hidden: dict = field(default_factory=dict)
    memory_bytes: float = 0.0
    fits: bool = True
    tokens_per_s_per_gpu: float = 0.0
    model_flops_per_gpu: float = 0.0
    mfu: float = 0.0

    def __post_init__(self):
        checks.instance("plan", self.plan, Plan)
        checks.integer("m", self.m, 1, 2**24)
        checks.positive("step_s", self.step_s)
        for name in ("parts", "hidden"):
            value = getattr(self, name)
            if not isinstance(value, dict) or not set(value) <= set(PARTS):
                raise checks.fail(name, f"a dict with keys from {PARTS}", value)
            for key, part in value.items():
                checks.nonnegative(f"{name}[{key!r}]", part)
        checks.nonnegative("memory_bytes", self.memory_bytes)
        checks.boolean("fits", self.fits)
        for name in ("tokens_per_s_per_gpu", "model_flops_per_gpu", "mfu"):
            checks.nonnegative(name, getattr(self, name))


def check_plan(model: Model, cluster: Cluster, global_batch: int, plan: Plan) -> int:
    """The number of micro-batches m, if ``plan`` is legal for this model and cluster
    (t p d = GPUs; t divides heads, KV heads and FFN; p divides layers, v divides l/p; d b
    divides the batch; interleaving needs p | m; SP needs t | s), else ValueError."""
    checks.instance("model", model, Model)
    checks.instance("cluster", cluster, Cluster)
    checks.instance("plan", plan, Plan)
    batch = checks.integer("global_batch", global_batch, 1, 2**24)
    t, p, d, b, v = plan.t, plan.p, plan.d, plan.b, plan.v
    if plan.gpus != cluster.gpus:
        raise checks.fail("plan", f"t p d = {cluster.gpus} GPUs", (t, p, d))
    for what, size in (("heads", model.heads), ("kv_heads", model.g), ("ffn", model.f)):
        if size % t:
            raise checks.fail("plan.t", f"a divisor of {what} = {size}", t)
    g = cluster.gpus_per_node
    if g % t and t % g:
        raise checks.fail("plan.t", f"a divisor or a multiple of {g} GPUs per server", t)
    if p > model.layers:
        raise checks.fail("plan.p", f"at most layers = {model.layers}", p)
    if stage_layers(model, p) % v:
        raise checks.fail("plan.v", f"a divisor of the {stage_layers(model, p)} layers of a "
                          "stage", v)  # fmt: skip
    if batch % (d * b):
        raise checks.fail("plan.d * plan.b", f"a divisor of global_batch = {batch}", d * b)
    m = batch // (d * b)
    if v > 1 and m % p:
        raise checks.fail("plan", f"m = {m} micro-batches a multiple of p = {p} (interleaved)",
                          (p, v))  # fmt: skip
    if plan.sp and model.seq % t:
        raise checks.fail("plan.t", f"a divisor of seq = {model.seq} (sequence parallelism)", t)
    return m


def stage_layers(model: Model, p):
    """Layers of the fullest stage, ceil(l / p): Megatron needs p | l, DeepSpeed's
    pipeline (BLOOM) and Llama 3 (first and last stage one layer short) do not.
    ``p`` may be an integer array."""
    checks.instance("model", model, Model)
    p = checks.array("p", p, integer=True, low=1, high=model.layers)
    out = -(-model.layers // p)
    return int(out) if out.ndim == 0 else out


def stage_params(model: Model, p: int, t: int) -> float:
    """Parameters on one GPU of the stage holding the most (the embedding's)."""
    t = checks.integer("t", t, 1, 1024)
    return (stage_layers(model, p) * model.layer_params + model.vocab * model.hidden
            + (model.seq * model.hidden if model.positions else 0)) / t  # fmt: skip


def activation_bytes(model: Model, b, t, recompute: str, sp: bool, flash: bool):
    """Activation bytes of one layer kept for the backward, per GPU: Korthikanti et al.'s
    count (Table 2; :func:`scaleout.memory.activation_bytes_per_layer`) term by term, for
    any shape. Per s b h: 10 replicated (norm inputs 4, QKV and MLP inputs 2 + 2, two
    dropout masks 1 + 1; divided by t with SP), Q 2, K and V 2 g/a each, the output
    projection's input 2, all divided by t; the MLP 2 + 2 per s b f (GeLU's input and
    output) or 2 + 2 + 2 (SwiGLU's gate, up and product), divided by t; the attention core
    5 a s / h / t (softmax output, dropout mask and output) or, with FlashAttention, one
    fp32 statistic per row and head, 4 a / h / t. Selective recomputation drops the core,
    full keeps the 2 s b h input. For a GPT (g = a, f = 4h) this is the memory module's
    formula. ``b`` and ``t`` may be arrays."""
    checks.instance("model", model, Model)
    b = checks.array("b", b, low=1.0, high=2.0**24)
    t = checks.array("t", t, low=1.0, high=1024.0)
    checks.choice("recompute", recompute, RECOMPUTE)
    sp, flash = checks.boolean("sp", sp), checks.boolean("flash", flash)
    out = TF.activation_bytes(model.seq, b, model.hidden, model.heads, recompute, t, sp, flash,
                              model.g, model.f, model.swiglu)  # fmt: skip
    return np.asarray(out) if np.ndim(out) else out


def memory_bytes(model: Model, plan: Plan, m: int) -> float:
    """Memory per GPU of the most loaded stage (see the module docstring)."""
    return float(memory_many(model, [checks.instance("plan", plan, Plan)], [m])[0])


def memory_many(model: Model, plans, ms) -> np.ndarray:
    """:func:`memory_bytes` of many plans at once (vectorised per accounting group);
    ``ms`` their micro-batch counts."""
    checks.instance("model", model, Model)
    if not isinstance(plans, list | tuple) or not plans or len(plans) > 2**20:
        raise checks.fail("plans", "a non-empty list of Plan (at most 2**20)", plans)
    for pl in plans:
        checks.instance("plans", pl, Plan)
    ms = checks.array("ms", ms, integer=True, low=1, high=2**24)
    if ms.shape != (len(plans),):
        raise checks.fail("ms", f"{len(plans)} micro-batch counts, one per plan", ms.shape)
    for pl in plans:
        if pl.p > model.layers:
            raise checks.fail("plans", f"plans with p <= layers = {model.layers}", pl.p)
    out = np.zeros(len(plans))
    groups = {}
    for i, pl in enumerate(plans):
        groups.setdefault((pl.zero, pl.precision, pl.recompute, pl.sp, pl.flash), []).append(i)
    for (zero, precision, recompute, sp, flash), idx in groups.items():
        col = {k: np.array([getattr(plans[i], k) for i in idx], dtype=np.float64)
               for k in ("t", "p", "d", "b", "v")}  # fmt: skip
        ints = {k: col[k].astype(np.int64) for k in col}
        t, p, d, b, v = (col[k] for k in ("t", "p", "d", "b", "v"))
        m = np.array([ms[i] for i in idx], dtype=np.float64)
        layers = stage_layers(model, ints["p"])
        params = (layers * model.layer_params + model.vocab * model.hidden
                  + (model.seq * model.hidden if model.positions else 0)) / t  # fmt: skip
        if zero == 3:
            states = MEM.zero3_peak_bytes(
                params, stage_layers(model, ints["p"]), ints["d"], prefetch=1, precision=precision
            )
        else:
            states = MEM.model_state_bytes(params, zero, ints["d"], precision=precision).total
        per_layer = activation_bytes(model, ints["b"], ints["t"], recompute, sp, flash)
        in_flight = np.minimum(p, m) * np.where(v > 1, 1.0 + (p - 1) / (p * v), 1.0)
        act = per_layer * layers * in_flight
        if recompute == "full":
            act = act + activation_bytes(model, ints["b"], ints["t"], "none", sp, flash)
        logits = 2 * 4.0 * b * model.seq * model.vocab / t  # fp32 logits and their gradient
        out[idx] = np.maximum(states + act, states + per_layer * layers + logits)
    return checks.finite_result("memory bytes", out)


def predict(model: Model, cluster: Cluster, global_batch: int, plan: Plan, *,
            calibration: float = 1.0, usable_fraction: float = 0.95,
            non_gemm: bool = False) -> Prediction:  # fmt: skip
    """The step of ``plan`` for ``model`` on ``cluster`` at ``global_batch`` sequences
    (see the module docstring). ``non_gemm``: add the memory-bound work the layer model
    leaves out (:mod:`scaleout.planner.non_gemm`; off by default: chapter 15 reports what
    it changes, and chapter 16's simulator prices the same parts as the default).
    ``calibration``: the multiplier on compute time of the
    GPU generation (:func:`scaleout.planner.fit.calibration`; 1 = the compute
    model as it is); a plan fits if its memory is at most ``usable_fraction`` of the GPU."""
    m = check_plan(model, cluster, global_batch, plan)
    k = checks.real("calibration", calibration, 0.1, 10.0)
    usable = checks.fraction("usable_fraction", usable_fraction, open_low=True)
    non_gemm = checks.boolean("non_gemm", non_gemm)
    t, p, d, b, v = plan.t, plan.p, plan.d, plan.b, plan.v
    s, h = model.seq, model.hidden
    layers = stage_layers(model, p)
    lt = layer_times(model, cluster, b, t, plan.sp, plan.recompute, plan.flash)
    col = tuple(k * x for x in lt.col)
    row = tuple(k * x for x in lt.row)
    sec = C.tp_seconds(cluster, b, s, h, t)
    tp_f, tp_b, tot_f, tot_b = C.tp_exposed(
        sec, col, row, t, plan.sp, plan.overlap, regather=plan.regathers
    )
    again = plan.recompute == "full"
    tp_mb = layers * (tp_f * (2 if again else 1) + tp_b)
    tp_hidden = layers * (tot_f * (2 if again else 1) + tot_b) - tp_mb
    params = stage_params(model, p, t)
    opt_params = params / (d if plan.zero >= 1 else 1)
    extra = non_gemm_seconds(model, cluster, b, t, plan.sp, plan.precision, params, opt_params)
    if not non_gemm:
        extra = dict.fromkeys(extra, 0.0)
    compute_mb = k * layers * (lt.forward + lt.backward + lt.recompute + extra["bias_per_layer"])
    compute_mb += k * extra["accumulation"]
    embed = k * extra["embedding"]
    if p == 1:  # the one stage also embeds; with p > 1 the first stage does, not the last
        compute_mb += embed
    logits = k * logits_seconds(model, cluster, b, t)
    pp_mb = 0.0
    if p > 1:
        pp_mb = 2 * v * C.pp_seconds(cluster, b, s, h, t, d, plan.sp, plan.scatter_gather)
    stage = compute_mb + tp_mb + pp_mb
    # the last stage (+ logits) is the slowest: m of it below; the mean has the embedding
    mean = stage + (logits + (embed if p > 1 else 0.0)) / p
    name = "interleaved" if v > 1 else "1f1b"
    bubble = PP.bubble_closed_form(name, p, m, v) * m * mean
    # Data parallelism and the optimizer.
    grads = params * GRAD_BYTES[plan.precision]
    dp = C.dp_seconds(cluster, t, d, plan.zero, grads, params * C.DTYPE)
    window = k * layers * (lt.backward + lt.recompute) + layers * tp_b
    if plan.zero == 3:
        per_mb = dp
        dp_comm = m * per_mb
        exposed = m * float(MEM.zero3_exposed_seconds(per_mb, compute_mb, layers))
    else:
        dp_comm = dp
        exposed = C.dp_exposed(dp, window, C.buckets(params, d), plan.dp_overlap)
    opt = optimizer_seconds(opt_params, cluster) + extra["per_step"]
    parts = {"compute": m * (compute_mb + logits), "bubble": bubble, "tp": m * tp_mb,
             "pp": m * pp_mb, "dp": exposed, "optimizer": opt}  # fmt: skip
    step = checks.finite_result("step seconds", sum(parts.values()))
    mem = memory_bytes(model, plan, m)
    flops = model.flops(global_batch, "none") / cluster.gpus
    return Prediction(
        plan, m, step, parts, {"tp": m * tp_hidden, "dp": max(0.0, dp_comm - exposed)}, mem,
        mem <= usable * cluster.memory_bytes,
        global_batch * s / cluster.gpus / step, flops / step, flops / step / cluster.peak_flops,
    )  # fmt: skip
