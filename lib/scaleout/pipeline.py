"""Model and pipeline parallelism: memory, schedules, bubbles, in-flight activations, traffic.

Taught in chapters 3 ("Model parallelism") and 5 ("Pipeline parallelism").

A pipeline of ``p`` stages (one per GPU) processes a batch as ``m`` micro-batches. Every
schedule is an *order* of operations per stage -- forward ``F``, backward ``B`` and, for
zero-bubble schedules, weight gradient ``W`` -- and :func:`schedule` turns that order into a
timeline by simulation: each operation starts when its stage is free *and* its data has
arrived (``F`` of micro-batch j on virtual stage s needs ``F`` of j on s-1; ``B`` needs
``B`` on s+1, or the last stage's own ``F``; ``W`` needs its ``B``). Nothing is drawn from a
closed form; the closed forms (:func:`bubble_closed_form`) are what the simulation is tested
against. Times are in one arbitrary unit (the book uses t_f = 1); p2p transfer time is 0.

Orders, with their sources:

* ``naive``: one micro-batch in the pipeline at a time (F j, B j, F j+1, ...).
* ``gpipe``: all forwards, then all backwards (Huang et al., NeurIPS 2019, section 2).
* ``1f1b``: PipeDream-Flush (Narayanan et al., SC21, section 2.2.1; Megatron-LM
  ``megatron/core/pipeline_parallel/schedules.py``,
  ``forward_backward_pipelining_without_interleaving``): stage r runs min(p - r - 1, m)
  warm-up forwards, then alternates one forward and one backward, then drains.
* ``interleaved``: v model chunks per device, virtual stage c p + r on device r (Narayanan
  et al., SC21, section 2.2.2; same file, ``forward_backward_pipelining_with_interleaving``:
  warm-up 2 (p - r - 1) + (v - 1) p chunk-forwards, micro-batches in groups of p).
* ``zb-h1``: 1F1B with the backward split into B (input gradient) and W (weight gradient);
  stage r postpones its W's by r micro-batches (Qi et al., ICLR 2024, handcrafted "ZB-H1";
  the same rule as PyTorch ``torch/distributed/pipelining/schedules.py``,
  ``_get_1f1b_rank_ops`` with ``enable_zero_bubble``).
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import numpy as np

SCHEDULES = ("naive", "gpipe", "1f1b", "interleaved", "zb-h1")
PHASES = ("F", "B", "W")
MAX_STAGES, MAX_MICROBATCHES = 1024, 1 << 16

# Model states per parameter in bytes (Rajbhandari et al., SC20, section 3.1): mixed-precision
# Adam keeps fp16/bf16 weights (2) and gradients (2) plus fp32 master weights, momentum and
# variance (4 + 4 + 4 = 12).
BYTES_PER_PARAM = {
    "bf16 weights only (inference)": 2,
    "fp32 weights only": 4,
    "mixed-precision Adam (ZeRO's 2 + 2 + 12)": 16,
}
# Memory per GPU in GB (1e9 bytes), from NVIDIA's datasheets (V100, A100 80GB, H100 SXM5,
# H200 SXM).
GPU_MEMORY_GB = {"V100 32GB": 32.0, "A100 80GB": 80.0, "H100 80GB": 80.0, "H200": 141.0}


def _int(name: str, x, lo: int, hi: int) -> int:
    if isinstance(x, bool) or not isinstance(x, numbers.Integral) or not lo <= x <= hi:
        raise ValueError(f"{name} must be an integer in {lo}..{hi}, got {x!r}")
    return int(x)


def _pos(name: str, x) -> float:
    if isinstance(x, bool) or not isinstance(x, numbers.Real) or not 0 < x < math.inf:
        raise ValueError(f"{name} must be a finite number > 0, got {x!r}")
    return float(x)


def _check(name: str, p, m, v):
    if name not in SCHEDULES:
        raise ValueError(f"name must be one of {SCHEDULES}, got {name!r}")
    p = _int("p", p, 1, MAX_STAGES)
    m = _int("m", m, 1, MAX_MICROBATCHES)
    v = _int("v", v, 1, 64)
    if name == "interleaved":
        if v < 2:
            raise ValueError(f"v (model chunks per device) must be >= 2 for interleaved, got {v}")
        if m % p:
            raise ValueError(f"m must be a multiple of p for interleaved (p={p}), got m={m}")
    elif v != 1:
        raise ValueError(f"v must be 1 for {name!r} (only 'interleaved' has chunks), got {v}")
    return p, m, v


def stage_order(name: str, p: int, m: int, v: int = 1) -> list[list[tuple[str, int, int]]]:
    """The order each stage runs its operations in: ``orders[r]`` is a list of
    ``(phase, microbatch, chunk)``. Raises ValueError on bad inputs (see module docstring)."""
    p, m, v = _check(name, p, m, v)
    orders = []
    for r in range(p):
        if name == "naive":
            ops = [(ph, j, 0) for j in range(m) for ph in "FB"]
        elif name == "gpipe":
            ops = [("F", j, 0) for j in range(m)] + [("B", j, 0) for j in range(m)]
        elif name == "interleaved":
            ops = _interleaved(r, p, m, v)
        else:
            warm = min(p - r - 1, m)
            ops = [("F", j, 0) for j in range(warm)]
            w_next = 0  # zb-h1: oldest micro-batch whose W is still pending
            for i in range(m):
                if warm + i < m:
                    ops.append(("F", warm + i, 0))
                ops.append(("B", i, 0))
                if name == "zb-h1" and i >= r:
                    ops.append(("W", w_next, 0))
                    w_next += 1
            if name == "zb-h1":
                ops += [("W", j, 0) for j in range(w_next, m)]
        orders.append(ops)
    return orders


def _interleaved(r: int, p: int, m: int, v: int) -> list[tuple[str, int, int]]:
    """Megatron-LM's interleaved 1F1B order for device r (see module docstring)."""
    total = m * v
    warm = min(2 * (p - r - 1) + (v - 1) * p, total)

    def op(k: int, forward: bool):
        group, within = divmod(k, p * v)
        chunk = within // p if forward else v - 1 - within // p  # backward: chunks reversed
        return ("F" if forward else "B", group * p + within % p, chunk)

    ops = [op(k, True) for k in range(warm)]
    for k in range(total - warm):
        ops += [op(warm + k, True), op(k, False)]
    return ops + [op(k, False) for k in range(total - warm, total)]


@dataclass(frozen=True)
class Timeline:
    """Operations on a pipeline, one entry per operation (numpy arrays of equal length):
    ``stage`` (device 0..p-1), ``microbatch``, ``chunk`` (model chunk on that device),
    ``phase`` ('F', 'B' or 'W'), ``start`` and ``end`` (time units). Sorted by stage, then
    start. Simulated schedules are :class:`Schedule`; measured ones come from
    :func:`timeline_from_records`."""

    p: int
    v: int
    stage: np.ndarray
    microbatch: np.ndarray
    chunk: np.ndarray
    phase: np.ndarray
    start: np.ndarray
    end: np.ndarray

    @property
    def makespan(self) -> float:
        """Time from the first start to the last end."""
        return float(self.end.max() - self.start.min()) if len(self.end) else 0.0

    def ops(self, stage: int) -> list[tuple[str, int, int]]:
        """``(phase, microbatch, chunk)`` of one stage, in the order they started."""
        sel = np.flatnonzero(self.stage == stage)
        sel = sel[np.argsort(self.start[sel], kind="stable")]
        return [(str(self.phase[i]), int(self.microbatch[i]), int(self.chunk[i])) for i in sel]

    def busy(self) -> np.ndarray:
        """Busy time of each stage, shape (p,)."""
        return np.bincount(self.stage, weights=self.end - self.start, minlength=self.p)

    def utilization(self) -> float:
        """Busy time of all stages over p x makespan (1 = no idle time)."""
        return float(self.busy().sum() / (self.p * self.makespan))


@dataclass(frozen=True)
class Schedule(Timeline):
    """A simulated schedule: a :class:`Timeline` plus its parameters and, for every
    operation, ``dep``: the index of the operation whose data it waited for (-1: none)."""

    name: str = ""
    m: int = 1
    t_f: float = 1.0
    t_b: float = 2.0
    t_w: float = 0.0
    dep: np.ndarray | None = None


def schedule(name, p, m, v=1, t_f=1.0, t_b=2.0, t_w=None) -> Schedule:
    """Simulate schedule ``name`` on ``p`` stages with ``m`` micro-batches.

    ``t_f``, ``t_b``: forward and backward time of one micro-batch on one stage (all its
    layers); with ``v`` chunks each chunk takes 1/v of that. ``t_w`` (zb-h1 only, default
    t_b / 2): the weight-gradient part of the backward, so B takes t_b - t_w and W t_w.
    Each stage runs :func:`stage_order` in order; an operation starts as soon as its stage
    is idle and its input has been produced (an event simulation over ready times).
    """
    p, m, v = _check(name, p, m, v)
    t_f, t_b = _pos("t_f", t_f), _pos("t_b", t_b)
    if name == "zb-h1":
        t_w = t_b / 2 if t_w is None else _pos("t_w", t_w)
        if not t_w < t_b:
            raise ValueError(f"t_w must be < t_b = {t_b} (B takes t_b - t_w), got {t_w}")
        dur = {"F": t_f, "B": t_b - t_w, "W": t_w}
    elif t_w is not None:
        raise ValueError(f"t_w is only used by 'zb-h1', got t_w={t_w!r} for {name!r}")
    else:
        t_w, dur = 0.0, {"F": t_f / v, "B": t_b / v, "W": 0.0}

    orders = stage_order(name, p, m, v)
    n_vs = p * v  # virtual stages; chunk c of device r is virtual stage c p + r
    ph = np.array([PHASES.index(o[0]) for ops in orders for o in ops], dtype=np.int64)
    mb = np.array([o[1] for ops in orders for o in ops], dtype=np.int64)
    ch = np.array([o[2] for ops in orders for o in ops], dtype=np.int64)
    st = np.repeat(np.arange(p), [len(ops) for ops in orders])
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
    start, end = _simulate(orders, dep, np.array([dur[x] for x in PHASES])[ph])
    return Schedule(
        p, v, st, mb, ch, np.array(PHASES)[ph], start, end,
        name=name, m=m, t_f=t_f, t_b=t_b, t_w=float(t_w), dep=dep,
    )  # fmt: skip


def _simulate(orders, dep, duration):
    """Ready-time simulation: run each stage's ops in order, each op at max(stage idle,
    its dependency's end). Event-driven: a stage blocked on an op is woken when it ends."""
    n = len(dep)
    offsets = np.cumsum([0] + [len(o) for o in orders]).tolist()
    dep_l, dur_l = dep.tolist(), duration.tolist()
    end = [-1.0] * n
    start = [0.0] * n
    nxt, stop = offsets[:-1], offsets[1:]
    free = [0.0] * len(orders)
    waiting: dict[int, list[int]] = {}  # op -> stages blocked on it
    stack = list(range(len(orders) - 1, -1, -1))
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
                if end[d] > t:
                    t = end[d]
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


def timeline_from_records(records, p: int) -> Timeline:
    """A :class:`Timeline` from measured ``(stage, phase, microbatch, start, end)`` records
    (e.g. ``time.monotonic()`` seconds from each rank), shifted to start at 0."""
    p = _int("p", p, 1, MAX_STAGES)
    rec = sorted(records, key=lambda x: (x[0], x[3]))
    if not rec or any(not 0 <= x[0] < p or x[1] not in PHASES or x[4] < x[3] for x in rec):
        raise ValueError("records must be non-empty (stage in 0..p-1, phase in F/B/W, end>=start)")
    t0 = min(x[3] for x in rec)
    col = list(zip(*rec, strict=True))
    return Timeline(
        p, 1, np.array(col[0]), np.array(col[2]), np.zeros(len(rec), dtype=np.int64),
        np.array(col[1]), np.array(col[3]) - t0, np.array(col[4]) - t0,
    )  # fmt: skip


def bubble_fraction(sched: Timeline, of: str = "ideal") -> float:
    """The bubble of a step: the idle time of a stage (makespan minus its busy time; the
    least busy stage if they differ) over its busy time, the ideal time (``of="ideal"``,
    Narayanan et al. SC21 section 2.2: t_pb / t_id), or over the makespan (``of="total"``,
    GPipe's definition, Huang et al. 2019 section 2: (K-1)/(M+K-1))."""
    busy = sched.busy()
    idle = sched.makespan - busy.min()
    if of == "ideal":
        return float(idle / busy.min())
    if of == "total":
        return float(idle / sched.makespan)
    raise ValueError(f"of must be 'ideal' or 'total', got {of!r}")


def bubble_closed_form(name: str, p: int, m: int, v: int = 1, of: str = "ideal") -> float:
    """The published bubble fractions, with t_w = t_b / 2 for zb-h1 and t_b = 2 t_f there.

    Over the ideal time (Narayanan et al., SC21, sections 2.2.1-2.2.2): (p-1)/m for GPipe and
    1F1B, (p-1)/(v m) interleaved, (p-1) for naive (one stage at a time), (p-1)/(3m) for
    ZB-H1 with T_F = T_B = T_W and m >= p (Qi et al., ICLR 2024: ZB-H1's bubble
    (p-1)(T_F + T_B - T_W) against 1F1B's (p-1)(T_F + T_B + T_W)). Over the total time
    (``of="total"``): x / (1 + x), e.g. GPipe's (K-1)/(M+K-1)."""
    p, m, v = _check(name, p, m, v)
    if name == "zb-h1" and m < p:
        raise ValueError(f"m must be >= p = {p} for the zb-h1 closed form (steady state), got {m}")
    x = {"naive": p - 1, "interleaved": (p - 1) / (v * m), "zb-h1": (p - 1) / (3 * m)}
    x = x.get(name, (p - 1) / m)
    if of == "ideal":
        return float(x)
    if of == "total":
        return float(x / (1 + x))
    raise ValueError(f"of must be 'ideal' or 'total', got {of!r}")


def idle_intervals(tl: Timeline):
    """Gaps in each stage's work between time 0 and the makespan (the bubbles), as arrays
    (stage, start, end)."""
    out = [], [], []
    t0, t1 = float(tl.start.min()), float(tl.end.max())
    for r in range(tl.p):
        sel = np.flatnonzero(tl.stage == r)
        sel = sel[np.argsort(tl.start[sel], kind="stable")]
        starts = np.append(tl.start[sel], t1)
        ends = np.insert(tl.end[sel], 0, t0)
        gap = starts - ends > 1e-12 * max(1.0, t1 - t0)
        for lst, val in zip(out, (np.full(gap.sum(), r), ends[gap], starts[gap]), strict=True):
            lst.append(val)
    return tuple(np.concatenate(x) for x in out)


def in_flight_timeline(sched: Timeline, stage: int):
    """Micro-batches whose activations ``stage`` holds over time: each F adds 1/v (one
    chunk) at its start, its B (zb-h1: its W, which still needs the inputs) removes it at
    its end. Returns (times, counts) as a step function: counts[k] holds from times[k]."""
    stage = _int("stage", stage, 0, sched.p - 1)
    sel = sched.stage == stage
    release = "W" if np.any(sched.phase[sel] == "W") else "B"
    up, down = sel & (sched.phase == "F"), sel & (sched.phase == release)
    t = np.concatenate([sched.end[down], sched.start[up]])
    delta = np.concatenate([-np.ones(down.sum()), np.ones(up.sum())]) / sched.v
    order = np.lexsort((delta, t))  # at equal times, releases first
    t, count = t[order], np.round(np.cumsum(delta[order]), 9)
    last = np.append(t[1:] != t[:-1], True)  # one value per time: the count after it
    return t[last], count[last]


def peak_in_flight(sched: Timeline) -> np.ndarray:
    """Peak micro-batches of activations held by each stage, shape (p,) (the activation
    memory, in units of one micro-batch's activations for that stage's layers)."""
    return np.array([in_flight_timeline(sched, r)[1].max(initial=0) for r in range(sched.p)])


def p2p_messages(sched: Schedule) -> np.ndarray:
    """Messages per step sent from device a to device b, a (p, p) matrix, counted from the
    simulated schedule: one per operation whose input was produced on another device."""
    has = sched.dep >= 0
    src, dst = sched.stage[sched.dep[has]], sched.stage[has]
    cross = src != dst
    out = np.zeros((sched.p, sched.p), dtype=np.int64)
    np.add.at(out, (src[cross], dst[cross]), 1)
    return out


def activation_message_bytes(b: int, s: int, h: int, bytes_per_element: int = 2) -> int:
    """Bytes of one activation (or its gradient) sent between stages of a transformer:
    b s h elements (Narayanan et al., SC21, section 4.1), bf16 by default."""
    for name, x in (("b", b), ("s", s), ("h", h), ("bytes_per_element", bytes_per_element)):
        _int(name, x, 1, 1 << 40)
    return int(b * s * h * bytes_per_element)


def model_state_bytes(params, bytes_per_param=16):
    """Bytes of model states: parameters x bytes per parameter (vectorised over params)."""
    params = np.asarray(params, dtype=np.float64)
    if np.any(~np.isfinite(params)) or np.any(params < 0):
        raise ValueError(f"params must be finite and >= 0, got {params!r}")
    bpp = _pos("bytes_per_param", bytes_per_param)
    out = params * bpp
    return float(out) if out.ndim == 0 else out


def min_gpus(params, bytes_per_param=16, gpu_gb=80.0) -> int:
    """Fewest GPUs of ``gpu_gb`` GB whose memory holds the model states (ignoring
    activations, buffers and fragmentation, so a lower bound)."""
    gpu_bytes = _pos("gpu_gb", gpu_gb) * 1e9
    return int(math.ceil(model_state_bytes(params, bytes_per_param) / gpu_bytes))


def layer_owners(n_layers: int, p: int) -> np.ndarray:
    """Which of p stages owns each layer when n_layers are cut into p contiguous, balanced
    pieces (the first n_layers % p stages get one more layer)."""
    n_layers, p = _int("n_layers", n_layers, 1, 1 << 20), _int("p", p, 1, MAX_STAGES)
    if p > n_layers:
        raise ValueError(f"p must be <= n_layers = {n_layers} (a stage needs a layer), got {p}")
    return np.repeat(np.arange(p), [len(a) for a in np.array_split(np.arange(n_layers), p)])


def microbatch_time(b, t_sample, b_half):
    """Time of one micro-batch of b samples on a GPU that reaches half its peak throughput
    at b_half samples: t_sample (b + b_half), i.e. b t_sample / efficiency with efficiency
    b / (b + b_half). A modelling assumption (cf. Narayanan et al., SC21, section 3.4, where
    t_f(b) and t_b(b) are measured); vectorised over b."""
    b = np.asarray(b, dtype=np.float64)
    if np.any(~np.isfinite(b)) or np.any(b <= 0):
        raise ValueError(f"b must be finite and > 0, got {b!r}")
    b_half = float(b_half)
    if not 0 <= b_half < math.inf:
        raise ValueError(f"b_half must be finite and >= 0, got {b_half!r}")
    out = _pos("t_sample", t_sample) * (b + b_half)
    return float(out) if out.ndim == 0 else out


def step_time(name, p, batch, b, t_f_sample=1.0, t_b_sample=2.0, b_half=4.0, v=1) -> float:
    """Simulated time of one step of ``batch`` samples cut into micro-batches of ``b``
    (m = batch / b must be a whole number), with per-micro-batch times from
    :func:`microbatch_time`. Narayanan et al. (SC21, section 3.4) write it for 1F1B as
    (batch/b + p - 1) (t_f(b) + t_b(b))."""
    batch, b = _int("batch", batch, 1, 1 << 30), _int("b", b, 1, 1 << 30)
    if batch % b:
        raise ValueError(f"b must divide batch = {batch}, got {b}")
    t_f = microbatch_time(b, t_f_sample, b_half)
    t_b = microbatch_time(b, t_b_sample, b_half)
    return schedule(name, p, batch // b, v=v, t_f=t_f, t_b=t_b).makespan


def best_microbatch_size(batch, p, b_half=4.0) -> float:
    """The b minimising (batch/b + p - 1)(b + b_half): sqrt(batch b_half / (p - 1)), from
    setting the derivative to 0 (no optimum inside (0, batch] for p = 1: use b = batch)."""
    batch, p = _pos("batch", batch), _int("p", p, 1, MAX_STAGES)
    if p == 1:
        return batch
    return float(min(batch, math.sqrt(batch * _pos("b_half", b_half) / (p - 1))))
