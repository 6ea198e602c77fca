"""A transformer layer's forward and backward time on one GPU, built from its parts; MFU, HFU.

The parts of one layer (pre-norm GPT/Llama block; Shoeybi et al. 2019, Section 3 for the
tensor-parallel split; Korthikanti et al. 2022, Section 4 for sequence parallelism and
selective recomputation), per GPU of a tensor-parallel group of ``t``, micro-batch ``b``,
sequence ``s``, hidden ``h``, ``heads`` a, ``kv_heads`` g (GQA; head size d = h / a) and
FFN size f:

* GEMMs (:func:`scaleout.compute.gemm_time`): QKV (b s x h) by (h x (a + 2g) d / t); the
  attention output projection (b s x h/t) by (h/t x h); the MLP, (b s x h) by (h x f/t)
  (twice with SwiGLU: gate and up) and (b s x f/t) by (f/t x h). Backward: each GEMM's
  input gradient and weight gradient, (m x n)(n x k) and (k x m)(m x n), the same FLOPs.
* Attention core over a/t heads: without FlashAttention, the batched GEMMs Q K^T and P V
  (b a/t products of s x d x s, the full s x s scores: the unfused kernels compute the
  masked half too) with the scores written to HBM, a softmax and a dropout on them; with
  FlashAttention (Dao et al. 2022, Algorithm 1 and 4) one fused kernel,
  :func:`scaleout.compute.flash.flash_attention_time`: the causal pair count s (s + 1) / 2
  at FlashAttention-3's measured rates, HBM traffic Q, K, V and O only, and a backward of
  2.5 times the forward's FLOPs (it recomputes Q K^T). The same function prices attention
  in chapter 8.
* Memory-bound operations, bytes / HBM bandwidth, each its own kernel (no fusion): two
  norms, two residual adds, two dropouts on b s h elements (replicated on every tensor-
  parallel rank, or 1/t of them with sequence parallelism), the activation on b s f/t
  (GeLU, or SwiGLU's product), and the softmax and attention dropout without FlashAttention.
  Forward: read the input(s), write the output (dropout also writes a 1-byte mask).
  Backward: read the saved input and the output gradient, write the input gradient (for an
  activation "backward reads twice, writes once": ML Engineering Open Book,
  training/performance, "forward vs backward Execution Speed").
* Recomputation: ``"full"`` runs the whole forward again before the backward;
  ``"selective"`` runs the attention core again (Korthikanti et al. Section 5); with
  FlashAttention the core is recomputed by the kernel anyway, so selective adds nothing.
* The optimizer step (:func:`scaleout.compute.optimizer_step_seconds`): Adam over the
  parameters, bytes over HBM bandwidth, once per step (not per micro-batch).

Model FLOPs (Chowdhery et al. 2022, PaLM, Appendix B; Korthikanti et al. 2022, Appendix A)
count the forward and backward of the GEMMs and the attention core once: forward
2 b s h (a + 2g) d + 4 b s^2 h + 2 b s h^2 + 2 b s h f (3 with SwiGLU), backward twice
that; for g = a, f = 4h: 24 b s h^2 + 4 b s^2 h forward (Narayanan et al. 2021). Hardware
FLOPs add every FLOP the GPU runs again (recomputation, FlashAttention's backward). MFU =
model FLOP/s over peak, HFU = hardware FLOP/s over peak.

Not modelled: communication (the tensor-parallel all-reduces, :mod:`scaleout.tensor_parallel`)
and its overlap with compute, kernel fusion (Megatron fuses bias, dropout and add; the
times here are an unfused upper bound on the memory-bound part), embeddings, the loss,
launch latencies, and clocks under power limits. Model FLOPs keep the papers' convention of
the full s^2 (so that MFU compares with theirs); hardware FLOPs count what the kernels run,
so with FlashAttention's causal half they can be below the model FLOPs.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from .. import checks
from .. import hardware as H
from ..memory import RECOMPUTE
from ..transformer import Shape
from .gemm import MAX_DIM, MAX_FLOPS, gemm_time
from .parts import KINDS, PHASES, Part, _attention_parts, _backward_shapes, _elementwise
from .roofline import DTYPE_BYTES

MAX_T = 1024
MAX_MICROBATCH = 4096
#: Adam with fp32 master weights, per parameter and step: read master weight, gradient
#: (fp32), momentum, variance (4 x 4 bytes); write master weight, momentum, variance
#: (3 x 4) and the bf16 copy used by the next forward (2): 30 bytes.
ADAM_BYTES_PER_PARAM = 30


@dataclass(frozen=True)
class Layer(Shape):
    """The shape of one transformer layer: ``hidden`` h, ``heads`` a, ``kv_heads`` g
    (defaults to a: multi-head attention), ``ffn`` f (defaults to 4h), ``seq`` s,
    ``swiglu`` (three MLP matrices instead of two)."""

    hidden: int
    heads: int
    seq: int
    kv_heads: int | None = None
    ffn: int | None = None
    swiglu: bool = False

    def __post_init__(self):
        h = checks.integer("hidden", self.hidden, 1, MAX_DIM)
        a = checks.integer("heads", self.heads, 1, h)
        checks.integer("seq", self.seq, 1, MAX_DIM)
        if h % a:
            raise checks.fail("heads", f"a divisor of hidden = {h}", a)
        g = checks.integer("kv_heads", self.kv_heads if self.kv_heads is not None else a, 1, a)
        if a % g:
            raise checks.fail("kv_heads", f"a divisor of heads = {a}", g)
        checks.integer("ffn", self.ffn if self.ffn is not None else 4 * h, 1, MAX_DIM)
        checks.boolean("swiglu", self.swiglu)

    def check_t(self, t) -> int:
        """``t`` if it divides the heads, KV heads and FFN size (Megatron's requirement)."""
        t = checks.integer("t", t, 1, MAX_T)
        for what, size in (("heads", self.heads), ("kv_heads", self.g), ("ffn", self.f)):
            if size % t:
                raise checks.fail("t", f"a divisor of {what} = {size}", t)
        return t

    def forward_flops(self, b) -> float:
        """Model FLOPs of one forward pass of the whole layer (all t GPUs together)."""
        b = checks.integer("b", b, 1, MAX_MICROBATCH)
        s, h, d = self.seq, self.hidden, self.head_dim
        mlp = (3 if self.swiglu else 2) * 2.0 * b * s * h * self.f
        qkv = 2.0 * b * s * h * (self.heads + 2 * self.g) * d
        return qkv + 4.0 * b * s * s * h + 2.0 * b * s * h * h + mlp


def _gemms(layer: Layer, b: int, t: int):
    """Forward weight GEMMs per GPU: (name, m, n, k)."""
    bs, h, d = b * layer.seq, layer.hidden, layer.head_dim
    rows = [
        ("QKV projection", bs, (layer.heads + 2 * layer.g) * d // t, h),
        ("attention output projection", bs, h, h // t),
    ]
    if layer.swiglu:
        rows.append(("MLP gate and up", bs, 2 * layer.f // t, h))
    else:
        rows.append(("MLP up", bs, layer.f // t, h))
    rows.append(("MLP down", bs, h, layer.f // t))
    return rows  # fmt: skip


@dataclass(frozen=True)
class LayerTime:
    """A layer's time on one GPU for one micro-batch, by part, with its FLOPs and MFU."""

    parts: tuple[Part, ...]
    model_flops: float  # per GPU: 3 x forward model FLOPs / t
    peak_flops: float

    def __post_init__(self):
        if not isinstance(self.parts, tuple) or not 1 <= len(self.parts) <= 1000:
            raise checks.fail("parts", "a tuple of 1 to 1000 Part records", self.parts)
        for part in self.parts:
            checks.instance("parts", part, Part)
        if sum(p.seconds for p in self.parts) <= 0:
            raise checks.fail("parts", "parts whose seconds add up to more than 0", self.parts)
        checks.nonnegative("model_flops", self.model_flops, MAX_FLOPS)
        checks.positive("peak_flops", self.peak_flops, MAX_FLOPS)

    def seconds(self, phase: str | None = None, kind: str | None = None) -> float:
        """Total seconds, or of one ``phase`` and/or ``kind`` only."""
        if phase is not None:
            checks.choice("phase", phase, PHASES)
        if kind is not None:
            checks.choice("kind", kind, KINDS)
        return sum(
            p.seconds
            for p in self.parts
            if (phase is None or p.phase == phase) and (kind is None or p.kind == kind)
        )

    @property
    def total_s(self) -> float:
        return self.seconds()

    @property
    def hardware_flops(self) -> float:
        """Every GEMM and attention FLOP the GPU runs, recomputation included."""
        return sum(p.flops for p in self.parts if p.kind != "memory")

    @property
    def mfu(self) -> float:
        """Model FLOPs utilization, model FLOPs / (seconds x peak) (Chowdhery et al. 2022)."""
        return mfu(self.model_flops, self.total_s, self.peak_flops)

    @property
    def hfu(self) -> float:
        """Hardware FLOPs utilization, hardware FLOPs / (seconds x peak)."""
        return mfu(self.hardware_flops, self.total_s, self.peak_flops)

    @property
    def tflops_per_gpu(self) -> float:
        """Model TFLOP/s per GPU."""
        return self.model_flops / self.total_s / 1e12


def layer_time(layer, b, gpu, t=1, sp=False, recompute="none", flash=True, dtype="bf16"):
    """Forward, backward and recomputation time of ``layer`` (a :class:`Layer`) for a
    micro-batch of ``b`` sequences on one of ``t`` tensor-parallel GPUs (``gpu``: a name of
    ``hardware.GPUS`` or a row); ``sp``: sequence parallelism; ``recompute``: one of
    ``memory.RECOMPUTE``; ``flash``: FlashAttention. Returns a :class:`LayerTime`."""
    layer = checks.instance("layer", layer, Layer)
    b = checks.integer("b", b, 1, MAX_MICROBATCH)
    t = layer.check_t(t)
    sp, flash = checks.boolean("sp", sp), checks.boolean("flash", flash)
    recompute = checks.choice("recompute", recompute, RECOMPUTE)
    row = H.gpu(gpu)
    dtype = checks.choice("dtype", dtype, row.dtypes)
    if b * layer.seq > MAX_DIM:
        raise checks.fail("b", f"at most {MAX_DIM // layer.seq} (b x seq <= {MAX_DIM})", b)
    return _layer_time(layer, b, row, t, sp, recompute, flash, dtype)


@functools.lru_cache(maxsize=2**14)
def _layer_time(layer, b, row, t, sp, recompute, flash, dtype) -> LayerTime:
    fwd, bwd = [], []
    for name, m, n, k in _gemms(layer, b, t):
        g = gemm_time(m, n, k, row, dtype)
        fwd.append(Part(name, "forward", "gemm", g.seconds, g.flops, g.bytes))
        back = [gemm_time(*shape, row, dtype) for shape in _backward_shapes(m, n, k)]
        bwd.append(Part(name, "backward", "gemm", sum(x.seconds for x in back),
                        sum(x.flops for x in back), sum(x.bytes for x in back)))  # fmt: skip
    core_fwd, core_bwd = _attention_parts(layer, b, t, row, dtype, flash)
    fwd += core_fwd
    bwd += core_bwd
    hbm = row.hbm_bytes_per_s
    for name, fb, bb, out, _ in _elementwise(layer, b, t, sp, flash, DTYPE_BYTES[dtype]):
        fwd.append(Part(name, "forward", "memory", fb / hbm, out, fb))
        bwd.append(Part(name, "backward", "memory", bb / hbm, out, bb))
    core_names = {row[0] for row in _elementwise(layer, b, t, sp, flash, 2) if row[-1]}
    again = []
    if recompute == "full":
        again = fwd
    elif recompute == "selective" and not flash:
        again = [p for p in fwd if p.kind == "attention" or p.name in core_names]
    redo = [Part(p.name, "recompute", p.kind, p.seconds, p.flops, p.bytes) for p in again]
    model = 3.0 * layer.forward_flops(b) / t
    return LayerTime(tuple(fwd + bwd + redo), model, row.peak_flops(dtype))


def mfu(flops, seconds, peak_flops):
    """FLOPs / (seconds x peak FLOP/s): model FLOPs give MFU, hardware FLOPs give HFU."""
    f = checks.nonnegative("flops", flops)
    s = checks.positive("seconds", seconds)
    p = checks.positive("peak_flops", peak_flops, 1e21)
    if s * p == 0.0:  # subnormal seconds x peak underflows: f / 0 would divide by zero
        raise checks.fail("seconds x peak_flops", "a product that does not underflow to 0 "
                          "(the FLOPs of that time)", (seconds, peak_flops))  # fmt: skip
    return checks.finite_result("utilization", f / (s * p))


def optimizer_step_seconds(params, gpu, bytes_per_param=ADAM_BYTES_PER_PARAM) -> float:
    """HBM time of one Adam step over ``params`` parameters held by this GPU:
    params x ``bytes_per_param`` / HBM bandwidth (memory-bound: a few FLOPs per byte)."""
    n = checks.nonnegative("params", params, 1e15)
    per = checks.positive("bytes_per_param", bytes_per_param, 1e3)
    return n * per / H.gpu(gpu).hbm_bytes_per_s


def roofline_points(timing: LayerTime, phase: str = "forward"):
    """(name, kind, intensity in FLOPs per HBM byte, achieved FLOP/s) of each kernel of one
    ``phase`` of a :class:`LayerTime`, to place on the roofline."""
    checks.instance("timing", timing, LayerTime)
    phase = checks.choice("phase", phase, PHASES)
    return [
        (p.name, p.kind, p.flops / p.bytes, p.flops / p.seconds)
        for p in timing.parts
        if p.phase == phase and p.bytes > 0 and p.seconds > 0
    ]
