"""Benchmark: how well the fitted alpha-beta ring model predicts gloo's all_reduce.

Measures gloo ``all_reduce`` on 4 CPU processes (``scaleout.dist.run``) for 1 KB .. 64 MB
per rank, several independent runs, fits alpha and beta of the ring formula to each run on
alternate sizes only (1 KB, 16 KB, ...; ``scaleout.costmodel.fit_alpha_beta`` with
``fit_rows="alternate"``) and prints, per size, the median measured time and the model's
relative error for every run, marking the sizes the fit never saw. Target: within 25 % on
the held-out sizes of 64 KB and more.

    .venv/bin/python bench/bench_alpha_beta.py [runs]
"""

from __future__ import annotations

import sys
import time

import numpy as np
import torch
import torch.distributed as dist

from scaleout import costmodel as M
from scaleout.dist import run

SIZES = [2**k for k in range(10, 27, 2)]  # bytes per rank: 1 KB .. 64 MB
P = 4


def measure(rank, world_size, sizes, rounds=5):
    """Per size: median over rounds of the mean time of back-to-back all-reduces, taking
    the slowest rank's time in each round."""
    out = []
    for nbytes in sizes:
        x = torch.ones(nbytes // 4)
        reps = max(2, min(20, 2**22 // nbytes))
        dist.all_reduce(x)
        samples = []
        for _ in range(rounds):
            dist.barrier()
            start = time.perf_counter()
            for _ in range(reps):
                dist.all_reduce(x)
            t = torch.tensor([(time.perf_counter() - start) / reps])
            dist.all_reduce(t, op=dist.ReduceOp.MAX)
            samples.append(t.item())
        out.append(float(np.median(samples)))
    return out


def main() -> int:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    times, fits = [], []
    for _ in range(runs):
        seconds = np.array(run(measure, P, args=(SIZES,), timeout=600)[0])
        times.append(seconds)
        fits.append(M.fit_alpha_beta(SIZES, seconds, p=P, fit_rows="alternate"))
    print(
        f"gloo all_reduce, {P} CPU processes, {runs} runs; ring model fitted per run on "
        "alternate sizes (held-out sizes marked *)"
    )
    for i, fit in enumerate(fits):
        print(f"  run {i}: alpha {fit.alpha * 1e6:8.1f} us, 1/beta {1 / fit.beta / 1e9:6.2f} GB/s")
    head = " ".join(f"{'err run ' + str(i):>10s}" for i in range(runs))
    print(f"{'bytes/rank':>11s} {'median t':>11s} {head}")
    worst = 0.0
    for j, nbytes in enumerate(SIZES):
        errs = [fit.rel_err[j] for fit in fits]
        med = np.median([t[j] for t in times])
        cols = " ".join(f"{e:+10.0%}" for e in errs)
        held_out = not fits[0].fitted[j]
        print(f"{nbytes:11d}{'*' if held_out else ' '}{med * 1e3:8.3f} ms {cols}")
        if held_out and nbytes >= 64 * 1024:
            worst = max(worst, max(abs(e) for e in errs))
    print(f"worst held-out |error| for messages >= 64 KB: {worst:.0%} (target <= 25%)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
