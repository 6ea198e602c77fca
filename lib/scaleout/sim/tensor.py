"""Tensor parallelism operation by operation (``simulate(..., tp_ops="op")``): each layer's
GEMMs on the compute stream and its collectives on a ``tp`` stream, so that what overlap
hides is the outcome of dependencies rather than :func:`scaleout.planner.comm.tp_exposed`'s
closed form.

By default (``tp_ops="layer"``) a chunk's F, B and BW operations each carry their layers'
exposed TP communication, priced per layer in closed form. In ``"op"`` mode every layer of
an F, B or BW operation becomes the pieces Megatron-LM runs, per block (attention, then
MLP; the backward in reverse), with the GEMM seconds of
:func:`scaleout.planner.compute_term.layer_times` (``col``: QKV / MLP up, ``row``: output
projection / MLP down; a backward GEMM, input or weight gradient, costs as much as the
forward one) and the rest of the block's compute (norms, attention core, activation,
dropout) cut in three around them:

* forward: rest, [all-gather of the input with sequence parallelism], column GEMM, rest,
  row GEMM, all-reduce (reduce-scatter with SP) of its output, rest. Each collective starts
  when the GEMM producing its input ends; the GEMM or rest consuming it waits for it.
* backward: rest, [all-gather of the output gradient, SP], the row GEMM's input gradient,
  its weight gradient, rest, [the input re-gathered (SP, ``plan.regathers``)], the column
  GEMM's input gradient, its all-reduce (reduce-scatter with SP), the column GEMM's weight
  gradient, rest (waits for the collective).
* ``plan.overlap="megatron"`` (:data:`scaleout.overlap.MEGATRON_2022`,
  ``ColumnParallelLinearWithAsyncAllreduce.backward``): the column GEMM's weight gradient
  does not wait for the input gradient's collective, so the two run at once; with SP the
  re-gather runs beside the input-gradient GEMM and the weight gradient waits for it.
  ``"none"``: each waits for the one before. ``"pipelined"`` (Transformer Engine's
  userbuffers, :func:`scaleout.overlap.pipelined`): each all-gather before a GEMM and each
  reduce-scatter after one is cut into t - 1 exchanges and the GEMM into t pieces, piece k
  waiting for exchange k (all-gather; piece 0 is the local shard) or exchange k waiting for
  piece k - 1 (reduce-scatter).
* full recomputation: the layer's forward (compute ``recompute`` seconds, same pieces and
  collectives) before its backward; selective recomputation's extra compute is rest.
* a split backward (B and W, the zero-bubble schedules): B holds the input gradients and
  the collectives, W the weight gradients (one piece, no collective). B has no weight
  gradient beside its collective, so ``"megatron"`` hides nothing there, where the closed
  form (per layer, as if the backward were whole) hides ``min(C, G)`` per block.

The t GPUs of a unit run the same pieces, so a TP collective is one operation of the unit
(not a group) and is not slowed by a straggler; compute pieces are. For each of the rules
above the chain of one layer adds up, with no straggler, to exactly the closed form's
compute plus exposed communication (``tests/unit/test_sim_tp_ops.py``), so the two modes
differ only where the dependencies differ from the rules' assumptions: a split backward,
and a slowed GPU whose longer GEMMs hide more. A gradient bucket is ready (i + 1)/n of the
way along its backward's pieces counted one after another (exact without overlap; with it,
concurrent pieces make buckets before the last ready slightly late). With t = 1 there is
nothing to expand: op mode is layer mode. Not with ``moe`` or ``cp`` (ValueError).
"""

from __future__ import annotations

from .. import checks
from .trace import KIND_ALLGATHER, KIND_ALLREDUCE, KIND_REDUCESCATTER

MODES = ("layer", "op")
#: Parts of an expanded operation's compute pieces (names in scaleout.sim.trace.PART_NAMES).
PART_COL, PART_ROW, PART_COL_W, PART_ROW_W, PART_REST, PART_HEAD = 5, 6, 7, 8, 9, 10


def _check(value, t, moe, cp) -> bool:
    """Whether ``tp_ops`` asks for op mode (and there is something to expand)."""
    mode = checks.choice("tp_ops", value, MODES)
    if mode == "op" and (moe is not None or cp is not None):
        raise checks.fail("tp_ops", "'layer' with moe or cp (not expanded together)", mode)
    return mode == "op" and t > 1


class _Chain:
    """Pieces of one operation: (stream 0 compute / 1 tp, seconds, part or kind, deps), deps
    indices into the list; a stream runs its pieces in list order."""

    def __init__(self, t, sec, sp, overlap, regather):
        self.items: list = []
        self.t, self.sec, self.sp, self.regather = t, sec, sp, regather
        self.on = overlap != "none"
        self.piped = overlap == "pipelined"

    def comp(self, s, part, deps=()):
        self.items.append((0, s, part, tuple(deps)))
        return len(self.items) - 1

    def comm(self, s, kind, deps=()):
        self.items.append((1, s, kind, tuple(deps)))
        return len(self.items) - 1

    def gathered_gemm(self, g, after, part):
        """An all-gather then the GEMM that needs it (pipelined: in t steps)."""
        ag = self.sec["allgather"]
        if not self.piped:
            x = self.comm(ag, KIND_ALLGATHER, (after,))
            return self.comp(g, part, (x,))
        last = self.comp(g / self.t, part)  # the local shard, while exchange 1 travels
        for k in range(1, self.t):
            x = self.comm(ag / (self.t - 1), KIND_ALLGATHER, (after,) if k == 1 else ())
            last = self.comp(g / self.t, part, (x,))
        return last

    def gemm_then_collective(self, g, part):
        """The row GEMM and the collective of its output; returns the collective's index."""
        name = "reducescatter" if self.sp else "allreduce"
        kind = KIND_REDUCESCATTER if self.sp else KIND_ALLREDUCE
        if not self.piped:
            y = self.comp(g, part)
            return self.comm(self.sec[name], kind, (y,))
        y = self.comp(g / self.t, part)
        for _ in range(1, self.t):
            x = self.comm(self.sec[name] / (self.t - 1), kind, (y,))
            y = self.comp(g / self.t, part)
        return x

    def forward_block(self, gc, gr, rest):
        pre = self.comp(rest / 3, PART_REST)
        if self.sp:
            self.gathered_gemm(gc, pre, PART_COL)
        else:
            self.comp(gc, PART_COL)
        self.comp(rest / 3, PART_REST)
        x = self.gemm_then_collective(gr, PART_ROW)
        self.comp(rest / 3, PART_REST, (x,))

    def backward_block(self, gc, gr, rest, weights):
        pre = self.comp(rest / 3, PART_REST)
        if self.sp:  # g's backward: all-gather the output gradient
            self.gathered_gemm(gr, pre, PART_ROW)
        else:
            self.comp(gr, PART_ROW)
        if weights:
            self.comp(gr, PART_ROW_W)
        mid = self.comp(rest / 3, PART_REST)
        rg = None
        if self.regather:
            rg = self.comm(self.sec["allgather"], KIND_ALLGATHER, (mid,))
        d = self.comp(gc, PART_COL, () if self.on or rg is None else (rg,))
        name = "reducescatter" if self.sp else "allreduce"
        kind = KIND_REDUCESCATTER if self.sp else KIND_ALLREDUCE
        x = self.comm(self.sec[name], kind, (d,))
        if weights:
            self.comp(gc, PART_COL_W, (() if rg is None else (rg,)) if self.on else (x,))
        self.comp(rest / 3, PART_REST, (x,))


def _fit(total, gemms):
    """GEMM seconds scaled down (if they exceed ``total``) and the rest per block."""
    s = sum(sum(pair) for pair in gemms)
    scale = min(1.0, total / s) if s > 0 else 1.0
    return [tuple(x * scale for x in pair) for pair in gemms], max(0.0, total - s * scale) / 2


def _chain(kind, per_layer, layers, sec, col, row, t, sp, overlap, regather, recompute_s,
          split, head_before=0.0, head_after=0.0):  # fmt: skip
    """The pieces of one ``kind`` (F, B, W or BW) operation of ``layers`` layers: a list of
    (stream 0 compute or 1 tp, seconds, part or collective kind, deps: indices into the
    list; a stream runs its pieces in list order). ``per_layer``: its compute
    per layer (with ``recompute_s`` of full recomputation for B and BW); ``split``: the
    schedule splits the backward (B is then its input gradients; else B is all of it, like
    BW); ``col``/``row``:
    (attention, MLP) forward GEMM seconds; ``head_before``/``head_after``: the output
    layer's seconds at the start (B, BW) or end (F)."""
    c = _Chain(t, sec, sp, overlap, regather)
    if head_before > 0:
        c.comp(head_before, PART_HEAD)
    if kind == "W":
        c.comp(per_layer * layers, 0)  # one piece, named like the operation
        return c.items
    blocks = list(zip(col, row, strict=True))
    for _ in range(layers):
        if kind == "F":
            gemms, rest = _fit(per_layer, blocks)
            for gc, gr in gemms:
                c.forward_block(gc, gr, rest)
            continue
        if recompute_s > 0:  # full recomputation: the layer's forward again
            gemms, rest = _fit(recompute_s, blocks)
            for gc, gr in gemms:
                c.forward_block(gc, gr, rest)
        weights = kind == "BW" or not split
        per = 2 if weights else 1
        gemms, rest = _fit(per_layer - recompute_s, [(gc * per, gr * per) for gc, gr in blocks])
        for gc, gr in reversed(gemms):
            c.backward_block(gc / per, gr / per, rest, weights)
    if head_after > 0:
        c.comp(head_after, PART_HEAD)
    if not c.items or c.items[-1][0] != 0:
        c.comp(0.0, PART_REST)
    return c.items
