"""Expert parallelism in the simulated step: each MoE layer's dispatch and combine all-to-alls
as operations on an ``ep`` stream, between the layer's attention and expert compute.

A :class:`MoE` turns every layer of the planner's model into a mixture-of-experts layer whose
per-token compute is the model's MLP (so give the planner's :class:`~scaleout.planner.model.Model`
the *active* FFN width: ``top_k`` routed plus shared experts, e.g. DeepSeek-V3's 8 + 1 experts
of 2,048 = 18,432). The experts are spread over ``ep`` GPUs of a stage's data-parallel
replicas (Megatron-Core carves expert parallelism out of data parallelism:
``megatron/core/parallel_state.py``), placed by :class:`scaleout.mesh.Mesh`.

Per layer and micro-batch, in the forward pass: attention (and the router) on the compute
stream, then the *dispatch* all-to-all on the ``ep`` stream, then the experts on the compute
stream, then the *combine* all-to-all; in the backward pass the gradient of the combine
travels first (like a dispatch), then the experts' backward, then the gradient of the
dispatch, then attention's backward. Each all-to-all is a collective of the EP group (it
starts when its last member arrives) priced by the expert-parallel chapter's model
(:func:`scaleout.moe.layer_alltoall` of :func:`scaleout.moe.expected_plan`: a balanced,
dropless router, each GPU's ``b s / t`` tokens sent ``top_k`` times) on
:func:`scaleout.moe.nccl_network` of the cluster's NCCL topology, with the EP group's GPUs per
node counted from the mesh.

Within one operation the layer's parts depend on each other in a chain, so its all-to-alls
are exposed: a 1F1B step waits for every one. DualPipe-V's overlapped F+B pairs (a forward
immediately followed by a full backward of another micro-batch in
:func:`scaleout.pipeline.stage_order`) interleave the two chains on the compute stream
(DeepSeek-V3 report, arXiv 2412.19437, section 3.2.1 and Figure 4): while one micro-batch's
tokens are on the wire the other's attention or experts compute, and each all-to-all hides
behind the other's compute where that is longer.

Not priced: the expert weights' memory and their gradient reduction over the expert-data-parallel
group (the step's parameters are the dense model's, i.e. the active ones), routing imbalance
and dropped tokens, dense layers among the MoE ones (DeepSeek-V3's first three).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import checks, compute, mesh
from .. import moe as M

MAX_EP = 1024


@dataclass(frozen=True)
class MoE:
    """``experts`` routed experts, each token to ``top_k`` of them, spread over ``ep`` GPUs
    (a divisor of the plan's ``d``); ``dispatch_bytes`` and ``combine_bytes``: bytes per
    value sent (2: bf16; DeepSeek-V3 dispatches FP8, about 1, and combines bf16)."""

    experts: int
    top_k: int
    ep: int
    dispatch_bytes: float = 2.0
    combine_bytes: float = 2.0

    def __post_init__(self):
        checks.integer("experts", self.experts, 1, M.MAX_EXPERTS)
        checks.integer("top_k", self.top_k, 1, self.experts)
        checks.integer("ep", self.ep, 1, min(MAX_EP, self.experts))
        if self.experts % self.ep:
            raise checks.fail("ep", f"a divisor of experts = {self.experts}", self.ep)
        checks.real("dispatch_bytes", self.dispatch_bytes, 0.5, 8.0)
        checks.real("combine_bytes", self.combine_bytes, 0.5, 8.0)


@dataclass(frozen=True)
class Priced:
    """One MoE layer's parts for one micro-batch: the MLP's share of the layer's forward and
    backward compute, and the seconds of the four all-to-alls."""

    mlp_forward: float
    mlp_backward: float
    dispatch: float
    combine: float
    dispatch_backward: float
    combine_backward: float
    ep_per_node: int


def _check(value, plan) -> MoE | None:
    if value is None:
        return None
    checks.instance("moe", value, MoE)
    if plan.d % value.ep:
        raise checks.fail("moe.ep", f"a divisor of plan.d = {plan.d}", value.ep)
    return value


def price(spec: MoE, model, cluster, plan) -> Priced:
    """The parts of one MoE layer of ``model`` (a planner Model) for one micro-batch of
    ``plan`` on ``cluster`` (see the module docstring)."""
    from ..planner.model import Cluster, Model
    from ..planner.step import Plan

    checks.instance("model", model, Model)
    checks.instance("cluster", cluster, Cluster)
    checks.instance("plan", plan, Plan)
    spec = _check(spec, plan)
    if spec is None:
        raise checks.fail("spec", "a scaleout.sim.MoE", None)
    layer = compute.Layer(model.hidden, model.heads, model.seq, kv_heads=model.g, ffn=model.f,
                          swiglu=model.swiglu)  # fmt: skip
    lt = compute.layer_time(layer, plan.b, cluster.gpu_row, plan.t, plan.sp, plan.recompute,
                            plan.flash)  # fmt: skip
    share = {}
    for phase in ("forward", "backward"):
        mlp = sum(x.seconds for x in lt.parts if x.phase == phase and
                  (x.name.startswith("MLP") or x.name in ("SwiGLU", "GeLU")))  # fmt: skip
        share[phase] = mlp / lt.seconds(phase)
    # the EP group: ep data-parallel neighbours of stage 0's first TP rank
    layout = mesh.Mesh(tp=plan.t, dp=plan.d, pp=plan.p)
    group = np.array(layout.groups("dp")[0][: spec.ep])
    g = cluster.gpus_per_node
    per_node = int(np.bincount(group // g).max())
    nodes = len(np.unique(group // g))
    net = M.nccl_network(cluster.topo(max(nodes, 1)))
    net = M.Network(per_node, net.nvlink_gb_per_s, net.network_gb_per_s, net.nvlink_alpha_s,
                    net.network_alpha_s, net.source, net.per_peer_s)  # fmt: skip
    tokens = plan.b * model.seq / plan.t
    dp = M.expected_plan(tokens, spec.top_k, spec.ep, model.hidden * spec.dispatch_bytes,
                         spec.experts)  # fmt: skip
    a2a = M.layer_alltoall(dp, model.hidden * spec.combine_bytes, machine=net)
    return Priced(share["forward"], share["backward"], a2a.dispatch, a2a.combine,
                  a2a.dispatch_backward, a2a.combine_backward, per_node)  # fmt: skip


def _chain(kind: str, seconds: float, layers: int, priced: Priced):
    """One operation's parts in chain order: a list of (stream, seconds, part, deps) with
    stream 0 compute, 1 all-to-all; part: 1 attention, 2 experts, or the all-to-all kind
    (7 dispatch, 8 combine, 9 combine grad, 10 dispatch grad); deps None: after the part
    before. ``seconds``: the operation's compute (all its layers); W has no all-to-all
    (one compute part)."""
    if kind == "W":
        return [(0, seconds, 0, None)]
    per = seconds / layers
    out = []
    if kind == "F":
        attn, mlp = per * (1 - priced.mlp_forward), per * priced.mlp_forward
        for _ in range(layers):
            out += [(0, attn, 1, None), (1, priced.dispatch, 7, None), (0, mlp, 2, None),
                    (1, priced.combine, 8, None)]  # fmt: skip
    else:
        attn, mlp = per * (1 - priced.mlp_backward), per * priced.mlp_backward
        for _ in range(layers):
            out += [(1, priced.combine_backward, 9, None), (0, mlp, 2, None),
                    (1, priced.dispatch_backward, 10, None), (0, attn, 1, None)]  # fmt: skip
    return out


def _interleave(fwd: list, bwd: list):
    """DualPipe's overlapped pair: the forward's and the backward's compute parts alternate
    on the compute stream (forward first), their all-to-alls on the all-to-all stream
    (backward first: its chain starts with one). Returns (compute order, all-to-all order)
    as lists of (which, index): which 0 the forward, 1 the backward."""
    comp = [[(w, i) for i, x in enumerate(ch) if x[0] == 0] for w, ch in enumerate((fwd, bwd))]
    comm = [[(w, i) for i, x in enumerate(ch) if x[0] == 1] for w, ch in enumerate((fwd, bwd))]
    return _alternate(comp[0], comp[1]), _alternate(comm[1], comm[0])


def _alternate(a, b):
    out = []
    for k in range(max(len(a), len(b))):
        out += a[k : k + 1] + b[k : k + 1]
    return out
