"""How well the planner's closed form matches the published runs.

One constant per GPU generation, ``k`` (:func:`calibration`), is fitted on the "fit" runs of
:mod:`scaleout.planner.published`; every other run is held out. :func:`validation` gives one
:class:`Row` per run, :func:`summary` the errors and rank correlations per group
(:data:`GROUPS`), :func:`errors_by_size` small against large models. Split out of
:mod:`scaleout.planner.published` (which re-exports these names) to keep each module under
500 lines.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from .. import checks
from ..nccl.published import spearman
from .published import Run, runs
from .step import Prediction, predict


def _golden(f, lo: float, hi: float, iters: int = 48) -> float:
    g = (math.sqrt(5) - 1) / 2
    a, b = lo, hi
    c, d = b - g * (b - a), a + g * (b - a)
    fc, fd = f(c), f(d)
    for _ in range(iters):
        if fc < fd:
            b, d, fd = d, c, fc
            c = b - g * (b - a)
            fc = f(c)
        else:
            a, c, fc = c, d, fd
            d = a + g * (b - a)
            fd = f(d)
    return (a + b) / 2


def calibration(generation: str, non_gemm: bool = False) -> float:
    """The compute-time multiplier of GPU ``generation`` ("A100" / "H100") fitted on the
    runs marked ``fit`` of that generation (see the module docstring); ``non_gemm``: with
    the memory-bound work of :mod:`scaleout.planner.non_gemm` (off by default, as in
    :func:`~scaleout.planner.step.predict`)."""
    generation = checks.choice("generation", generation, ("A100", "H100"))
    return _calibration(generation, checks.boolean("non_gemm", non_gemm))


@functools.lru_cache(maxsize=8)
def _calibration(generation: str, non_gemm: bool = False) -> float:
    fit = [r for r in runs() if r.split == "fit" and r.cluster.generation == generation]

    def loss(k):
        return sum(math.log(_predict(r, k, non_gemm).step_s / r.measured_step_s) ** 2
                   for r in fit)  # fmt: skip

    return _golden(loss, 0.5, 4.0)


def _predict(run: Run, k: float, non_gemm: bool = False) -> Prediction:
    return predict(run.model, run.cluster, run.batch, run.plan, calibration=k,
                   usable_fraction=1.0, non_gemm=non_gemm)  # fmt: skip


@dataclass(frozen=True)
class Row:
    """A run beside the planner: measured and predicted seconds per step, the error
    (predicted / measured - 1), the prediction, and ``errors``: the error of the run's
    plan and of each of its ``alternatives`` (one value for a fully sourced run)."""

    run: Run
    measured_s: float
    predicted_s: float
    error: float
    prediction: Prediction
    errors: tuple = ()

    def __post_init__(self):
        checks.instance("run", self.run, Run)
        checks.positive("measured_s", self.measured_s)
        checks.positive("predicted_s", self.predicted_s)
        checks.real("error", self.error, -1.0, 1e6)
        checks.instance("prediction", self.prediction, Prediction)
        if not isinstance(self.errors, tuple) or len(self.errors) > 17:
            raise checks.fail("errors", "a tuple of at most 17 errors", self.errors)
        for e in self.errors:
            checks.real("errors", e, -1.0, 1e6)

    @property
    def abs_range(self) -> tuple:
        """(smallest, largest) absolute error over the plausible plans."""
        errs = [abs(e) for e in (self.errors or (self.error,))]
        return min(errs), max(errs)


def validation(non_gemm: bool = False) -> tuple[Row, ...]:
    """Every run priced with its generation's calibration (and its alternatives);
    ``non_gemm=True``: with :mod:`scaleout.planner.non_gemm`'s work, the calibration
    refitted with it."""
    return _validation(checks.boolean("non_gemm", non_gemm))


@functools.lru_cache(maxsize=2)
def _validation(non_gemm: bool) -> tuple[Row, ...]:
    out = []
    for r in runs():
        k = calibration(r.cluster.generation, non_gemm)
        pred = _predict(r, k, non_gemm)
        meas = r.measured_step_s
        errors = [pred.step_s / meas - 1.0]
        for alt in r.alternatives:
            alt_step = predict(r.model, r.cluster, r.batch, alt, calibration=k,
                               usable_fraction=1.0, non_gemm=non_gemm).step_s  # fmt: skip
            errors.append(alt_step / meas - 1.0)
        out.append(Row(r, meas, pred.step_s, errors[0], pred, tuple(errors)))
    return tuple(out)


@dataclass(frozen=True)
class Errors:
    """Absolute errors of ``n`` runs: ``median`` and ``max``, and their ranges over the
    plausible plans of the assumption-dependent runs (``median_range``, ``max_range``:
    (lowest, highest) value the statistic takes as each run's plan varies; both are
    monotone in each run's error, so the bounds pick each run's smallest or largest)."""

    n: int
    median: float
    max: float
    median_range: tuple
    max_range: tuple

    def __post_init__(self):
        checks.integer("n", self.n, 1, 10**6)
        checks.nonnegative("median", self.median, 1e6)
        checks.nonnegative("max", self.max, 1e6)
        for name in ("median_range", "max_range"):
            pair = getattr(self, name)
            if not isinstance(pair, tuple) or len(pair) != 2:
                raise checks.fail(name, "a (low, high) pair", pair)
            lo, hi = (checks.nonnegative(name, x, 1e6) for x in pair)
            if lo > hi:
                raise checks.fail(name, "a (low, high) pair with low <= high", pair)


def errors_of(rows) -> Errors:
    """:class:`Errors` of ``rows`` (:class:`Row` records)."""
    if not isinstance(rows, list | tuple) or not rows:
        raise checks.fail("rows", "a non-empty list of Row", rows)
    rows = [checks.instance("rows", r, Row) for r in rows]
    nominal = np.array([abs(r.error) for r in rows])
    lo = np.array([r.abs_range[0] for r in rows])
    hi = np.array([r.abs_range[1] for r in rows])
    return Errors(len(rows), float(np.median(nominal)), float(nominal.max()),
                  (float(np.median(lo)), float(np.median(hi))),
                  (float(lo.max()), float(hi.max())))  # fmt: skip


#: The groups :func:`summary` reports the held-out error of.
GROUPS = ("all", "sourced", "assumption-dependent", "tables", "figures")


def _in_group(run: Run, group: str) -> bool:
    if group == "all":
        return True
    if group in ("sourced", "assumption-dependent"):
        return run.group == group
    return run.sweep.startswith("Narayanan Fig.") == (group == "figures")


@dataclass(frozen=True)
class Summary:
    """Errors on the held-out runs and skill: ``held_out`` (:class:`Errors` per group of
    :data:`GROUPS`: all held-out runs; those whose plan the sources give in full, and
    those with an assumed field; the tables and runs, and Narayanan et al.'s figure
    sweeps), ``fit_median_abs_error``, ``rank`` (sweep -> Spearman's rho of predicted
    against measured throughput) and the calibrations."""

    held_out: dict
    fit_median_abs_error: float
    rank: dict
    calibrations: dict

    def __post_init__(self):
        if not isinstance(self.held_out, dict) or not set(self.held_out) <= set(GROUPS):
            raise checks.fail("held_out", f"a dict of groups from {GROUPS} -> Errors",
                              self.held_out)  # fmt: skip
        for e in self.held_out.values():
            checks.instance("held_out", e, Errors)
        checks.nonnegative("fit_median_abs_error", self.fit_median_abs_error, 1e6)
        for name, (low, high) in (("rank", (-1.0, 1.0)), ("calibrations", (0.1, 10.0))):
            value = getattr(self, name)
            if not isinstance(value, dict):
                raise checks.fail(name, "a dict of name -> number", value)
            for key, x in value.items():
                checks.text(f"{name} key", key, 80)
                checks.real(f"{name}[{key!r}]", x, low, high)

    @property
    def median_abs_error(self) -> float:
        return self.held_out["all"].median

    @property
    def max_abs_error(self) -> float:
        return self.held_out["all"].max


def flops_per_gpu(run: Run, step_s: float) -> float:
    """Executed FLOP/s per GPU of ``run`` at ``step_s`` seconds per step (model FLOPs plus
    the run's recomputation, as Narayanan et al. count their TFLOP/s): the throughput
    ranked within a sweep (across model sizes tokens per second would rank trivially,
    and a constant rate ranks nothing)."""
    checks.instance("run", run, Run)
    step_s = checks.positive("step_s", step_s, 1e9)
    flops = executed_flops(run) / run.cluster.gpus / step_s
    return checks.finite_result("FLOP/s per GPU", flops)


def _sweeps(rows) -> dict:
    out = {}
    for r in rows:
        out.setdefault(r.run.sweep, []).append(r)
    return {name: rs for name, rs in out.items() if len(rs) >= 3}


def _rho(predicted_s, rows) -> float:
    """Spearman's rho of throughput predicted (``predicted_s`` per row) against measured;
    NaN when the prediction is the same for every row (it ranks nothing)."""
    x = [flops_per_gpu(r.run, s) for r, s in zip(rows, predicted_s, strict=True)]
    if max(x) - min(x) <= 1e-9 * max(x):
        return float("nan")
    return spearman(x, [flops_per_gpu(r.run, r.measured_s) for r in rows])


def summary(non_gemm: bool = False) -> Summary:
    """Error and skill of :func:`validation` (see :class:`Summary`); ``non_gemm`` as there."""
    return _summary(checks.boolean("non_gemm", non_gemm))


@functools.lru_cache(maxsize=2)
def _summary(non_gemm: bool) -> Summary:
    rows = validation(non_gemm)
    held = [r for r in rows if r.run.split == "held-out"]
    groups = {}
    for g in GROUPS:
        sel = [r for r in held if _in_group(r.run, g)]
        if sel:
            groups[g] = errors_of(sel)
    fit = np.array([abs(r.error) for r in rows if r.run.split == "fit"])
    rank = {name: _rho([x.predicted_s for x in rs], rs) for name, rs in _sweeps(rows).items()}
    return Summary(groups, float(np.median(fit)), rank,
                   {g: calibration(g, non_gemm) for g in ("A100", "H100")})  # fmt: skip


#: Hidden size below which :func:`errors_by_size` counts a model as small (the 1.7B to
#: 22B models of the tables and the 5.9B model of Figures 14 and 15; 39.1B and up are large).
SMALL_HIDDEN = 8192


@dataclass(frozen=True)
class SizeErrors:
    """Held-out errors of the models below :data:`SMALL_HIDDEN` (``small``) and the
    others (``large``), each an :class:`Errors` with its median signed error
    (``small_bias``, ``large_bias``: below 0, predicted too fast), and Spearman's rho of
    predicted against measured FLOP/s per GPU over each group (``small_rho``,
    ``large_rho``)."""

    small: Errors
    large: Errors
    small_bias: float
    large_bias: float
    small_rho: float
    large_rho: float

    def __post_init__(self):
        for name in ("small", "large"):
            checks.instance(name, getattr(self, name), Errors)
        for name in ("small_bias", "large_bias"):
            checks.real(name, getattr(self, name), -1.0, 1e6)
        for name in ("small_rho", "large_rho"):
            checks.real(name, getattr(self, name), -1.0, 1.0)


def errors_by_size(non_gemm: bool = False) -> SizeErrors:
    """:class:`SizeErrors` of :func:`validation` (``non_gemm`` as there)."""
    rows = [r for r in validation(checks.boolean("non_gemm", non_gemm))
            if r.run.split == "held-out"]  # fmt: skip
    out = {}
    for name, sel in (
        ("small", [r for r in rows if r.run.model.hidden < SMALL_HIDDEN]),
        ("large", [r for r in rows if r.run.model.hidden >= SMALL_HIDDEN]),
    ):
        x = [flops_per_gpu(r.run, r.predicted_s) for r in sel]
        y = [flops_per_gpu(r.run, r.measured_s) for r in sel]
        out[name] = (errors_of(sel), float(np.median([r.error for r in sel])), spearman(x, y))
    (s, sb, sr), (lg, lb, lr) = out["small"], out["large"]
    return SizeErrors(s, lg, sb, lb, sr, lr)


def executed_flops(run: Run) -> float:
    """FLOPs one step of ``run`` executes (model FLOPs plus its recomputation)."""
    checks.instance("run", run, Run)
    return float(run.model.flops(run.batch, run.plan.recompute))
