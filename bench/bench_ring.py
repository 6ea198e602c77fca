"""Hand-written ring all-reduce against gloo's own ``dist.all_reduce``, side by side.

    .venv/bin/python bench/bench_ring.py [--nprocs 4] [--reps 5] [--sizes-mb 1 16 64]

Both run in the same launch (``scaleout.dist.run``, CPU processes over loopback), on the
same float32 buffers, interleaved: after one warm-up of each, repetition i runs gloo then
the ring when i is even and the other way round when i is odd, so drift (caches, other
load) hits both alike. A time is the slowest rank's, from a barrier to its return; the table
shows medians. algbw = bytes / time; busbw = algbw * 2(p-1)/p (nccl-tests
doc/PERFORMANCE.md, :func:`scaleout.costmodel.busbw_factor`). Only the ratio in the last
column means much: absolute numbers depend on this machine. Not a test: nothing asserts on
time.
"""

from __future__ import annotations

import argparse
import functools
import os
import statistics
import time

import torch
import torch.distributed as dist

from scaleout.costmodel import busbw_factor
from scaleout.demos.collectives import ring_allreduce_p2p
from scaleout.dist import run


def _timed_s(op) -> float:
    """Seconds from a common barrier until the slowest rank returns from ``op``."""
    dist.barrier()
    start = time.perf_counter()
    op()
    elapsed = torch.tensor([time.perf_counter() - start], dtype=torch.float64)
    dist.all_reduce(elapsed, op=dist.ReduceOp.MAX)
    return float(elapsed.item())


def bench(rank: int, world_size: int, sizes_bytes: list[int], reps: int) -> list[dict]:
    """Per size: median seconds of gloo and of the hand ring, and max |ring - gloo|."""
    rows = []
    for nbytes in sizes_bytes:
        x = torch.randn(nbytes // 4, generator=torch.Generator().manual_seed(rank))  # (n,)
        buf = torch.empty_like(x)
        ops = {
            "gloo": functools.partial(dist.all_reduce, buf),
            "ring": functools.partial(ring_allreduce_p2p, buf, rank, world_size),
        }
        results = {}
        for name, op in ops.items():  # warm-up; also keeps each result to compare
            buf.copy_(x)
            _timed_s(op)
            results[name] = buf.clone()
        diff = float((results["ring"] - results["gloo"]).abs().max())
        times = {name: [] for name in ops}
        for i in range(reps):
            for name in ("gloo", "ring") if i % 2 == 0 else ("ring", "gloo"):
                buf.copy_(x)
                times[name].append(_timed_s(ops[name]))
        rows.append(
            {
                "bytes": nbytes,
                "gloo_s": statistics.median(times["gloo"]),
                "ring_s": statistics.median(times["ring"]),
                "max_diff": diff,
            }
        )
    return rows


def table(rows: list[dict], nranks: int) -> str:
    """The results as a fixed-width text table; bandwidths in GB/s (1e9 bytes/s)."""
    factor = busbw_factor("allreduce", nranks)
    head = (
        f"{'size':>7} | {'gloo ms':>8} {'algbw':>6} {'busbw':>6} | "
        f"{'ring ms':>8} {'algbw':>6} {'busbw':>6} | {'ring/gloo':>9} | {'max|diff|':>9}"
    )
    lines = [head, "-" * len(head)]
    for row in rows:
        size = f"{row['bytes'] / 2**20:g} MB"
        cells = []
        for key in ("gloo_s", "ring_s"):
            algbw = row["bytes"] / row[key] / 1e9
            cells.append(f"{row[key] * 1e3:8.1f} {algbw:6.2f} {algbw * factor:6.2f}")
        ratio = row["gloo_s"] / row["ring_s"]  # throughput of the ring relative to gloo
        lines.append(f"{size:>7} | {cells[0]} | {cells[1]} | {ratio:9.2f} | {row['max_diff']:9.1e}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nprocs", type=int, default=4)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--sizes-mb", type=float, nargs="+", default=[1, 16, 64])
    parser.add_argument("--timeout-s", type=float, default=600.0)
    args = parser.parse_args()
    if args.reps < 1 or any(mb <= 0 for mb in args.sizes_mb):
        parser.error("--reps must be >= 1 and --sizes-mb > 0")
    sizes = [int(mb * 2**20) // 4 * 4 for mb in args.sizes_mb]  # whole float32 elements
    rows = run(
        bench, args.nprocs, args=(sizes, args.reps), timeout=args.timeout_s, show_output=False
    )[0]
    print(
        f"all-reduce, float32, {args.nprocs} ranks (gloo over loopback, 1 thread each), "
        f"{os.cpu_count()} CPU cores, torch {torch.__version__}; "
        f"median of {args.reps} interleaved repetitions"
    )
    print(table(rows, args.nprocs))
    print("ring/gloo: throughput of the hand-written ring relative to dist.all_reduce (>1: faster)")


if __name__ == "__main__":
    main()
