"""What a timeline says: bubbles (simulated and closed form), idle intervals, activations
in flight, point-to-point messages."""

from __future__ import annotations

import numpy as np

from .. import checks
from .orders import _check
from .timeline import Schedule, _positive_makespan, _timeline


def bubble_fraction(sched, of="ideal") -> float:
    """The bubble of a step: the idle time of a stage (makespan minus its busy time; the
    least busy stage if they differ) over its busy time, the ideal time (``of="ideal"``,
    Narayanan et al. SC21 section 2.2: t_pb / t_id), or over the makespan (``of="total"``,
    GPipe's definition, Huang et al. 2019 section 2: (K-1)/(M+K-1)). A timeline in which some
    stage never works has no ideal-time bubble (ValueError)."""
    sched = _timeline("sched", sched)
    of = checks.choice("of", of, ("ideal", "total"))
    span, busy = _positive_makespan(sched), sched.busy()
    least = float(busy.min())
    if of == "total":
        return (span - least) / span
    if not least > 0:
        raise checks.fail(
            "every stage's busy time", "> 0 for the bubble over the ideal time (use "
            "of='total')", f"stage {int(busy.argmin())} busy {least:g}",
        )  # fmt: skip
    return (span - least) / least


#: The schedules with a published closed-form bubble.
CLOSED_FORMS = ("naive", "gpipe", "1f1b", "interleaved", "zb-h1")


def bubble_closed_form(name, p, m, v=1, of="ideal") -> float:
    """The published bubble fractions, with t_w = t_b / 2 for zb-h1 and t_b = 2 t_f there.

    Over the ideal time (Narayanan et al., SC21, sections 2.2.1-2.2.2): (p-1)/m for GPipe and
    1F1B, (p-1)/(v m) interleaved (p | m), (p-1) for naive (one stage at a time), (p-1)/(3m)
    for ZB-H1 with T_F = T_B = T_W and m >= p (Qi et al., ICLR 2024: ZB-H1's bubble
    (p-1)(T_F + T_B - T_W) against 1F1B's (p-1)(T_F + T_B + T_W)). Over the total time
    (``of="total"``): x / (1 + x), e.g. GPipe's (K-1)/(M+K-1). No simulation: no size limit
    beyond ``MAX_STAGES`` and ``MAX_MICROBATCHES``. The V schedules have none here (their
    bubble depends on where each W lands): simulate them with :func:`schedule`."""
    name = checks.choice("name", name, CLOSED_FORMS)
    name, p, m, v, _ = _check(name, p, m, v, simulated=False)
    of = checks.choice("of", of, ("ideal", "total"))
    if name == "zb-h1" and m < p:
        raise checks.fail("m", f">= p = {p} for the zb-h1 closed form (steady state)", m)
    x = {"naive": p - 1, "interleaved": (p - 1) / (v * m), "zb-h1": (p - 1) / (3 * m)}
    x = float(x.get(name, (p - 1) / m))
    return x if of == "ideal" else x / (1 + x)


def _by_stage(tl, order):
    """Start offsets of each stage's run in ``tl.stage[order]`` (sorted by stage), shape (p+1,)."""
    return np.searchsorted(tl.stage[order], np.arange(tl.p + 1))


def idle_intervals(tl):
    """Gaps in each stage's work between time 0 and the makespan (the bubbles), as arrays
    (stage, start, end), stage by stage in time order."""
    tl = _timeline("tl", tl)
    t0, t1 = float(tl.start.min()), float(tl.end.max())
    order = np.lexsort((tl.start, tl.stage))
    bounds = _by_stage(tl, order)
    out = [], [], []
    for r in range(tl.p):
        sel = order[bounds[r] : bounds[r + 1]]
        busy_until = np.maximum.accumulate(np.r_[t0, tl.end[sel]])  # before each op, and after
        starts = np.r_[tl.start[sel], t1]
        gap = starts - busy_until > 1e-12 * max(1.0, t1 - t0)
        for lst, val in zip(out, (np.full(gap.sum(), r), busy_until[gap], starts[gap]),
                            strict=True):  # fmt: skip
            lst.append(val)
    return tuple(np.concatenate(x) for x in out)


def _in_flight_events(sched, stage=None):
    """(stage, time, change) of the activations a stage holds, in units of 1/v micro-batch,
    sorted by stage, then time, releases first at equal times: each F adds one chunk at its
    start, its backward removes it at its end: the W (which still needs the inputs) where the
    backward is split, else the B or full backward BW."""
    key = (sched.stage * sched.v + sched.chunk) * (int(sched.microbatch.max(initial=0)) + 1)
    key = key + sched.microbatch
    w = sched.phase == "W"
    b_alone = (sched.phase == "B") & ~np.isin(key, key[w])  # a B whose W never runs
    up, down = sched.phase == "F", w | b_alone | (sched.phase == "BW")
    if stage is not None:
        up, down = up & (sched.stage == stage), down & (sched.stage == stage)
    st = np.r_[sched.stage[down], sched.stage[up]]
    t = np.r_[sched.end[down], sched.start[up]]
    delta = np.r_[-np.ones(down.sum(), dtype=np.int64), np.ones(up.sum(), dtype=np.int64)]
    order = np.lexsort((delta, t, st))
    return st[order], t[order], delta[order]


def in_flight_timeline(sched, stage):
    """Micro-batches whose activations ``stage`` holds over time (see
    :func:`peak_in_flight`). Returns (times, counts) as a step function: counts[k] holds
    from times[k]."""
    sched = _timeline("sched", sched)
    stage = checks.integer("stage", stage, 0, sched.p - 1)
    _, t, delta = _in_flight_events(sched, stage)
    count = np.cumsum(delta) / sched.v
    last = np.append(t[1:] != t[:-1], True)  # one value per time: the count after it
    return t[last], count[last]


def peak_in_flight(sched) -> np.ndarray:
    """Peak micro-batches of activations held by each stage, shape (p,) (the activation
    memory, in units of one micro-batch's activations for that stage's layers): each F
    adds 1/v (one chunk) at its start, its backward (W where split) removes it at its end."""
    sched = _timeline("sched", sched)
    st, _, delta = _in_flight_events(sched)
    out = np.zeros(sched.p)
    if len(st):
        first = np.flatnonzero(np.r_[True, st[1:] != st[:-1]])
        run = np.cumsum(delta)  # integers: exact
        base = np.repeat(run[first] - delta[first], np.diff(np.r_[first, len(st)]))
        out[st[first]] = np.maximum(np.maximum.reduceat(run - base, first), 0) / sched.v
    return out


def p2p_messages(sched) -> np.ndarray:
    """Messages per step sent from device a to device b, a (p, p) matrix, counted from the
    simulated schedule: one per operation whose input (an activation for F, a gradient for
    B) was produced on another device. W and the loss stay on their device."""
    sched = _timeline("sched", sched, Schedule)
    has = sched.dep >= 0
    src, dst = sched.stage[sched.dep[has]], sched.stage[has]
    cross = src != dst
    out = np.zeros((sched.p, sched.p), dtype=np.int64)
    np.add.at(out, (src[cross], dst[cross]), 1)
    return out


def activation_message_bytes(b, s, h, bytes_per_element=2) -> int:
    """Bytes of one activation (or its gradient) sent between stages of a transformer:
    b s h elements (Narayanan et al., SC21, section 4.1), bf16 by default."""
    b = checks.integer("b", b, 1, 1 << 24)
    s = checks.integer("s", s, 1, 1 << 24)
    h = checks.integer("h", h, 1, 1 << 24)
    return b * s * h * checks.integer("bytes_per_element", bytes_per_element, 1, 16)
