"""The discrete-event engine: streams that run their operations in order.

Every operation belongs to one *stream* (a rank's compute stream, or one of its
communication streams) and runs after the operation before it on that stream. It may also
wait for other operations (``deps``: each an operation and the fraction of it that must be
done, 1.0 = its end; a gradient bucket is ready part-way through the backward that
produces it). A *collective* is one operation per member, all of one ``group``: the members
start together when the last of them has arrived (its stream free and its deps done), so a
slow member delays all. An operation therefore starts at the latest of: its stream free,
its deps, its group's last arrival; nothing else. Overlap is what falls out of that.

The engine is event-driven like ``scaleout.pipeline._simulate_events``: a stream
blocked on an unfinished operation (or an incomplete collective) is parked and woken when
it completes, so every pass runs an operation or parks a stream, and a cycle (a graph
that cannot run) is reported, never a hang. For each operation it records ``crit``: the
operation whose completion set its start (-1: none, it started at 0), the edge the critical
path follows back.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

#: The most operations one simulation may hold, for bounded work and memory (about 1.5 s
#: and 400 MB).
MAX_OPS = 1 << 20


@dataclass
class Graph:
    """Operations under construction: parallel lists, one entry per operation."""

    stream: list = field(default_factory=list)  # stream id
    duration: list = field(default_factory=list)  # seconds
    deps: list = field(default_factory=list)  # list of (op, fraction) or None
    group: list = field(default_factory=list)  # collective id, -1 for none
    kind: list = field(default_factory=list)  # what it is (the caller's code)
    mb: list = field(default_factory=list)  # micro-batch, -1 for none
    chunk: list = field(default_factory=list)  # model chunk, -1 for none

    def add(self, stream: int, duration: float, deps=None, group: int = -1, kind: int = 0,
            mb: int = -1, chunk: int = -1) -> int:  # fmt: skip
        """Append an operation; returns its index."""
        if len(self.stream) >= MAX_OPS:
            raise ValueError(
                f"the simulation must hold at most {MAX_OPS} operations; use fewer "
                "micro-batches or stages (or symmetric ranks, which are simulated once)"
            )
        self.stream.append(stream)
        self.duration.append(duration)
        self.deps.append(deps)
        self.group.append(group)
        self.kind.append(kind)
        self.mb.append(mb)
        self.chunk.append(chunk)
        return len(self.stream) - 1

    def extend(self, stream, duration, deps, group, kind, mb, chunk) -> int:
        """Append many operations (lists of equal length); returns the first index."""
        first = len(self.stream)
        if first + len(stream) > MAX_OPS:
            self.add(0, 0.0)  # raises the size error
        for lst, new in zip((self.stream, self.duration, self.deps, self.group, self.kind,
                             self.mb, self.chunk), (stream, duration, deps, group, kind, mb,
                                                    chunk), strict=True):  # fmt: skip
            lst.extend(new)
        return first

    def __len__(self) -> int:
        return len(self.stream)


def run(graph: Graph, n_streams: int):
    """Start, end, critical predecessor (``crit``) and ready time (``ready``: when its own
    stream and deps allowed it; a collective member may start later, when the last member
    is ready) of every operation, as numpy arrays. Operations of one stream run in the order
    they were added."""
    n = len(graph)
    dur, deps, group = graph.duration, graph.deps, graph.group
    streams = np.asarray(graph.stream, dtype=np.int64)
    by_stream = np.argsort(streams, kind="stable")
    cuts = np.searchsorted(streams[by_stream], np.arange(n_streams + 1))
    order = [by_stream[a:b].tolist() for a, b in zip(cuts[:-1], cuts[1:], strict=True)]
    groups = np.asarray(group, dtype=np.int64)
    members = dict(zip(*np.unique(groups[groups >= 0], return_counts=True), strict=True))
    start, end, ready = [0.0] * n, [-1.0] * n, [0.0] * n
    crit = [-1] * n
    ptr, free, last = [0] * n_streams, [0.0] * n_streams, [-1] * n_streams
    waiting: dict[int, list[int]] = {}  # op -> streams parked on it
    arrived: dict[int, list] = {}  # group -> [(time, why, op)]
    parked: set[int] = set()  # collective members that arrived and wait for the rest
    done = 0
    stack = list(range(n_streams - 1, -1, -1))

    def finish(i, s, t, why, own):
        nonlocal done
        start[i], end[i], crit[i], ready[i] = t, t + dur[i], why, own
        free[s], last[s] = end[i], i
        ptr[s] += 1
        done += 1
        if i in waiting:
            stack.extend(waiting.pop(i))

    while stack:
        s = stack.pop()
        seq = order[s]
        k, stop = ptr[s], len(seq)
        t_free, prev = free[s], last[s]
        while k < stop:
            i = seq[k]
            t, why = t_free, prev
            dl = deps[i]
            if dl is not None:
                blocked = False
                for j, frac in dl:
                    e = end[j]
                    if e < 0:
                        waiting.setdefault(j, []).append(s)
                        blocked = True
                        break
                    r = e if frac >= 1.0 else start[j] + frac * (e - start[j])
                    if r > t:
                        t, why = r, j
                if blocked:
                    break
            g = group[i]
            if g < 0:  # an ordinary operation: run it now
                e = t + dur[i]
                start[i], end[i], crit[i], ready[i] = t, e, why, t
                t_free, prev = e, i
                k += 1
                done += 1
                if i in waiting:
                    stack.extend(waiting.pop(i))
                continue
            ptr[s], free[s], last[s] = k, t_free, prev
            got = arrived.setdefault(g, [])
            if i in parked:  # woken twice: it has arrived already
                break
            parked.add(i)
            got.append((t, why, i))
            if len(got) < members[g]:
                break  # parked until the last member arrives (it restarts this stream)
            t_all, why_all, _ = max(got)
            for own, _, m in got:
                parked.discard(m)
                sm = graph.stream[m]
                finish(m, sm, t_all, why_all, own)
                if sm != s:
                    stack.append(sm)
            del arrived[g]
            k, t_free, prev = ptr[s], free[s], last[s]
        ptr[s], free[s], last[s] = k, t_free, prev
    if done != n:
        raise RuntimeError(f"the step's operations deadlocked after {done} of {n}")
    return np.array(start), np.array(end), np.array(crit, dtype=np.int64), np.array(ready)
