"""The memory-bound work of a step that chapter 14's layer model does not count, priced on
its roofline: bytes moved over the GPU's HBM bandwidth (the memory bound of
:func:`scaleout.compute.roofline_seconds`; every kernel here does under one FLOP
per byte). No constant is fitted.

:func:`scaleout.compute.layer_time` already prices a layer's norms, residual adds,
dropouts, activation and (without FlashAttention) softmax, unfused, and
:func:`scaleout.compute.optimizer_step_seconds` Adam's update. What is left, each from the
code that ran the published runs (Megatron-LM, ``megatron/mpu/layers.py``,
``megatron/model/distributed.py``, ``megatron/optimizer/``; bytes per element ``B`` = 2 for
16-bit activations):

* **Bias gradients** (GPT-style models, which have biases on their projections and MLP:
  the book's convention, :mod:`scaleout.transformer`): each linear layer's backward sums
  its output gradient over the tokens, ``grad_bias = grad_output.sum(dim=0)``
  (``ColumnParallelLinearWithAsyncAllreduce.backward``), reading ``B b s n`` bytes for an
  output of width n per GPU: (a + 2g) d / t (QKV), f / t (MLP up, twice with SwiGLU), and
  h for the two row-parallel layers (their bias is added to the reduced output: h / t of
  it with sequence parallelism). Per layer and micro-batch (a recomputed forward adds
  none: it has no backward of its own).
* **Gradient accumulation** into the main-gradient buffer: per micro-batch every
  parameter's gradient is added to it, ``param.main_grad.add_(param.grad.data)``
  (``DistributedDataParallel._make_param_hook``): read the new 16-bit gradient, read and
  write the accumulator (``GRAD_BYTES`` of the run's precision each), ``2 + 2 x
  GRAD_BYTES`` bytes per parameter. 2022's Megatron-LM (bf16 runs) fuses it into the
  weight-gradient GEMM (``--gradient-accumulation-fusion``, on by default): there only the
  embedding's gradient, ``V h / t`` parameters, still takes the hook.
* **Embedding** (first stage, per micro-batch): the forward gathers ``b s`` rows (read and
  write ``B b s h``), adds the learned positions (read two, write one) and applies dropout
  (read, write, a 1-byte mask); the backward runs the dropout's backward, zero-fills the
  dense ``V h / t`` gradient of the word embedding and scatter-adds ``b s`` rows into it.
* **Per step**, over the gradients held by this GPU: the buffer divided by ``d`` before the
  all-reduce (``allreduce_gradients``: read and write ``GRAD_BYTES``), the fp16 loss scale
  undone and checked for inf/NaN on the fp32 main gradients (fp16 runs only:
  ``_unscale_main_grads_and_check_for_nan``, read and write 4), the gradient norm for
  clipping (``clip_grad_norm_fp32``, read 4: the optimizer's shard under ZeRO) and the
  buffer zeroed for the next step (``zero_grad_buffer``, write ``GRAD_BYTES``).

Not counted: kernel launch gaps, the L2 cache, and fusion that reads less than this
(Megatron fuses bias, dropout and add): an unfused bound, like the layer model's.
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import checks
from .model import MAX_BATCH, Cluster, Model

ACT = 2  # bytes of a 16-bit activation element
MASK = 1  # bytes of a dropout mask element (Korthikanti et al. Table 2)
#: Bytes per parameter of the gradient buffer accumulated and reduced, per precision (the
#: ZeRO paper's fp16, Megatron's fp32 main gradients in bf16 runs, fp16 ones in 2021's
#: fp16 runs); :mod:`scaleout.planner.step` prices the DP traffic with it too.
GRAD_BYTES = {"mixed": 2, "megatron-bf16": 4, "megatron-fp16": 2}
#: Precisions whose runs fuse the accumulation into the weight-gradient GEMM.
FUSED_ACCUMULATION = ("megatron-bf16",)


@dataclass(frozen=True)
class NonGemm:
    """HBM bytes of the work :func:`scaleout.compute.layer_time` leaves out, per GPU:
    ``bias_per_layer`` (per layer and micro-batch), ``accumulation`` (per micro-batch, the
    stage's parameters), ``embedding`` (per micro-batch, first stage only), ``per_step``;
    :meth:`seconds` at a bandwidth."""

    bias_per_layer: float
    accumulation: float
    embedding: float
    per_step: float

    def __post_init__(self):
        for name in ("bias_per_layer", "accumulation", "embedding", "per_step"):
            checks.nonnegative(name, getattr(self, name), 2.0**60)

    def seconds(self, hbm_bytes_per_s: float) -> dict:
        """The same four terms in seconds at ``hbm_bytes_per_s``."""
        bw = checks.positive("hbm_bytes_per_s", hbm_bytes_per_s, 1e15)
        return {k: getattr(self, k) / bw
                for k in ("bias_per_layer", "accumulation", "embedding", "per_step")}  # fmt: skip


def non_gemm_bytes(model: Model, b: int, t: int, sp: bool, precision: str,
                   stage_params: float, optimizer_params: float) -> NonGemm:  # fmt: skip
    """:class:`NonGemm` bytes for ``model`` at micro-batch ``b`` on one of ``t`` tensor-
    parallel GPUs with sequence parallelism ``sp``, the run's ``precision`` (a key of
    :data:`GRAD_BYTES`), ``stage_params`` parameters on this GPU and ``optimizer_params``
    of them updated by its optimizer (fewer under ZeRO). See the module docstring."""
    checks.instance("model", model, Model)
    b = checks.integer("b", b, 1, MAX_BATCH)
    t = checks.integer("t", t, 1, 1024)
    sp = checks.boolean("sp", sp)
    precision = checks.choice("precision", precision, tuple(GRAD_BYTES))
    stage_params = checks.nonnegative("stage_params", stage_params, 1e15)
    optimizer_params = checks.nonnegative("optimizer_params", optimizer_params, stage_params)
    tokens = float(b) * model.seq
    h, g = model.hidden, GRAD_BYTES[precision]
    bias = 0.0
    if model.positions:  # a GPT: biases on the projections and the MLP
        up = model.f * (2 if model.swiglu else 1)
        width = ((model.heads + 2 * model.g) * model.head_dim + up) / t
        width += 2 * h / (t if sp else 1)
        bias = ACT * tokens * width
    embed_grad = model.vocab * h / t
    unfused = embed_grad if precision in FUSED_ACCUMULATION else stage_params
    accumulation = unfused * (ACT + 2 * g)
    bsh = tokens * h
    forward = 2 * ACT * bsh + (3 * ACT * bsh if model.positions else 0.0)
    forward += (2 * ACT + MASK) * bsh
    backward = (2 * ACT + MASK) * bsh + ACT * embed_grad + 2 * ACT * bsh
    per_step = stage_params * (2 * g + g) + optimizer_params * 4
    if precision == "megatron-fp16":
        per_step += optimizer_params * 8
    return NonGemm(bias, accumulation, forward + backward, per_step)


def non_gemm_seconds(model: Model, cluster: Cluster, b: int, t: int, sp: bool, precision: str,
                     stage_params: float, optimizer_params: float) -> dict:  # fmt: skip
    """:func:`non_gemm_bytes` in seconds on ``cluster``'s GPU (HBM bound)."""
    checks.instance("cluster", cluster, Cluster)
    nb = non_gemm_bytes(model, b, t, sp, precision, stage_params, optimizer_params)
    return nb.seconds(cluster.gpu_row.hbm_bytes_per_s)
