"""Calibrated corrections: per size regime, the factor that turns the model's bus bandwidth
into the measured one, fitted on part of a log and reported on the rest.

:func:`fit_corrections` takes a :class:`~scaleout.calibrate.judge.Comparison` and, per regime,
the geometric mean of measured / model over the fitted rows (every other size with
``holdout="alternate"``, as :mod:`scaleout.calibrate.fit` holds out). The held-out report
gives the error of the model before and after the correction on the rows the fit never saw.

How the planner and simulator take it (neither is edited here): a :class:`Correction` is a
record of factors; :meth:`Correction.seconds` divides a model time by the factor of its
regime, which is what a caller of :func:`scaleout.nccl.model.collective_seconds` would do; and
:func:`scaleout.calibrate.replan.calibrated_cluster` turns the bandwidth-regime factor of a
multi-server log into a :class:`scaleout.planner.model.Cluster` whose NICs run at the measured
speed, the one knob the planner's cluster has for the network.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import checks, nccl
from .. import machine as M
from .fit import HOLDOUTS, fit_mask
from .judge import REGIMES, Comparison, _regimes


@dataclass(frozen=True)
class Correction:
    """Per regime of ``REGIMES`` present in the fit, the
    factor measured / model (``factors``, a dict); ``collective`` and ``topology`` it was
    measured on; held-out relative errors of the model's time before (``raw_err``) and
    after (``corrected_err``) the correction."""

    collective: str
    topology: nccl.Topology
    factors: dict
    raw_err: np.ndarray
    corrected_err: np.ndarray
    holdout: str

    def __post_init__(self):
        checks.choice("collective", self.collective, nccl.ALL_COLLECTIVES)
        checks.instance("topology", self.topology, nccl.Topology)
        if not isinstance(self.factors, dict) or not self.factors:
            raise checks.fail("factors", "a non-empty dict of regime -> factor", self.factors)
        for k, v in self.factors.items():
            checks.choice("factors", k, REGIMES)
            checks.real("factors", v, 1e-6, 1e6)
        checks.choice("holdout", self.holdout, HOLDOUTS)
        for name in ("raw_err", "corrected_err"):
            checks.array(name, getattr(self, name), ndim=1, empty=True, max_size=2**20)

    def factor(self, regime: str) -> float:
        """The factor of ``regime``; a regime the log did not cover takes its nearest one's."""
        checks.choice("regime", regime, REGIMES)
        if regime in self.factors:
            return float(self.factors[regime])
        i = REGIMES.index(regime)
        near = min(self.factors, key=lambda r: abs(REGIMES.index(r) - i))
        return float(self.factors[near])

    def seconds(self, nbytes, *, machine=None):
        """The corrected time of this collective for ``nbytes`` (vectorised) on ``machine``
        (a Topology, a :class:`scaleout.machine.Machine` or a preset name; default: the
        log's): the model's time divided by its regime's factor."""
        topo = self.topology if machine is None else M.as_topology(machine)
        sizes = checks.array("nbytes", nbytes, low=0.0, low_open=True, max_size=2**20)
        pred, reg = _regimes(self.collective, sizes.ravel(), topo)
        f = np.array([self.factor(r) for r in reg])
        out = np.asarray(pred.seconds, dtype=float).reshape(-1) / f
        out = out.reshape(sizes.shape)
        return float(out) if out.ndim == 0 else out

    @property
    def summary(self) -> str:
        parts = ", ".join(f"{k} x{v:.2f}" for k, v in self.factors.items())
        return f"{self.collective} on {self.topology.name} ({self.topology.ranks} ranks): {parts}"


def _gmean(x):
    return float(np.exp(np.mean(np.log(x))))


def fit_corrections(comparison: Comparison, holdout: str = "alternate") -> Correction:
    """Per-regime factors measured / model fitted on the rows ``holdout`` keeps (see
    :mod:`scaleout.calibrate.fit`), with the model's held-out error before and after."""
    checks.instance("comparison", comparison, Comparison)
    checks.choice("holdout", holdout, HOLDOUTS)
    c = comparison
    mask = fit_mask(c.nbytes.size, holdout)
    if holdout != "none" and mask.all():
        raise checks.fail("comparison", "at least 2 rows (one fitted, one held out)",
                          c.nbytes.size)  # fmt: skip
    ratio = c.ratio
    regimes = np.array(c.regime)
    factors = {}
    for reg in REGIMES:
        sel = mask & (regimes == reg)
        if sel.any():
            factors[reg] = _gmean(ratio[sel])
    held = ~mask
    # times: model t = S / (busbw / factor); relative error of the model's time
    raw = ratio[held] - 1.0  # t_model / t_measured - 1 = busbw_measured / busbw_model - 1
    f = np.array([factors.get(r, factors[min(factors, key=lambda k: abs(
        REGIMES.index(k) - REGIMES.index(r)))]) for r in regimes[held]])  # fmt: skip
    corrected = ratio[held] / f - 1.0
    return Correction(c.collective, c.topology, factors, raw, corrected, holdout)
