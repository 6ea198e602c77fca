"""Data parallelism: gradient averaging, DDP's gradient buckets, and a step timeline model.

Taught in chapter 2, "Data parallelism" (``chapters/02_data_parallel.ipynb``).

* **Gradient averaging.** Each of p replicas computes the mean gradient of its shard of the
  batch; an all-reduce (sum) divided by p gives every replica the same average, which equals
  the full-batch mean gradient when the shards are equal (Li et al., "PyTorch Distributed:
  Experiences on Accelerating Data Parallel Training", VLDB 2020, Sec. 2-3).
* **Buckets.** PyTorch DDP all-reduces gradients in *buckets* (Li et al. 2020, Sec. 3.2).
  In torch 2.13, with the default ``find_unused_parameters=False``, the first iteration
  all-reduces one bucket of every parameter in registration order (``[sys.maxsize]``
  limits, ``_BucketCapacityConfig.compute_bucket_size_limits`` in
  torch/nn/parallel/distributed.py); after it, ``Reducer::rebuild_buckets``
  (torch/csrc/distributed/c10d/reducer.cpp) rebuilds them once, in the order the gradients
  arrived, with caps [first bucket cap, cap] (:func:`assign_buckets`, the rule of
  ``compute_bucket_assignment_by_size``). With ``find_unused_parameters=True`` the buckets
  are built at construction, in registration order, and never rebuilt
  (``Reducer::should_rebuild_buckets`` in reducer.hpp). :func:`ddp_buckets` covers all cases.
* **Memory and dtype.** Bucket buffers hold a copy of the gradients unless
  ``gradient_as_bucket_view=True`` (:func:`gradient_memory`); they have the parameters'
  dtype, which autocast does not change; compression hooks change what the all-reduce
  sends (:func:`allreduce_itemsize`).
* **Timeline.** Backward computes one parameter's gradient after another; a bucket's
  all-reduce may start when its last gradient is ready and the previous bucket's all-reduce
  has finished (DDP reduces buckets in order, one at a time); all-reduce times come from
  NCCL's cost model (``machine=``, an :class:`scaleout.nccl.topo.Topology` such as
  :func:`dp_network` builds; chapter 10) or from chapter 1's alpha-beta ring on one link
  (:func:`scaleout.costmodel.collective_time`, ``alpha_s`` and ``beta_s_per_byte``). Naive
  data parallelism is the case of one bucket holding everything, whose all-reduce starts
  after the whole backward pass.
* **Inside 3D parallelism.** With t-way tensor and p-way pipeline parallelism, the
  gradients are all-reduced in t p concurrent data-parallel groups of d = N / (t p) GPUs
  (:class:`ParallelLayout`, :func:`data_parallel_groups`).

Units: bytes, seconds. ``MIB`` = 2**20 bytes: DDP's ``bucket_cap_mb`` is in MiB.

Limits (inputs beyond them raise ``ValueError``): at most :data:`MAX_RANKS` ranks, at most
:data:`MAX_TENSORS` parameter tensors, at most :data:`MAX_PARAMS` parameters, at most
:data:`MAX_GRADIENT_BYTES` bytes of gradients (float64 sums of byte counts stay exact), at
most :data:`MAX_MICRO_STEPS` micro-steps per optimizer step, :data:`MAX_SGD_WORK` elements
touched by :func:`data_parallel_sgd`.


The package, in reading order: ``limits`` (DDP's defaults and the input limits), ``averaging``
(gradient averaging and data-parallel SGD), ``buckets`` (DDP's buckets, their memory and dtype),
``timeline`` (the step timeline, naive DDP, accumulation, uniform model sizes) and ``layout``
(data parallelism inside 3D parallelism).
"""

from . import limits as _limits
from .averaging import (
    average_gradients,
    data_parallel_sgd,
    equivalence_error,
    local_gradients,
    shard_sizes,
    squared_error_grads,
)
from .buckets import (
    Buckets,
    GradientMemory,
    allreduce_itemsize,
    assign_buckets,
    bucket_caps,
    ddp_buckets,
    gradient_memory,
)
from .layout import (
    ParallelLayout,
    data_parallel_groups,
)
from .limits import (
    COMM_HOOKS,
    PARAM_DTYPES,
)
from .timeline import (
    Accumulation,
    StepTimeline,
    accumulation,
    backward_seconds,
    dp_network,
    naive_timeline,
    step_timeline,
    uniform_layers,
    uniform_model_timelines,
)

# The documented constants are bound here too: autodoc reads the ``#:`` comment of a
# constant in the module it documents (this one), not where the constant is defined.

#: Bytes in one MiB, DDP's "MB" (torch/nn/parallel/distributed.py, ``_MB_TO_BYTES``).
MIB = _limits.MIB

#: DDP's default ``bucket_cap_mb`` (torch/nn/parallel/distributed.py).
DEFAULT_BUCKET_CAP_MB = _limits.DEFAULT_BUCKET_CAP_MB

#: ``torch.distributed._DEFAULT_FIRST_BUCKET_BYTES`` (``kDefaultFirstBucketBytes``, reducer.hpp).
DEFAULT_FIRST_BUCKET_BYTES = _limits.DEFAULT_FIRST_BUCKET_BYTES

#: DDP's "no limit" (its first-iteration bucket limits are ``[sys.maxsize]``).
NO_CAP = _limits.NO_CAP

#: Most ranks in a world or group, the book's largest case.
MAX_RANKS = _limits.MAX_RANKS

#: Most parameter tensors (a 1T-parameter transformer has a few thousand).
MAX_TENSORS = _limits.MAX_TENSORS

#: Most parameters of a model, 1000 times the largest published dense models.
MAX_PARAMS = _limits.MAX_PARAMS

#: Most bytes of gradients in all (sums of integer byte counts stay exact in float64).
MAX_GRADIENT_BYTES = _limits.MAX_GRADIENT_BYTES

#: Most micro-steps of gradient accumulation per optimizer step.
MAX_MICRO_STEPS = _limits.MAX_MICRO_STEPS

#: Most elements (samples x features, over all steps) :func:`data_parallel_sgd` touches.
MAX_SGD_WORK = _limits.MAX_SGD_WORK

#: Most samples in one global batch.
MAX_BATCH = _limits.MAX_BATCH

__all__ = [
    "Accumulation",
    "Buckets",
    "COMM_HOOKS",
    "DEFAULT_BUCKET_CAP_MB",
    "DEFAULT_FIRST_BUCKET_BYTES",
    "GradientMemory",
    "MAX_BATCH",
    "MAX_GRADIENT_BYTES",
    "MAX_MICRO_STEPS",
    "MAX_PARAMS",
    "MAX_RANKS",
    "MAX_SGD_WORK",
    "MAX_TENSORS",
    "MIB",
    "NO_CAP",
    "PARAM_DTYPES",
    "ParallelLayout",
    "StepTimeline",
    "accumulation",
    "allreduce_itemsize",
    "assign_buckets",
    "average_gradients",
    "backward_seconds",
    "bucket_caps",
    "data_parallel_groups",
    "data_parallel_sgd",
    "ddp_buckets",
    "dp_network",
    "equivalence_error",
    "gradient_memory",
    "local_gradients",
    "naive_timeline",
    "shard_sizes",
    "squared_error_grads",
    "step_timeline",
    "uniform_layers",
    "uniform_model_timelines",
]
