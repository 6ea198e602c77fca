"""Plans re-ranked on the calibrated machine, without touching the planner's internals.

The planner (:mod:`scaleout.planner`) prices a plan on a :class:`~scaleout.planner.model.Cluster`
(an NCCL preset whose NICs may be overridden) with a ``calibration`` multiplier on compute
time. A calibration reaches it through exactly these two doors:

* the network: :func:`calibrated_cluster` scales the NIC speed by the bandwidth-regime
  factor of a log that spans servers (the cross-server links are what the NICs price);
* compute: :attr:`scaleout.calibrate.gemm.CeilingFit.compute_calibration` is the planner's
  ``calibration`` argument.

What does not reach it (left for the planner to grow): factors for the NVLink domain (the
cluster has no NVLink override), per-regime latency factors (the planner prices with NCCL's
model as is), and a log's own collective choice (the planner uses NCCL's).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from .. import checks, planner
from .correct import Correction


def calibrated_cluster(cluster, correction: Correction):
    """``cluster`` with its NICs at the measured speed: nic_gbps x the bandwidth factor of
    ``correction`` when the log spans servers; unchanged (and said so) otherwise."""
    checks.instance("cluster", cluster, planner.Cluster)
    checks.instance("correction", correction, Correction)
    if correction.topology.nodes < 2:
        return cluster, "the log ran inside one server: the NICs are not calibrated by it"
    if "bandwidth" not in correction.factors:
        return cluster, "the log has no bandwidth-regime sizes: the NICs are not calibrated by it"
    base = cluster.topo(1).nic_gbps
    f = correction.factors["bandwidth"]
    gbps = min(3200.0, max(1.0, base * f))
    why = f"NICs {base:g} -> {gbps:.0f} Gb/s (bandwidth regime x{f:.2f})"
    return dataclasses.replace(cluster, nic_gbps=gbps), why


@dataclass(frozen=True)
class Rerank:
    """The ``top`` plans before and after, and whether the best one changed."""

    before: tuple
    after: tuple
    note: str

    def __post_init__(self):
        for name in ("before", "after"):
            value = getattr(self, name)
            if not isinstance(value, tuple) or not value:
                raise checks.fail(name, "a non-empty tuple of planner predictions", value)
            for p in value:
                checks.instance(name, p, planner.Prediction)
        checks.text("note", self.note, 400)

    @property
    def best_changed(self) -> bool:
        return self.before[0].plan != self.after[0].plan


def rerank(model, cluster, global_batch: int, correction: Correction | None = None,
           compute_calibration: float = 1.0, top: int = 5, space=None) -> Rerank:  # fmt: skip
    """The planner's ``top`` plans on ``cluster`` and on the calibrated one."""
    checks.integer("top", top, 1, 50)
    k = checks.real("compute_calibration", compute_calibration, 0.1, 10.0)
    before = planner.search(model, cluster, global_batch, space)
    note = "compute x1"
    after_cluster = cluster
    if correction is not None:
        after_cluster, note = calibrated_cluster(cluster, correction)
    after = planner.search(model, after_cluster, global_batch, space, calibration=k)
    return Rerank(tuple(before[:top]), tuple(after[:top]), f"{note}; compute time x{k:.2f}")


@dataclass(frozen=True)
class Simulated:
    """One plan as the planner's closed form and the step simulator price it."""

    prediction: object  # a planner.Prediction
    simulated_s: float

    @property
    def plan(self):
        return self.prediction.plan


def simulated(model, cluster, global_batch: int, predictions, calibration: float = 1.0):
    """The planner's ``predictions`` (at most 20) simulated step by step on ``cluster``
    (:func:`scaleout.sim.simulate`, chapter 16) with the same compute ``calibration``, fastest
    first: the simulator's ranking of the plans beside the closed form's."""
    from .. import sim  # chapter 16's simulator: below this chapter, imported when used

    k = checks.real("calibration", calibration, 0.1, 10.0)
    if not isinstance(predictions, list | tuple) or not 1 <= len(predictions) <= 20:
        raise checks.fail("predictions", "a list of 1 to 20 planner predictions", predictions)
    out = []
    for p in predictions:
        checks.instance("predictions", p, planner.Prediction)
        trace = sim.simulate(model, cluster, global_batch, p.plan, calibration=k)
        out.append(Simulated(p, float(trace.step_s)))
    return tuple(sorted(out, key=lambda s: s.simulated_s))
