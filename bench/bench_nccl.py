"""NCCL's model: how fast it prices, and LL against Simple measured side by side.

    .venv/bin/python bench/bench_nccl.py [--reps 3] [--sizes 1024]

1. Pricing: :func:`scaleout.nccl.predict` for ``--sizes`` sizes at once on a cold
   topology (search + tuning table + choice) and on a warm one (table cached), against a
   loop of one-size calls; the ratio is what vectorising buys an explorer or a planner.
2. Protocols: :func:`scaleout.nccl.shm.pingpong` for LL and Simple at 4 bytes and at 1 MiB,
   run alternately so both see the same machine; prints each one-way time and the ratio
   Simple / LL (above 1: LL faster). The times depend on the machine and its load; nothing
   is asserted (not a test).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from scaleout import nccl
from scaleout.nccl import model, shm


def best_of(reps: int, fn):
    best = float("inf")
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--sizes", type=int, default=1024)
    args = parser.parse_args(argv)
    sizes = np.logspace(0, 34 * np.log10(2), args.sizes)
    topo = nccl.topology("dgx-h100", nodes=16)

    def cold():
        model._table.cache_clear()
        nccl.predict("allreduce", sizes, machine=topo)

    warm_vector = best_of(args.reps, lambda: nccl.predict("allreduce", sizes, machine=topo))
    cold_vector = best_of(args.reps, cold)
    loop = best_of(1, lambda: [nccl.predict("allreduce", float(s), machine=topo) for s in sizes])
    print(f"pricing {args.sizes} sizes on 16 DGX H100: cold {cold_vector * 1e3:.1f} ms, "
          f"warm {warm_vector * 1e3:.1f} ms, one call per size {loop * 1e3:.0f} ms "
          f"(vectorised {loop / warm_vector:.0f}x faster)")  # fmt: skip
    for nbytes, iters in ((4, 3000), (2**20, 40)):
        ll = simple = float("inf")
        for _ in range(args.reps):
            ll = min(ll, shm.pingpong("ll", nbytes, iters).seconds)
            simple = min(simple, shm.pingpong("simple", nbytes, iters).seconds)
        print(
            f"{nbytes:>8d} B one way: LL {ll * 1e6:.2f} us, Simple {simple * 1e6:.2f} us, "
            f"Simple / LL = {simple / ll:.2f}"
        )


if __name__ == "__main__":
    main()
