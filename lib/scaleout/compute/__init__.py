"""Compute: rooflines, matrix-multiply efficiency, transformer layers and MFU.

Taught in chapter 14, "Compute: rooflines, matrix-multiply efficiency and MFU"
(``chapters/14_compute.ipynb``). The parts, each in its own module:

* :mod:`scaleout.compute.roofline`: arithmetic intensity and the roofline bound.
* :mod:`scaleout.compute.gemm`: a GEMM's time with tile and wave quantization over the
  SMs and a measured ceiling.
* :mod:`scaleout.compute.layer`: attention with and without FlashAttention, the
  memory-bound operations, a transformer layer's forward and backward time, MFU and HFU.
* :mod:`scaleout.compute.flash`: FlashAttention's time, causal pairs at measured rates
  (also chapter 8's price of attention).
* :mod:`scaleout.compute.parts`: the attention core and the memory-bound kernels.
* :mod:`scaleout.compute.head`: the logits GEMM and softmax cross-entropy of the output
  layer.
* :mod:`scaleout.compute.published`: the published measurements behind the ceiling and
  the validation table.
* :mod:`scaleout.compute.validation`: the model beside those measurements (error and skill).

GPU facts come from :mod:`scaleout.hardware` (``hardware.gpu(name)``).
"""

from .flash import (
    FA3_BACKWARD_FLOPS_PER_S,
    FA3_FORWARD_FLOPS_PER_S,
    FlashRates,
    FlashTime,
    attention_flops,
    attention_pairs,
    flash_attention_time,
    flash_rates,
)
from .gemm import (
    CEILING_ROWS,
    MAX_BATCH,
    MAX_DIM,
    RELATED,
    TILES,
    Ceiling,
    GemmTime,
    ceiling,
    gemm_efficiency,
    gemm_seconds,
    gemm_time,
    tile_efficiency,
    utilization,
)
from .head import head_time
from .layer import (
    ADAM_BYTES_PER_PARAM,
    MAX_MICROBATCH,
    MAX_T,
    Layer,
    LayerTime,
    layer_time,
    mfu,
    optimizer_step_seconds,
    roofline_points,
)
from .parts import Part
from .roofline import (
    DTYPE_BYTES,
    arithmetic_intensity,
    attainable_flops,
    ridge_intensity,
    roofline_seconds,
)

__all__ = [
    "ADAM_BYTES_PER_PARAM",
    "CEILING_ROWS",
    "Ceiling",
    "DTYPE_BYTES",
    "FA3_BACKWARD_FLOPS_PER_S",
    "FA3_FORWARD_FLOPS_PER_S",
    "FlashRates",
    "FlashTime",
    "GemmTime",
    "Layer",
    "LayerTime",
    "MAX_BATCH",
    "MAX_DIM",
    "MAX_MICROBATCH",
    "MAX_T",
    "Part",
    "RELATED",
    "TILES",
    "arithmetic_intensity",
    "attention_flops",
    "attention_pairs",
    "attainable_flops",
    "ceiling",
    "flash_attention_time",
    "flash_rates",
    "gemm_efficiency",
    "gemm_seconds",
    "gemm_time",
    "head_time",
    "layer_time",
    "mfu",
    "optimizer_step_seconds",
    "ridge_intensity",
    "roofline_points",
    "roofline_seconds",
    "tile_efficiency",
    "utilization",
]
