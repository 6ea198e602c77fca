"""One training step as operations on streams, from the planner's records.

:func:`simulate` takes the planner's inputs (:class:`scaleout.planner.model.Model`,
:class:`~scaleout.planner.model.Cluster`, the global batch, a :class:`~scaleout.planner.step.Plan`)
and prices every operation with the same parts the planner's closed form adds up
(:mod:`scaleout.planner.compute_term` for compute, :mod:`scaleout.planner.comm` for the
collectives and transfers, both on :mod:`scaleout.nccl`'s model of the machine), so the two
differ only in how the parts combine: the planner adds them in closed form, the simulator
runs them (:mod:`scaleout.sim.engine`).

Per rank (a *unit*: the t tensor-parallel GPUs of one stage of one replica, which meet in
every layer) there are three streams:

* ``compute``: the pipeline schedule's F, B, W (or full backward BW) operations in
  :func:`scaleout.pipeline.stage_order`'s order, each a chunk of the stage's layers for one
  micro-batch: compute (times the calibration and the unit's slowdown) plus the exposed
  tensor-parallel communication of those layers (:func:`scaleout.planner.comm.tp_exposed`:
  TP's overlap happens inside a layer and is priced per layer, not simulated); the last
  stage's operations include the output layer and loss (a third in F, the rest in B); then
  the optimizer step, after the unit's gradients are reduced.
* ``pp``: one transfer per activation or gradient sent to another GPU
  (:func:`~scaleout.planner.comm.pp_seconds`), queued in the order they are produced; the
  receiver's operation waits for it (the V schedules' turn and a chunk's own device send
  nothing).
* ``dp``: the gradient buckets (:func:`~scaleout.planner.comm.buckets`), each a collective of
  the stage's replicas, bucket i ready (i + 1)/n of the way through the unit's last backward
  (Megatron-Core's ``overlap_grad_reduce``), or all after it without ``dp_overlap``.

Ranks are placed by :class:`scaleout.mesh.Mesh` (Megatron's order, tensor fastest, then
data, then pipeline). Replicas whose units have the same slowdowns are simulated once
(without stragglers: one replica stands for all d), so the work grows with the pipeline, not
the GPU count. Not simulated (ValueError): ZeRO-3 (the planner prices its per-layer
gathers in closed form).
"""

from __future__ import annotations

import numpy as np

from .. import checks, mesh
from .. import memory as MEM
from .. import pipeline as PP
from ..pipeline.orders import _check, _dependencies, _order_arrays
from ..planner import comm as C
from ..planner.compute_term import layer_times, logits_seconds, optimizer_seconds
from ..planner.model import Cluster, Model
from ..planner.step import GRAD_BYTES, Plan, activation_bytes, check_plan, stage_layers
from ..planner.step import stage_params as _stage_params
from . import engine
from . import stragglers as S
from .trace import KIND_BUCKET, KIND_OPTIMIZER, KIND_SEND, STREAMS, StepTrace

MAX_STEPS = 64
#: Share of a backward's compute that is the weight gradient (W) when a schedule splits it:
#: of a layer's backward GEMMs, half compute input gradients and half weight gradients
#: (Qi et al., ICLR 2024, section 2: T_B = T_W for a transformer layer's GEMMs).
W_SHARE = 0.5


def _schedule(plan: Plan, m: int, schedule):
    """(name, chunks per rank) of the pipeline schedule (default: the planner's, 1F1B or
    interleaved with plan.v chunks)."""
    if schedule is None:
        return ("interleaved", plan.v) if plan.v > 1 else ("1f1b", 1)
    name = checks.choice("schedule", schedule, PP.ALL_SCHEDULES)
    if name == "interleaved":
        if plan.v < 2:
            raise checks.fail("schedule", "'interleaved' only with plan.v >= 2", name)
        return name, plan.v
    if plan.v > 1:
        raise checks.fail("schedule", f"'interleaved' or None for plan.v = {plan.v}", name)
    return name, 2 if name in PP.V_SCHEDULES else 1


def _op_times(model, cluster, plan, chunks, k, split):
    """Unslowed seconds of one chunk's operations: compute of F, B, W, BW and their exposed
    TP communication, plus the output layer's forward and backward (last stage). ``split``:
    the schedule splits the backward (B is then its input-gradient part; else B is all)."""
    t, b, s, h = plan.t, plan.b, model.seq, model.hidden
    lt = layer_times(model, cluster, b, t, plan.sp, plan.recompute, plan.flash)
    col, row = tuple(k * x for x in lt.col), tuple(k * x for x in lt.row)
    sec = C.tp_seconds(cluster, b, s, h, t)
    tp_f, tp_b, _, _ = C.tp_exposed(
        sec, col, row, t, plan.sp, plan.overlap, regather=plan.regathers
    )
    again = plan.recompute == "full"
    n = stage_layers(model, plan.p) / chunks  # layers per chunk
    bwd = k * n * (lt.backward + lt.recompute)
    comp = {"F": k * n * lt.forward, "BW": bwd, "W": k * n * lt.backward * W_SHARE}
    comp["B"] = bwd - comp["W"] if split else bwd
    tp_back = n * (tp_f * (1 if again else 0) + tp_b)
    tp = {"F": n * tp_f, "B": tp_back, "W": 0.0, "BW": tp_back}
    head = k * logits_seconds(model, cluster, b, t)
    return comp, tp, head


def _states_bytes(model, plan):
    params = _stage_params(model, plan.p, plan.t)
    return float(MEM.model_state_bytes(params, plan.zero, plan.d, precision=plan.precision).total)


def simulate(model: Model, cluster: Cluster, global_batch: int, plan: Plan, *,
             calibration: float = 1.0, stragglers=None, steps: int = 1, seed: int = 0,
             schedule: str | None = None) -> StepTrace:  # fmt: skip
    """Simulate ``steps`` training steps of ``plan`` (see the module docstring).

    ``calibration``: the multiplier on compute time (the planner's ``calibration``).
    ``stragglers``: None, {rank: slowdown factor >= 1}, or a :class:`Lognormal` drawn per
    rank and step with ``seed``. ``schedule``: a ``scaleout.pipeline.ALL_SCHEDULES`` name
    (default the planner's: 1F1B, or interleaved when plan.v > 1). Returns a
    :class:`StepTrace` whose events, critical path and breakdown are those of the first
    step; ``steps_s`` has every step."""
    m = check_plan(model, cluster, global_batch, plan)
    k = checks.real("calibration", calibration, 0.1, 10.0)
    stragglers = S.check(stragglers)
    steps = checks.integer("steps", steps, 1, MAX_STEPS)
    seed = checks.integer("seed", seed, 0, 2**63 - 1)
    if plan.zero == 3:
        raise checks.fail("plan.zero", "0, 1 or 2 (ZeRO-3 is priced by the planner only)", 3)
    name, chunks = _schedule(plan, m, schedule)
    if name in PP.V_SCHEDULES and stage_layers(model, plan.p) % 2:
        raise checks.fail("schedule", f"not {name!r} with an odd number of layers per stage", name)
    _check(name, plan.p, m, chunks, None)  # interleaved: p | m (checked by check_plan too)
    rng = np.random.default_rng(seed)
    base = _Base(model, cluster, plan, m, name, chunks, k)
    traces = [base.run(S.factors(stragglers, cluster.gpus, rng)) for _ in range(steps)]
    first = traces[0]
    return first.with_steps(tuple(tr.step_s for tr in traces))


class _Base:
    """What every step of one configuration shares: orders, dependencies, unslowed times."""

    def __init__(self, model, cluster, plan, m, name, chunks, k):
        self.plan, self.m, self.name, self.chunks = plan, m, name, chunks
        p = plan.p
        group = p if name == "interleaved" else None  # Megatron's default group
        st, ph, mb, ch = _order_arrays(name, p, m, chunks, group)
        self.st, self.ph, self.mb, self.ch = st, ph, mb, ch
        n_vs = p * chunks
        vs, dep = _dependencies(name, p, m, chunks, st, ph, mb, ch)
        f = ph == 0
        self.dep = dep
        self.cross = (dep >= 0) & (st[np.maximum(dep, 0)] != st)  # needs a transfer
        split = name in PP.SPLIT_BACKWARD
        comp, tp, head = _op_times(model, cluster, plan, chunks, k, split)
        names = np.array(PP.PHASES)[ph]
        self.comp = np.array([comp[x] for x in PP.PHASES])[ph]
        self.tp = np.array([tp[x] for x in PP.PHASES])[ph]
        on_last = vs == n_vs - 1
        self.comp = self.comp + np.where(on_last & f, head / 3, 0.0)
        self.comp = self.comp + np.where(
            on_last & (ph == 1) | on_last & (ph == 3), 2 * head / 3, 0.0
        )
        self.names = names
        self.pp_s = 0.0
        if p > 1:
            self.pp_s = C.pp_seconds(cluster, plan.b, model.seq, model.hidden, plan.t, plan.d,
                                     plan.sp, plan.scatter_gather)  # fmt: skip
        params = _stage_params(model, p, plan.t)
        grad_bytes = params * GRAD_BYTES[plan.precision]
        self.dp_s = C.dp_seconds(cluster, plan.t, plan.d, plan.zero, grad_bytes, params * C.DTYPE)
        self.buckets = C.buckets(params, plan.d) if plan.dp_overlap else 1
        self.opt_s = optimizer_seconds(params / (plan.d if plan.zero >= 1 else 1), cluster)
        self.bounds = np.searchsorted(st, np.arange(p + 1))
        # the last backward-producing operation of each stage (its weight gradients done)
        grads = np.flatnonzero(ph != 0)
        self.last_bwd = np.array([grads[grads < self.bounds[r + 1]].max() for r in range(p)])
        # memory: activations per micro-batch of one stage (all its layers) and the states
        per_layer = float(
            activation_bytes(model, plan.b, plan.t, plan.recompute, plan.sp, plan.flash)
        )
        self.act_bytes = per_layer * stage_layers(model, p)
        self.extra_bytes = 0.0
        if plan.recompute == "full":  # the layer being recomputed holds its full activations
            self.extra_bytes = float(
                activation_bytes(model, plan.b, plan.t, "none", plan.sp, plan.flash)
            )
        self.logit_bytes = 2 * 4.0 * plan.b * model.seq * model.vocab / plan.t
        self.states = _states_bytes(model, plan)
        self.gpus = cluster.gpus
        # ranks[pp, dp, tp]: the mesh's TP groups, listed data-parallel index fastest
        layout = mesh.Mesh(tp=plan.t, dp=plan.d, pp=p)
        self.ranks = np.array(layout.groups("tp"), dtype=np.int64).reshape(p, plan.d, plan.t)

    def unit_factors(self, rank_factors):
        """(d, p) slowdown of each unit: its slowest tensor-parallel GPU."""
        return rank_factors[self.ranks].max(axis=2).T

    def run(self, rank_factors) -> StepTrace:
        p = self.plan.p
        unit_f = self.unit_factors(rank_factors)
        replicas, which = np.unique(unit_f, axis=0, return_inverse=True)
        which = np.asarray(which).ravel()
        g = engine.Graph()
        comp, tp = [], []  # unslowed compute and exposed TP seconds of every operation
        for q, fac in enumerate(replicas):
            self._add_replica(g, q, fac, comp, tp)
        start, end, crit, ready = engine.run(g, len(replicas) * p * len(STREAMS))
        return StepTrace.from_run(self, g, np.concatenate(comp), np.concatenate(tp), start, end,
                                  crit, ready, replicas, which, rank_factors)  # fmt: skip

    def _add_replica(self, g, q, fac, comp, tp):
        """Add one replica's operations (its p units' three streams) to ``g``."""
        p, nstr, n_ops = self.plan.p, len(STREAMS), len(self.st)
        unit_of = q * p + self.st  # unit index of each compute op
        dur = self.comp * fac[self.st] + self.tp
        first = g.extend((unit_of * nstr).tolist(), dur.tolist(), [None] * n_ops, [-1] * n_ops,
                         self.ph.tolist(), self.mb.tolist(), self.ch.tolist())  # fmt: skip
        comp.append(self.comp)
        tp.append(self.tp)
        # transfers, in the producer's order on its pp stream
        consumers = np.flatnonzero(self.cross)
        producers = self.dep[consumers]
        order = np.argsort(producers, kind="stable")
        consumers, producers = consumers[order], producers[order]
        nsend = len(consumers)
        send0 = g.extend((unit_of[producers] * nstr + 1).tolist(), [self.pp_s] * nsend,
                         [((first + j, 1.0),) for j in producers.tolist()], [-1] * nsend,
                         [KIND_SEND] * nsend, self.mb[producers].tolist(),
                         self.ch[producers].tolist())  # fmt: skip
        comp.append(np.zeros(nsend))
        tp.append(np.zeros(nsend))
        deps = g.deps
        local = np.flatnonzero((self.dep >= 0) & ~self.cross)
        for i, j in zip(local.tolist(), self.dep[local].tolist(), strict=True):
            deps[first + i] = ((first + j, 1.0),)
        for k, i in enumerate(consumers.tolist()):
            deps[first + i] = ((send0 + k, 1.0),)
        # gradient buckets (a collective over the stage's replicas), then the optimizer
        extra_comp = []
        for r in range(p):
            unit = q * p + r
            prev = last = first + int(self.last_bwd[r])
            if self.dp_s > 0:
                n = self.buckets
                for i in range(n):
                    prev = g.add(unit * nstr + 2, self.dp_s / n, ((last, (i + 1) / n),),
                                 group=r * n + i, kind=KIND_BUCKET, mb=i)  # fmt: skip
                    extra_comp.append(0.0)
            g.add(unit * nstr, self.opt_s * float(fac[r]), ((prev, 1.0),), kind=KIND_OPTIMIZER)
            extra_comp.append(self.opt_s)
        comp.append(np.array(extra_comp))
        tp.append(np.zeros(len(extra_comp)))
