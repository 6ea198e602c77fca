"""How fast the data-parallel explorer redraws: library recomputation and figure, 1,000 layers.

    .venv/bin/python bench/bench_data_parallel.py [--layers 1000] [--reps 20]

The explorer of chapter 2 recomputes two timelines (naive and bucketed DDP,
:func:`scaleout.data_parallel.uniform_model_timelines`) and redraws the Gantt chart
(:func:`scaleout.viz.data_parallel.timeline_figure`) on every slider move. Target: under
50 ms at 1,000 layers, so a slider feels instant. The table gives the median over ``reps``
for bucket caps from 1 MiB (one bucket per layer: the most buckets) to DDP's default, and
the figure serialised to JSON as the page receives it. Not a test: nothing asserts on time.
"""

from __future__ import annotations

import argparse
import statistics
import time

from scaleout import data_parallel as D
from scaleout import hardware as H
from scaleout.viz import data_parallel as VD
from scaleout.viz.render import figure_spec

TARGET_MS = 50.0


def median_ms(fn, reps: int) -> float:
    fn()  # warm-up (imports, caches)
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=1000)
    parser.add_argument("--reps", type=int, default=20)
    args = parser.parse_args()
    nic = H.link("nic-400g")

    def timelines(cap):
        return D.uniform_model_timelines(
            1.3e9, args.layers, 64, nic.alpha_s, nic.beta_s_per_byte, bucket_cap_mb=cap
        )

    print(f"explorer recomputation, {args.layers} layers, 1.3B parameters, 64 ranks, nic-400g")
    print(f"{'bucket cap':>16s} {'buckets':>8s} {'library':>10s} {'+ figure':>10s} {'+ JSON':>10s}")
    worst = 0.0
    for cap in (1, 5, 25, None):
        naive, ddp = timelines(cap)
        lib = median_ms(lambda cap=cap: timelines(cap), args.reps)
        fig = median_ms(lambda cap=cap: VD.timeline_figure(*timelines(cap)), args.reps)
        spec = median_ms(
            lambda cap=cap: figure_spec(VD.timeline_figure(*timelines(cap))), args.reps
        )
        worst = max(worst, spec)
        label = "default" if cap is None else f"{cap} MiB"
        print(f"{label:>16s} {len(ddp.buckets):8d} {lib:8.2f} ms {fig:8.2f} ms {spec:8.2f} ms")
    verdict = "meets" if worst < TARGET_MS else "MISSES"
    print(f"slowest full redraw: {worst:.1f} ms ({verdict} the {TARGET_MS:.0f} ms target)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
