"""The compute term of a step: one layer's forward and backward time on one GPU.

This module is the planner's only contact with the compute model, so that replacing the
model is one change. **Interim model** (until ``scaleout.compute``, chapter 13, is on
main): GEMMs and the attention core at the GPU's dense peak, the memory-bound kernels at
its HBM bandwidth, nothing overlapped (a roofline sum, Williams et al. 2009). What it
cannot see, and the calibration constant of :mod:`scaleout.planner.published` absorbs on
average: the fraction of peak a GEMM of a given shape reaches (tile and wave
quantization, Anthony et al. 2024), kernel launch gaps, fusion.

The parts of one layer for a micro-batch of ``b`` sequences on one of ``t`` tensor-parallel
GPUs (Shoeybi et al. 2019 for the split; Korthikanti et al. 2022 for sequence parallelism
and selective recomputation):

* weight GEMMs, forward ``2 b s [h (a + 2g) d + h^2 + (2 or 3) h f] / t`` FLOPs; the
  backward runs each GEMM twice (input gradient, weight gradient);
* the attention core, ``4 b s^2 h / t`` forward FLOPs; backward twice that, plus the
  Q K^T that FlashAttention recomputes (Dao et al. 2022, Algorithm 4);
* memory-bound kernels (bytes per element of b s h, or of b s h / t with sequence
  parallelism): two norms (2 + 2 bytes read and written forward, 3 x 2 backward), two
  residual adds (3 x 2 each way), two dropouts (2 + 2 + a 1-byte mask each way); the
  activation on b s f / t (GeLU 2 x 2 forward, 3 x 2 backward; SwiGLU 3 x 2 and 5 x 2);
  without FlashAttention the softmax (2 x 2, 3 x 2) and dropout (5, 5) of the b a s^2 / t
  scores;
* recomputation: ``"full"`` runs the forward again before the backward, ``"selective"``
  the attention core (and its softmax and dropout); with FlashAttention the kernel
  recomputes the core anyway, so selective adds nothing more.

The output layer (logits ``2 b s h V / t`` forward, the cross-entropy over b s V / t
fp32 values) is charged to the last pipeline stage, the optimizer step (Adam, 30 bytes of
HBM traffic per parameter: fp32 weight, gradient, two moments read, three written, the
16-bit copy written) once per step.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from .. import checks
from ..memory import RECOMPUTE
from .model import MAX_BATCH, Cluster, Model

ADAM_BYTES_PER_PARAM = 30
DTYPE = 2  # bytes of a bf16/fp16 activation
MASK = 1  # bytes of a dropout mask element (Korthikanti et al. Table 2)


@dataclass(frozen=True)
class LayerTimes:
    """Seconds of one layer for one micro-batch on one GPU: ``forward``, ``backward``
    (input and weight gradients), ``recompute`` (what recomputation runs again), and
    the GEMM partners of the tensor-parallel collectives, one entry per block (attention,
    MLP): ``col`` the column-parallel GEMM (Q/K/V, MLP up), ``row`` the row-parallel one
    (output projection, MLP down), forward seconds; a backward GEMM (input or weight
    gradient) costs as much."""

    forward: float
    backward: float
    recompute: float
    col: tuple
    row: tuple

    def __post_init__(self):
        for name in ("forward", "backward", "recompute"):
            checks.nonnegative(name, getattr(self, name))
        for name in ("col", "row"):
            pair = getattr(self, name)
            if not isinstance(pair, tuple) or len(pair) != 2:
                raise checks.fail(name, "a pair of seconds (attention, MLP)", pair)
            for x in pair:
                checks.nonnegative(name, x)


def _check(model, cluster, b, t):
    checks.instance("model", model, Model)
    checks.instance("cluster", cluster, Cluster)
    b = checks.integer("b", b, 1, MAX_BATCH)
    t = checks.integer("t", t, 1, 1024)
    if model.heads % t or model.g % t or model.f % t:
        raise checks.fail("t", "a divisor of heads, kv_heads and ffn", t)
    return b, t


def layer_times(model: Model, cluster: Cluster, b: int, t: int, sp: bool, recompute: str,
                flash: bool) -> LayerTimes:  # fmt: skip
    """One layer's times for a micro-batch of ``b`` on one of ``t`` GPUs (see the module
    docstring); ``sp`` sequence parallelism, ``recompute`` one of ``memory.RECOMPUTE``,
    ``flash`` FlashAttention."""
    b, t = _check(model, cluster, b, t)
    sp, flash = checks.boolean("sp", sp), checks.boolean("flash", flash)
    checks.choice("recompute", recompute, RECOMPUTE)
    return _layer_times(model, cluster, b, t, sp, recompute, flash)


@functools.lru_cache(maxsize=4096)
def _layer_times(model, cluster, b, t, sp, recompute, flash) -> LayerTimes:
    peak, hbm = cluster.peak_flops, cluster.hbm_bytes_per_s
    s, h, f, d = model.seq, model.hidden, model.f, model.head_dim
    bs = float(b) * s
    qkv = 2.0 * bs * h * (model.heads + 2 * model.g) * d / t
    proj = 2.0 * bs * h * h / t
    up = 2.0 * bs * h * f * (model.mlp_matrices - 1) / t
    down = 2.0 * bs * h * f / t
    core = 4.0 * bs * s * h / t
    e = bs * h / (t if sp else 1)
    fe = bs * f / t
    fwd_bytes = (2 * 2 * DTYPE + 2 * 3 * DTYPE + 2 * (2 * DTYPE + MASK)) * e
    bwd_bytes = (2 * 3 * DTYPE + 2 * 3 * DTYPE + 2 * (2 * DTYPE + MASK)) * e
    fwd_bytes += (3 if model.swiglu else 2) * DTYPE * fe
    bwd_bytes += (5 if model.swiglu else 3) * DTYPE * fe
    core_fwd_bytes = core_bwd_bytes = 0.0
    if not flash:
        scores = float(b) * model.heads / t * s * s
        core_fwd_bytes = (2 * DTYPE + 2 * DTYPE + MASK) * scores
        core_bwd_bytes = (3 * DTYPE + 2 * DTYPE + MASK) * scores
    gemm_fwd = (qkv + proj + up + down) / peak
    core_fwd = core / peak + core_fwd_bytes / hbm
    core_bwd = (2.0 + (0.5 if flash else 0.0)) * core / peak + core_bwd_bytes / hbm
    forward = gemm_fwd + core_fwd + fwd_bytes / hbm
    backward = 2.0 * gemm_fwd + core_bwd + bwd_bytes / hbm
    if recompute == "full":
        again = forward
    elif recompute == "selective" and not flash:
        again = core_fwd
    else:
        again = 0.0
    return LayerTimes(forward, backward, again, (qkv / peak, up / peak),
                      (proj / peak, down / peak))  # fmt: skip


def logits_seconds(model: Model, cluster: Cluster, b: int, t: int) -> float:
    """Forward + backward of the output layer and the loss for one micro-batch."""
    b, t = _check(model, cluster, b, t)
    bs = float(b) * model.seq
    gemm = 3 * 2.0 * bs * model.hidden * model.vocab / t / cluster.peak_flops
    loss = 3 * 4.0 * bs * model.vocab / t / cluster.hbm_bytes_per_s
    return gemm + loss


def optimizer_seconds(params_updated: float, cluster: Cluster) -> float:
    """One Adam step over ``params_updated`` parameters held by this GPU (HBM-bound)."""
    params_updated = checks.nonnegative("params_updated", params_updated, 1e15)
    checks.instance("cluster", cluster, Cluster)
    return params_updated * ADAM_BYTES_PER_PARAM / cluster.hbm_bytes_per_s
