"""Goodput: the fraction of wall time that advances training, when the job fails.

Taught in chapter 17, "Failures, checkpoints and goodput" (``chapters/17_failures.ipynb``).
Units: seconds; failure rates per GPU-hour.

The model
---------
Failures arrive as a Poisson process of rate lambda = 1/M (``mtbf_s`` = M), whatever the job
is doing. The job computes for tau seconds (``interval_s``), then stops for C seconds
(``checkpoint_s``) to write a checkpoint. A failure loses everything since the last
*completed* checkpoint; the job then spends R seconds (``restart_s``: detect, reschedule,
reload) before it computes again. Failures can strike during a checkpoint (that checkpoint
is lost and the previous one is used) and during a restart (the restart begins again).

Derivation (renewal-reward)
---------------------------
Cut the timeline at the moments a checkpoint completes. Between two cuts the job gains
exactly tau seconds of training, and by memorylessness the cycles are independent and
identically distributed, so goodput = tau / E[T] with T the length of one cycle (the
renewal-reward theorem). In a cycle, the first attempt needs L = tau + C uninterrupted
seconds; every later attempt follows a failure and needs R + L uninterrupted seconds (a
failure during the restart or the segment sends the job back to the start of R + L).

For a block of B seconds, an attempt that fails lasts X | X < B with X ~ Exp(lambda), and
the expected time until a block of B succeeds, retried from scratch, is
(e^(lambda B) - 1) / lambda. So

    E[T] = E[min(X, L)] + P(X < L) (e^(lambda (R + L)) - 1) / lambda
         = (1 - e^(-lambda L)) / lambda + (1 - e^(-lambda L)) (e^(lambda (R + L)) - 1) / lambda
         = M e^(R/M) (e^((tau + C)/M) - 1),

    goodput = tau / (M e^(R/M) (e^((tau + C)/M) - 1)).

For small C, R and tau against M it is 1 - tau/(2M) - C/tau - R/M to first order, whose
optimum is Young's sqrt(2 C M); the exact optimum is
:func:`scaleout.failures.intervals.optimal_interval`. This is the model whose optimum Daly
(2006) expands; his eq. (13) has the same expected wall time per segment.

Asynchronous checkpoints (``background_s`` = W > 0): the job stops only C seconds (a copy
to host memory), and the checkpoint becomes durable W seconds later, while training goes on
(a background write to storage; W <= tau so that writes do not queue). A failure before the
checkpoint is durable falls back to the previous one. Cutting the timeline where each
checkpoint becomes durable: the first attempt of a cycle needs tau + C seconds (from one
durable point to the next), every retry R + tau + C + W (restart, recompute the segment,
copy, wait for the write), so

    goodput = tau lambda e^(-lambda (R + tau + C + W)) / (1 - e^(-lambda (tau + C))),

which is the formula above when W = 0. :func:`scaleout.failures.simulate.simulate_job`
replays both event by event, and the tests hold the closed form to it.

Limits: every time at most :data:`~scaleout.failures.intervals.MAX_SECONDS`; arrays at most
``checks.MAX_ELEMENTS`` values; at most :data:`MAX_GPUS` GPUs.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from .. import checks
from .intervals import MAX_SECONDS, _out, _seconds

#: Most GPUs one job may have (2**24, about 16.8 million).
MAX_GPUS = 2**24
#: Most kinds of component in one rate table.
MAX_COMPONENTS = 256


def _broadcast(**arrays):
    try:
        out = np.broadcast_arrays(*arrays.values())
    except ValueError:
        shapes = {k: np.shape(v) for k, v in arrays.items()}
        raise checks.fail("arguments", "arrays of broadcastable shapes", shapes) from None
    if out[0].size > checks.MAX_ELEMENTS:
        raise checks.fail(
            "arguments", f"at most {checks.MAX_ELEMENTS} values broadcast", out[0].size
        )
    return out


def goodput(mtbf_s, checkpoint_s, restart_s, interval_s, *, background_s=0.0):
    """Expected fraction of wall time that advances training (the module docstring derives
    it): tau / (M e^(R/M) (e^((tau + C)/M) - 1)) for synchronous checkpoints; with
    ``background_s`` = W > 0 (asynchronous: the checkpoint becomes durable W seconds after
    the C-second stall, W <= tau) tau lambda e^(-lambda (R + tau + C + W)) / (1 - e^(-lambda
    (tau + C))). ``checkpoint_s`` and ``restart_s`` may be 0. Vectorised (numpy broadcasting).
    """
    m = _seconds("mtbf_s", mtbf_s)
    c = _seconds("checkpoint_s", checkpoint_s, zero_ok=True)
    r = _seconds("restart_s", restart_s, zero_ok=True)
    tau = _seconds("interval_s", interval_s)
    w = _seconds("background_s", background_s, zero_ok=True)
    m, c, r, tau, w = _broadcast(
        mtbf_s=m, checkpoint_s=c, restart_s=r, interval_s=tau, background_s=w
    )
    if np.any(w > tau):
        bad = float(np.max(w - tau))
        raise checks.fail(
            "background_s",
            "<= interval_s (a background write must finish before the next checkpoint starts)",
            f"{bad:g} s more",
        )
    lam = 1.0 / m
    with np.errstate(over="ignore", under="ignore"):
        g = tau * lam * np.exp(-lam * (r + tau + c + w)) / -np.expm1(-lam * (tau + c))
    return _out("goodput", np.clip(g, 0.0, 1.0))


def max_restart_s(mtbf_s, checkpoint_s, target):
    """The longest mean restart R (seconds) that still reaches goodput ``target`` in (0, 1)
    with synchronous checkpoints of ``checkpoint_s`` at their best interval: R enters
    :func:`goodput` only as the factor e^(-R/M) and does not move the optimum, so
    R_max = M ln(G0 / target) with G0 the goodput at R = 0. Negative when even an instant
    restart misses the target (by that many seconds' worth). Vectorised."""
    from .intervals import optimal_interval

    m = _seconds("mtbf_s", mtbf_s)
    c = _seconds("checkpoint_s", checkpoint_s)
    t = checks.array("target", target, low=0.0, high=1.0, low_open=True, high_open=True)
    m, c, t = _broadcast(mtbf_s=m, checkpoint_s=c, target=t)
    g0 = goodput(m, c, 0.0, optimal_interval(c, m))
    with np.errstate(divide="ignore"):
        r = m * np.log(np.maximum(g0, 1e-300) / t)
    return _out("restart_s", r)


def job_mtbf_s(gpus, rates_per_gpu_hour):
    """Mean time between failures of a job on ``gpus`` GPUs, in seconds: 3600 / (gpus x the
    sum of the per-GPU failure rates), for independent components failing as Poisson
    processes (the job stops when any one fails). ``rates_per_gpu_hour``: failures per
    GPU-hour, a number or a mapping {component: rate} (a component shared by g GPUs, such
    as a host, counts 1/g of its rate per GPU). ``gpus`` is vectorised."""
    n = checks.array("gpus", gpus, low=1.0, high=float(MAX_GPUS))
    if np.any(n != np.floor(n)):
        raise checks.fail("gpus", "whole numbers of GPUs", gpus)
    if isinstance(rates_per_gpu_hour, Mapping):
        if not 1 <= len(rates_per_gpu_hour) <= MAX_COMPONENTS:
            what = f"a mapping of 1 to {MAX_COMPONENTS} components -> failures per GPU-hour"
            raise checks.fail("rates_per_gpu_hour", what, rates_per_gpu_hour)
        total = 0.0
        for name, rate in rates_per_gpu_hour.items():
            checks.text("component", name)
            total += checks.nonnegative(f"rates_per_gpu_hour[{name!r}]", rate, high=1.0)
    else:
        total = checks.nonnegative("rates_per_gpu_hour", rates_per_gpu_hour, high=1.0)
    if total <= 0.0:
        raise checks.fail("rates_per_gpu_hour", "rates summing to more than 0", total)
    m = 3600.0 / (n * total)
    if np.any(m > MAX_SECONDS):
        raise checks.fail(
            "rates_per_gpu_hour", f"rates giving a job MTBF <= {MAX_SECONDS:g} s", float(np.max(m))
        )
    return _out("mtbf_s", m)


def rate_per_gpu_hour(failures, gpus, hours):
    """Failures per GPU-hour observed: ``failures`` / (``gpus`` x ``hours``). Vectorised."""
    f = checks.array("failures", failures, low=0.0)
    n = checks.array("gpus", gpus, low=1.0, high=float(MAX_GPUS))
    h = checks.array("hours", hours, low=0.0, high=MAX_SECONDS / 3600, low_open=True)
    return _out("rate", f / (n * h))
