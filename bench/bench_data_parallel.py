"""How fast the data-parallel explorer redraws: library recomputation and figure, 1,000 layers.

    .venv/bin/python bench/bench_data_parallel.py [--layers 1000] [--reps 20]

The explorer of chapter 2 recomputes two timelines (naive and bucketed DDP,
:func:`scaleout.data_parallel.uniform_model_timelines`) and redraws the Gantt chart
(:func:`scaleout.viz.data_parallel.timeline_figure`) on every slider move. Target: under
50 ms at 1,000 layers, so a slider feels instant. The table gives the median over ``reps``
for bucket caps from 1 MiB (one bucket per layer: the most buckets) to DDP's default, and
the figure serialised to JSON as the page receives it. The last line builds the static
explorer of the chapter (the 288 figures of its declared grid) and reports the seconds to
precompute them and the bytes they take, separately and packed (the page's budget: 1.2 MB
per explorer). Not a test: nothing asserts on time.
"""

from __future__ import annotations

import argparse
import statistics
import time

import ipywidgets as W

from scaleout import data_parallel as D
from scaleout import hardware as H
from scaleout.viz import data_parallel as VD
from scaleout.viz.render import _json_for_script, figure_spec
from scaleout.widgets import Explorer, pack

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
    static_explorer()
    return 0


STATIC = {  # the chapter's declared grid (chapters/02_data_parallel.ipynb)
    "n_params": [25e6, 350e6, 1.3e9, 7e9],
    "n_layers": [48, 96],
    "bucket_cap": [1, "default", 100, 400],
    "world_size": [8, 64, 512],
    "link": ["nvlink4-h100", "nic-400g", "nic-100g"],
}


def static_explorer() -> None:
    def make(n_params, n_layers, bucket_cap, world_size, link):
        preset = H.link(link)
        return VD.timeline_figure(
            *D.uniform_model_timelines(
                n_params,
                n_layers,
                world_size,
                preset.alpha_s,
                preset.beta_s_per_byte,
                bucket_cap_mb=None if bucket_cap == "default" else bucket_cap,
            )
        )

    controls = {
        "n_params": W.SelectionSlider(options=STATIC["n_params"], value=350e6),
        "n_layers": W.SelectionSlider(options=[12, 24, 48, 96, 192, 1000], value=96),
        "bucket_cap": W.SelectionSlider(options=[1, 5, 25, "default", 100, 400], value="default"),
        "world_size": W.SelectionSlider(options=[2**k for k in range(1, 11)], value=64),
        "link": W.Dropdown(options=list(H.LINKS), value="nic-400g"),
    }
    start = time.perf_counter()
    explorer = Explorer("bench-dp-explorer", controls, make, static=STATIC)
    specs, _ = explorer.static_states()
    built = time.perf_counter() - start
    states, pool = pack(specs)
    packed = len(_json_for_script({"states": states, "pool": pool}))
    raw = sum(len(_json_for_script(s)) for s in specs)
    print(f"static explorer: {len(specs)} figures in {built:.1f} s; {raw / 1e6:.2f} MB as "
          f"separate figures, {packed / 1e6:.2f} MB packed ({packed / raw:.2f} of it)")  # fmt: skip


if __name__ == "__main__":
    raise SystemExit(main())
