"""A Monte Carlo of whole training jobs that fail, event by event.

Taught in chapter 17 (``chapters/17_failures.ipynb``). The closed form
:func:`scaleout.failures.renewal.goodput` is derived by a renewal-reward argument; this
module does not use that argument. It draws a Poisson process of failure times on an
absolute clock and walks every job through it: compute tau, stop C to checkpoint,
(asynchronously) wait W for the checkpoint to become durable, lose everything since the
last durable checkpoint when a failure comes, restart for R (a failure during the restart
starts it again). The tests
hold the closed form to this simulation within one percentage point.

Vectorised over jobs (numpy arrays of ``jobs`` entries, one loop step per event); the
expected number of events is computed first and bounded (:data:`MAX_EVENTS`), so no accepted
input runs for long.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import checks
from .intervals import MAX_SECONDS

#: Most jobs one simulation may run side by side.
MAX_JOBS = 100_000
#: Most segments (checkpoint intervals) one job may need.
MAX_SEGMENTS = 100_000
#: Most events (jobs x expected events per job) one simulation may process.
MAX_EVENTS = 20_000_000


@dataclass(frozen=True)
class JobResult:
    """What :func:`simulate_job` saw. ``wall_s`` and ``failures`` hold one value per job;
    ``goodput`` is the whole sample's useful time over its wall time, ``stderr`` its
    standard error (from the spread of the jobs' own goodputs)."""

    goodput: float
    stderr: float
    wall_s: np.ndarray
    failures: np.ndarray
    work_s: float

    def __post_init__(self):
        checks.fraction("goodput", self.goodput)
        checks.nonnegative("stderr", self.stderr)
        checks.positive("work_s", self.work_s, high=MAX_SECONDS * MAX_SEGMENTS)
        wall = checks.array("wall_s", self.wall_s, ndim=1, low=0.0, low_open=True)
        fails = checks.array("failures", self.failures, ndim=1, low=0.0)
        if wall.shape != fails.shape:
            raise checks.fail("failures", f"{wall.size} counts, one per job", fails.size)

    @property
    def job_goodput(self) -> np.ndarray:
        """Each job's useful time over its wall time."""
        return self.work_s / self.wall_s


def _events(m, c, r, tau, n, w) -> float:
    lam = 1.0 / m
    with np.errstate(over="ignore"):
        fails = -np.expm1(-lam * (tau + c)) * np.exp(lam * (r + tau + c + w))  # per segment
    return float(n * (3.0 + 2.0 * fails))


def expected_events(mtbf_s, checkpoint_s, restart_s, interval_s, segments, background_s=0.0):
    """Expected number of events one job of ``segments`` segments takes (segment ends,
    durable points, failures and restarts; per segment 3 + 2 x the expected failures,
    (1 - e^(-(tau + C)/M)) e^((R + tau + C + W)/M)): the work bound :func:`simulate_job`
    checks. ValueError when it overflows (failures far more frequent than a segment)."""
    m = checks.positive("mtbf_s", mtbf_s, high=MAX_SECONDS)
    c = checks.nonnegative("checkpoint_s", checkpoint_s, high=MAX_SECONDS)
    r = checks.nonnegative("restart_s", restart_s, high=MAX_SECONDS)
    tau = checks.positive("interval_s", interval_s, high=MAX_SECONDS)
    w = checks.nonnegative("background_s", background_s, high=MAX_SECONDS)
    n = checks.integer("segments", segments, 1, MAX_SEGMENTS)
    events = _events(m, c, r, tau, n, w)
    if not np.isfinite(events):
        raise checks.fail("(restart_s + interval_s + checkpoint_s + background_s) / mtbf_s",
                          "small enough that a segment ever completes (below about 700)",
                          (r + tau + c + w) / m)  # fmt: skip
    return events


def simulate_job(
    mtbf_s,
    checkpoint_s,
    restart_s,
    interval_s,
    *,
    segments=200,
    jobs=2000,
    background_s=0.0,
    seed=0,
) -> JobResult:
    """Simulate ``jobs`` (2 or more) independent jobs, each training for ``segments`` x
    ``interval_s`` seconds of useful work, with Poisson failures of mean ``mtbf_s``; synchronous
    checkpoints of ``checkpoint_s`` seconds, or asynchronous ones (``background_s`` > 0: a
    ``checkpoint_s`` stall, then durable ``background_s`` later, at most ``interval_s``);
    ``restart_s`` after every failure. A job ends when its last checkpoint is durable.
    Seeded (``seed``). Raises ValueError when the expected events exceed
    :data:`MAX_EVENTS`."""
    m = checks.positive("mtbf_s", mtbf_s, high=MAX_SECONDS)
    c = checks.nonnegative("checkpoint_s", checkpoint_s, high=MAX_SECONDS)
    r = checks.nonnegative("restart_s", restart_s, high=MAX_SECONDS)
    tau = checks.positive("interval_s", interval_s, high=MAX_SECONDS)
    w = checks.nonnegative("background_s", background_s, high=tau)
    n = checks.integer("segments", segments, 1, MAX_SEGMENTS)
    count = checks.integer("jobs", jobs, 2, MAX_JOBS)
    seed = checks.integer("seed", seed, 0, 2**63 - 1)
    events = expected_events(m, c, r, tau, n, w)
    if not events * count <= MAX_EVENTS:
        raise checks.fail(
            "jobs x expected events per job",
            f"<= {MAX_EVENTS} (fewer jobs or segments, or rarer failures)",
            f"{count} x {events:.3g}",
        )
    rng = np.random.default_rng(seed)
    inf = np.inf
    t = np.zeros(count)  # the clock
    fail_at = rng.exponential(m, count)  # absolute time of each job's next failure
    restarting = np.zeros(count, dtype=bool)
    seg_start = np.zeros(count)  # when the current segment's compute began
    current = np.zeros(count, dtype=np.int64)  # segments captured in this run
    durable = np.zeros(count, dtype=np.int64)  # segments in the last durable checkpoint
    pend_at = np.full(count, inf)  # when the captured, not yet durable checkpoint is durable
    failures = np.zeros(count, dtype=np.int64)
    wall = np.full(count, np.nan)
    active = np.ones(count, dtype=bool)
    limit = int(50 * events) + 1000
    for _ in range(limit):
        if not active.any():
            break
        end = np.where(restarting, t + r, seg_start + tau + c)
        end = np.where(~restarting & (current >= n), inf, end)  # waiting for the last write
        first_ok = np.minimum(end, pend_at)
        fail = active & (fail_at < first_ok)
        pend = active & ~fail & (pend_at <= end)
        finish = active & ~fail & ~pend
        # a failure: back to the last durable checkpoint, restart (again)
        t = np.where(fail, fail_at, t)
        failures += fail
        restarting |= fail
        current = np.where(fail, durable, current)
        pend_at = np.where(fail, inf, pend_at)
        fail_at = np.where(fail, fail_at + rng.exponential(m, count), fail_at)
        # a checkpoint becomes durable
        t = np.where(pend, pend_at, t)
        durable = np.where(pend, current, durable)  # W <= tau: nothing captured since
        pend_at = np.where(pend, inf, pend_at)
        # a restart ends, or a segment ends with its checkpoint captured
        t = np.where(finish, end, t)
        back = finish & restarting
        seg_start = np.where(back, end, seg_start)
        restarting = restarting & ~back
        capt = finish & ~back
        current = current + capt
        if w == 0.0:
            durable = np.where(capt, current, durable)
        else:
            pend_at = np.where(capt, end + w, pend_at)
        seg_start = np.where(capt, end, seg_start)
        done = active & (durable >= n)
        wall = np.where(done, t, wall)
        active &= ~done
    else:
        raise RuntimeError(f"simulate_job: jobs still running after {limit} events")
    work = n * tau
    per_job = work / wall
    total = float(work * count / wall.sum())
    stderr = float(per_job.std(ddof=1) / np.sqrt(count))
    return JobResult(total, stderr, wall, failures, float(work))
