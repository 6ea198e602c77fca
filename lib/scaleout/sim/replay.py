"""Replaying measured operations: the simulator's engine fed with the durations a real run
measured, to check that it reproduces the run's order and predicts its step time.

* :func:`pipeline` - one pipeline step: each rank runs its operations in
  :func:`scaleout.pipeline.stage_order`'s order, with the durations the run measured, and
  the schedule's dependencies (a forward waits for the previous stage's forward, a backward
  for the next stage's backward), plus ``t_comm`` per message between ranks.
* :func:`collective` - data parallelism: each rank runs its operations, then all meet in one
  collective (the gradient all-reduce) and run what follows it.

Both return a :class:`Replay`: start and end of every operation, the step (first start to
last end) and which rank's operations the critical path runs through.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import checks
from .. import pipeline as PP
from . import engine

MAX_RANKS = 64
MAX_OPS_PER_RANK = 1 << 14


@dataclass(frozen=True, eq=False)
class Replay:
    """``order[r]``: rank r's operations (names) in the order the replay ran them;
    ``start``/``end``: their seconds (per rank, same order); ``step_s``; ``critical``:
    seconds of the critical path spent in each rank's operations, largest first."""

    order: list
    start: list
    end: list
    step_s: float
    critical: dict


def _durations(name, values, n):
    if not isinstance(values, list | tuple) or len(values) != n:
        raise checks.fail(name, f"a list of {n} durations", values)
    return [checks.nonnegative(f"an element of {name}", x, 1e6) for x in values]


def _result(g, names, ranks, n_ranks):
    start, end, crit, _ = engine.run(g, max(g.stream) + 1)
    order, st, en = [], [], []
    for r in range(n_ranks):
        idx = [i for i in range(len(names)) if ranks[i] == r]
        idx.sort(key=lambda i: (start[i], i))
        order.append([names[i] for i in idx])
        st.append([float(start[i]) for i in idx])
        en.append([float(end[i]) for i in idx])
    critical: dict[int, float] = {}
    i = int(np.argmax(end))
    while i >= 0:
        if ranks[i] >= 0:
            critical[ranks[i]] = critical.get(ranks[i], 0.0) + float(end[i] - start[i])
        i = int(crit[i])
    critical = dict(sorted(critical.items(), key=lambda kv: -kv[1]))
    return Replay(order, st, en, float(end.max() - start.min()), critical)


def _dependencies(name, p, v):
    """``dep(kind, j, c, r)``: the (kind, j, c, r) key of the operation that the operation
    (kind, micro-batch j, chunk c) on rank r waits for, or None (schedule ``name``)."""
    n_vs, vshape = p * v, name in PP.V_SCHEDULES

    def device(vs):
        return (vs if vs < p else 2 * p - 1 - vs) if vshape else vs % p

    def chunk(vs):
        return (0 if vs < p else 1) if vshape else vs // p

    def dep(kind, j, c, r, where):
        vs = (r if c == 0 else 2 * p - 1 - r) if vshape else c * p + r
        if kind == "F" and vs > 0:
            want, at = ("F",), vs - 1
        elif kind in ("B", "BW"):
            want, at = (("F",), vs) if vs == n_vs - 1 else (("B", "BW"), vs + 1)
        elif kind == "W":
            want, at = ("B",), vs
        else:
            return None
        for k in want:
            if (k, j, chunk(at), device(at)) in where:
                return k, j, chunk(at), device(at)
        raise RuntimeError(f"no {want[0]} of micro-batch {j} on virtual stage {at}")

    return dep


def observed_delays(name, p, m, ops, v=1) -> tuple[float, float]:
    """The two delays a run adds between its operations, measured in the run itself:
    ``(message_s, host_s)``. ``ops[r]``: rank r's operations as (name, start_s, end_s) in
    :func:`scaleout.pipeline.stage_order`'s order (what
    :func:`scaleout.sim.profiled.pipeline_rank` returns). ``message_s``: the mean time from
    the end of an operation on another rank to the start of the operation waiting for it,
    over the operations whose rank was idle, waiting (the message and the receiver's
    wake-up); ``host_s``: the mean gap between an operation's end and the next one's start
    on the same rank when the next was not waiting for another rank (the host's work
    between two operations: Python, the sends' bookkeeping, a wait for a core). Means, not
    medians: the step adds the gaps up, and their distribution has a long tail (a wait for
    a core) that a median leaves out."""
    orders = PP.stage_order(name, p, m, v)
    if not isinstance(ops, list | tuple) or len(ops) != len(orders):
        raise checks.fail("ops", f"a list of {len(orders)} lists, one per rank", ops)
    where = {}
    for r, order in enumerate(orders):
        if not isinstance(ops[r], list | tuple) or len(ops[r]) != len(order):
            raise checks.fail(f"ops[{r}]", f"a list of {len(order)} (name, start, end)", ops[r])
        for (kind, j, c), op in zip(order, ops[r], strict=True):
            if not isinstance(op, list | tuple) or len(op) != 3:
                raise checks.fail(f"an element of ops[{r}]", "a (name, start, end)", op)
            a = checks.real("an operation's start", op[1], -1e18, 1e18)
            b = checks.real("an operation's end", op[2], a, 1e18)
            where[kind, j, c, r] = (a, b)
    dep = _dependencies(name, p, v)
    gaps = []  # (start - previous end on the rank, start - the other rank's end or None)
    for r, order in enumerate(orders):
        for k in range(1, len(order)):
            start, prev_end = where[(*order[k], r)][0], where[(*order[k - 1], r)][1]
            d = dep(*order[k], r, where)
            after_dep = start - where[d][1] if d is not None and d[3] != r else None
            gaps.append((start - prev_end, after_dep))

    def split(message_s, host_s):
        """The gaps whose operation waited for a message (the other rank's end plus the
        message came later than its own previous end plus the host's gap), and the others."""
        bound = [a is not None and g - a > host_s - message_s for g, a in gaps]
        return ([a for (_, a), b in zip(gaps, bound, strict=True) if b],
                [g for (g, _), b in zip(gaps, bound, strict=True) if not b])  # fmt: skip

    # Medians first: the operations that waited for the other rank (it ended after this
    # rank's previous operation) against those that did not; then each gap is put with the
    # delay that bound it under those medians, and the delays are their means.
    waited = [a for g, a in gaps if a is not None and g > a]
    free = [g for g, a in gaps if not (a is not None and g > a)]
    med = lambda xs: float(np.median(xs)) if xs else 0.0  # noqa: E731
    waited, host = split(med(waited), med(free))
    mean = lambda xs: float(np.mean(xs)) if xs else 0.0  # noqa: E731
    return max(0.0, mean(waited)), max(0.0, mean(host))


def pipeline(name, p, m, durations, t_comm=0.0, v=1, t_host=0.0) -> Replay:
    """Replay schedule ``name`` (p ranks, m micro-batches, v chunks) with ``durations[r]``:
    the seconds of rank r's operations in :func:`scaleout.pipeline.stage_order`'s order;
    ``t_comm`` seconds per message between ranks; ``t_host`` seconds on a rank between one
    operation and the next (the host's work; :func:`observed_delays` measures both in a run).
    Operation names are 'F3' (kind, then micro-batch; 'F3c1' for chunk 1)."""
    orders = PP.stage_order(name, p, m, v)
    if not isinstance(durations, list | tuple) or len(durations) != len(orders):
        raise checks.fail("durations", f"a list of {len(orders)} lists, one per rank", durations)
    t_comm = checks.nonnegative("t_comm", t_comm, 1e6)
    t_host = checks.nonnegative("t_host", t_host, 1e6)
    g, names, ranks, where = engine.Graph(), [], [], {}
    for r, ops in enumerate(orders):
        secs = _durations(f"durations[{r}]", durations[r], len(ops))
        for k, ((kind, j, c), sec) in enumerate(zip(ops, secs, strict=True)):
            if k and t_host > 0:  # the host's gap: the stream's next operation waits for it
                g.add(r, t_host)
                names.append("host")
                ranks.append(-1)
            where[kind, j, c, r] = g.add(r, sec)
            names.append(f"{kind}{j}" + (f"c{c}" if c else ""))
            ranks.append(r)
    dep = _dependencies(name, p, v)
    for (kind, j, c, r), i in where.items():
        key = dep(kind, j, c, r, where)
        if key is None:
            continue
        d, src = where[key], key[3]
        if src != r and t_comm > 0:  # the message: a delay on a stream of its own
            msg = g.add(p + len(names) - len(where), t_comm, ((d, 1.0),))
            names.append("message")
            ranks.append(-1)
            d = msg
        g.deps[i] = ((d, 1.0),)
    return _result(g, names, ranks, p)


def collective(compute_s, collective_s, after_s=None) -> Replay:
    """Data parallelism replayed: rank r runs ``compute_s[r]`` (a list of seconds, its
    forward and backward operations in order), then every rank joins one collective of
    ``collective_s`` seconds (it starts when the last rank arrives), then runs
    ``after_s[r]`` seconds (the optimizer; default 0). Names: 'op0', 'op1', ...,
    'allreduce', 'after'."""
    if not isinstance(compute_s, list | tuple) or not 1 <= len(compute_s) <= MAX_RANKS:
        raise checks.fail("compute_s", f"a list of 1..{MAX_RANKS} lists of seconds", compute_s)
    n = len(compute_s)
    collective_s = checks.nonnegative("collective_s", collective_s, 1e6)
    after_s = [0.0] * n if after_s is None else _durations("after_s", after_s, n)
    g, names, ranks = engine.Graph(), [], []
    for r, ops in enumerate(compute_s):
        if not isinstance(ops, list | tuple) or len(ops) > MAX_OPS_PER_RANK:
            raise checks.fail(f"compute_s[{r}]", f"a list of at most {MAX_OPS_PER_RANK} seconds",
                              ops)  # fmt: skip
        for k, sec in enumerate(_durations(f"compute_s[{r}]", list(ops), len(ops))):
            g.add(r, sec)
            names.append(f"op{k}")
            ranks.append(r)
        g.add(r, collective_s, group=0)
        names.append("allreduce")
        ranks.append(r)
        g.add(r, after_s[r])
        names.append("after")
        ranks.append(r)
    return _result(g, names, ranks, n)
