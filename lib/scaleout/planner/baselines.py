"""Baselines beside the planner and its skill on choices (chapter 15): one executed-FLOP/s
rate per GPU generation, and that rate with the pipeline bubble, fitted as the planner's
calibration is, on the same runs (:func:`baselines`); ranking by parameter count
(:func:`rank_by_params`); Narayanan et al.'s figure sweeps (:func:`figure_sweeps`); and the
planner's best plan for every Table 1 setting (:func:`table1_best`). The runs and the
planner's own validation are in :mod:`scaleout.planner.published`, which re-exports these
names.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass, field

from .. import checks
from .. import pipeline as PP
from ..nccl.published import spearman
from .fit import (
    GROUPS,
    Errors,
    Row,
    _in_group,
    _predict,
    _rho,
    _sweeps,
    calibration,
    errors_of,
    executed_flops,
    flops_per_gpu,
    summary,
    validation,
)
from .model import RECOMPUTE
from .published import _T1, Run, runs
from .search import Space, search
from .step import Prediction


def baseline_seconds(run: Run, rate: float, bubble: bool) -> float:
    """A baseline's step: the executed FLOPs at ``rate`` FLOP/s per GPU, times
    ``1 + (p-1)/(v m)`` (the pipeline bubble, :func:`scaleout.pipeline.bubble_closed_form`)
    when ``bubble``."""
    checks.instance("run", run, Run)
    rate = checks.real("rate", rate, 1e9, 1e17)
    bubble = checks.boolean("bubble", bubble)
    step = executed_flops(run) / run.cluster.gpus / rate
    if bubble and run.plan.p > 1:
        m = run.batch // (run.plan.d * run.plan.b)
        name = "interleaved" if run.plan.v > 1 else "1f1b"
        step *= 1.0 + float(PP.bubble_closed_form(name, run.plan.p, m, run.plan.v))
    return checks.finite_result("baseline seconds", step)


@dataclass(frozen=True)
class Baseline:
    """A baseline fitted as the planner is (one rate per GPU generation, least squares on
    the log error over the runs marked ``fit``): ``name``, ``rates`` (generation ->
    FLOP/s per GPU), its held-out :class:`~scaleout.planner.fit.Errors`, ``rank``
    (sweep -> Spearman's rho, NaN where it predicts a tie), and ``groups``: its held-out
    :class:`~scaleout.planner.fit.Errors` per group of
    :data:`~scaleout.planner.fit.GROUPS`, as
    :class:`~scaleout.planner.fit.Summary` reports the planner's."""

    name: str
    rates: dict
    held_out: Errors
    rank: dict
    groups: dict = field(default_factory=dict)

    def __post_init__(self):
        checks.text("name", self.name, 80)
        for name in ("rates", "rank"):
            if not isinstance(getattr(self, name), dict):
                raise checks.fail(name, "a dict", getattr(self, name))
        for key, x in self.rates.items():
            checks.real(f"rates[{key!r}]", x, 1e9, 1e17)
        checks.instance("held_out", self.held_out, Errors)
        if not isinstance(self.groups, dict) or not set(self.groups) <= set(GROUPS):
            raise checks.fail("groups", f"a dict of groups from {GROUPS} -> Errors",
                              self.groups)  # fmt: skip
        for e in self.groups.values():
            checks.instance("groups", e, Errors)
        for key, x in self.rank.items():
            if not (isinstance(x, float) and math.isnan(x)):
                checks.real(f"rank[{key!r}]", x, -1.0, 1.0)


#: The baselines :func:`baselines` fits: a constant rate, and a rate with the bubble.
BASELINES = {"constant rate": False, "rate and bubble": True}


@functools.lru_cache(maxsize=1)
def baselines() -> tuple[Baseline, ...]:
    """The two baselines of :data:`BASELINES`, fitted and scored like the planner."""
    rows = validation()
    out = []
    for name, bubble in BASELINES.items():
        rates = {}
        for g in ("A100", "H100"):
            fit = [r for r in rows if r.run.split == "fit" and r.run.cluster.generation == g]
            logs = [math.log(baseline_seconds(r.run, 1e12, bubble) * 1e12 / r.measured_s)
                    for r in fit]  # fmt: skip
            rates[g] = math.exp(sum(logs) / len(logs))
        priced = []
        for r in rows:
            step = baseline_seconds(r.run, rates[r.run.cluster.generation], bubble)
            errs = [step / r.measured_s - 1.0]
            for alt in r.run.alternatives:
                alt_run = dataclasses.replace(r.run, plan=alt, alternatives=(), assumed="-")
                errs.append(baseline_seconds(alt_run, rates[r.run.cluster.generation],
                                             bubble) / r.measured_s - 1.0)  # fmt: skip
            priced.append(Row(r.run, r.measured_s, step, errs[0], r.prediction, tuple(errs)))
        held_rows = [x for x in priced if x.run.split == "held-out"]
        groups = {}
        for g in GROUPS:
            sel = [x for x in held_rows if _in_group(x.run, g)]
            if sel:
                groups[g] = errors_of(sel)
        rank = {sw: _rho([x.predicted_s for x in rs], rs) for sw, rs in _sweeps(priced).items()}
        out.append(Baseline(name, rates, groups["all"], rank, groups))
    return tuple(out)


def rank_by_params(sweep: str = "Narayanan Table 1") -> float:
    """Spearman's rho of the parameter count against the measured FLOP/s per GPU over
    the runs of ``sweep``: the skill of knowing nothing but the model's size."""
    sweeps = _sweeps(validation())
    checks.choice("sweep", sweep, tuple(sweeps))
    rs = sweeps[sweep]
    sizes = [r.run.model.params for r in rs]
    if max(sizes) == min(sizes):
        return float("nan")
    return spearman(sizes, [flops_per_gpu(r.run, r.measured_s) for r in rs])


@dataclass(frozen=True)
class SweepResult:
    """One sweep of Narayanan et al.'s figures (one model, batch and GPU count, the plan
    varied): ``rho`` of the planner and ``rho_bubble`` of the rate-and-bubble baseline,
    the measured best run and the planner's, and ``gap``: how much slower the planner
    predicts the measured best than its own best (0 when they are the same run)."""

    sweep: str
    n: int
    rho: float
    rho_bubble: float
    measured_best: str
    predicted_best: str
    gap: float

    def __post_init__(self):
        checks.text("sweep", self.sweep, 80)
        checks.integer("n", self.n, 3, 64)
        checks.real("rho", self.rho, -1.0, 1.0)
        if not (isinstance(self.rho_bubble, float) and math.isnan(self.rho_bubble)):
            checks.real("rho_bubble", self.rho_bubble, -1.0, 1.0)
        checks.text("measured_best", self.measured_best, 60)
        checks.text("predicted_best", self.predicted_best, 60)
        checks.real("gap", self.gap, 0.0, 1e6)

    @property
    def match(self) -> bool:
        return self.measured_best == self.predicted_best


def figure_sweeps(non_gemm: bool = False) -> tuple[SweepResult, ...]:
    """:class:`SweepResult` of every sweep of Narayanan et al.'s Figures 13-16 (``non_gemm``
    as in :func:`~scaleout.planner.fit.validation`)."""
    non_gemm = checks.boolean("non_gemm", non_gemm)
    bubble = {b.name: b for b in baselines()}["rate and bubble"]
    out = []
    for name, rs in _sweeps(validation(non_gemm)).items():
        if not name.startswith("Narayanan Fig."):
            continue
        best_m = min(rs, key=lambda r: r.measured_s)
        best_p = min(rs, key=lambda r: r.predicted_s)
        out.append(SweepResult(name, len(rs), summary(non_gemm).rank[name], bubble.rank[name],
                               best_m.run.key, best_p.run.key,
                               best_m.predicted_s / best_p.predicted_s - 1.0))  # fmt: skip
    return tuple(out)


@dataclass(frozen=True)
class BestPlan:
    """For one Table 1 row: the planner's best plan in the run's software, and how much
    slower the published plan is predicted to be (``gap`` = published / best - 1)."""

    run: Run
    best: Prediction
    published: Prediction
    gap: float

    def __post_init__(self):
        checks.instance("run", self.run, Run)
        checks.instance("best", self.best, Prediction)
        checks.instance("published", self.published, Prediction)
        checks.real("gap", self.gap, -1.0, 1e6)


def table1_best(free_recompute: bool = False) -> tuple[BestPlan, ...]:
    """The planner's best plan for every Table 1 setting (model, GPUs, batch), searching
    t, p, d, b and v with the run's software (no ZeRO, no SP, fp16, no FlashAttention,
    its DDP) and its full recomputation, or any recomputation (``free_recompute``)."""
    return _table1_best(checks.boolean("free_recompute", free_recompute))


@functools.lru_cache(maxsize=2)
def _table1_best(free: bool) -> tuple[BestPlan, ...]:
    k = calibration("A100")
    out = []
    for r in runs()[: len(_T1)]:
        space = Space(max_microbatch=16, vs=(1, 2, 3, 4, 5), zero_stages=(0,),
                      recompute=RECOMPUTE if free else ("full",), sps=(False,),
                      overlap="none", dp_overlap=r.plan.dp_overlap,
                      precision="megatron-fp16", flash=False)  # fmt: skip
        best = search(r.model, r.cluster, r.batch, space, calibration=k, usable_fraction=1.0)[0]
        pub = _predict(r, k)
        out.append(BestPlan(r, best, pub, pub.step_s / best.step_s - 1.0))
    return tuple(out)
