"""Data parallelism's constants: DDP's bucket defaults and the package's input limits.

Taught in chapter 2, "Data parallelism" (``chapters/02_data_parallel.ipynb``).
"""

from __future__ import annotations

import sys

#: Bytes in one MiB, DDP's "MB" (torch/nn/parallel/distributed.py, ``_MB_TO_BYTES``).
MIB = 2**20
#: DDP's default ``bucket_cap_mb`` (torch/nn/parallel/distributed.py).
DEFAULT_BUCKET_CAP_MB = 25
#: ``torch.distributed._DEFAULT_FIRST_BUCKET_BYTES`` (``kDefaultFirstBucketBytes``, reducer.hpp).
DEFAULT_FIRST_BUCKET_BYTES = MIB
#: DDP's "no limit" (its first-iteration bucket limits are ``[sys.maxsize]``).
NO_CAP = sys.maxsize

#: Most ranks in a world or group, the book's largest case.
MAX_RANKS = 65536
#: Most parameter tensors (a 1T-parameter transformer has a few thousand).
MAX_TENSORS = 2**20
#: Most parameters of a model, 1000 times the largest published dense models.
MAX_PARAMS = 1e15
#: Most bytes of gradients in all (sums of integer byte counts stay exact in float64).
MAX_GRADIENT_BYTES = float(2**53)
#: Most micro-steps of gradient accumulation per optimizer step.
MAX_MICRO_STEPS = 2**20
#: Most elements (samples x features, over all steps) :func:`data_parallel_sgd` touches.
MAX_SGD_WORK = 2**26
#: Most samples in one global batch.
MAX_BATCH = 2**50

PARAM_DTYPES = {"float32": 4, "bfloat16": 2, "float16": 2}  # bytes per element
COMM_HOOKS = (None, "allreduce", "fp16_compress", "bf16_compress")
