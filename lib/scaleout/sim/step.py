"""One training step as operations on streams, from the planner's records.

:func:`simulate` takes the planner's inputs (:class:`scaleout.planner.model.Model`,
:class:`~scaleout.planner.model.Cluster`, the global batch, a :class:`~scaleout.planner.step.Plan`)
and prices every operation with the same parts the planner's closed form adds up
(:mod:`scaleout.planner.compute_term` for compute, :mod:`scaleout.planner.comm` for the
collectives and transfers, both on :mod:`scaleout.nccl`'s model of the machine), so the two
differ only in how the parts combine: the planner adds them in closed form, the simulator
runs them (:mod:`scaleout.sim.engine`).

Per rank (a *unit*: the t tensor-parallel GPUs of one stage of one replica, which meet in
every layer) there are three streams (and ``ep``, ``cp``, ``tp`` where used):

* ``compute``: the pipeline schedule's F, B, W (or full backward BW) operations in
  :func:`scaleout.pipeline.stage_order`'s order, each a chunk of the stage's layers for one
  micro-batch: compute (times the calibration and the unit's slowdown) plus the exposed
  tensor-parallel communication of those layers (:func:`scaleout.planner.comm.tp_exposed`:
  by default, ``tp_ops="layer"``, TP's overlap happens inside a layer and is priced per
  layer in closed form; with ``tp_ops="op"`` each layer's GEMMs run on this stream and its
  collectives on a ``tp`` stream, and overlap is what their dependencies allow:
  :mod:`scaleout.sim.tensor`); the last
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

import dataclasses

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
from . import context as CX
from . import engine
from . import experts as X
from . import stragglers as S
from . import tensor as TPX
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
             schedule: str | None = None, moe: X.MoE | None = None,
             cp: CX.CP | None = None, tp_ops: str = "layer") -> StepTrace:  # fmt: skip
    """Simulate ``steps`` training steps of ``plan`` (see the module docstring).

    ``calibration``: the multiplier on compute time (the planner's ``calibration``).
    ``stragglers``: None, {rank: slowdown factor >= 1}, or a :class:`Lognormal` drawn per
    rank and step with ``seed``. ``schedule``: a ``scaleout.pipeline.ALL_SCHEDULES`` name
    (default the planner's: 1F1B, or interleaved when plan.v > 1). ``moe``: a
    :class:`scaleout.sim.MoE` makes every layer a mixture-of-experts layer with its
    all-to-alls on the ``ep`` stream (:mod:`scaleout.sim.experts`); ``cp``: a
    :class:`scaleout.sim.CP` splits every sequence over cp of the d GPUs, ring attention's
    passes on the ``cp`` stream (:mod:`scaleout.sim.context`). ``tp_ops``: ``"layer"``
    (each operation carries its layers' exposed TP communication, in closed form) or
    ``"op"`` (each layer's GEMMs and TP collectives as operations on the compute and ``tp``
    streams, overlap from their dependencies: :mod:`scaleout.sim.tensor`; at most
    ``engine.MAX_OPS`` operations, ValueError beyond). Returns a
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
    moe = X._check(moe, plan)
    cp = CX._check(cp, plan, model)
    op_mode = TPX._check(tp_ops, plan.t, moe, cp)
    if moe is not None and cp is not None:
        raise checks.fail("cp", "None with moe (not simulated together)", cp)
    priced = model
    if cp is not None:  # each GPU: cp times the micro-batches, of seq / cp tokens
        m, model = m * cp.cp, dataclasses.replace(model, seq=model.seq // cp.cp)
    _check(name, plan.p, m, chunks, None)  # interleaved: p | m (checked by check_plan too)
    rng = np.random.default_rng(seed)
    base = _Base(model, cluster, plan, m, name, chunks, k)
    if moe is not None:
        base.add_moe(moe, model, cluster)
    if cp is not None:
        base.add_cp(cp, priced, cluster, k)
    if op_mode:
        base.add_tp(model, cluster, k)
    traces = [base.run(S.factors(stragglers, cluster.gpus, rng)) for _ in range(steps)]
    first = traces[0]
    return first.with_steps(tuple(tr.step_s for tr in traces))


def _too_many(total):
    return checks.fail(
        "tp_ops", f"'layer' for this configuration: 'op' would simulate about {total:,} "
        f"operations, more than the engine's limit of {engine.MAX_OPS:,} (engine.MAX_OPS)",
        "op")  # fmt: skip


def _bucket_dep(mark, i, n):
    """Bucket i of n ready (i + 1)/n of the way along an operation's pieces (``mark``:
    their indices and slowed seconds added one after another)."""
    ids, cum = mark
    if i == n - 1:
        return ((int(ids[-1]), 1.0),)
    target = (i + 1) / n * float(cum[-1])
    k = min(int(np.searchsorted(cum, target)), len(cum) - 1)
    lo = float(cum[k - 1]) if k else 0.0
    span = float(cum[k]) - lo
    frac = min(1.0, max(0.0, (target - lo) / span)) if span > 0 else 1.0
    return ((int(ids[k]), frac),)


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
        on_last = self.on_last = vs == n_vs - 1
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
        self.split, self.ep_group = None, np.zeros(plan.d, dtype=np.int64)
        self.layers_per_op = stage_layers(model, p) // chunks
        self.paired = np.zeros(len(st), dtype=bool)
        self.tp_chains = None  # True once add_tp has expanded the operations

    def add_tp(self, model, cluster, k):
        """Expand every F, B and BW into its layers' pieces and TP collectives
        (:mod:`scaleout.sim.tensor`); one chain per phase, and per phase on the last stage
        (with the output layer)."""
        plan, n = self.plan, self.layers_per_op
        lt = layer_times(model, cluster, plan.b, plan.t, plan.sp, plan.recompute, plan.flash)
        col, row = tuple(k * x for x in lt.col), tuple(k * x for x in lt.row)
        sec = C.tp_seconds(cluster, plan.b, model.seq, model.hidden, plan.t)
        split = self.name in PP.SPLIT_BACKWARD
        comp, _, head = _op_times(model, cluster, plan, self.chunks, k, split)
        rec = k * lt.recompute if plan.recompute == "full" else 0.0
        # at most 2 (blocks) x (4 t + 10) pieces per layer pass, twice with full recompute
        bound = n * 2 * (4 * plan.t + 10) * 2 + 3
        if bound > engine.MAX_OPS:
            raise _too_many(bound)
        chains = {}
        for ph, kind in enumerate(PP.PHASES):
            for last in (False, True):
                before = 2 * head / 3 if last and kind in ("B", "BW") else 0.0
                after = head / 3 if last and kind == "F" else 0.0
                chains[ph, last] = TPX._chain(
                    kind, comp[kind] / n, n, sec, col, row, plan.t, plan.sp, plan.overlap,
                    plan.regathers, 0.0 if kind in ("F", "W") else rec, split, before,
                    after)  # fmt: skip
        # per chain: (is compute, seconds, part or kind, deps) as arrays and a list
        keys = list(chains)
        self.tp_templates = [
            (np.array([x[0] == 0 for x in chains[key]]), np.array([x[1] for x in chains[key]]),
             np.array([x[2] for x in chains[key]], dtype=np.int64), [x[3] for x in chains[key]])
            for key in keys
        ]  # fmt: skip
        index = {key: i for i, key in enumerate(keys)}
        self.tp_which = np.array([index[int(ph), bool(x)] for ph, x in zip(self.ph, self.on_last,
                                                                         strict=True)])  # fmt: skip
        self.tp_sizes = np.array([len(self.tp_templates[w][3]) for w in self.tp_which])
        self.tp_chains = True

    def add_moe(self, spec, model, cluster):
        """Price ``spec``'s all-to-alls; replicas of different EP groups are simulated apart."""
        pr = X.price(spec, model, cluster, self.plan)
        self.split = (lambda kind, n: X._chain(kind, 1.0, n, pr)), 3  # the ep stream
        self.ep_group = np.arange(self.plan.d) // spec.ep
        # DualPipe-V's overlapped pairs: a forward followed by a full backward on one rank
        nxt = np.r_[self.ph[1:], -1]
        same = np.r_[self.st[1:] == self.st[:-1], False]
        self.paired = (self.name == "dualpipe-v") & (self.ph == 0) & (nxt == 3) & same

    def unit_factors(self, rank_factors):
        """(d, p) slowdown of each unit: its slowest tensor-parallel GPU."""
        return rank_factors[self.ranks].max(axis=2).T

    def run(self, rank_factors) -> StepTrace:
        p = self.plan.p
        unit_f = self.unit_factors(rank_factors)
        # EP groups meet only inside themselves: without stragglers they are alike (one is
        # simulated); else each is simulated with its own replicas
        same = bool(np.all(unit_f == unit_f[0]))
        keyed = np.c_[np.zeros_like(self.ep_group) if same else self.ep_group, unit_f]
        replicas, which = np.unique(keyed, axis=0, return_inverse=True)
        which = np.asarray(which).ravel()
        if self.tp_chains is not None:
            per = (int(self.tp_sizes.sum()) + int(self.cross.sum())
                   + p * ((self.buckets if self.dp_s > 0 else 0) + 1))  # fmt: skip
            if len(replicas) * per > engine.MAX_OPS:
                raise _too_many(len(replicas) * per)
        g = engine.Graph()
        comp, tp, part = [], [], []  # unslowed compute and exposed TP seconds, part names
        for q, row in enumerate(replicas):
            self._add_replica(g, q, row[1:], int(row[0]), comp, tp, part)
        start, end, crit, ready = engine.run(g, len(replicas) * p * len(STREAMS))
        return StepTrace.from_run(self, g, np.concatenate(comp), np.concatenate(tp), start, end,
                                  crit, ready, replicas, which, rank_factors,
                                  np.concatenate(part))  # fmt: skip

    def _add_replica(self, g, q, fac, epg, comp, tp, part):
        """Add one replica's operations (its p units' streams) to ``g``."""
        p, nstr, n_ops = self.plan.p, len(STREAMS), len(self.st)
        unit_of = q * p + self.st  # unit index of each compute op
        dur = self.comp * fac[self.st] + self.tp
        marks = None
        if self.tp_chains is not None:
            entry, exit_, marks = self._add_tp_ops(g, unit_of, fac, comp, tp, part)
            bwd_parts = None
        elif self.split is None:
            first = g.extend((unit_of * nstr).tolist(), dur.tolist(), [None] * n_ops,
                             [-1] * n_ops, self.ph.tolist(), self.mb.tolist(),
                             self.ch.tolist())  # fmt: skip
            entry = exit_ = first + np.arange(n_ops)
            comp.append(self.comp)
            tp.append(self.tp)
            part.append(np.zeros(n_ops, dtype=np.int64))
            bwd_parts = None
        else:
            entry, exit_, bwd_parts = self._add_moe_ops(g, unit_of, dur, epg, comp, tp, part)
        # transfers, in the producer's order on its pp stream
        consumers = np.flatnonzero(self.cross)
        producers = self.dep[consumers]
        order = np.argsort(producers, kind="stable")
        consumers, producers = consumers[order], producers[order]
        nsend = len(consumers)
        send0 = g.extend((unit_of[producers] * nstr + 1).tolist(), [self.pp_s] * nsend,
                         [((int(exit_[j]), 1.0),) for j in producers.tolist()], [-1] * nsend,
                         [KIND_SEND] * nsend, self.mb[producers].tolist(),
                         self.ch[producers].tolist())  # fmt: skip
        comp.append(np.zeros(nsend))
        tp.append(np.zeros(nsend))
        part.append(np.zeros(nsend, dtype=np.int64))
        deps = g.deps
        local = np.flatnonzero((self.dep >= 0) & ~self.cross)
        for i, j in zip(local.tolist(), self.dep[local].tolist(), strict=True):
            deps[int(entry[i])] = ((int(exit_[j]), 1.0),)
        for k, i in enumerate(consumers.tolist()):
            deps[int(entry[i])] = ((send0 + k, 1.0),)
        # gradient buckets (a collective over the stage's replicas), then the optimizer
        extra_comp = []
        for r in range(p):
            unit = q * p + r
            lb = int(self.last_bwd[r])
            prev = last = int(exit_[lb])
            if self.dp_s > 0:
                n = self.buckets
                for i in range(n):
                    if marks is not None:
                        dep = _bucket_dep(marks[lb], i, n)
                    elif bwd_parts is None:
                        dep = ((last, (i + 1) / n),)
                    else:  # bucket i: ready after (i + 1)/n of the op's compute parts
                        cp = bwd_parts[lb]
                        dep = ((cp[-(-(i + 1) * len(cp) // n) - 1], 1.0),)
                    prev = g.add(unit * nstr + 2, self.dp_s / n, dep,
                                 group=r * n + i, kind=KIND_BUCKET, mb=i)  # fmt: skip
                    extra_comp.append(0.0)
            g.add(unit * nstr, self.opt_s * float(fac[r]), ((prev, 1.0),), kind=KIND_OPTIMIZER)
            extra_comp.append(self.opt_s)
        comp.append(np.array(extra_comp))
        tp.append(np.zeros(len(extra_comp)))
        part.append(np.zeros(len(extra_comp), dtype=np.int64))

    def _add_tp_ops(self, g, unit_of, fac, comp, tp, part):
        """Every operation as its chain of pieces (:mod:`scaleout.sim.tensor`): compute
        pieces slowed by the unit's factor, collectives on its tp stream. Returns each
        operation's entry and exit piece and, for each stage's last backward, its pieces'
        indices and their slowed seconds added one after another."""
        nstr, on_tp = len(STREAMS), STREAMS.index("tp")
        sizes, base = self.tp_sizes, len(g)
        first = base + np.r_[0, np.cumsum(sizes)[:-1]]
        entry, exit_ = first.copy(), first + sizes - 1
        tmpl = self.tp_templates
        which = self.tp_which
        is_comp = np.concatenate([tmpl[w][0] for w in which.tolist()])
        sec = np.concatenate([tmpl[w][1] for w in which.tolist()])
        code = np.concatenate([tmpl[w][2] for w in which.tolist()])
        unit = np.repeat(unit_of * nstr, sizes)
        streams = np.where(is_comp, unit, unit + on_tp)
        durs = np.where(is_comp, sec * np.repeat(fac[self.st], sizes), sec)
        kinds = np.where(is_comp, np.repeat(self.ph, sizes), code)
        deps = []
        for j, w in enumerate(which.tolist()):
            o = int(first[j])
            deps += [tuple((o + a, 1.0) for a in need) or None for need in tmpl[w][3]]
        mbs, chs = np.repeat(self.mb, sizes).tolist(), np.repeat(self.ch, sizes).tolist()
        g.extend(streams.tolist(), durs.tolist(), deps, [-1] * len(deps), kinds.tolist(), mbs,
                 chs)  # fmt: skip
        comp.append(np.where(is_comp, sec, 0.0))
        tp.append(np.zeros(len(deps)))
        part.append(np.where(is_comp, code, 0).astype(np.int64))
        marks = {}
        for j in set(self.last_bwd.tolist()):
            a, b = int(first[j]), int(first[j] + sizes[j])
            marks[j] = (np.arange(a, b), np.cumsum(durs[a - base : b - base]))
        return entry, exit_, marks

    def add_cp(self, spec, model, cluster, k):
        """Price ``spec``'s ring (``model`` with the whole sequence); each forward and
        backward grows by the ring's attention beyond one block's."""
        pr = CX.price(spec, model, cluster, self.plan)
        self.split = (lambda kind, n: CX._chain(kind, n, pr)), 4  # the cp stream
        self.ep_group = np.arange(self.plan.d) // spec.cp
        more = float(np.sum(pr.blocks)) - 1.0
        n = self.layers_per_op
        extra = {0: pr.forward_s * pr.attention_forward, 1: pr.backward_s * pr.attention_backward,
                 3: pr.backward_s * pr.attention_backward}  # fmt: skip
        for ph, sec in extra.items():
            self.comp = self.comp + np.where(self.ph == ph, k * n * sec * more, 0.0)

    def _add_moe_ops(self, g, unit_of, dur, epg, comp, tp, part):
        """Each operation as its layers' attention, expert and all-to-all parts (see
        :mod:`scaleout.sim.experts`); DualPipe-V's pairs interleaved. Returns each
        operation's entry and exit part and, per operation, its compute parts' indices."""
        nstr, n_ops = len(STREAMS), len(self.st)
        n_layers = self.layers_per_op
        chain, comm = self.split
        base = self.plan.p * self.buckets
        entry, exit_ = np.zeros(n_ops, dtype=np.int64), np.zeros(n_ops, dtype=np.int64)
        comp_parts: dict = {}
        c_l, t_l, p_l = [], [], []
        seg_of = max(len(chain(x, n_layers)) for x in PP.PHASES)
        i = 0
        while i < n_ops:
            pair = (i, i + 1) if self.paired[i] else (i,)
            chains = [chain(PP.PHASES[self.ph[j]], n_layers) for j in pair]
            idx = [[0] * len(c) for c in chains]
            if len(pair) == 2:
                order_c, order_a = X._interleave(*chains)
                order = order_c + order_a  # compute parts first, then the all-to-alls
            else:
                order = [(0, k) for k in range(len(chains[0]))]
            for w, k in order:
                j = pair[w]
                stream, frac, kind, _ = chains[w][k]
                unit = int(unit_of[j])
                if stream == 0:
                    sec = frac * float(dur[j])
                    idx[w][k] = g.add(unit * nstr, sec, None, kind=int(self.ph[j]),
                                      mb=int(self.mb[j]), chunk=int(self.ch[j]))  # fmt: skip
                    c_l.append(frac * self.comp[j])
                    t_l.append(frac * self.tp[j])
                    p_l.append(kind if len(chains[w]) > 1 else 0)
                else:
                    gid = base + (epg * n_ops + j) * seg_of + k
                    idx[w][k] = g.add(unit * nstr + comm, frac, None, group=gid, kind=kind,
                                      mb=int(self.mb[j]), chunk=int(self.ch[j]))  # fmt: skip
                    c_l.append(0.0)
                    t_l.append(0.0)
                    p_l.append(0)
            for w, j in enumerate(pair):
                ids = idx[w]
                for b in range(1, len(ids)):
                    need = chains[w][b][3]
                    need = (b - 1,) if need is None else need
                    g.deps[ids[b]] = tuple((ids[a], 1.0) for a in need)
                entry[j], exit_[j] = ids[0], ids[-1]
                comp_parts[j] = [ids[k] for k, x in enumerate(chains[w]) if x[0] == 0]
            i += len(pair)
        comp.append(np.array(c_l))
        tp.append(np.array(t_l))
        part.append(np.array(p_l, dtype=np.int64))
        return entry, exit_, comp_parts
