"""Where experts live next to data and tensor parallelism, and what they cost in memory.

Taught in chapter 7.

**The mesh.** ``world = tp x ep x expert_dp`` ranks, ordered tensor-parallel fastest, then
expert-parallel, then expert-data-parallel: rank = ``t + tp * (e + ep * d)``. That is
Megatron-Core's expert rank generator (``megatron/core/parallel_state.py``,
``initialize_model_parallel``: ``RankGenerator(tp=expert_tp, ep=ep, dp=expert_dp, ...,
order="tp-ep-dp-pp")``, dimensions listed fastest first), which keeps an EP group inside
an NVLink domain when ``tp x ep`` fits in it. The groups of :class:`~scaleout.moe.Mesh`:

* **tp**: ranks that split one layer's GEMMs (chapter 4);
* **ep**: ranks that split the experts, one all-to-all group;
* **expert_dp**: ranks holding the *same* experts: the expert gradients are all-reduced
  (or reduce-scattered, with a sharded optimizer) over this group only, of size
  ``world / (tp x ep)``;
* **dp**: ranks holding the same dense (attention, router, embedding) parameters: their
  gradients are reduced over all ``ep x expert_dp`` ranks of a tensor-parallel slice.

**Memory.** :func:`~scaleout.moe.moe_parameters` counts total and active parameters of a
model of :class:`~scaleout.moe.MoEModel`; :func:`~scaleout.moe.moe_state_bytes` the model
states per GPU, with the experts sharded over ``ep`` (each rank holds ``experts / ep``
of them) and the optimizer states of experts sharded over ``expert_dp`` and of dense
parameters over ``dp`` (ZeRO-1 / Megatron-Core's distributed optimizer, chapter 6):
``weights + grads`` bytes of every held parameter, plus ``optimizer`` bytes divided by
the sharding group.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import checks
from .. import mesh as _layout
from .routing import MAX_EXPERTS

#: Most ranks a mesh may have (the book's 65,536-rank case).
MAX_WORLD = 65_536


@dataclass(frozen=True, eq=False)
class Mesh:
    """The process groups of ``world = tp x ep x expert_dp`` ranks: ``grid[d, e, t]`` is
    the rank at expert-data-parallel index d, expert-parallel index e, tensor index t."""

    tp: int
    ep: int
    expert_dp: int

    def __post_init__(self):
        tp = checks.integer("tp", self.tp, 1, MAX_WORLD)
        ep = checks.integer("ep", self.ep, 1, MAX_EXPERTS)
        d = checks.integer("expert_dp", self.expert_dp, 1, MAX_WORLD)
        if tp * ep * d > MAX_WORLD:
            raise checks.fail("tp x ep x expert_dp", f"at most {MAX_WORLD} ranks", tp * ep * d)

    @property
    def world(self) -> int:
        return self.tp * self.ep * self.expert_dp

    @property
    def grid(self) -> np.ndarray:
        return np.arange(self.world).reshape(self.expert_dp, self.ep, self.tp)

    @property
    def layout(self) -> _layout.Mesh:
        """The same ranks as a :class:`scaleout.mesh.Mesh` (Megatron's order; the expert
        mesh's ``edp`` is ``expert_dp``, the dense ``dp`` is ``ep x expert_dp``)."""
        return _layout.Mesh(tp=self.tp, ep=self.ep, dp=self.ep * self.expert_dp)

    def groups(self, kind: str) -> list[list[int]]:
        """Every group of ``kind`` (``"tp"``, ``"ep"``, ``"expert_dp"``, ``"dp"``), each a
        sorted list of ranks (from :class:`scaleout.mesh.Mesh`)."""
        kind = checks.choice("kind", kind, ("tp", "ep", "expert_dp", "dp"))
        axis = "edp" if kind == "expert_dp" else kind
        return sorted(sorted(g) for g in self.layout.groups(axis))

    def coords(self, rank: int) -> dict:
        """``{"expert_dp": d, "ep": e, "tp": t}`` of ``rank``."""
        rank = checks.integer("rank", rank, 0, self.world - 1)
        c = self.layout.coords(rank)
        return {"expert_dp": c["edp"], "ep": c["ep"], "tp": c["tp"]}


def mesh(world, ep, tp=1) -> Mesh:
    """The :class:`~scaleout.moe.Mesh` of ``world`` ranks with ``ep`` expert-parallel and ``tp``
    tensor-parallel ranks (``tp x ep`` must divide ``world``)."""
    world = checks.integer("world", world, 1, MAX_WORLD)
    ep = checks.integer("ep", ep, 1, MAX_EXPERTS)
    tp = checks.integer("tp", tp, 1, MAX_WORLD)
    if world % (tp * ep):
        raise checks.fail("tp x ep", f"a divisor of world = {world}", tp * ep)
    return Mesh(tp, ep, world // (tp * ep))


@dataclass(frozen=True)
class MoEModel:
    """A decoder-only MoE transformer, counted in parameters. ``layers`` in all, the first
    ``dense_layers`` with a dense FFN of ``dense_ffn``; the others with ``experts`` routed
    experts (``k`` per token) and ``shared_experts`` always-on experts, each of
    ``expert_ffn`` with ``matmuls`` weight matrices (3 for SwiGLU); ``attention``
    parameters per layer; ``vocab`` x ``hidden`` embeddings, ``tied`` or not; ``norms``
    hidden-sized norm vectors per layer. ``source`` cites the configuration."""

    name: str
    layers: int
    hidden: int
    experts: int
    k: int
    expert_ffn: int
    attention: int
    vocab: int
    dense_layers: int = 0
    dense_ffn: int = 0
    shared_experts: int = 0
    matmuls: int = 3
    tied: bool = False
    norms: int = 2
    source: str = "-"

    def __post_init__(self):
        checks.text("name", self.name, 80)
        checks.integer("layers", self.layers, 1, 10_000)
        checks.integer("hidden", self.hidden, 1, 2**20)
        e = checks.integer("experts", self.experts, 1, MAX_EXPERTS)
        checks.integer("k", self.k, 1, e)
        checks.integer("expert_ffn", self.expert_ffn, 1, 2**20)
        checks.integer("attention", self.attention, 0, 2**40)
        checks.integer("vocab", self.vocab, 1, 2**24)
        checks.integer("dense_layers", self.dense_layers, 0, self.layers)
        checks.integer("dense_ffn", self.dense_ffn, 0, 2**20)
        checks.integer("shared_experts", self.shared_experts, 0, 64)
        checks.integer("matmuls", self.matmuls, 1, 3)
        checks.boolean("tied", self.tied)
        checks.integer("norms", self.norms, 0, 16)
        checks.text("source", self.source, 1000)

    @property
    def moe_layers(self) -> int:
        return self.layers - self.dense_layers

    @property
    def expert_params(self) -> int:
        """Parameters of one expert."""
        return self.matmuls * self.hidden * self.expert_ffn


@dataclass(frozen=True)
class ParameterCount:
    """Total and active (used by one token) parameters, and the routed experts' share."""

    total: float
    active: float
    routed_experts: float

    def __post_init__(self):
        checks.nonnegative("total", self.total)
        checks.real("active", self.active, 0.0, self.total)
        checks.real("routed_experts", self.routed_experts, 0.0, self.total)

    @property
    def dense(self) -> float:
        """Everything but the routed experts (replicated on every EP rank)."""
        return self.total - self.routed_experts


def moe_parameters(model: MoEModel) -> ParameterCount:
    """Count ``model``: per MoE layer the routed and shared experts and the router
    (hidden x experts), per dense layer the FFN, attention and norms in every layer,
    embeddings and output head, a final norm. Active: the k routed experts a token uses."""
    m = checks.instance("model", model, MoEModel)
    h = m.hidden
    per_layer = m.attention + m.norms * h
    dense_ffn = m.matmuls * h * m.dense_ffn
    routed = float(m.moe_layers * m.experts * m.expert_params)
    shared = m.moe_layers * (m.shared_experts * m.expert_params + h * m.experts)
    embeddings = m.vocab * h * (1 if m.tied else 2) + h
    common = float(m.layers * per_layer + m.dense_layers * dense_ffn + shared + embeddings)
    active = common + m.moe_layers * m.k * m.expert_params
    return ParameterCount(common + routed, float(active), routed)


@dataclass(frozen=True)
class StateBytes:
    """Model-state bytes on one GPU: ``experts`` (its routed experts: weights, gradients
    and its shard of their optimizer states) and ``dense`` (everything else)."""

    experts: float
    dense: float

    def __post_init__(self):
        checks.nonnegative("experts", self.experts)
        checks.nonnegative("dense", self.dense)

    @property
    def total(self) -> float:
        return self.experts + self.dense


def moe_state_bytes(model: MoEModel, ep, expert_dp, tp=1, pp=1, weight_bytes=2,
                    grad_bytes=4, optimizer_bytes=12) -> StateBytes:  # fmt: skip
    """Bytes per GPU of ``model``'s states: each GPU holds ``1/pp`` of the layers, ``1/tp``
    of their GEMMs, ``experts/ep`` of each layer's routed experts, and its shard of the
    optimizer states: experts over ``expert_dp``, dense parameters over
    ``ep x expert_dp`` (their data-parallel group). Defaults: Megatron's bf16 accounting
    (2 + 4 + 12 bytes per parameter, chapter 6)."""
    counts = moe_parameters(model)
    ep = checks.integer("ep", ep, 1, model.experts)
    if model.experts % ep:
        raise checks.fail("ep", f"a divisor of the {model.experts} experts", ep)
    d = checks.integer("expert_dp", expert_dp, 1, MAX_WORLD)
    tp = checks.integer("tp", tp, 1, MAX_WORLD)
    pp = checks.integer("pp", pp, 1, model.layers)
    wb = checks.real("weight_bytes", weight_bytes, 0.0, 16.0)
    gb = checks.real("grad_bytes", grad_bytes, 0.0, 16.0)
    ob = checks.real("optimizer_bytes", optimizer_bytes, 0.0, 64.0)
    experts = counts.routed_experts / (ep * tp * pp)
    dense = counts.dense / (tp * pp)
    return StateBytes(experts * (wb + gb + ob / d), dense * (wb + gb + ob / (ep * d)))
