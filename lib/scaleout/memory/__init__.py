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


The package, in reading order: ``limits`` (stages, options, limits), ``states`` (model states
and ZeRO sharding), ``comm`` (communication and its overlap), ``activations`` (activation
bytes, parameter counts, model presets), ``fit`` (GPU counts) and ``sharding`` (the greedy
partition and ZeRO-3's step).
"""

from . import activations as _activations
from . import comm as _comm
from . import limits as _limits
from .activations import (
    Transformer,
    activation_bytes,
    activation_bytes_per_layer,
    transformer_params,
)
from .comm import (
    comm_bytes,
    comm_volume,
    exposed_comm_seconds,
    zero3_exposed_seconds,
)
from .fit import (
    gpus_to_hold,
    min_dp_to_fit,
)
from .limits import (
    COMM_PATTERN,
    KINDS,
    OPTIMIZERS,
    PRECISIONS,
    RECOMPUTE,
    SHARDED_FROM,
    STAGE_NAMES,
    STAGES,
    Z3_GRADS,
    Z3_OPS,
)
from .sharding import (
    Zero3Frame,
    greedy_partition,
    zero3_step,
)
from .states import (
    ModelStates,
    State,
    bytes_per_param,
    device_bytes,
    model_state_bytes,
    states_per_param,
    zero3_peak_bytes,
)

# The documented constants are bound here too: autodoc reads the ``#:`` comment of a
# constant in the module it documents (this one), not where the constant is defined.

#: GPU memory in bytes assumed when none is named (an H100 SXM's 80 GB, from hardware).
DEFAULT_GPU_BYTES = _limits.DEFAULT_GPU_BYTES

#: Most layers :func:`zero3_step` replays (its frames hold per-layer tuples).
MAX_STEP_LAYERS = _limits.MAX_STEP_LAYERS

#: Most tensors and ranks :func:`greedy_partition` partitions (a million tensors, the book's
#: 65,536 ranks).
MAX_TENSORS, MAX_RANKS = _limits.MAX_TENSORS, _limits.MAX_RANKS

#: Most layers :func:`zero3_peak_bytes` and :func:`exposed_comm_seconds` split a model into.
MAX_LAYERS = _limits.MAX_LAYERS

#: Bytes per element of the data types a collective carries.
DTYPE_BYTES = _comm.DTYPE_BYTES

#: The forward pass's share of a ZeRO-3 micro-batch's communication and of its compute, one
#: third of each. Of the three psi-sized collectives the forward runs one all-gather, the
#: backward the other all-gather and the reduce-scatter; the backward costs about twice the
#: forward's FLOPs. The backward has the rest.
ZERO3_FORWARD_SHARE = _comm.ZERO3_FORWARD_SHARE

#: Narayanan et al. 2021, Table 1, from :data:`scaleout.transformer.NARAYANAN_TABLE1`.
TRANSFORMERS = _activations.TRANSFORMERS

__all__ = [
    "COMM_PATTERN",
    "DEFAULT_GPU_BYTES",
    "DTYPE_BYTES",
    "KINDS",
    "MAX_LAYERS",
    "MAX_RANKS",
    "MAX_STEP_LAYERS",
    "MAX_TENSORS",
    "ModelStates",
    "OPTIMIZERS",
    "PRECISIONS",
    "RECOMPUTE",
    "SHARDED_FROM",
    "STAGES",
    "STAGE_NAMES",
    "State",
    "TRANSFORMERS",
    "Transformer",
    "Z3_GRADS",
    "Z3_OPS",
    "ZERO3_FORWARD_SHARE",
    "Zero3Frame",
    "activation_bytes",
    "activation_bytes_per_layer",
    "bytes_per_param",
    "comm_bytes",
    "comm_volume",
    "device_bytes",
    "exposed_comm_seconds",
    "gpus_to_hold",
    "greedy_partition",
    "min_dp_to_fit",
    "model_state_bytes",
    "states_per_param",
    "transformer_params",
    "zero3_exposed_seconds",
    "zero3_peak_bytes",
    "zero3_step",
]
