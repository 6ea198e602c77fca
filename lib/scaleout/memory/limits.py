"""Memory's names and limits: ZeRO's stages, optimizers, precisions, what each stage shards
and communicates, the input limits, and the checks the package shares.

Taught in chapter 6, "ZeRO sharding" (``chapters/06_zero.ipynb``); sources and units in
:mod:`scaleout.memory`.
"""

from __future__ import annotations

import numpy as np

from .. import checks, hardware

#: GPU memory in bytes assumed when none is named (an H100 SXM's 80 GB, from hardware).
DEFAULT_GPU_BYTES = hardware.gpu("H100-SXM").memory_gb * 1e9
STAGES = (0, 1, 2, 3)
STAGE_NAMES = {0: "plain DP", 1: "ZeRO-1 (P_os)", 2: "ZeRO-2 (P_os+g)", 3: "ZeRO-3 (P_os+g+p)"}
OPTIMIZERS = ("adam", "sgd_momentum", "sgd")
PRECISIONS = ("mixed", "fp32", "megatron-bf16", "megatron-fp16")
RECOMPUTE = ("none", "selective", "full")
KINDS = ("parameters", "gradients", "optimizer states")
# First stage at which each kind of state is sharded (ZeRO section 5, Figure 1).
SHARDED_FROM = {"parameters": 3, "gradients": 2, "optimizer states": 1}
# Collectives of one training step and their volume per rank, in units of psi elements
# (ZeRO section 7.2: ring all-reduce = reduce-scatter + all-gather, psi each).
COMM_PATTERN = {
    0: (("allreduce", "gradients", 2),),
    1: (("reducescatter", "gradients", 1), ("allgather", "updated parameters", 1)),
    2: (("reducescatter", "gradients", 1), ("allgather", "updated parameters", 1)),
    3: (
        ("allgather", "parameters, before each layer's forward", 1),
        ("allgather", "parameters, before each layer's backward", 1),
        ("reducescatter", "gradients", 1),
    ),
}
#: Most layers :func:`zero3_step` replays (its frames hold per-layer tuples).
MAX_STEP_LAYERS = 256
#: Most tensors and ranks :func:`greedy_partition` partitions (a million tensors, the book's
#: 65,536 ranks).
MAX_TENSORS, MAX_RANKS = 2**20, 65536
#: Most layers :func:`zero3_peak_bytes` and :func:`exposed_comm_seconds` split a model into.
MAX_LAYERS = 2**20
Z3_OPS = ("", "all-gather", "compute", "reduce-scatter", "update")
Z3_GRADS = ("none", "full", "shard")


# Overflow is reported by _out (checks.finite_result), not as a numpy warning.
_QUIET = np.errstate(over="ignore", invalid="ignore")


def _reals(name: str, x) -> np.ndarray:
    """A finite real number or array > 0."""
    return checks.array(name, x, low=0.0, low_open=True)


def _counts(name: str, x, high: int | None = None) -> np.ndarray:
    """An integer or integer array >= 1 (and <= high)."""
    return checks.array(name, x, integer=True, low=1, high=high).astype(np.float64)


def _stage(stage) -> int:
    return checks.integer("stage", stage, 0, 3)


def _out(name: str, x):
    """A float for 0-d results, else a float64 array; ValueError if it overflowed."""
    with np.errstate(over="ignore", invalid="ignore"):
        x = np.asarray(x, dtype=np.float64)
    checks.finite_result(name, x)
    return float(x) if x.ndim == 0 else x
