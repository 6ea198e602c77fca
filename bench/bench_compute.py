"""Benchmark: the compute model's speed, and this machine's matmuls against its roofline.

1. Model speed: seconds per ``compute.gemm_time`` and per ``compute.layer_time`` call, and
   the whole (b, t, sp, recompute, flash) grid of the GPT-3 layer on A100 and H100, timed
   side by side; the planner of issue 17 must price a 1T model's whole plan space in 2 s,
   so the line "layer_time calls in 2 s" says how many distinct layer shapes it can afford
   without caching.
2. This machine: ``torch.matmul`` (float32) for square, off-by-one, skinny and
   matrix-vector shapes, each against the roofline drawn from the best measured product
   and a STREAM-style copy (``measured / roofline`` printed side by side).

    .venv/bin/python bench/bench_compute.py
"""

from __future__ import annotations

import itertools
import time

import torch

from scaleout import compute as C

GPT3 = C.Layer(12288, 96, 2048)


def per_call(fn, calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - start) / calls


def _clear() -> None:
    from scaleout.compute import gemm, layer

    gemm._gemm_time.cache_clear()
    gemm._ceiling.cache_clear()
    layer._layer_time.cache_clear()


def model_speed() -> None:
    grid = list(itertools.product((1, 2, 4, 8, 16), (1, 2, 4, 8), (False, True),
                                  ("none", "selective", "full"), (False, True),
                                  ("A100-80GB", "H100-SXM")))  # fmt: skip
    _clear()
    start = time.perf_counter()
    for b, t, sp, rc, fl, gpu in grid:
        C.layer_time(GPT3, b, gpu, t, sp, rc, fl)
    cold = (time.perf_counter() - start) / len(grid)
    warm = per_call(lambda: C.layer_time(GPT3, 4, "A100-80GB", t=8), 2000)
    _clear()
    gemm_cold = per_call(lambda: (_clear(), C.gemm_time(8192, 6144, 12288, "A100-80GB")), 200)
    gemm_warm = per_call(lambda: C.gemm_time(8192, 6144, 12288, "A100-80GB"), 2000)
    print("model speed (cold: caches cleared; warm: the same call again)")
    print(
        f"  gemm_time   cold {gemm_cold * 1e6:8.1f} us, warm {gemm_warm * 1e6:6.1f} us "
        f"(x{gemm_cold / gemm_warm:.0f})"
    )
    print(
        f"  layer_time  cold {cold * 1e6:8.1f} us (mean over {len(grid)} distinct "
        f"configurations), warm {warm * 1e6:6.1f} us (x{cold / warm:.0f})"
    )
    print(f"  distinct layer configurations priced in 2 s: {2 / cold:.0f}")


def best_seconds(fn, reps: int) -> float:
    fn()
    samples = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return min(samples)


def this_machine() -> None:
    shapes = {"512^3": (512, 512, 512), "1024^3": (1024, 1024, 1024),
              "1023^3": (1023, 1023, 1023), "2048^3": (2048, 2048, 2048),
              "128x2048x2048": (128, 2048, 2048), "16x2048x2048": (16, 2048, 2048),
              "1x4096x4096": (1, 4096, 4096)}  # fmt: skip
    flops, intensity = {}, {}
    for label, (m, n, k) in shapes.items():
        a, b = torch.randn(m, k), torch.randn(k, n)
        out = torch.matmul(a, b)
        reps = max(5, min(60, int(4e9 / (2 * m * n * k))))
        flops[label] = (
            2 * m * n * k / best_seconds(lambda a=a, b=b, o=out: torch.matmul(a, b, out=o), reps)
        )
        intensity[label] = C.arithmetic_intensity(2 * m * n * k, 4 * (m * k + k * n + m * n))
    x = torch.ones(2**25)
    y = torch.empty_like(x)
    bandwidth = 2 * x.numel() * 4 / best_seconds(lambda: y.copy_(x), 8)
    peak = max(flops.values())
    print(
        f"this machine: best product {peak / 1e9:.1f} GFLOP/s, copy {bandwidth / 1e9:.1f} GB/s"
        f" (ridge {peak / bandwidth:.1f} FLOP/B), torch threads {torch.get_num_threads()}"
    )
    print(f"  {'shape':>14s} {'FLOP/B':>8s} {'GFLOP/s':>9s} {'roofline':>9s} {'ratio':>6s}")
    for label in shapes:
        roof = C.attainable_flops(intensity[label], peak, bandwidth)
        print(
            f"  {label:>14s} {intensity[label]:8.1f} {flops[label] / 1e9:9.1f} "
            f"{roof / 1e9:9.1f} {flops[label] / roof:6.2f}"
        )


if __name__ == "__main__":
    model_speed()
    this_machine()
