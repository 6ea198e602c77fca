"""The simulator beside the planner's closed form and the published runs (chapter 16).

``published`` simulates every run of :func:`scaleout.planner.published.runs` with the
planner's own inputs and its calibration of the GPU generation (fitted on the planner's
``fit`` rows; nothing is fitted to the simulator), so that

* the simulator against the planner (``against_planner``) isolates how the parts
  combine: the same compute, TP, transfer, gradient and optimizer seconds, added up in
  closed form by one and run as dependent operations by the other;
* the simulator against the measurements (``held_out``) reports its error on the
  held-out runs and, per sweep of at least three runs, Spearman's rho of predicted against
  measured throughput, as :func:`scaleout.planner.fit.summary` does for the planner.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from .. import checks, stats
from ..planner import fit as PF
from .step import simulate


@dataclass(frozen=True)
class Comparison:
    """One published run: ``planner_s`` and ``sim_s`` (predicted seconds per step, same
    inputs and calibration), ``measured_s``, the run's ``split`` (fit / held-out) and
    ``sweep``, and ``parts``: the planner's breakdown; ``breakdown``: the simulator's."""

    key: str
    planner_s: float
    sim_s: float
    measured_s: float
    split: str
    sweep: str
    parts: dict
    breakdown: dict

    @property
    def diff(self) -> float:
        """sim / planner - 1."""
        return self.sim_s / self.planner_s - 1.0

    @property
    def error(self) -> float:
        """sim / measured - 1."""
        return self.sim_s / self.measured_s - 1.0


@functools.lru_cache(maxsize=1)
def published() -> tuple[Comparison, ...]:
    """Every published run, planner and simulator (about 10-40 s: 75 simulations)."""
    out = []
    for row in PF.validation():
        r = row.run
        k = PF.calibration(r.cluster.generation)
        tr = simulate(r.model, r.cluster, r.batch, r.plan, calibration=k)
        out.append(Comparison(r.key, row.predicted_s, tr.step_s, row.measured_s, r.split,
                              r.sweep, dict(row.prediction.parts), dict(tr.breakdown)))  # fmt: skip
    return tuple(out)


def against_planner(rows) -> dict:
    """Median and largest |sim / planner - 1| of ``rows`` (``published``), and the runs
    beyond 5%."""
    rows = _rows(rows)
    d = np.array([abs(c.diff) for c in rows])
    return {"n": len(rows), "median": float(np.median(d)), "max": float(d.max()),
            "over_5pct": [c.key for c in rows if abs(c.diff) > 0.05]}  # fmt: skip


def held_out(rows) -> dict:
    """The simulator's and the planner's median and largest |error| on the held-out runs of
    ``rows`` (``published``),
    and Spearman's rho of throughput (1 / seconds per step) per sweep of >= 3 runs."""
    rows = _rows(rows)
    held = [c for c in rows if c.split == "held-out"]
    sweeps: dict[str, list] = {}
    for c in rows:
        sweeps.setdefault(c.sweep, []).append(c)
    rho = {}
    for name, cs in sweeps.items():
        if len(cs) >= 3:
            measured = [1 / c.measured_s for c in cs]
            rho[name] = (stats.spearman([1 / c.sim_s for c in cs], measured),
                         stats.spearman([1 / c.planner_s for c in cs], measured))  # fmt: skip
    sim_err = np.array([abs(c.error) for c in held])
    plan_err = np.array([abs(c.planner_s / c.measured_s - 1) for c in held])
    return {"n": len(held), "sim_median": float(np.median(sim_err)),
            "sim_max": float(sim_err.max()), "planner_median": float(np.median(plan_err)),
            "planner_max": float(plan_err.max()), "rho": rho}  # fmt: skip


def _rows(rows):
    if not isinstance(rows, list | tuple) or not rows or len(rows) > 10_000:
        raise checks.fail("rows", "a non-empty list of Comparison (at most 10,000)", rows)
    for c in rows:
        checks.instance("rows", c, Comparison)
    return rows
