"""Simulating a schedule: each stage runs its order, each operation at max(stage idle,
its input's arrival)."""

from __future__ import annotations

import numpy as np

from .. import checks
from .orders import PHASES, _check, _dependencies, _order_arrays
from .timeline import Schedule

#: Schedules that split the backward into B (input gradient) and W (weight gradient).
SPLIT_BACKWARD = ("zb-h1", "zb-v", "dualpipe-v")


def schedule(name, p, m, v=1, t_f=1.0, t_b=2.0, t_w=None, *, group=None, t_comm=0.0):
    """Simulate schedule ``name`` on ``p`` stages with ``m`` micro-batches: a :class:`Schedule`.

    ``t_f``, ``t_b``: forward and backward time of one micro-batch on one stage (all its
    layers); with ``v`` chunks each chunk takes 1/v of that. ``t_w`` (zb-h1, zb-v and
    dualpipe-v, default t_b / 2): the weight-gradient part of the backward, so B takes
    t_b - t_w and W t_w (a full backward BW takes t_b). In the V schedules chunk 0 of device
    r is virtual stage r and chunk 1 virtual stage 2p - 1 - r.
    ``group`` (interleaved only): Megatron-Core's micro-batch group size (default p).
    ``t_comm``: time of one message between two devices (default 0, as in the closed forms).
    Each stage runs :func:`stage_order` in order; an operation starts as soon as its stage
    is idle and its input has arrived (an event simulation over ready times).
    """
    name, p, m, v, group = _check(name, p, m, v, group)
    t_f, t_b = checks.positive("t_f", t_f), checks.positive("t_b", t_b)
    t_comm = checks.nonnegative("t_comm", t_comm)
    if name in SPLIT_BACKWARD:
        t_w = t_b / 2 if t_w is None else checks.positive("t_w", t_w)
        if not t_w < t_b:
            raise checks.fail("t_w", f"< t_b = {t_b:g} (B takes t_b - t_w)", t_w)
    elif t_w is not None:
        raise checks.fail("t_w", f"None for {name!r} (only {SPLIT_BACKWARD} split the "
                          "backward)", t_w)  # fmt: skip
    else:
        t_w = 0.0
    dur = (t_f / v, (t_b - t_w) / v, t_w / v, t_b / v)  # F, B, W, BW (PHASES order)

    st, ph, mb, ch = _order_arrays(name, p, m, v, group)
    vs, dep = _dependencies(name, p, m, v, st, ph, mb, ch)
    delay = np.where((dep >= 0) & (st[dep] != st), t_comm, 0.0)  # p2p transfers
    bounds = np.searchsorted(st, np.arange(p + 1))
    duration = np.array(dur)[ph]
    start, end = _simulate(bounds, dep, duration, delay)
    return Schedule(
        p, v, st, mb, ch, np.array(PHASES)[ph], start, end, name=name, m=m, dep=dep,
        t_f=t_f, t_b=t_b, t_w=float(t_w), t_comm=t_comm, group=group,
    )  # fmt: skip


def _simulate(bounds, dep, duration, delay):
    """Start and end times of a ready-time simulation: each stage runs its ops
    (``bounds[s]`` to ``bounds[s + 1]``) in order, each op at max(stage idle, its
    dependency's end + delay). Two equivalent engines: event-driven in Python for short
    pipelines, in vectorised rounds (one op per ready stage per round) for deep ones."""
    if len(bounds) - 1 >= ROUNDS_FROM_STAGES:
        return _simulate_rounds(bounds, dep, duration, delay)
    return _simulate_events(bounds, dep, duration, delay)


ROUNDS_FROM_STAGES = 32  # bench/bench_pipeline.py: events / rounds 0.8 at p = 16, 1.8 at p = 32


def _simulate_events(bounds, dep, duration, delay):
    """The event-driven engine: a stage blocked on an op is woken when that op ends. Every
    pass either runs an op or parks the stage on an unfinished op, so the loop ends (a
    stage parked forever is a deadlock, reported)."""
    n, p = len(dep), len(bounds) - 1
    dep_l, dur_l, delay_l = dep.tolist(), duration.tolist(), delay.tolist()
    start, end = [0.0] * n, [-1.0] * n
    nxt, stop = bounds[:-1].tolist(), bounds[1:].tolist()
    free = [0.0] * p
    waiting: dict[int, list[int]] = {}  # op -> stages blocked on it
    stack = list(range(p - 1, -1, -1))
    done = 0
    while stack:
        s = stack.pop()
        i, t = nxt[s], free[s]
        while i < stop[s]:
            d = dep_l[i]
            if d >= 0:
                if end[d] < 0:
                    waiting.setdefault(d, []).append(s)
                    break
                ready = end[d] + delay_l[i]
                if ready > t:
                    t = ready
            start[i] = t
            t += dur_l[i]
            end[i] = t
            done += 1
            if i in waiting:
                stack += waiting.pop(i)
            i += 1
        nxt[s], free[s] = i, t
    if done != n:  # cannot happen for the orders above: a bug, not a user error
        raise RuntimeError(f"schedule deadlocked after {done} of {n} operations")
    return np.array(start), np.array(end)


def _simulate_rounds(bounds, dep, duration, delay):
    """The vectorised engine: in each round every stage whose next op's input was produced
    in an earlier round runs that op. Each round runs at least one op (else: deadlock,
    reported), so there are at most n rounds; for a pipeline about ops-per-stage + 2 p."""
    n, p = len(dep), len(bounds) - 1
    nxt, stop = bounds[:-1].copy(), bounds[1:]
    free, start, end = np.zeros(p), np.zeros(n), np.full(n, -1.0)
    stages = np.flatnonzero(nxt < stop)
    while len(stages):
        i = nxt[stages]
        d = dep[i]
        d_end = end[np.maximum(d, 0)]
        ready = (d < 0) | (d_end >= 0)
        if not ready.any():  # a bug, not a user error
            raise RuntimeError(f"schedule deadlocked after {int((end >= 0).sum())} of {n}")
        s, i, d, d_end = stages[ready], i[ready], d[ready], d_end[ready]
        t = np.maximum(free[s], np.where(d >= 0, d_end + delay[i], 0.0))
        start[i], end[i] = t, t + duration[i]
        free[s] = end[i]
        nxt[s] += 1
        stages = np.flatnonzero(nxt < stop)
    return start, end
