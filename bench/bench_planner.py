"""The planner's search: the whole space of a 1T model on 3,072 GPUs, cold and warm.

    .venv/bin/python bench/bench_planner.py [--reps 3]

1. Cold: :func:`scaleout.planner.search` with every cache empty (NCCL's tuning tables,
   the compute model's GEMM, layer and head times, the collectives), as the first
   explorer state of a chapter sees it.
2. Warm: the same search again (caches full), as every later state sees it.
3. Side by side: memory of every candidate vectorised (:func:`scaleout.planner.step.memory_many`)
   against one :func:`~scaleout.planner.step.memory_bytes` call per candidate; the ratio
   is what vectorising the memory check buys (it prunes before pricing).

The issue's target is under 2 s for the whole space; the times depend on the machine and
its load (2 shared cores here), so nothing is asserted (not a test).
"""

from __future__ import annotations

import argparse
import time

from scaleout import nccl
from scaleout import planner as PL
from scaleout.compute import gemm, head, layer
from scaleout.planner import comm, compute_term, step


def clear() -> None:
    for cached in (
        comm._collective,
        compute_term._layer_times,
        nccl.model._table,
        layer._layer_time,
        head._head_time,
        gemm._gemm_time,
        gemm._ceiling,
    ):
        cached.cache_clear()  # fmt: skip


def best_of(reps: int, fn, cold: bool):
    best = float("inf")
    for _ in range(reps):
        if cold:
            clear()
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args(argv)
    model, cluster, batch = PL.ONE_T, PL.a100_cluster(3072), 3072
    plans = PL.candidates(model, cluster, batch)
    results = PL.search(model, cluster, batch)
    print(f"1T on 3,072 A100, B = {batch}: {len(plans)} plans, {len(results)} fit")
    cold = best_of(args.reps, lambda: PL.search(model, cluster, batch), cold=True)
    warm = best_of(args.reps, lambda: PL.search(model, cluster, batch), cold=False)
    print(f"search, cold caches: {cold:.3f} s; warm: {warm:.3f} s (target: < 2 s)")
    ms = [batch // (p.d * p.b) for p in plans]
    vec = best_of(args.reps, lambda: step.memory_many(model, plans, ms), cold=False)
    pairs = list(zip(plans, ms, strict=True))
    loop = best_of(1, lambda: [step.memory_bytes(model, p, m) for p, m in pairs], cold=False)
    print(f"memory of {len(plans)} plans: vectorised {vec * 1e3:.1f} ms, one call each "
          f"{loop * 1e3:.0f} ms, ratio {loop / vec:.0f}x")  # fmt: skip


if __name__ == "__main__":
    main()
