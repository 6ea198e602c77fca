"""Context parallelism in the simulated step: ring attention's KV passes as operations on a
``cp`` stream, overlapped with the attention blocks they feed.

A :class:`CP` splits every sequence over ``cp`` GPUs (a divisor of the plan's ``d``:
Megatron-LM carves context parallelism out of the data-parallel GPUs, next to tensor
parallelism, ``megatron/core/parallel_state.py``; placed by :class:`scaleout.mesh.Mesh`).
The d GPUs then form d / cp replicas, so each GPU runs ``cp`` times as many micro-batches,
each of ``seq / cp`` tokens: every GEMM, norm, transfer and the output layer are priced at
``seq / cp`` tokens (the same parts as without CP). Attention is not: a GPU's queries attend
to the keys of the whole sequence, over ``cp`` ring steps (chapter 8's ring attention,
:func:`scaleout.context_parallel.ring_work` with the zigzag layout): step k computes the
block of the keys it holds, while the next keys and values travel from the neighbour.

Per layer and micro-batch, in the forward pass: the QKV projection, then ring step 0 on its
own keys, and for k = 1 .. cp - 1 a KV pass (on the ``cp`` stream, after the previous pass)
and the attention block that needs it, then the rest of the layer. In the backward pass:
the rest of the layer's backward, then the cp attention blocks' backward, the keys and
values travelling ahead as in the forward and each block's key and value gradients (dKV)
passed on after it (dKV pass k after block k and dKV pass k - 1; the last one returns them
to their owner), then the QKV projection's backward, after the last dKV pass. A block's
time is FlashAttention's at ``seq / cp`` tokens (:mod:`scaleout.compute`) scaled by the
query-key pairs it computes (``ring_work``); a pass moves the keys and values of
``b seq / cp`` tokens (``2 kv_heads head_dim`` values, bf16, split over the t
tensor-parallel GPUs; dKV passes twice that in the backward) and is priced by
:func:`scaleout.context_parallel.transfer_seconds` ("p2p", a ring step) on the cluster's
topology. Each pass is a collective of the CP group (it starts when its last member is
there).

Not simulated: Ulysses (all-to-all) and hybrid context parallelism, documents with their
own masks, the layouts other than zigzag, and mixture of experts together with CP.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import checks, compute
from .. import context_parallel as CPM

#: Parts of a split operation (names in scaleout.sim.trace.PART_NAMES).
PART_BLOCK, PART_REST = 3, 4


@dataclass(frozen=True)
class CP:
    """Context parallelism over ``cp`` GPUs (a divisor of the plan's ``d``) with ring
    attention, zigzag layout."""

    cp: int

    def __post_init__(self):
        checks.integer("cp", self.cp, 1, CPM.MAX_CP)


@dataclass(frozen=True)
class PricedCP:
    """One layer's parts for one micro-batch of ``seq / cp`` tokens: its forward and
    backward seconds (with one FlashAttention at seq / cp tokens), the shares of the
    forward and backward compute before attention (QKV) and in attention (FlashAttention),
    the ring blocks' seconds (forward, backward; fractions of one FlashAttention at seq/cp
    tokens), and the seconds of one KV pass and one dKV pass."""

    forward_s: float
    backward_s: float
    qkv_forward: float
    qkv_backward: float
    attention_forward: float
    attention_backward: float
    blocks: tuple
    kv_pass: float
    dkv_pass: float


def _check(value, plan, model):
    if value is None:
        return None
    checks.instance("cp", value, CP)
    if plan.d % value.cp:
        raise checks.fail("cp.cp", f"a divisor of plan.d = {plan.d}", value.cp)
    if model.seq % (2 * value.cp):
        raise checks.fail("cp.cp", f"a divisor of seq / 2 = {model.seq // 2} (zigzag)", value.cp)
    if not plan.flash:
        raise checks.fail("plan.flash", "True with context parallelism (ring FlashAttention)",
                          plan.flash)  # fmt: skip
    return value


def price(spec: CP, model, cluster, plan) -> PricedCP:
    """The parts of one layer of ``model`` (a planner Model, the *whole* sequence) for one
    micro-batch of ``plan`` on ``cluster`` with context parallelism ``spec``."""
    from ..planner.model import Cluster, Model
    from ..planner.step import Plan

    checks.instance("model", model, Model)
    checks.instance("cluster", cluster, Cluster)
    checks.instance("plan", plan, Plan)
    spec = _check(spec, plan, model)
    if spec is None:
        raise checks.fail("spec", "a scaleout.sim.CP", None)
    cp, seq = spec.cp, model.seq // spec.cp
    layer = compute.Layer(model.hidden, model.heads, seq, kv_heads=model.g, ffn=model.f,
                          swiglu=model.swiglu)  # fmt: skip
    lt = compute.layer_time(layer, plan.b, cluster.gpu_row, plan.t, plan.sp, plan.recompute,
                            True)  # fmt: skip
    share = {}
    for phase in ("forward", "backward"):
        total = lt.seconds(phase)
        qkv = sum(x.seconds for x in lt.parts if x.phase == phase and x.name == "QKV projection")
        att = sum(x.seconds for x in lt.parts if x.phase == phase and x.kind == "attention")
        share[phase] = (qkv / total, att / total)
    work = CPM.ring_work(model.seq, cp, "zigzag")[0].astype(float)
    blocks = tuple(work / (seq * (seq + 1) / 2))  # in units of one FlashAttention at seq / cp
    head_dim = model.hidden // model.heads
    kv = plan.b * seq * 2 * model.g * head_dim * 2 / plan.t  # bytes of K and V, bf16
    kv_s = CPM.transfer_seconds("p2p", kv, cp, stride=plan.t, machine=cluster.topo(1))
    return PricedCP(lt.seconds("forward"), lt.seconds("backward"), share["forward"][0],
                    share["backward"][0], share["forward"][1], share["backward"][1], blocks,
                    kv_s, 2 * kv_s)  # fmt: skip


def _chain(kind: str, layers: int, pr: PricedCP):
    """One operation's parts as (stream, seconds or fraction, part, deps): stream 0 compute
    (a fraction of the operation's compute), 1 the cp stream (seconds); deps: indices into
    the list (None: the previous one). W is one compute part."""
    from .trace import KIND_DKV, KIND_KV

    if kind == "W":
        return [(0, 1.0, 0, None)]
    fwd = kind == "F"
    qkv = pr.qkv_forward if fwd else pr.qkv_backward
    att = pr.attention_forward if fwd else pr.attention_backward
    rest = 1.0 - qkv - att
    blocks = np.asarray(pr.blocks)
    # the fractions are of the operation's compute at seq / cp, whose attention is one
    # block's worth: the ring's blocks add (sum(blocks) - 1) of it
    scale = 1.0 / (layers * (1.0 + att * (blocks.sum() - 1.0)))  # per layer
    cp = len(blocks)
    out: list = []
    for _ in range(layers):
        base = len(out)
        if fwd:
            out.append((0, qkv * scale, 1, None))
            q, prev_pass = base, None
            out.append((0, att * blocks[0] * scale, PART_BLOCK, (q,)))
            prev_block = len(out) - 1
            for k in range(1, cp):
                out.append((1, pr.kv_pass, KIND_KV, (q,) if prev_pass is None else (prev_pass,)))
                prev_pass = len(out) - 1
                out.append((0, att * blocks[k] * scale, PART_BLOCK, (prev_block, prev_pass)))
                prev_block = len(out) - 1
            out.append((0, rest * scale, PART_REST, (prev_block,)))
        else:
            out.append((0, rest * scale, PART_REST, None))
            r = base
            kv_passes = []
            for _ in range(1, cp):  # keys and values travel ahead
                out.append((1, pr.kv_pass, KIND_KV, (r,) if not kv_passes else (kv_passes[-1],)))
                kv_passes.append(len(out) - 1)
            prev_block, prev_dkv = r, None
            for k in range(cp):
                need = (prev_block,) if k == 0 else (prev_block, kv_passes[k - 1])
                out.append((0, att * blocks[k] * scale, PART_BLOCK, need))
                prev_block = len(out) - 1
                need = (prev_block,) if prev_dkv is None else (prev_block, prev_dkv)
                out.append((1, pr.dkv_pass, KIND_DKV, need))
                prev_dkv = len(out) - 1
            out.append((0, qkv * scale, 1, (prev_dkv,)))
    return out
