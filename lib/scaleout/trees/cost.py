"""The cost of the pipelined tree all-reduce in the one-port model: busiest port, time,
best chunk count and the crossover against the ring (vectorised). Part of
:mod:`scaleout.trees` (chapter 9).
"""

from __future__ import annotations

import numpy as np

from .. import checks
from .. import costmodel as M
from .build import BinaryTree, _trees


def port_messages(tree: BinaryTree) -> np.ndarray:
    """(n,) messages each rank sends (= receives) per tree in a full pipeline step:
    one up unless it is the root, one down to each child."""
    tree = checks.instance("tree", tree, BinaryTree)
    return (tree.parent >= 0) + tree.nchildren


def port_load(p, trees: int = 2):
    """Busiest port per steady-state step, in units of message/chunks bytes (vectorised).

    One tree: max of :func:`port_messages` = 3 for p >= 4 (a rank with a parent and two
    children), else p - 1. Two trees, each message half as large: (messages over both
    trees) / 2 = 2 for p >= 4 (3 in the tree where a rank is interior, 1 where it is a
    leaf); 1 and 1.5 for p = 2 and 3. Tested against the trees for every p up to 1024.
    """
    trees = _trees(trees)
    p = M._ranks(p)
    small = {1: (0.0, 0.0), 2: (1.0, 1.0), 3: (2.0, 1.5)}
    out = np.full(p.shape, 3.0 if trees == 1 else 2.0)
    for q, loads in small.items():
        out = np.where(p == q, loads[trees - 1], out)
    return M._out(out)


def tree_allreduce_time(nbytes, p, alpha, beta, chunks=1, trees: int = 2):
    """Seconds for the pipelined tree all-reduce of ``nbytes`` per rank (vectorised).

    ``(chunks + 2 ceil(log2 p) - 1) * (alpha + port_load(p) * nbytes / chunks * beta)``:
    the number of steps of :func:`tree_allreduce_schedule` times the cost of its busiest
    step in the one-port model of :func:`schedule_time` (an upper bound on that model's
    time: the first and last steps are lighter). For many chunks the bandwidth term tends to
    ``port_load * nbytes * beta``: 2 n beta for two trees, against 2 (p-1)/p n beta for the
    ring, and 3 n beta for one tree. Same shape as the pipelined-tree costs of Sanders,
    Speck & Traeff (Parallel Computing 2009): latency ~ (log p + chunks), bandwidth ~
    n/chunks per step. ``chunks`` may be any finite number > 0 here (a continuous model).
    """
    trees = _trees(trees)
    n, p = M._real("nbytes", nbytes), M._ranks(p)
    a, b = M._real("alpha", alpha), M._real("beta", beta)
    k = M._real("chunks", chunks, positive=True)
    with np.errstate(over="ignore", invalid="ignore"):
        steps = np.where(p > 1, k + 2 * M._lg(p) - 1, 0.0)
        return M._out(steps * (a + port_load(p, trees) * n / k * b), "tree_allreduce_time")


def optimal_chunks(nbytes, p, alpha, beta, trees: int = 2):
    """The integer chunks >= 1 that minimises :func:`tree_allreduce_time` (vectorised).

    The continuous optimum is sqrt((2 ceil(log2 p) - 1) * load * n * beta / alpha); the best
    integer is its floor or its ceiling. Needs alpha > 0.
    """
    trees = _trees(trees)
    n, p = M._real("nbytes", nbytes), M._ranks(p)
    a, b = M._real("alpha", alpha, positive=True), M._real("beta", beta)
    with np.errstate(over="ignore", invalid="ignore"):
        best = np.sqrt(np.maximum(2 * M._lg(p) - 1, 0) * port_load(p, trees) * n * b / a)
    checks.finite_result("optimal_chunks", best)
    lo = np.maximum(np.floor(best), 1.0)
    hi = lo + 1
    t_lo = tree_allreduce_time(n, p, a, b, lo, trees)
    t_hi = tree_allreduce_time(n, p, a, b, hi, trees)
    return M._out(np.where(t_hi < t_lo, hi, lo), "optimal_chunks")


def best_tree_time(nbytes, p, alpha, beta, trees: int = 2):
    """:func:`tree_allreduce_time` at :func:`optimal_chunks` (vectorised), in seconds."""
    k = optimal_chunks(nbytes, p, alpha, beta, trees)
    return tree_allreduce_time(nbytes, p, alpha, beta, k, trees)


def crossover_vs_ring(p, alpha, beta, trees: int = 2):
    """Bytes per rank below which the tree all-reduce (best chunks) beats the ring (vectorised).

    The ring is ``scaleout.costmodel``'s ``2(p-1) alpha + 2((p-1)/p) n beta``. At n = 0 the
    tree costs 2 ceil(log2 p) alpha against the ring's 2 (p-1) alpha, so it wins small
    messages from p = 4 on (nan below: no crossover); every tree cost line grows faster
    in n than the ring's, so there is exactly one crossover, found by bisection on log n.
    It lies below ``hi = 2 p (p - 1) alpha / beta`` (the tree's bandwidth term is at least
    2 n beta, the ring's at most 2 n beta (p - 1) / p) and above ``hi / 2**64`` (the tree
    with one chunk wins up to alpha / (3 d beta)): 80 halvings of that range in log2 give the
    crossover to float64 precision.
    """
    trees = _trees(trees)
    p = M._ranks(p)
    a, b = M._real("alpha", alpha, positive=True), M._real("beta", beta, positive=True)
    p, a, b = np.broadcast_arrays(p, a, b)
    with np.errstate(over="ignore", divide="ignore"):
        top = np.log2(2 * p * np.maximum(p - 1, 1)) + np.log2(a) - np.log2(b)
    checks.finite_result("crossover_vs_ring", top)

    def tree_wins(log2n):
        with np.errstate(over="ignore"):
            n = 2.0**log2n  # an overflow to inf is rejected by collective_time
        ring = M.collective_time("allreduce", "ring", n, p, a, b)
        return best_tree_time(n, p, a, b, trees) < ring

    lo, hi = top - 64.0, top
    for _ in range(80):
        mid = (lo + hi) / 2
        wins = tree_wins(mid)
        lo, hi = np.where(wins, mid, lo), np.where(wins, hi, mid)
    out = np.where((p >= 4) & tree_wins(top - 64.0), 2.0**lo, np.nan)
    return float(out) if out.ndim == 0 else out
