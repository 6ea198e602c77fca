"""Build and check NCCL's double binary tree for many ranks, and time it.

    .venv/bin/python bench/bench_trees.py [--ranks 65536] [--reps 5]

Times :func:`scaleout.trees.double_binary_tree` (both trees, vectorised over all ranks) and
:func:`scaleout.trees.check_double_tree` (build again, then spanning, parent/child
agreement, depth, degrees, leaf/interior roles), best of ``--reps`` runs each, and prints
what the check found. The issue asks for building and checking 65,536 ranks in well under a
second; this prints the time and asserts nothing about it (not a test).

Then, side by side, the schedules at the library's size limits: the ring all-reduce at
``collectives.MAX_RING_RANKS`` ranks (2p(p-1) Transfer records, the most any schedule may
hold is ``collectives.MAX_TRANSFERS``) against the two-tree schedule on as many ranks, and
the ratio of their build times.
"""

from __future__ import annotations

import argparse
import time

from scaleout import collectives as C
from scaleout import trees as T


def best_of(reps: int, fn, *args):
    """(best seconds, last result) over ``reps`` calls of ``fn(*args)``."""
    best, result = float("inf"), None
    for _ in range(reps):
        start = time.perf_counter()
        result = fn(*args)
        best = min(best, time.perf_counter() - start)
    return best, result


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, nargs="+", default=[65536, 65535])
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args(argv)
    print(f"{'ranks':>8} {'build (ms)':>11} {'build+check (ms)':>17}  result")
    for n in args.ranks:
        build_s, _ = best_of(args.reps, T.double_binary_tree, n)
        check_s, report = best_of(args.reps, T.check_double_tree, n)
        depths = "/".join(str(t.depth) for t in report.trees)
        verdict = "ok" if report.ok else "NOT OK"
        roles = "every rank leaf in one tree" if report.complementary else (
            f"interior in both: {report.interior_in_both.tolist()}")  # fmt: skip
        print(
            f"{n:>8} {build_s * 1e3:>11.1f} {check_s * 1e3:>17.1f}  {verdict}, depth {depths}, "
            f"max {report.max_children} children / {report.max_parents} parents per rank, {roles}"
        )
    p = C.MAX_RING_RANKS
    ring_s, ring = best_of(1, C.ring_allreduce_schedule, p, p)
    tree_s, tree = best_of(args.reps, lambda: T.tree_allreduce_schedule(p, 16 * p, 16).steps())
    transfers = [sum(len(s.transfers) for s in steps) for steps in (ring, tree)]
    print(f"\nschedules on p = {p} ranks (limits: MAX_TRANSFERS = {C.MAX_TRANSFERS})")
    print(f"  ring all-reduce:           {transfers[0]:>9} transfers, {ring_s * 1e3:8.0f} ms")
    print(f"  two trees, 16 chunks each: {transfers[1]:>9} transfers, {tree_s * 1e3:8.0f} ms")
    print(f"  ring / trees build time: {ring_s / tree_s:.1f}x")


if __name__ == "__main__":
    main()
