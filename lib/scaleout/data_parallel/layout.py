"""Data parallelism inside 3D parallelism: the layout of t-way tensor, p-way pipeline and
d-way data parallelism, and each data-parallel group's ranks.

Taught in chapter 2, "Data parallelism" (``chapters/02_data_parallel.ipynb``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import checks
from .limits import MAX_BATCH, MAX_PARAMS, MAX_RANKS


def _divide(name: str, n: int, by: int, what: str) -> int:
    if n % by:
        raise checks.fail(name, f"a multiple of {what} = {by}", n)
    return n // by


@dataclass(frozen=True)
class ParallelLayout:
    """``world_size`` GPUs as t-way tensor x p-way pipeline x d-way data parallelism, and
    a global batch of ``global_batch`` samples in micro-batches of ``micro_batch``.

    Every GPU holds 1 / (t p) of the model; the d GPUs that hold the same shard (same
    tensor rank, same pipeline stage) are one data-parallel group, and the t p groups
    all-reduce their gradients at the same time (Narayanan et al., SC21, Sec. 2-3;
    Megatron-LM ``initialize_model_parallel``). For a fixed global batch each replica gets
    B / d samples, i.e. B / (d b) micro-batches: more replicas, fewer micro-batches per
    pipeline (a larger bubble, chapter 5).
    """

    world_size: int
    tensor: int
    pipeline: int
    global_batch: int
    micro_batch: int = 1

    def __post_init__(self):
        n = checks.integer("world_size", self.world_size, 1, MAX_RANKS)
        t = checks.integer("tensor", self.tensor, 1, MAX_RANKS)
        p = checks.integer("pipeline", self.pipeline, 1, MAX_RANKS)
        d = _divide("world_size", n, t * p, "tensor x pipeline")
        batch = checks.integer("global_batch", self.global_batch, 1, MAX_BATCH)
        b = checks.integer("micro_batch", self.micro_batch, 1, MAX_BATCH)
        _divide("global_batch", batch, d * b, "data x micro_batch")
        for name, value in zip(self.__dataclass_fields__, (n, t, p, batch, b), strict=True):
            object.__setattr__(self, name, value)

    @property
    def data(self) -> int:
        """The number d of replicas of every model shard (each data-parallel group's size)."""
        return self.world_size // (self.tensor * self.pipeline)

    @property
    def groups(self) -> int:
        """The number t p of data-parallel groups, all-reducing concurrently."""
        return self.tensor * self.pipeline

    @property
    def samples_per_replica(self) -> int:
        """B / d samples of each global batch on each replica."""
        return self.global_batch // self.data

    @property
    def micro_batches(self) -> int:
        """m = B / (d b) micro-batches per replica (and per pipeline) per step."""
        return self.samples_per_replica // self.micro_batch

    def gradient_bytes(self, n_params: float, bytes_per_param: float = 4.0) -> float:
        """Bytes each GPU all-reduces in its data-parallel group per step: its 1 / (t p)
        of the ``n_params`` parameters' gradients (an even split assumed)."""
        n = checks.real("n_params", n_params, 0.0, MAX_PARAMS, low_open=True)
        itemsize = checks.real("bytes_per_param", bytes_per_param, 0.0, 16.0, low_open=True)
        return n * itemsize / self.groups

    def data_parallel_groups(self) -> np.ndarray:
        """(t p, d) ranks of each data-parallel group: :func:`data_parallel_groups`."""
        return data_parallel_groups(self.world_size, self.tensor, self.pipeline)


def data_parallel_groups(world_size: int, tensor: int, pipeline: int) -> np.ndarray:
    """(t p, d) global ranks of every data-parallel group, in Megatron-LM's default rank
    order ("tp-cp-ep-dp-pp": tensor rank fastest, then data, then pipeline stage, so
    rank = stage d t + replica t + tensor rank; ``megatron/core/parallel_state.py``).
    Row ``stage * t + tensor_rank`` is the group of that stage and tensor rank. Its
    docstring's example, 16 GPUs with t = 2 and p = 4, gives [0, 2], [1, 3], [4, 6], ...
    """
    n = checks.integer("world_size", world_size, 1, MAX_RANKS)
    t = checks.integer("tensor", tensor, 1, MAX_RANKS)
    p = checks.integer("pipeline", pipeline, 1, MAX_RANKS)
    d = _divide("world_size", n, t * p, "tensor x pipeline")
    grid = np.arange(n).reshape(p, d, t)  # [stage, replica, tensor rank]
    return grid.transpose(0, 2, 1).reshape(p * t, d)
