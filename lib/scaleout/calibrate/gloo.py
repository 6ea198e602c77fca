"""The book's own collective benchmark, on CPU processes with gloo, reported as nccl-tests does.

:func:`time_collective` is the worker :func:`scaleout.dist.run` forks (one per rank); it
times ``collective`` for each size the way nccl-tests does (``src/common.cu``
``BenchTime``: warm-up, then the mean of ``iters`` back-to-back calls; here the median of
``rounds`` such means, and the slowest rank's time, as chapter 1 measures). :func:`gloo_log`
turns the times into a :class:`~scaleout.calibrate.records.Log` with nccl-tests' columns
(``size`` = the whole buffer for all-reduce and broadcast, the full output for all-gather;
``algbw = size / time``, ``busbw = algbw x`` the factor of ``doc/PERFORMANCE.md``), which
:func:`~scaleout.calibrate.nccl_tests.format_nccl_tests` prints and
:func:`~scaleout.calibrate.nccl_tests.parse_nccl_tests` reads back.
"""

from __future__ import annotations

import time

import numpy as np

from .. import checks, costmodel
from .records import Log, Result, Row

GLOO_COLLECTIVES = ("allreduce", "allgather", "broadcast")
MAX_BENCH_BYTES = 2**28


def _sizes(sizes):
    s = checks.array("sizes", sizes, ndim=1, low=4, high=MAX_BENCH_BYTES, integer=True,
                     max_size=64)  # fmt: skip
    if np.any(s % 4):
        raise checks.fail("sizes", "multiples of 4 bytes (float32 elements)", sizes)
    return [int(x) for x in s]


def time_collective(rank, world_size, collective, sizes, rounds=5):
    """Seconds per call of ``collective`` for each of ``sizes`` (bytes, nccl-tests' size),
    on the calling rank's process group: per size the median over ``rounds`` of the mean of
    a few back-to-back calls, the slowest rank's."""
    import torch
    import torch.distributed as dist

    checks.choice("collective", collective, GLOO_COLLECTIVES)
    sizes = _sizes(sizes)
    rounds = checks.integer("rounds", rounds, 1, 50)
    out = []
    for nbytes in sizes:
        count = nbytes // 4
        if collective == "allgather":
            per = max(1, count // world_size)
            x = torch.ones(per)
            parts = [torch.empty(per) for _ in range(world_size)]
            call = lambda parts=parts, x=x: dist.all_gather(parts, x)  # noqa: E731
        elif collective == "broadcast":
            x = torch.ones(count)
            call = lambda x=x: dist.broadcast(x, src=0)  # noqa: E731
        else:
            x = torch.ones(count)
            call = lambda x=x: dist.all_reduce(x)  # noqa: E731
        reps = max(2, min(20, 2**22 // nbytes))
        call()  # warm-up
        per_round = []
        for _ in range(rounds):
            dist.barrier()
            start = time.perf_counter()
            for _ in range(reps):
                call()
            elapsed = torch.tensor([(time.perf_counter() - start) / reps])
            dist.all_reduce(elapsed, op=dist.ReduceOp.MAX)  # the slowest rank's time
            per_round.append(elapsed.item())
        out.append(float(np.median(per_round)))
    return out


def gloo_log(collective, sizes, seconds, ranks, host="localhost") -> Log:
    """A :class:`~scaleout.calibrate.records.Log` of measured ``seconds`` per size, in
    nccl-tests' columns."""
    checks.choice("collective", collective, GLOO_COLLECTIVES)
    sizes = _sizes(sizes)
    t = checks.array("seconds", seconds, ndim=1, low=0.0, low_open=True, max_size=64)
    if t.size != len(sizes):
        raise checks.fail("seconds", f"{len(sizes)} times, one per size", t.size)
    ranks = checks.integer("ranks", ranks, 1, 64)
    checks.text("host", host, 60)
    factor = costmodel.busbw_factor(collective, ranks)
    rows = []
    for nbytes, sec in zip(sizes, t.tolist(), strict=True):
        algbw = nbytes / sec / 1e9
        res = Result(sec * 1e6, algbw, algbw * factor, 0.0)
        count = nbytes // 4 // (ranks if collective == "allgather" else 1)
        redop = "sum" if collective == "allreduce" else "none"
        root = 0 if collective == "broadcast" else -1
        rows.append(Row(nbytes, count, "float", redop, root, res, None))
    devices = tuple(f"Rank {r:2d} Group  0 Pid {0:6d} on {host:>10s} device {r:2d} [cpu] "
                    "gloo CPU process" for r in range(ranks))  # fmt: skip
    return Log(collective, ranks, devices, None, tuple(rows), "gloo")
