"""Model and pipeline parallelism: memory, schedules, bubbles, in-flight activations, traffic.

Taught in chapters 3 ("Model parallelism") and 5 ("Pipeline parallelism").

A pipeline of ``p`` stages (one per GPU) processes a batch as ``m`` micro-batches. Every
schedule is an *order* of operations per stage -- forward ``F``, backward ``B`` and, for
zero-bubble schedules, weight gradient ``W`` -- and :func:`schedule` turns that order into a
timeline by simulation: each operation starts when its stage is free *and* its data has
arrived (``F`` of micro-batch j on virtual stage s needs ``F`` of j on s-1; ``B`` needs
``B`` on s+1, or the last stage's own ``F``; ``W`` needs its ``B``). Nothing is drawn from a
closed form; the closed forms (:func:`bubble_closed_form`) are what the simulation is tested
against. Times are in one arbitrary unit (the book uses t_f = 1). A message between two
devices takes ``t_comm`` (default 0, the assumption behind every published closed form);
every micro-batch and every stage computes for the same time.

Orders, with their sources:

* ``naive``: one micro-batch in the pipeline at a time (F j, B j, F j+1, ...).
* ``gpipe``: all forwards, then all backwards (Huang et al., NeurIPS 2019, section 2).
* ``1f1b``: PipeDream-Flush (Narayanan et al., "Memory-Efficient Pipeline-Parallel DNN
  Training", ICML 2021, the PipeDream-2BW paper; Narayanan et al., SC21, section 2.2.1;
  Megatron-LM ``megatron/core/pipeline_parallel/schedules.py``,
  ``forward_backward_pipelining_without_interleaving``): stage r runs min(p - r - 1, m)
  warm-up forwards, then alternates one forward and one backward, then drains. Equal to
  the per-rank order of PyTorch's ``_get_1f1b_rank_ops`` (``torch/distributed/pipelining/
  schedules.py``; ``Schedule1F1B._get_pipeline_order`` -- the IR only, not what it
  executes -- starts the last rank's steady state at micro-batch 1).
* ``interleaved``: v model chunks per device, virtual stage c p + r on device r (Narayanan
  et al., SC21, section 2.2.2; same file, ``forward_backward_pipelining_with_interleaving``
  and ``get_schedule_table``): micro-batches run in groups of ``group`` (Megatron-Core's
  ``microbatch_group_size_per_vp_stage``, default p), each group through chunk 0, then
  chunk 1, ...; warm-up 2 (p - r - 1) + (v - 1) group chunk-forwards. Megatron-LM's
  original schedule needs p | m; Megatron-Core accepts p <= group <= m when the last group
  is full or holds at least p micro-batches.
* ``zb-h1``: 1F1B with the backward split into B (input gradient) and W (weight gradient);
  stage r postpones its W's by r micro-batches (Qi et al., ICLR 2024, handcrafted "ZB-H1";
  the same order as PyTorch's ``_get_1f1b_rank_ops`` with ``enable_zero_bubble``).

Limits (``ValueError`` beyond them): p <= ``MAX_STAGES``, m <= ``MAX_MICROBATCHES``,
v <= ``MAX_CHUNKS``; a simulated schedule holds at most ``MAX_OPERATIONS`` operations
(phases x p x v x m: for example 1F1B with p = 64 and m = 32,768, or p = 1,024 and
m = 2,048), which it simulates in at most about 5 s and 1.1 GB of memory.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from . import checks, hardware, memory

SCHEDULES = ("naive", "gpipe", "1f1b", "interleaved", "zb-h1")
PHASES = ("F", "B", "W")
MAX_STAGES, MAX_MICROBATCHES, MAX_CHUNKS = 1024, 1 << 16, 64
MAX_OPERATIONS = 1 << 22

# Model states per parameter in bytes. Training: the three accountings of scaleout.memory
# (memory.bytes_per_param, with their sources): the ZeRO paper's mixed-precision Adam
# (Rajbhandari et al., SC20, section 3.1: 2 + 2 + 12), Megatron's bf16 (its fp32 gradient
# buffer replaces the bf16 gradient: 2 + 4 + 12) and fp16 (fp16 gradients plus an fp32 copy
# in the optimizer: 2 + 2 + 4 + 12), per Megatron-Core's distributed-optimizer guide.
# Inference keeps only the weights: 2 bytes in bf16, 4 in fp32.
BYTES_PER_PARAM = {
    "bf16 weights only (inference)": 2.0,
    "fp32 weights only": 4.0,
    "ZeRO paper: mixed-precision Adam": memory.bytes_per_param("adam", "mixed"),
    "Megatron bf16: fp32 gradients": memory.bytes_per_param("adam", "megatron-bf16"),
    "Megatron fp16: fp16 gradients + fp32 copy": memory.bytes_per_param("adam", "megatron-fp16"),
}
# Memory per GPU in GB (1e9 bytes), read from hardware's GPU table (its datasheet sources).
GPU_MEMORY_GB = {
    label: hardware.gpu(name).memory_gb
    for label, name in (
        ("V100 32GB", "V100-32GB"),
        ("A100 80GB", "A100-80GB"),
        ("H100 80GB", "H100-SXM"),
        ("H200", "H200"),
    )
}
#: The GPU memory in GB assumed when none is named (an H100 SXM's 80 GB).
DEFAULT_GPU_GB = hardware.gpu("H100-SXM").memory_gb


def _check(name, p, m, v, group=None, simulated=True):
    """Validated (name, p, m, v, group); ``simulated``: also bound the operation count."""
    name = checks.choice("name", name, SCHEDULES)
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
    elif v != 1:
        raise checks.fail("v", f"1 for {name!r} (only 'interleaved' has chunks)", v)
    elif group is not None:
        raise checks.fail("group", f"None for {name!r} (only 'interleaved' groups)", group)
    ops = (3 if name == "zb-h1" else 2) * p * v * m
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
    ``(phase, microbatch, chunk)``. Raises ValueError on bad inputs (see module docstring)."""
    name, p, m, v, group = _check(name, p, m, v, group)
    st, ph, mb, ch = _order_arrays(name, p, m, v, group)
    bounds = np.searchsorted(st, np.arange(p + 1))
    letters = np.array(PHASES)[ph].tolist()
    ops = list(zip(letters, mb.tolist(), ch.tolist(), strict=True))
    return [ops[a:b] for a, b in zip(bounds[:-1], bounds[1:], strict=True)]


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
    ``phase`` ('F', 'B' or 'W'), ``start`` and ``end`` (time units). :func:`schedule` and
    :func:`timeline_from_records` give them sorted by stage, then start. Simulated schedules
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
            raise checks.fail("phase", f"an array of {n} strings 'F', 'B' or 'W'", self.phase)
        if not np.all(np.isin(phase, PHASES)):
            raise checks.fail("phase", "'F', 'B' or 'W' for every operation", self.phase)
        phase = phase.astype("<U1")
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
        name = checks.choice("name", self.name, SCHEDULES)
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


def schedule(name, p, m, v=1, t_f=1.0, t_b=2.0, t_w=None, *, group=None, t_comm=0.0):
    """Simulate schedule ``name`` on ``p`` stages with ``m`` micro-batches: a :class:`Schedule`.

    ``t_f``, ``t_b``: forward and backward time of one micro-batch on one stage (all its
    layers); with ``v`` chunks each chunk takes 1/v of that. ``t_w`` (zb-h1 only, default
    t_b / 2): the weight-gradient part of the backward, so B takes t_b - t_w and W t_w.
    ``group`` (interleaved only): Megatron-Core's micro-batch group size (default p).
    ``t_comm``: time of one message between two devices (default 0, as in the closed forms).
    Each stage runs :func:`stage_order` in order; an operation starts as soon as its stage
    is idle and its input has arrived (an event simulation over ready times).
    """
    name, p, m, v, group = _check(name, p, m, v, group)
    t_f, t_b = checks.positive("t_f", t_f), checks.positive("t_b", t_b)
    t_comm = checks.nonnegative("t_comm", t_comm)
    if name == "zb-h1":
        t_w = t_b / 2 if t_w is None else checks.positive("t_w", t_w)
        if not t_w < t_b:
            raise checks.fail("t_w", f"< t_b = {t_b:g} (B takes t_b - t_w)", t_w)
        dur = (t_f, t_b - t_w, t_w)
    elif t_w is not None:
        raise checks.fail("t_w", f"None for {name!r} (only 'zb-h1' splits the backward)", t_w)
    else:
        t_w, dur = 0.0, (t_f / v, t_b / v, 0.0)

    st, ph, mb, ch = _order_arrays(name, p, m, v, group)
    n_vs = p * v  # virtual stages; chunk c of device r is virtual stage c p + r
    vs = ch * p + st
    index = np.full((3, n_vs, m), -1, dtype=np.int64)
    index[ph, vs, mb] = np.arange(len(ph))
    dep = np.full(len(ph), -1, dtype=np.int64)
    f, b, w = ph == 0, ph == 1, ph == 2
    dep[f & (vs > 0)] = index[0, vs[f & (vs > 0)] - 1, mb[f & (vs > 0)]]
    last = b & (vs == n_vs - 1)
    dep[last] = index[0, vs[last], mb[last]]
    dep[b & ~last] = index[1, vs[b & ~last] + 1, mb[b & ~last]]
    dep[w] = index[1, vs[w], mb[w]]
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


def bubble_closed_form(name, p, m, v=1, of="ideal") -> float:
    """The published bubble fractions, with t_w = t_b / 2 for zb-h1 and t_b = 2 t_f there.

    Over the ideal time (Narayanan et al., SC21, sections 2.2.1-2.2.2): (p-1)/m for GPipe and
    1F1B, (p-1)/(v m) interleaved (p | m), (p-1) for naive (one stage at a time), (p-1)/(3m)
    for ZB-H1 with T_F = T_B = T_W and m >= p (Qi et al., ICLR 2024: ZB-H1's bubble
    (p-1)(T_F + T_B - T_W) against 1F1B's (p-1)(T_F + T_B + T_W)). Over the total time
    (``of="total"``): x / (1 + x), e.g. GPipe's (K-1)/(M+K-1). No simulation: no size limit
    beyond ``MAX_STAGES`` and ``MAX_MICROBATCHES``."""
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
    start, its B (on a stage that runs W's: its W, which still needs the inputs) removes it
    at its end."""
    has_w = np.bincount(sched.stage[sched.phase == "W"], minlength=sched.p) > 0
    release = np.where(has_w[sched.stage], "W", "B")
    up, down = sched.phase == "F", sched.phase == release
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
    adds 1/v (one chunk) at its start, its B (zb-h1: its W) removes it at its end."""
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


def model_state_bytes(params, bytes_per_param=16):
    """Bytes of model states: parameters x bytes per parameter (vectorised over params)."""
    params = checks.array("params", params, low=0)
    bpp = checks.positive("bytes_per_param", bytes_per_param)
    with np.errstate(over="ignore"):  # reported below, as the library's error
        out = params * bpp
    return checks.as_output(checks.finite_result("params x bytes_per_param", out))


def min_gpus(params, bytes_per_param=16, gpu_gb=DEFAULT_GPU_GB) -> int:
    """Fewest GPUs of ``gpu_gb`` GB whose memory holds the model states (ignoring
    activations, buffers and fragmentation, so a lower bound)."""
    params = checks.positive("params", params)
    gpu_bytes = checks.positive("gpu_gb", gpu_gb) * 1e9
    need = checks.finite_result("the GPU count", model_state_bytes(params, bytes_per_param)
                                / gpu_bytes)  # fmt: skip
    return int(np.ceil(need))


def layer_owners(n_layers, p) -> np.ndarray:
    """Which of p stages owns each layer when n_layers are cut into p contiguous, balanced
    pieces (the first n_layers % p stages get one more layer)."""
    n_layers = checks.integer("n_layers", n_layers, 1, 1 << 20)
    p = checks.integer("p", p, 1, MAX_STAGES)
    if p > n_layers:
        raise checks.fail("p", f"<= n_layers = {n_layers} (a stage needs a layer)", p)
    return np.repeat(np.arange(p), [len(a) for a in np.array_split(np.arange(n_layers), p)])
