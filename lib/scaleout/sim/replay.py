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


def pipeline(name, p, m, durations, t_comm=0.0, v=1) -> Replay:
    """Replay schedule ``name`` (p ranks, m micro-batches, v chunks) with ``durations[r]``:
    the seconds of rank r's operations in :func:`scaleout.pipeline.stage_order`'s order;
    ``t_comm`` seconds per message between ranks. Operation names are 'F3' (kind, then
    micro-batch; 'F3c1' for chunk 1)."""
    orders = PP.stage_order(name, p, m, v)
    if not isinstance(durations, list | tuple) or len(durations) != len(orders):
        raise checks.fail("durations", f"a list of {len(orders)} lists, one per rank", durations)
    t_comm = checks.nonnegative("t_comm", t_comm, 1e6)
    g, names, ranks, where = engine.Graph(), [], [], {}
    for r, ops in enumerate(orders):
        secs = _durations(f"durations[{r}]", durations[r], len(ops))
        for (kind, j, c), sec in zip(ops, secs, strict=True):
            where[kind, j, c, r] = g.add(r, sec)
            names.append(f"{kind}{j}" + (f"c{c}" if c else ""))
            ranks.append(r)
    n_vs = p * v
    vshape = name in PP.V_SCHEDULES

    def device(vs):
        return (vs if vs < p else 2 * p - 1 - vs) if vshape else vs % p

    def chunk(vs):
        return (0 if vs < p else 1) if vshape else vs // p

    def op(kind, j, vs):
        r, c = device(vs), chunk(vs)
        for k in (kind,) if kind != "B" else ("B", "BW"):
            if (k, j, c, r) in where:
                return where[k, j, c, r], r
        raise RuntimeError(f"no {kind} of micro-batch {j} on virtual stage {vs}")

    for (kind, j, c, r), i in where.items():
        vs = (r if c == 0 else 2 * p - 1 - r) if vshape else c * p + r
        if kind == "F" and vs > 0:
            d, src = op("F", j, vs - 1)
        elif kind in ("B", "BW"):
            d, src = op("F", j, vs) if vs == n_vs - 1 else op("B", j, vs + 1)
        elif kind == "W":
            d, src = op("B", j, vs)
        else:
            continue
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
