"""Benchmark: how long the schedule simulator takes on large pipelines.

Target (issue 5): ``schedule("1f1b", 64, 1024)`` and the interleaved schedule with v = 4
each in under 1 s, so that explorers and figures can call the simulator freely. Prints the
best of three runs per case and the simulated bubble beside its closed form (a check that
the big runs are right, not only fast).

    .venv/bin/python bench/bench_pipeline.py
"""

from __future__ import annotations

import time

from scaleout import pipeline as P

CASES = [("1f1b", 64, 1024, 1), ("interleaved", 64, 1024, 4), ("gpipe", 64, 1024, 1),
         ("zb-h1", 64, 1024, 1)]  # fmt: skip
TARGET_S = 1.0


def main() -> int:
    print(f"{'schedule':<12} {'p':>3} {'m':>5} {'v':>2} {'ops':>8} {'best of 3':>10} "
          f"{'bubble':>9} {'closed form':>11}")  # fmt: skip
    for name, p, m, v in CASES:
        times = []
        for _ in range(3):
            start = time.perf_counter()
            sched = P.schedule(name, p, m, v)
            times.append(time.perf_counter() - start)
        best = min(times)
        print(f"{name:<12} {p:>3} {m:>5} {v:>2} {len(sched.phase):>8} {best:>8.3f} s "
              f"{P.bubble_fraction(sched):>9.5f} {P.bubble_closed_form(name, p, m, v):>11.5f}"
              f"{'  SLOWER THAN 1 s' if best > TARGET_S else ''}")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
