"""Searching the plans: every legal (t, p, d, b, v, ZeRO, recomputation, SP), ranked by
:func:`~scaleout.planner.step.predict`.

Divisors come from the prime factorisation (trial division up to the square root), so a
batch of 10**9 sequences or a cluster of 65,536 GPUs costs microseconds; the space is
bounded by :data:`MAX_PLANS` (beyond it :func:`candidates` raises and asks for a
narrower space). The memory of a plan is computed first and plans that do not fit are
not priced (they are kept, with ``fits=False``, only when asked: ``keep_unfit``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .. import checks
from .. import memory as MEM
from .model import MAX_BATCH, RECOMPUTE, Cluster, Model
from .step import OVERLAPS, PRECISIONS, Plan, Prediction, memory_many, predict

#: The most plans one search enumerates; beyond it, narrow the space.
MAX_PLANS = 200_000
#: The largest number :func:`divisors` factorises (trial division up to 2**16).
MAX_DIVISORS_OF = 2**32


def divisors(n: int) -> list[int]:
    """The divisors of ``n`` in increasing order (``n <= 2**32``), from its factorisation."""
    n = checks.integer("n", n, 1, MAX_DIVISORS_OF)
    factors, k, rest = {}, 2, n
    while k * k <= rest:
        while rest % k == 0:
            factors[k] = factors.get(k, 0) + 1
            rest //= k
        k += 1 if k == 2 else 2
    if rest > 1:
        factors[rest] = factors.get(rest, 0) + 1
    out = [1]
    for prime, power in factors.items():
        out = [x * prime**e for x in out for e in range(power + 1)]
    return sorted(out)


@dataclass(frozen=True)
class Space:
    """The options a search tries besides (t, p, d, b): micro-batches up to
    ``max_microbatch``, ``vs`` chunk counts, ZeRO ``zero_stages``, ``recompute`` modes,
    ``sps`` (sequence parallelism off/on), and one TP ``overlap``, DP overlap,
    ``precision`` and ``flash`` setting (the software the run has)."""

    max_microbatch: int = 8
    vs: tuple = (1, 2, 4)
    zero_stages: tuple = (0, 1)
    recompute: tuple = RECOMPUTE
    sps: tuple = (False, True)
    overlap: str = "megatron"
    dp_overlap: bool = True
    precision: str = "megatron-bf16"
    flash: bool = True
    scatter_gather: bool = True

    def __post_init__(self):
        checks.integer("max_microbatch", self.max_microbatch, 1, 4096)
        for name, allowed in (("vs", None), ("zero_stages", MEM.STAGES),
                              ("recompute", RECOMPUTE), ("sps", (False, True))):  # fmt: skip
            values = getattr(self, name)
            if not isinstance(values, tuple) or not values or len(values) > 64:
                raise checks.fail(name, "a non-empty tuple (at most 64 values)", values)
            for x in values:
                if allowed is None:
                    checks.integer(name, x, 1, 64)
                elif name == "sps":
                    checks.boolean(name, x)
                else:
                    checks.choice(name, x, allowed)
        checks.choice("overlap", self.overlap, OVERLAPS)
        checks.boolean("dp_overlap", self.dp_overlap)
        checks.choice("precision", self.precision, PRECISIONS)
        checks.boolean("flash", self.flash)
        checks.boolean("scatter_gather", self.scatter_gather)


def _subset(name, values):
    if values is None:
        return None
    if not isinstance(values, list | tuple) or not values or len(values) > 1024:
        raise checks.fail(name, "None or a non-empty list of integers", values)
    return {checks.integer(name, x, 1, MAX_DIVISORS_OF) for x in values}


def candidates(model: Model, cluster: Cluster, global_batch: int, space: Space | None = None,
               *, ts=None, ps=None) -> list[Plan]:  # fmt: skip
    """Every legal plan of ``space`` (``ts``/``ps``: only these t / p), unpriced."""
    checks.instance("model", model, Model)
    checks.instance("cluster", cluster, Cluster)
    batch = checks.integer("global_batch", global_batch, 1, MAX_BATCH)
    space = Space() if space is None else checks.instance("space", space, Space)
    ts, ps = _subset("ts", ts), _subset("ps", ps)
    n, g = cluster.gpus, cluster.gpus_per_node
    heads = math.gcd(math.gcd(model.heads, model.g), model.f)
    plans = []
    for t in divisors(n):
        if heads % t or (g % t and t % g) or (ts is not None and t not in ts):
            continue
        for p in divisors(n // t):
            if model.layers % p or (ps is not None and p not in ps):
                continue
            d = n // (t * p)
            if batch % d:
                continue
            for b in (x for x in divisors(batch // d) if x <= space.max_microbatch):
                m = batch // (d * b)
                for v in space.vs:
                    if (v > 1 and (p == 1 or m % p)) or model.layers % (p * v):
                        continue
                    for sp in space.sps:
                        if sp and (t == 1 or model.seq % t):
                            continue
                        overlap = space.overlap
                        if overlap == "pipelined" and not sp:
                            overlap = "megatron"
                        for zero in space.zero_stages:
                            if zero and d == 1:
                                continue
                            for rec in space.recompute:
                                plans.append(Plan(t, p, d, b, v, zero, rec, sp, overlap,
                                                  space.dp_overlap, space.precision,
                                                  space.flash, space.scatter_gather))  # fmt: skip
                                if len(plans) > MAX_PLANS:
                                    raise checks.fail("space", f"at most {MAX_PLANS} plans "
                                                      "(narrow ts, ps or the options)",
                                                      f"more than {MAX_PLANS}")  # fmt: skip
    if not plans:
        raise ValueError(
            f"the GPUs and the batch must allow a plan (t p d = {n} GPUs with t | "
            f"gcd(heads, kv_heads, ffn) = {heads}, p | layers = {model.layers}, d | "
            f"global_batch = {batch}), got none: change the GPUs, the batch or ts / ps"
        )
    return plans


def search(model: Model, cluster: Cluster, global_batch: int, space: Space | None = None, *,
           calibration: float = 1.0, usable_fraction: float = 0.95, ts=None,
           ps=None) -> list[Prediction]:  # fmt: skip
    """Predictions of the plans of :func:`candidates` that fit memory, fastest first
    (ties: smaller t, then p). Raises ValueError if nothing fits."""
    return _search(model, cluster, global_batch, space, calibration, usable_fraction, ts, ps)[0]


def _search(model, cluster, global_batch, space, calibration, usable_fraction, ts, ps):
    plans = candidates(model, cluster, global_batch, space, ts=ts, ps=ps)
    usable = checks.fraction("usable_fraction", usable_fraction, open_low=True)
    limit = usable * cluster.memory_bytes
    mem = memory_many(model, plans, [global_batch // (pl.d * pl.b) for pl in plans])
    fit = [predict(model, cluster, global_batch, plan, calibration=calibration,
                   usable_fraction=usable)
           for plan, mb in zip(plans, mem, strict=True) if mb <= limit]  # fmt: skip
    if not fit:
        least = float(mem.min())
        raise ValueError(
            f"a plan must fit in {limit / 1e9:.3g} GB per GPU, got none (the smallest "
            f"needs {least / 1e9:.1f} GB): use more GPUs, ZeRO stages or recomputation"
        )
    fit.sort(key=lambda r: (r.step_s, r.plan.t, r.plan.p))
    return fit, plans


@dataclass(frozen=True)
class Grid:
    """The best predicted step (seconds) for each pair of two plan fields (``rows`` x
    ``cols`` values): ``best[i][j]`` NaN where no plan of that pair fits, ``possible[i][j]``
    whether the pair has any legal plan; ``results`` the fitting predictions, fastest first."""

    rows: str
    cols: str
    row_values: tuple
    col_values: tuple
    best: tuple
    possible: tuple
    results: tuple

    def __post_init__(self):
        checks.choice("rows", self.rows, FIELDS)
        checks.choice("cols", self.cols, FIELDS)
        nr, nc = (
            len(checks.instance("row_values", self.row_values, tuple)),
            len(checks.instance("col_values", self.col_values, tuple)),
        )
        for name in ("best", "possible"):
            value = checks.instance(name, getattr(self, name), tuple)
            if len(value) != nr or any(not isinstance(r, tuple) or len(r) != nc for r in value):
                raise checks.fail(name, f"a {nr} x {nc} tuple of tuples", value)
        flat = [x for r in self.best for x in r]
        if not all(checks.is_real(x) and (math.isnan(x) or 0 < x < math.inf) for x in flat):
            raise checks.fail("best", "positive finite seconds or NaN", self.best)
        if not all(isinstance(x, bool | np.bool_) for r in self.possible for x in r):
            raise checks.fail("possible", "booleans", self.possible)
        for r in checks.instance("results", self.results, tuple):
            checks.instance("results", r, Prediction)


FIELDS = ("t", "p", "d", "b", "v", "zero")


def grid(model: Model, cluster: Cluster, global_batch: int, rows: str = "t", cols: str = "p",
         space: Space | None = None, *, calibration: float = 1.0,
         usable_fraction: float = 0.95) -> Grid:  # fmt: skip
    """The heatmap's data: :func:`search` summarised over two plan fields."""
    checks.choice("rows", rows, FIELDS)
    checks.choice("cols", cols, FIELDS)
    if rows == cols:
        raise checks.fail("cols", f"a field other than rows = {rows!r}", cols)
    fit, plans = _search(model, cluster, global_batch, space, calibration, usable_fraction,
                         None, None)  # fmt: skip
    rv = sorted({getattr(pl, rows) for pl in plans})
    cv = sorted({getattr(pl, cols) for pl in plans})
    best = [[float("nan")] * len(cv) for _ in rv]
    possible = [[False] * len(cv) for _ in rv]
    for pl in plans:
        possible[rv.index(getattr(pl, rows))][cv.index(getattr(pl, cols))] = True
    for r in fit:
        i, j = rv.index(getattr(r.plan, rows)), cv.index(getattr(r.plan, cols))
        if not best[i][j] <= r.step_s:
            best[i][j] = r.step_s
    return Grid(rows, cols, tuple(rv), tuple(cv), tuple(map(tuple, best)),
                tuple(map(tuple, possible)), tuple(fit))  # fmt: skip
