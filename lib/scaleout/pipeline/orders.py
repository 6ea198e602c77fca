"""The order each pipeline stage runs its operations in, vectorised with numpy (the
schedules of :mod:`scaleout.pipeline`; ``reference`` is the plain-loop version it is
tested equal to; ``vshape`` the two-chunk V schedules)."""

from __future__ import annotations

import numpy as np

from .. import checks
from .vshape import _dualpipev_rank, _zbv_rank

#: The one-chunk schedules and the interleaved one (chapter 5's explorer and gloo demo run them).
SCHEDULES = ("naive", "gpipe", "1f1b", "interleaved", "zb-h1")
#: Two chunks per device in a V (``vshape``), simulated and ordered, not in the demo.
V_SCHEDULES = ("zb-v", "dualpipe-v")
ALL_SCHEDULES = SCHEDULES + V_SCHEDULES
#: Operation kinds: forward, input gradient, weight gradient, full backward (B and W in one).
PHASES = ("F", "B", "W", "BW")
MAX_STAGES, MAX_MICROBATCHES, MAX_CHUNKS = 1024, 1 << 16, 64
MAX_OPERATIONS = 1 << 22
#: The V orders are built one operation at a time in Python (about 1 s per million).
MAX_V_OPERATIONS = 1 << 20


def _check(name, p, m, v, group=None, simulated=True):
    """Validated (name, p, m, v, group); ``simulated``: also bound the operation count."""
    name = checks.choice("name", name, ALL_SCHEDULES)
    p = checks.integer("p", p, 1, MAX_STAGES)
    m = checks.integer("m", m, 1, MAX_MICROBATCHES)
    v = checks.integer("v", v, 1, MAX_CHUNKS)
    if name == "interleaved":
        if v < 2:
            raise checks.fail("v (model chunks per device)", ">= 2 for 'interleaved'", v)
        if group is None:
            if m % p:
                raise checks.fail(
                    "m", f"a multiple of p = {p} for 'interleaved' with the default group "
                    "(or pass group, Megatron-Core's microbatch_group_size_per_vp_stage)", m,
                )  # fmt: skip
            group = p
        group = checks.integer("group", group, p, m)
        if 0 < m % group < p:
            raise checks.fail(
                "group", f"such that m % group is 0 or >= p = {p} (m = {m}; Megatron-Core "
                "rejects a shorter last group)", group,
            )  # fmt: skip
    elif name in V_SCHEDULES:
        if v != 2:
            raise checks.fail("v", f"2 for {name!r} (two chunks per device in a V)", v)
        if name == "dualpipe-v" and m < 2 * p:
            raise checks.fail("m", f">= 2p = {2 * p} for 'dualpipe-v' (as torch requires)", m)
    elif v != 1:
        raise checks.fail("v", f"1 for {name!r} (only 'interleaved' and the V's have chunks)", v)
    if group is not None and name != "interleaved":
        raise checks.fail("group", f"None for {name!r} (only 'interleaved' groups)", group)
    ops = (3 if name in ("zb-h1", *V_SCHEDULES) else 2) * p * v * m
    if name in V_SCHEDULES and ops > MAX_V_OPERATIONS:
        raise ValueError(
            f"3 x p x 2 x m must be at most {MAX_V_OPERATIONS} operations for {name!r}, got "
            f"{ops} (p={p}, m={m})"
        )
    if simulated and ops > MAX_OPERATIONS:
        raise ValueError(
            f"phases x p x v x m must be at most {MAX_OPERATIONS} operations to simulate, got "
            f"{ops} (p={p}, v={v}, m={m}); use bubble_closed_form for larger pipelines"
        )
    return name, p, m, v, group


def _order_arrays(name, p, m, v, group):
    """The order of every stage as flat int arrays (stage, phase, microbatch, chunk), stage
    by stage (see the module docstring). Built as a (p, slots) table with numpy, no
    per-operation Python: a 1F1B-like stage r runs a prefix of warm-up forwards, then step
    i = 0, 1, ... of the steady state, [F(warm + i)], B(i), [W(i - r)], then its late W's."""
    if name in V_SCHEDULES:  # plain loops (PyTorch's orders, ported in .vshape)
        rank = _zbv_rank if name == "zb-v" else _dualpipev_rank
        rows = [(r, PHASES.index(k), j, c) for r in range(p) for k, j, c in rank(p, m, r)]
        return tuple(np.array(col, dtype=np.int64) for col in zip(*rows, strict=True))
    r = np.arange(p)[:, None]
    if name in ("naive", "gpipe"):
        one = np.arange(m)
        mb = np.tile(np.repeat(one, 2) if name == "naive" else np.tile(one, 2), (p, 1))
        ph = np.tile(np.tile([0, 1], m) if name == "naive" else np.repeat([0, 1], m), (p, 1))
        st = np.broadcast_to(r, mb.shape)
        return st.ravel(), ph.ravel(), mb.ravel(), np.zeros(mb.size, dtype=np.int64)
    total = m * v  # chunk-forwards (and chunk-backwards) per device
    if name == "interleaved":
        warm = np.minimum(2 * (p - 1 - r) + (v - 1) * group, total)
        f_mb, f_ch = _schedule_table(m, v, group)
        b_mb, b_ch = f_mb, v - 1 - f_ch  # backward: the same table, chunks reversed
    else:
        warm = np.minimum(p - 1 - r, m)
        f_mb = b_mb = np.arange(m)
        f_ch = b_ch = np.zeros(m, dtype=np.int64)
    i = np.broadcast_to(np.arange(total), (p, total))
    yes = np.ones((p, total), dtype=bool)
    # (phase, index into the forward or backward table, kept) per slot, each (p, total)
    prefix = [(0, i, i < warm)]
    steady = [(0, np.minimum(warm + i, total - 1), warm + i < total), (1, i, yes)]
    late = []
    if name == "zb-h1":
        steady.append((2, np.maximum(i - r, 0), i >= r))
        rest = np.maximum(m - r, 0) + i  # the W's still pending after the last B
        late.append((2, np.minimum(rest, m - 1), rest < m))

    def table(k):  # column k of each slot: phase, index, kept
        parts = [np.broadcast_to(np.asarray(s[k]), (p, total)) for s in prefix]
        parts.append(np.stack([np.broadcast_to(np.asarray(s[k]), (p, total)) for s in steady],
                              axis=2).reshape(p, -1))  # fmt: skip
        parts += [np.broadcast_to(np.asarray(s[k]), (p, total)) for s in late]
        return np.concatenate(parts, axis=1)

    ph, idx, keep = table(0), table(1), table(2)
    st = np.broadcast_to(r, ph.shape)[keep]
    ph, idx = ph[keep], idx[keep]
    backward = ph == 1
    mb = np.where(backward, b_mb[idx], f_mb[idx])
    ch = np.where(backward, b_ch[idx], f_ch[idx])
    return st, ph.astype(np.int64), mb, ch


def _schedule_table(m, v, group):
    """Megatron-Core's ``get_schedule_table``: (micro-batch, chunk) of the k-th chunk-forward
    of a device, micro-batches in groups of ``group`` (the last group takes the rest)."""
    mbs, chunks = [], []
    for start in range(0, m, group):
        stop = m if start + group >= m else start + group
        size = stop - start
        mbs.append(np.tile(np.arange(start, stop), v))
        chunks.append(np.repeat(np.arange(v), size))
    return np.concatenate(mbs), np.concatenate(chunks)


def stage_order(name, p, m, v=1, group=None) -> list[list[tuple[str, int, int]]]:
    """The order each stage runs its operations in: ``orders[r]`` is a list of
    ``(phase, microbatch, chunk)``, phase one of ``PHASES``. For 'zb-v' and 'dualpipe-v'
    (``v = 2``) chunk 0 is stage r and chunk 1 stage 2p - 1 - r, equal to PyTorch's
    ``ScheduleZBVZeroBubble`` and ``ScheduleDualPipeV``. Raises ValueError on bad inputs
    (see the package docstring)."""
    name, p, m, v, group = _check(name, p, m, v, group)
    st, ph, mb, ch = _order_arrays(name, p, m, v, group)
    bounds = np.searchsorted(st, np.arange(p + 1))
    letters = np.array(PHASES)[ph].tolist()
    ops = list(zip(letters, mb.tolist(), ch.tolist(), strict=True))
    return [ops[a:b] for a, b in zip(bounds[:-1], bounds[1:], strict=True)]


def _dependencies(name, p, m, v, st, ph, mb, ch):
    """``(vs, dep)`` for the operations of :func:`_order_arrays`: each one's virtual stage
    (chunk c of device r is virtual stage c p + r, or in a V 2p - 1 - r for chunk 1) and the
    index of the operation whose output it needs (-1: none). F needs the previous virtual
    stage's F, B (or a full BW) the next stage's B (the last stage: its own F), W its own B.
    Shared by the schedule simulator and the step simulator (chapter 16)."""
    n_vs = p * v
    vs = np.where(ch == 0, st, 2 * p - 1 - st) if name in V_SCHEDULES else ch * p + st
    kind = np.where(ph == 3, 1, ph)  # a full backward produces the input gradient, as B
    index = np.full((3, n_vs, m), -1, dtype=np.int64)
    index[kind, vs, mb] = np.arange(len(ph))
    dep = np.full(len(ph), -1, dtype=np.int64)
    f, b, w = kind == 0, kind == 1, kind == 2
    dep[f & (vs > 0)] = index[0, vs[f & (vs > 0)] - 1, mb[f & (vs > 0)]]
    last = b & (vs == n_vs - 1)
    dep[last] = index[0, vs[last], mb[last]]
    dep[b & ~last] = index[1, vs[b & ~last] + 1, mb[b & ~last]]
    dep[w] = index[1, vs[w], mb[w]]
    return vs, dep
