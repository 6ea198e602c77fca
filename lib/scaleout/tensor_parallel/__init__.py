"""Tensor parallelism: split GEMMs, Megatron's MLP and attention, and what they communicate.

Taught in chapters/04_tensor_parallel.ipynb. One package, four parts, every name importable
from ``scaleout.tensor_parallel``:

* ``layers``: the numeric reference layers (numpy): the
  column and the row split of Z = X Y, Megatron's MLP and attention, GeLU, the valid t.
* ``traffic``: the operators f and g, the collectives and
  bytes of one layer (with and without sequence parallelism), their time on NVLink and
  NICs, the ideal compute time, the NVLink-to-NIC ratio.
* ``overlap``: which of those collectives Megatron-LM,
  Transformer Engine and PyTorch's async tensor parallelism hide behind a GEMM.
* ``stages``: the scatter-gather between pipeline stages.
* ``network``: the server NCCL's model prices those collectives on, built from the link
  presets (:func:`~scaleout.tensor_parallel.network.machine`).
* ``published`` (not re-exported): Narayanan et al.'s Figure 13 (tensor x pipeline on 64
  A100s) and the model of it, :mod:`scaleout.tensor_parallel.published`.

Sources: Shoeybi et al., "Megatron-LM" (arXiv 1909.08053, Sec. 3); Narayanan et al., SC21
(arXiv 2104.04473, Sec. 3, Sec. 4.1, Appendix); Korthikanti et al., "Reducing Activation
Recomputation in Large Transformer Models" (arXiv 2205.05198, Sec. 4.2.2); Megatron-LM's
``megatron/core/tensor_parallel/mappings.py`` and ``layers.py``. Size limits:
``sizes``.
"""

from .layers import (
    COMBINES,
    MODES,
    Shard,
    SplitResult,
    attention,
    column_parallel_matmul,
    gelu,
    matmul_shards,
    megatron_mlp,
    mlp,
    row_parallel_matmul,
    shard_slice,
    tensor_parallel_attention,
    valid_tensor_parallel_sizes,
)
from .network import (
    BASE_PRESETS,
    GPU_NVLINK,
    NVLINK_GPUS,
    GpuServer,
    check_machine,
    gpu_server,
    group_shape,
    machine,
)
from .overlap import BLOCK_GEMMS, OVERLAPS, LayerOverlap, layer_overlap
from .sizes import (
    MAX_BATCH,
    MAX_DTYPE_BYTES,
    MAX_HEADS,
    MAX_HIDDEN,
    MAX_SCHEDULE_T,
    MAX_SEQ,
    MAX_T,
)
from .stages import (
    MODELS,
    StageTransfer,
    stage_transfer,
    stage_transfer_schedule,
    stage_transfer_seconds,
)
from .traffic import (
    BLOCKS,
    COLLECTIVES,
    GPUS_PER_SERVER,
    H100_SXM_BF16_DENSE_FLOPS,
    INTER,
    INTRA,
    OPERATORS,
    SP_OPERATORS,
    TOPOLOGIES,
    LayerSeconds,
    LayerTraffic,
    LinkRatio,
    collective_seconds,
    layer_comm_seconds,
    layer_compute_seconds,
    layer_flops,
    layer_traffic,
    link_ratio,
)

__all__ = [
    # layers
    "shard_slice",
    "Shard",
    "matmul_shards",
    "SplitResult",
    "column_parallel_matmul",
    "row_parallel_matmul",
    "gelu",
    "mlp",
    "megatron_mlp",
    "attention",
    "tensor_parallel_attention",
    "valid_tensor_parallel_sizes",
    # traffic
    "OPERATORS",
    "SP_OPERATORS",
    "LayerTraffic",
    "layer_traffic",
    "collective_seconds",
    "LayerSeconds",
    "layer_comm_seconds",
    "layer_flops",
    "layer_compute_seconds",
    "LinkRatio",
    "link_ratio",
    # overlap
    "LayerOverlap",
    "layer_overlap",
    # stages
    "StageTransfer",
    "stage_transfer",
    "stage_transfer_seconds",
    "stage_transfer_schedule",
    # network
    "machine",
    "check_machine",
    "group_shape",
    "GpuServer",
    "gpu_server",
    # constants and limits
    "MODELS",
    "NVLINK_GPUS",
    "GPU_NVLINK",
    "BASE_PRESETS",
    "COMBINES",
    "MODES",
    "BLOCKS",
    "BLOCK_GEMMS",
    "COLLECTIVES",
    "OVERLAPS",
    "TOPOLOGIES",
    "GPUS_PER_SERVER",
    "H100_SXM_BF16_DENSE_FLOPS",
    "INTRA",
    "INTER",
    "MAX_T",
    "MAX_SCHEDULE_T",
    "MAX_BATCH",
    "MAX_SEQ",
    "MAX_HIDDEN",
    "MAX_HEADS",
    "MAX_DTYPE_BYTES",
]
