"""What a simulated step returns: :class:`StepTrace`, its events, breakdown, critical path
and Chrome trace."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import NamedTuple

import numpy as np

from .. import checks
from .. import pipeline as PP

#: The streams of every unit, in the order of their ids (unit * 3 + index).
STREAMS = ("compute", "pp", "dp", "ep", "cp", "tp")
STREAM_TITLES = ("compute", "pipeline send", "gradient reduce", "expert all-to-all",
                 "context-parallel ring", "tensor-parallel collectives")  # fmt: skip
#: Streams named in every Chrome trace; the others only where they hold events.
ALWAYS_NAMED = 5
# Operation kinds: the pipeline phases (PP.PHASES: F, B, W, BW = 0..3), then these.
KIND_SEND, KIND_BUCKET, KIND_OPTIMIZER = 4, 5, 6
KIND_DISPATCH, KIND_COMBINE, KIND_COMBINE_GRAD, KIND_DISPATCH_GRAD = 7, 8, 9, 10
KIND_KV, KIND_DKV = 11, 12
KIND_ALLREDUCE, KIND_ALLGATHER, KIND_REDUCESCATTER = 13, 14, 15  # the tp stream's collectives
KIND_NAMES = (*PP.PHASES, "send", "grad bucket", "optimizer", "dispatch", "combine",
              "combine grad", "dispatch grad", "KV pass", "dKV pass", "TP all-reduce",
              "TP all-gather", "TP reduce-scatter")  # fmt: skip
#: Names of the parts of an operation split by layer (``scaleout.sim.experts``,
#: ``scaleout.sim.context``, ``scaleout.sim.tensor``).
PART_NAMES = {1: "attention", 2: "experts", 3: "ring block", 4: "rest", 5: "column GEMM",
              6: "row GEMM", 7: "column weight grad", 8: "row weight grad", 9: "other",
              10: "output layer"}  # fmt: skip
BREAKDOWN = ("compute", "exposed_comm", "bubble", "straggler_wait", "slowdown", "optimizer")


class Event(NamedTuple):
    """One operation: ``rank`` (the lowest rank of the unit it stands for), ``stream``
    (one of ``STREAMS``), ``name`` (e.g. 'F mb3 c0', 'send mb3 c0', 'grad bucket 2',
    'optimizer'), ``start_s``, ``end_s``."""

    rank: int  # the unit's slowest GPU, lowest rank among equals
    stream: str
    name: str
    start_s: float
    end_s: float


def _union(intervals) -> list:
    """The union of (a, b) intervals as sorted, disjoint (a, b) pairs."""
    out: list = []
    for a, b in sorted(intervals):
        if b <= a:
            continue
        if out and a <= out[-1][1]:
            if b > out[-1][1]:
                out[-1] = (out[-1][0], b)
        else:
            out.append((a, b))
    return out


def _measure(intervals) -> float:
    """Total length of the union of (a, b) intervals."""
    return float(sum(b - a for a, b in _union(intervals)))


def _clip(intervals, within) -> list:
    """The parts of the union of ``intervals`` inside the union of ``within``."""
    xs, ys = _union(intervals), _union(within)
    out, i, j = [], 0, 0
    while i < len(xs) and j < len(ys):
        lo, hi = max(xs[i][0], ys[j][0]), min(xs[i][1], ys[j][1])
        if hi > lo:
            out.append((lo, hi))
        if xs[i][1] < ys[j][1]:
            i += 1
        else:
            j += 1
    return out


@dataclass(frozen=True, eq=False)
class StepTrace:
    """A simulated step (:func:`scaleout.sim.simulate`). ``step_s``: mean over the steps;
    ``steps_s``: each step; ``breakdown``: seconds of the rank that finishes last, adding up
    to its step (``BREAKDOWN``: its unslowed compute (with the output layer), exposed
    communication (TP inside its operations, and its compute stream idle while its own or
    an incoming transfer or gradient bucket is on the wire), bubble (idle, waiting for
    another stage's work), straggler_wait (idle in a collective whose other members are not
    there yet), slowdown (its own GPU's extra time), optimizer); ``memory_peak_bytes``: per
    rank (states plus the activations its schedule holds at its peak); ``events``: every
    simulated operation (:class:`Event`; a unit stands for its t tensor-parallel GPUs and
    for every replica with the same slowdowns: ``units``)."""

    step_s: float
    steps_s: tuple
    breakdown: dict
    memory_peak_bytes: np.ndarray
    units: dict = field(repr=False)  # representative rank -> ranks it stands for (count)
    _arrays: dict = field(repr=False)

    @classmethod
    def from_run(cls, base, g, comp, tp, start, end, crit, ready, replicas, which, factors,
                 part=None):  # fmt: skip
        plan = base.plan
        t, p = plan.t, plan.p
        nstr = len(STREAMS)
        stream = np.array(g.stream)
        unit = stream // nstr
        q, r = unit // p, unit % p
        first_dp = np.array([int(np.flatnonzero(which == k)[0]) for k in range(len(replicas))])
        # a unit is named by its slowest GPU (the lowest rank among equals)
        ranks = base.ranks  # [pp, dp, tp]
        f = np.asarray(factors)[ranks]
        names = np.array([[ranks[s, first_dp[k], int(np.argmax(f[s, first_dp[k]]))]
                           for s in range(p)] for k in range(len(replicas))])  # fmt: skip
        rank = names[q, r]
        counts = np.bincount(which, minlength=len(replicas))
        units = {int(names[k, s]): int(counts[k] * t) for k in range(len(replicas))
                 for s in range(p)}  # fmt: skip
        if part is None:
            part = np.zeros(len(start), dtype=np.int64)
        arrays = dict(rank=rank, unit=unit, stream=stream % nstr, kind=np.array(g.kind),
                      mb=np.array(g.mb), chunk=np.array(g.chunk), start=start, end=end,
                      crit=crit, ready=ready, comp=comp, tp=tp,
                      group=np.array(g.group), deps=g.deps,
                      part=part)  # fmt: skip
        step = float(end.max())
        breakdown = _breakdown(arrays, int(unit[np.argmax(end)]), step)
        mem = _memory(base, arrays)
        return cls(step, (step,), breakdown, mem, units, arrays)

    def with_steps(self, steps_s: tuple) -> StepTrace:
        return replace(self, step_s=float(np.mean(steps_s)), steps_s=tuple(steps_s))

    def _event(self, i) -> Event:
        a = self._arrays
        kind, mb, ch = int(a["kind"][i]), int(a["mb"][i]), int(a["chunk"][i])
        name = KIND_NAMES[kind]
        if kind <= KIND_SEND or kind >= KIND_DISPATCH:
            name += f" mb{mb} c{ch}"
        elif kind == KIND_BUCKET:
            name += f" {mb}"
        part = int(a["part"][i])
        if kind <= 3 and part in PART_NAMES:
            name += f" {PART_NAMES[part]}"
        return Event(int(a["rank"][i]), STREAMS[a["stream"][i]], name, float(a["start"][i]),
                     float(a["end"][i]))  # fmt: skip

    @property
    def events(self) -> list[Event]:
        """Every simulated operation, in the order they were built (rank by rank)."""
        return [self._event(i) for i in range(len(self._arrays["start"]))]

    def critical_path(self) -> list[Event]:
        """The chain of operations that sets the step time, first to last: from the
        operation that ends last, each step back to the operation whose completion let it
        start (its stream's previous one, an input, or a collective's last arrival)."""
        crit, end = self._arrays["crit"], self._arrays["end"]
        chain, i = [], int(np.argmax(end))
        while i >= 0 and len(chain) <= len(end):
            chain.append(i)
            i = int(crit[i])
        return [self._event(i) for i in reversed(chain)]

    def breakdown_of(self, rank: int) -> dict:
        """``breakdown`` of one simulated rank (a key of ``units``), up to the
        step's end: its compute, exposed communication, bubble, straggler wait, slowdown,
        optimizer, and ``idle_after`` (done before the step ends)."""
        rank = checks.integer("rank", rank, 0, 1 << 24)
        if rank not in self.units:
            raise checks.fail("rank", f"a simulated rank, one of {sorted(self.units)[:8]}...",
                              rank)  # fmt: skip
        a = self._arrays
        unit = int(a["unit"][np.flatnonzero(a["rank"] == rank)[0]])
        mine = a["unit"] == unit
        done = float(a["end"][mine].max())
        out = _breakdown(a, unit, done)
        out["idle_after"] = self.steps_s[0] - done
        return out

    def exposed_s(self, stream: str, rank: int | None = None) -> float:
        """Seconds that ``rank``'s compute stream (default: the rank that finishes last)
        stands idle while its own operations on ``stream`` (one of ``STREAMS`` but
        'compute') are on the wire or waiting for their collective's other members."""
        stream = checks.choice("stream", stream, STREAMS[1:])
        a = self._arrays
        if rank is None:
            unit = int(a["unit"][np.argmax(a["end"])])
        else:
            rank = checks.integer("rank", rank, 0, 1 << 24)
            if rank not in self.units:
                raise checks.fail("rank", f"a simulated rank, one of {sorted(self.units)[:8]}...",
                                  rank)  # fmt: skip
            unit = int(a["unit"][np.flatnonzero(a["rank"] == rank)[0]])
        mine = np.flatnonzero(a["unit"] == unit)
        on = mine[a["stream"][mine] == 0]
        on = on[np.argsort(a["start"][on], kind="stable")]
        step = float(a["end"][mine].max())
        idle = [(x, y) for x, y in zip(np.r_[0.0, a["end"][on]], np.r_[a["start"][on], step],
                                       strict=True) if y > x]  # fmt: skip
        k = STREAMS.index(stream)
        wire = [(a["ready"][j], a["end"][j]) for j in mine[a["stream"][mine] == k]]
        return _measure(_clip(idle, wire))

    def critical_seconds_by_rank(self) -> dict:
        """Seconds of the critical path spent in each rank's compute operations (which
        rank the step waits for), largest first."""
        out: dict[int, float] = {}
        for e in self.critical_path():
            if e.stream == "compute":
                out[e.rank] = out.get(e.rank, 0.0) + e.end_s - e.start_s
        return dict(sorted(out.items(), key=lambda kv: -kv[1]))

    def to_chrome_trace(self) -> dict:
        """The events in the Chrome Trace Event format (Perfetto, chrome://tracing):
        complete events (``ph: "X"``, ``ts``/``dur`` in microseconds), ``pid`` the rank,
        ``tid`` the stream, with metadata naming both."""
        a = self._arrays
        out = []
        used = set(np.unique(a["stream"]).tolist())
        for rank, count in sorted(self.units.items()):
            label = f"rank {rank}" + (f" (stands for {count} GPUs)" if count > 1 else "")
            out.append(dict(ph="M", name="process_name", pid=rank, tid=0, args=dict(name=label)))
            out.append(dict(ph="M", name="process_sort_index", pid=rank, tid=0,
                            args=dict(sort_index=rank)))  # fmt: skip
            for k, title in enumerate(STREAM_TITLES):
                if k < ALWAYS_NAMED or k in used:
                    out.append(dict(ph="M", name="thread_name", pid=rank, tid=k,
                                    args=dict(name=title)))  # fmt: skip
        for i in range(len(a["start"])):
            e = self._event(i)
            out.append(dict(name=e.name, cat=e.stream, ph="X", pid=e.rank,
                            tid=int(a["stream"][i]), ts=round(e.start_s * 1e6, 3),
                            dur=round((e.end_s - e.start_s) * 1e6, 3)))  # fmt: skip
        return {"traceEvents": out, "displayTimeUnit": "ms"}


def _breakdown(a, u, step) -> dict:
    """Seconds of unit ``u``'s step by cause (see :class:`StepTrace`)."""
    mine = np.flatnonzero(a["unit"] == u)
    on_compute = mine[a["stream"][mine] == 0]
    on_compute = on_compute[np.argsort(a["start"][on_compute], kind="stable")]
    kind = a["kind"][on_compute]
    dur = a["end"][on_compute] - a["start"][on_compute]
    comp, tp = a["comp"][on_compute], a["tp"][on_compute]
    opt = kind == KIND_OPTIMIZER
    out = dict.fromkeys(BREAKDOWN, 0.0)
    out["compute"] = float(comp[~opt].sum())
    out["optimizer"] = float(comp[opt].sum())
    out["slowdown"] = float((dur - comp - tp).sum())
    tp_s = float(tp.sum())
    # idle intervals of the compute stream, from 0 to the step's end
    starts, ends = a["start"][on_compute], a["end"][on_compute]
    idle = [(x, y) for x, y in zip(np.r_[0.0, ends], np.r_[starts, step], strict=True) if y > x]
    comm_ids = mine[a["stream"][mine] != 0].tolist()
    for i in on_compute.tolist():  # incoming transfers this unit waits for
        for j, _ in a["deps"][i] or ():
            if a["stream"][j] != 0 and a["unit"][j] != u:
                comm_ids.append(j)
    wire = [(a["start"][j], a["end"][j]) for j in comm_ids]
    waits = [(a["ready"][j], a["start"][j]) for j in comm_ids
             if a["group"][j] >= 0 and a["start"][j] > a["ready"][j]]  # fmt: skip
    waiting = _measure(_clip(idle, waits))
    on_wire = _measure(_clip(idle, wire) + _clip(idle, waits)) - waiting
    out["straggler_wait"] = waiting
    out["exposed_comm"] = tp_s + on_wire
    out["bubble"] = _measure(idle) - waiting - on_wire
    return {k: max(0.0, float(v)) for k, v in out.items()}


def _memory(base, a) -> np.ndarray:
    """Peak bytes per rank: states plus the activations in flight at the stage's peak."""
    sel = np.flatnonzero((a["kind"] <= 3) & (a["unit"] < base.plan.p))  # replica 0's ops
    plan = base.plan
    unit, mb, ch, kind = a["unit"][sel], a["mb"][sel], a["chunk"][sel], a["kind"][sel]
    start, end = a["start"][sel], a["end"][sel]
    if np.any(a["part"][sel]):  # operations split into parts: one interval per operation
        key = ((unit * (int(mb.max()) + 1) + mb) * (int(ch.max()) + 1) + ch) * 4 + kind
        order = np.argsort(key, kind="stable")
        key = key[order]
        cut = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
        start = np.minimum.reduceat(start[order], cut)
        end = np.maximum.reduceat(end[order], cut)
        unit, mb, ch, kind = (x[order][cut] for x in (unit, mb, ch, kind))
    phase = np.array(PP.PHASES)[kind]
    tl = PP.Timeline(plan.p, base.chunks, unit, mb, ch, phase, start, end)
    peak = PP.peak_in_flight(tl)
    stage_mem = base.states + base.act_bytes * peak + base.extra_bytes
    stage_mem[-1] = max(stage_mem[-1], base.states + base.act_bytes + base.logit_bytes)
    out = np.empty(base.ranks.size)
    for s in range(plan.p):
        out[base.ranks[s]] = stage_mem[s]
    return out
