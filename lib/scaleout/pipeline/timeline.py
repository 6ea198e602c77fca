"""Timelines of pipeline operations: :class:`Timeline` (measured or simulated) and
:class:`Schedule` (simulated, with each operation's dependency)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .. import checks
from .orders import ALL_SCHEDULES, MAX_CHUNKS, MAX_MICROBATCHES, MAX_OPERATIONS, MAX_STAGES, PHASES


def _array(name, x, n=None, **kw):
    out = checks.array(name, x, ndim=1, max_size=MAX_OPERATIONS, **kw)
    if n is not None and len(out) != n:
        raise checks.fail(name, f"an array of {n} elements (one per operation)", x)
    out.flags.writeable = False
    return out


def _strings(x):
    """``x`` as a numpy string array, or None (not a sequence of strings, ragged, too big)."""
    if not isinstance(x, list | tuple | np.ndarray) or len(x) > MAX_OPERATIONS:
        return None
    try:
        return np.asarray(x)
    except (TypeError, ValueError):
        return None


@dataclass(frozen=True, eq=False)
class Timeline:
    """Operations on a pipeline, one entry per operation (numpy arrays of equal length):
    ``stage`` (device 0..p-1), ``microbatch``, ``chunk`` (model chunk on that device),
    ``phase`` ('F', 'B', 'W' or 'BW', see ``PHASES``), ``start`` and ``end`` (time
    units). :func:`schedule` and :func:`timeline_from_records` give them sorted by stage,
    then start. Simulated schedules
    are :class:`Schedule`; measured ones come from :func:`timeline_from_records`. Validated
    on construction; the arrays are read-only."""

    p: int
    v: int
    stage: np.ndarray
    microbatch: np.ndarray
    chunk: np.ndarray
    phase: np.ndarray
    start: np.ndarray
    end: np.ndarray

    def __post_init__(self):
        p = checks.integer("p", self.p, 1, MAX_STAGES)
        v = checks.integer("v", self.v, 1, MAX_CHUNKS)
        stage = _array("stage", self.stage, integer=True, low=0, high=p - 1)
        n = len(stage)
        phase = _strings(self.phase)
        if phase is None or phase.ndim != 1 or phase.dtype.kind != "U" or len(phase) != n:
            raise checks.fail(
                "phase", f"an array of {n} strings 'F', 'B' or 'W' (or 'BW')", self.phase
            )
        if not np.all(np.isin(phase, PHASES)):
            raise checks.fail(
                "phase",
                "'F', 'B' or 'W' (or 'BW', a full backward) for every operation",
                self.phase,
            )
        phase = phase.astype("<U2")
        phase.flags.writeable = False
        start = _array("start", self.start, n)
        end = _array("end", self.end, n)
        if np.any(end < start):
            raise checks.fail("end", ">= start for every operation", self.end)
        fields = dict(
            p=p, v=v, stage=stage, phase=phase, start=start, end=end,
            microbatch=_array("microbatch", self.microbatch, n, integer=True, low=0),
            chunk=_array("chunk", self.chunk, n, integer=True, low=0, high=v - 1),
        )  # fmt: skip
        for key, value in fields.items():
            object.__setattr__(self, key, value)

    @property
    def makespan(self) -> float:
        """Time from the first start to the last end."""
        return float(self.end.max() - self.start.min())

    def ops(self, stage: int) -> list[tuple[str, int, int]]:
        """``(phase, microbatch, chunk)`` of one stage, in the order they started."""
        stage = checks.integer("stage", stage, 0, self.p - 1)
        sel = np.flatnonzero(self.stage == stage)
        sel = sel[np.argsort(self.start[sel], kind="stable")]
        return [(str(self.phase[i]), int(self.microbatch[i]), int(self.chunk[i])) for i in sel]

    def busy(self) -> np.ndarray:
        """Busy time of each stage, shape (p,)."""
        return np.bincount(self.stage, weights=self.end - self.start, minlength=self.p)

    def utilization(self) -> float:
        """Busy time of all stages over p x makespan (1 = no idle time)."""
        return float(self.busy().sum() / (self.p * _positive_makespan(self)))


@dataclass(frozen=True, eq=False)
class Schedule(Timeline):
    """A simulated schedule: a :class:`Timeline` plus its parameters and, for every
    operation, ``dep``: the index of the operation whose data it waited for (-1: none).
    ``group`` is the interleaved schedule's micro-batch group (None for the others)."""

    name: str = field(kw_only=True)
    m: int = field(kw_only=True)
    dep: np.ndarray = field(kw_only=True)
    t_f: float = field(default=1.0, kw_only=True)
    t_b: float = field(default=2.0, kw_only=True)
    t_w: float = field(default=0.0, kw_only=True)
    t_comm: float = field(default=0.0, kw_only=True)
    group: int | None = field(default=None, kw_only=True)

    def __post_init__(self):
        super().__post_init__()
        n = len(self.stage)
        name = checks.choice("name", self.name, ALL_SCHEDULES)
        m = checks.integer("m", self.m, 1, MAX_MICROBATCHES)
        if np.any(self.microbatch >= m):
            raise checks.fail("microbatch", f"< m = {m} for every operation", self.microbatch)
        t_b = checks.positive("t_b", self.t_b)
        fields = dict(
            name=name, m=m, t_b=t_b, t_f=checks.positive("t_f", self.t_f),
            t_w=checks.real("t_w", self.t_w, 0.0, t_b, high_open=True),
            t_comm=checks.nonnegative("t_comm", self.t_comm),
            group=checks.optional_integer("group", self.group, 1, m),
            dep=_array("dep", self.dep, n, integer=True, low=-1, high=n - 1),
        )  # fmt: skip
        for key, value in fields.items():
            object.__setattr__(self, key, value)


def timeline_from_records(records, p) -> Timeline:
    """A :class:`Timeline` from measured ``(stage, phase, microbatch, start, end)`` records
    (e.g. ``time.monotonic()`` seconds from each rank), shifted to start at 0."""
    p = checks.integer("p", p, 1, MAX_STAGES)
    if not isinstance(records, list | tuple) or not records or len(records) > MAX_OPERATIONS:
        raise checks.fail("records", f"a non-empty list of at most {MAX_OPERATIONS} records",
                          records)  # fmt: skip
    cols = [[], [], [], [], []]
    for rec in records:
        if not isinstance(rec, list | tuple) or len(rec) != 5:
            raise checks.fail("records", "(stage, phase, microbatch, start, end) tuples", rec)
        cols[0].append(checks.integer("record stage", rec[0], 0, p - 1))
        cols[1].append(checks.choice("record phase", rec[1], PHASES))
        cols[2].append(checks.integer("record microbatch", rec[2], 0, MAX_MICROBATCHES - 1))
        cols[3].append(checks.real("record start", rec[3]))
        cols[4].append(checks.real("record end", rec[4], cols[3][-1]))
    start, end = np.array(cols[3]), np.array(cols[4])
    order = np.lexsort((start, cols[0]))
    t0 = start.min()
    return Timeline(
        p, 1, np.array(cols[0])[order], np.array(cols[2])[order],
        np.zeros(len(order), dtype=np.int64), np.array(cols[1])[order],
        checks.finite_result("record times", start[order] - t0), end[order] - t0,
    )  # fmt: skip


def _timeline(name, tl, cls=None):
    return checks.instance(name, tl, cls or Timeline, f"a {(cls or Timeline).__name__}")


def _positive_makespan(tl) -> float:
    span = tl.makespan
    if not span > 0:
        raise checks.fail("the timeline's makespan", "> 0 (some operation takes time)", span)
    return span
