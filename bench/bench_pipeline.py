"""Benchmark: the schedule simulator's two engines, side by side, up to its size limit.

``pipeline.schedule`` simulates with an event-driven loop in Python for short pipelines and
with vectorised rounds (one operation per ready stage per round) from
``pipeline.ROUNDS_FROM_STAGES`` stages on. Per case this prints the best of three runs of
each engine on the same inputs (one run for the largest), their ratio (events / rounds:
above 1, rounds win), and the simulated bubble beside its closed form (a check that the
big runs are right, not only fast). The last two cases sit at ``pipeline.MAX_OPERATIONS``,
the largest schedules accepted. Targets (issue 5): ``schedule("1f1b", 64, 1024)`` and the
interleaved schedule with v = 4 each in under 1 s.

    .venv/bin/python bench/bench_pipeline.py
"""

from __future__ import annotations

import time

import numpy as np

from scaleout import pipeline as P

CASES = [("1f1b", 8, 4096, 1), ("1f1b", 16, 4096, 1), ("1f1b", 32, 2048, 1),
         ("1f1b", 64, 1024, 1), ("interleaved", 64, 1024, 4), ("zb-h1", 64, 1024, 1),
         ("1f1b", 1024, 2048, 1), ("zb-h1", 1024, 1365, 1)]  # fmt: skip
TARGET_S = 1.0


def best_of(runs, fn, *args) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> int:
    print(f"rounds engine from p = {P.ROUNDS_FROM_STAGES}; at most {P.MAX_OPERATIONS} operations")
    print(f"{'schedule':<12} {'p':>4} {'m':>5} {'v':>2} {'ops':>8} {'events':>8} {'rounds':>8} "
          f"{'ratio':>6} {'schedule()':>10} {'bubble':>9} {'closed form':>11}")  # fmt: skip
    for name, p, m, v in CASES:
        sched = P.schedule(name, p, m, v)
        bounds = np.searchsorted(sched.stage, np.arange(p + 1))
        args = (bounds, sched.dep, sched.end - sched.start, np.zeros(len(sched.dep)))
        runs = 1 if len(sched.phase) > 1_000_000 else 3  # the big ones take seconds
        t_events = best_of(runs, P._simulate_events, *args)
        t_rounds = best_of(runs, P._simulate_rounds, *args)
        t_sched = best_of(runs, P.schedule, name, p, m, v)
        slow = "  SLOWER THAN 1 s" if t_sched > TARGET_S and len(sched.phase) < 600_000 else ""
        print(f"{name:<12} {p:>4} {m:>5} {v:>2} {len(sched.phase):>8} {t_events:>6.2f} s "
              f"{t_rounds:>6.2f} s {t_events / t_rounds:>6.2f} {t_sched:>8.2f} s "
              f"{P.bubble_fraction(sched):>9.5f} {P.bubble_closed_form(name, p, m, v):>11.5f}"
              f"{slow}")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
