"""How fast the RDMA-write simulator runs: a million packets at 1% loss, per strategy.

    .venv/bin/python bench/bench_rdma.py [--packets 1000000] [--loss 0.01] [--rtt-us 8]
                                         [--reps 3] [--reference-packets 20000]

The issue behind chapter 12 asks for a 1,000,000-packet transfer at 1% loss in under 2 s per
strategy. Default link: 400 Gb/s, 4096-byte MTU, RTT 8 us (a bandwidth-delay product of 98
packets), independent losses, default window (one BDP + 1) and timeout (131 us). The table
prints the median wall time of ``reps`` runs of the batched engine
(``scaleout.rdma.simulate_fast``), what the transfer did, and, for a smaller transfer, the
speed-up over the per-packet reference loop (``scaleout.rdma.simulate_reference``), whose
result must be identical. Times depend on this machine and its load; nothing asserts on them.
"""

from __future__ import annotations

import argparse
import statistics
import time

from scaleout import rdma as R
from scaleout.rdma import SimConfig, simulate_fast, simulate_reference


def timed(fn, reps: int):
    times, result = [], None
    for _ in range(reps):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--packets", type=int, default=1_000_000)
    ap.add_argument("--loss", type=float, default=0.01)
    ap.add_argument("--rtt-us", type=float, default=8.0)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--reference-packets", type=int, default=20_000)
    args = ap.parse_args()
    common = dict(loss=args.loss, rtt_s=args.rtt_us * 1e-6, seed=1)
    print(f"{args.packets} packets of 4096 B at 400 Gb/s, RTT {args.rtt_us:g} us, "
          f"loss {args.loss:g}; median of {args.reps}")  # fmt: skip
    print(f"{'strategy':17s} {'time (s)':>9s} {'sent':>9s} {'resent':>9s} {'timeouts':>8s} "
          f"{'goodput':>8s}")  # fmt: skip
    for strategy in R.STRATEGIES:
        cfg = SimConfig(4096 * args.packets, strategy=strategy, **common)
        seconds, r = timed(lambda cfg=cfg: simulate_fast(cfg), args.reps)
        print(f"{strategy:17s} {seconds:9.2f} {r.sent:9d} {r.retransmitted:9d} "
              f"{r.timeouts:8d} {r.goodput_fraction:8.3f}")  # fmt: skip
    print(f"\nspeed-up over the per-packet reference, {args.reference_packets} packets:")
    for strategy in R.STRATEGIES:
        cfg = SimConfig(4096 * args.reference_packets, strategy=strategy, **common)
        fast_s, fast = timed(lambda cfg=cfg: simulate_fast(cfg), args.reps)
        ref_s, ref = timed(lambda cfg=cfg: simulate_reference(cfg), 1)
        same = (fast.completion_s, fast.sent, fast.status) == (
            ref.completion_s,
            ref.sent,
            ref.status,
        )
        print(f"{strategy:17s} reference {ref_s:6.2f} s, batched {fast_s:6.3f} s: "
              f"x{ref_s / fast_s:5.0f}, same result: {same}")  # fmt: skip


if __name__ == "__main__":
    main()
