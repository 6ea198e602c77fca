"""Dispatch and combine over ep ranks, and the single-process MoE layer they must equal.

Taught in chapter 7. Expert parallelism over ``ep`` ranks: rank r holds the r-th
contiguous block of the tokens (it routes them) and the r-th contiguous block of the
experts (``experts / ep`` each). *Dispatch* is an all-to-all: rank i sends every kept copy
of its tokens to the rank of its expert; *combine* is the all-to-all back, the transpose.
Sizes differ per pair, so each rank passes its own send and receive splits
(``dist.all_to_all_single(out, inp, output_split_sizes, input_split_sizes)``), as
Megatron-Core's ``MoEAlltoAllTokenDispatcher.preprocess``
(``megatron/core/transformer/moe/token_dispatcher.py``) computes them: ``input_splits`` =
the local tokens per expert summed per destination rank, ``output_splits`` from the
all-gathered counts. Each copy travels once per (token, expert) pair, as there. Dropless
plans follow the routing as it falls (MegaBlocks, Megatron-Core without capacity); with
``pad=True`` every expert receives exactly its capacity from every rank, padded (GShard's
and Switch's fixed-shape einsum dispatch; Megatron-Core's
``moe_pad_expert_input_to_capacity``).

The reference layer (numpy, float64): each expert is a two-layer perceptron
``relu(x W1[e]) W2[e]``; the output of token t is ``sum_j w[t, j] E_{e[t, j]}(x_t)`` over
its kept copies (a dropped copy adds nothing). :func:`~scaleout.moe.layer_backward` is its exact
gradient: through the experts and through the gate weights into the router (the choice of
experts itself is piecewise constant). Limits: ``MAX_EP`` ranks; inputs within
``scaleout.checks.MAX_ELEMENTS``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import checks
from .routing import MAX_EXPERTS, Routing, route

#: Most expert-parallel ranks (every rank holds at least one expert).
MAX_EP = MAX_EXPERTS
#: Largest bytes per token copy (a hidden size of 2**20 in fp32).
MAX_TOKEN_BYTES = 2.0**22


def _ep(ep, routing: Routing) -> int:
    ep = checks.integer("ep", ep, 1, MAX_EP)
    for what, n in (("experts", routing.n_experts), ("tokens", routing.tokens)):
        if n % ep:
            raise checks.fail("ep", f"a divisor of the {n} {what}", ep)
    return ep


@dataclass(frozen=True, eq=False)
class DispatchPlan:
    """Who sends what to whom. ``per_expert[i, e]``: copies rank i sends to expert e;
    ``tokens[i, j]``: copies rank i sends to rank j (the dispatch all-to-all; its
    transpose is the combine); ``token_bytes``: bytes of one copy; ``padded``: every expert
    receives its capacity from every rank. Expected plans (:func:`~scaleout.moe.expected_plan`) hold
    fractional counts."""

    per_expert: np.ndarray
    ep: int
    token_bytes: float = 1.0
    padded: bool = False

    def __post_init__(self):
        ep = checks.integer("ep", self.ep, 1, MAX_EP)
        per = checks.array("per_expert", self.per_expert, ndim=2, low=0.0)
        if per.shape[0] != ep or per.shape[1] % ep:
            raise checks.fail("per_expert", f"of shape ({ep}, a multiple of {ep})", per.shape)
        object.__setattr__(self, "per_expert", per)
        object.__setattr__(self, "ep", ep)
        tb = checks.positive("token_bytes", self.token_bytes, MAX_TOKEN_BYTES)
        with np.errstate(over="ignore"):
            total = per.sum() * tb  # every sum and byte count of the plan is at most this
        if not np.isfinite(total):
            raise checks.fail("per_expert", f"counts whose total x token_bytes ({tb:g}) stays "
                              "finite (it bounds every sum)", float(per.max()))  # fmt: skip
        object.__setattr__(self, "token_bytes", tb)
        checks.boolean("padded", self.padded)

    @property
    def experts_per_rank(self) -> int:
        return self.per_expert.shape[1] // self.ep

    @property
    def tokens(self) -> np.ndarray:
        """Copies rank i sends to rank j in the dispatch, (ep, ep)."""
        return self.per_expert.reshape(self.ep, self.ep, self.experts_per_rank).sum(axis=2)

    @property
    def bytes(self) -> np.ndarray:
        """The dispatch's bytes from rank i to rank j, (ep, ep)."""
        return self.tokens * self.token_bytes

    @property
    def combine_bytes(self) -> np.ndarray:
        """The combine's bytes from rank i to rank j, (ep, ep), the dispatch transposed."""
        return self.bytes.T

    def send_splits(self, rank: int) -> list[int]:
        """Rank's ``input_split_sizes`` for the dispatch (copies to each rank)."""
        rank = checks.integer("rank", rank, 0, self.ep - 1)
        return [int(round(n)) for n in self.tokens[rank]]

    def recv_splits(self, rank: int) -> list[int]:
        """Rank's ``output_split_sizes`` for the dispatch (copies from each rank)."""
        rank = checks.integer("rank", rank, 0, self.ep - 1)
        return [int(round(n)) for n in self.tokens[:, rank]]

    @property
    def off_rank_fraction(self) -> float:
        """Share of the copies that leave their rank (the rest stay local)."""
        total = self.tokens.sum()
        return float((total - np.trace(self.tokens)) / total) if total > 0 else 0.0


def dispatch_plan(routing: Routing, ep, token_bytes=1.0, pad=False) -> DispatchPlan:
    """The dispatch of ``routing`` over ``ep`` ranks (see the module docstring).
    ``pad=True`` needs a capacity claimed per rank (``route(..., blocks=ep)``)."""
    checks.instance("routing", routing, Routing)
    ep = _ep(ep, routing)
    pad = checks.boolean("pad", pad)
    e = routing.n_experts
    if pad:
        if routing.capacity is None or routing.blocks != ep:
            raise checks.fail("pad", "False unless the routing has a capacity per rank "
                              f"(route(..., capacity_factor, blocks={ep}))", pad)  # fmt: skip
        per_expert = np.full((ep, e), float(routing.capacity))
    else:
        rank_of_token = np.arange(routing.tokens) // (routing.tokens // ep)
        src = np.repeat(rank_of_token, routing.k)[routing.kept.ravel()]
        dst = routing.experts.ravel()[routing.kept.ravel()]
        per_expert = np.zeros((ep, e))
        np.add.at(per_expert, (src, dst), 1.0)
    return DispatchPlan(per_expert, ep, token_bytes, pad)


def expected_plan(tokens_per_rank, k, ep, token_bytes=1.0, experts=None) -> DispatchPlan:
    """The plan of a perfectly balanced dropless router: each rank's ``k * tokens_per_rank``
    copies spread evenly over all ``experts`` (default: one per rank)."""
    n = checks.real("tokens_per_rank", tokens_per_rank, 0.0, 2.0**40, low_open=True)
    ep = checks.integer("ep", ep, 1, MAX_EP)
    experts = ep if experts is None else checks.integer("experts", experts, ep, MAX_EXPERTS)
    if experts % ep:
        raise checks.fail("experts", f"a multiple of ep = {ep}", experts)
    k = checks.integer("k", k, 1, experts)
    return DispatchPlan(np.full((ep, experts), n * k / experts), ep, token_bytes)


@dataclass(frozen=True, eq=False)
class Experts:
    """The weights of ``E`` two-layer experts: ``w1`` (E, hidden, ffn), ``w2`` (E, ffn,
    hidden); expert e computes ``relu(x @ w1[e]) @ w2[e]``."""

    w1: np.ndarray
    w2: np.ndarray

    def __post_init__(self):
        w1 = checks.array("w1", self.w1, ndim=3)
        w2 = checks.array("w2", self.w2, ndim=3)
        e, h, f = w1.shape
        if w2.shape != (e, f, h):
            raise checks.fail("w2", f"of shape {(e, f, h)} to match w1", w2.shape)
        checks.integer("experts", e, 1, MAX_EXPERTS)
        object.__setattr__(self, "w1", w1)
        object.__setattr__(self, "w2", w2)

    @property
    def n_experts(self) -> int:
        return int(self.w1.shape[0])

    @property
    def hidden(self) -> int:
        return int(self.w1.shape[1])


def random_experts(n_experts, hidden, ffn, seed=0) -> Experts:
    """Seeded experts with N(0, 1/fan_in) weights (float64)."""
    e = checks.integer("n_experts", n_experts, 1, MAX_EXPERTS)
    h = checks.integer("hidden", hidden, 1, 2**14)
    f = checks.integer("ffn", ffn, 1, 2**14)
    if e * h * f > checks.MAX_ELEMENTS:
        raise checks.fail("n_experts x hidden x ffn", f"at most {checks.MAX_ELEMENTS}", e * h * f)
    rng = np.random.default_rng(checks.integer("seed", seed, 0, 2**32 - 1))
    return Experts(rng.normal(size=(e, h, f)) / np.sqrt(h), rng.normal(size=(e, f, h)) / np.sqrt(f))


def _layer_inputs(x, router_w, experts, k, route_kwargs):
    x = checks.array("x", x, ndim=2)
    checks.instance("experts", experts, Experts)
    router_w = checks.array("router_w", router_w, ndim=2)
    if router_w.shape != (x.shape[1], experts.n_experts) or experts.hidden != x.shape[1]:
        raise checks.fail("router_w", f"of shape ({x.shape[1]}, {experts.n_experts}) with "
                          f"experts of hidden size {x.shape[1]}", router_w.shape)  # fmt: skip
    work = x.shape[0] * experts.n_experts * max(x.shape[1], experts.w1.shape[2])
    if work > checks.MAX_ELEMENTS:
        raise checks.fail("tokens x experts x width", f"at most {checks.MAX_ELEMENTS}", work)
    with np.errstate(over="ignore", invalid="ignore"):
        logits = x @ router_w
    if not np.all(np.isfinite(logits)):
        raise checks.fail("x and router_w", "values whose router logits x @ router_w are "
                          "finite (scale them down)", "a product that overflows")  # fmt: skip
    routing = route(logits, k, **route_kwargs)
    return x, router_w, routing


def layer_reference(x, router_w, experts: Experts, k, **route_kwargs) -> np.ndarray:
    """The MoE layer on one process: (tokens, hidden) output for input ``x`` (tokens,
    hidden), router weights ``router_w`` (hidden, experts) and ``experts``; the routing is
    :func:`scaleout.moe.route` of ``x @ router_w`` with ``k`` and ``route_kwargs``
    (``capacity_factor``, ``blocks``, ``gating``, ...)."""
    return layer_forward(x, router_w, experts, k, **route_kwargs)[0]


@np.errstate(over="ignore", invalid="ignore")  # an overflow is checked, and raised, at the end
def layer_forward(x, router_w, experts: Experts, k, **route_kwargs):
    """``(output, routing)`` of :func:`~scaleout.moe.layer_reference`."""
    x, _, routing = _layer_inputs(x, router_w, experts, k, route_kwargs)
    y = np.zeros_like(x)
    for e in range(experts.n_experts):
        tok, j = np.nonzero((routing.experts == e) & routing.kept)
        if tok.size:
            out = np.maximum(x[tok] @ experts.w1[e], 0.0) @ experts.w2[e]
            np.add.at(y, tok, routing.weights[tok, j][:, None] * out)
    _finite_layer(y, "output")
    return y, routing


def _finite_layer(value, what):
    """The layer's ``what`` if finite; else the error naming the inputs that overflowed."""
    if not np.all(np.isfinite(value)):
        raise checks.fail("x, router_w and experts", f"values whose layer {what} stays finite "
                          "in float64 (scale them down)", "a result that overflows")  # fmt: skip
    return value


def _weight_grad_to_logits(routing: Routing, grad_w: np.ndarray, normalize, scale, temp):
    """d loss / d logits from d loss / d weights (tokens, k), through the gating."""
    s = routing.scores
    sel = np.take_along_axis(s, routing.experts, axis=1)  # chosen raw scores (t, k)
    g = grad_w * scale
    if normalize:
        total = sel.sum(axis=1, keepdims=True)
        w = sel / total
        g = (g - np.sum(g * w, axis=1, keepdims=True)) / total  # d/d chosen raw scores
    grad_s = np.zeros_like(s)
    np.put_along_axis(grad_s, routing.experts, g, axis=1)  # distinct experts per token
    if routing.gating == "softmax":
        grad_z = s * (grad_s - np.sum(grad_s * s, axis=1, keepdims=True))
    else:
        grad_z = grad_s * s * (1.0 - s)
    return grad_z / temp


@np.errstate(over="ignore", invalid="ignore")  # an overflow is checked, and raised, at the end
def layer_backward(x, router_w, experts: Experts, k, grad_output, **route_kwargs) -> dict:
    """Gradients of ``sum(grad_output * layer_reference(...))``: a dict with ``x``,
    ``router_w``, ``w1`` and ``w2`` (float64, the shapes of the inputs)."""
    x, router_w, routing = _layer_inputs(x, router_w, experts, k, route_kwargs)
    gy = checks.array("grad_output", grad_output, ndim=2)
    if gy.shape != x.shape:
        raise checks.fail("grad_output", f"of shape {x.shape}", gy.shape)
    gx, gw1, gw2 = np.zeros_like(x), np.zeros_like(experts.w1), np.zeros_like(experts.w2)
    grad_w = np.zeros(routing.experts.shape)
    for e in range(experts.n_experts):
        tok, j = np.nonzero((routing.experts == e) & routing.kept)
        if not tok.size:
            continue
        pre = x[tok] @ experts.w1[e]  # (n, ffn)
        act = np.maximum(pre, 0.0)
        out = act @ experts.w2[e]  # (n, hidden)
        grad_w[tok, j] = np.sum(gy[tok] * out, axis=1)
        g_out = routing.weights[tok, j][:, None] * gy[tok]
        gw2[e] = act.T @ g_out
        g_pre = (g_out @ experts.w2[e].T) * (pre > 0)
        gw1[e] = x[tok].T @ g_pre
        np.add.at(gx, tok, g_pre @ experts.w1[e].T)
    gating = route_kwargs.get("gating", "softmax")
    normalize = route_kwargs.get("normalize")
    if normalize is None:
        normalize = gating == "sigmoid" or routing.k > 1
    scale = route_kwargs.get("scale", 1.0)
    grad_z = _weight_grad_to_logits(
        routing, grad_w, normalize, scale, route_kwargs.get("temperature", 1.0)
    )
    gx += grad_z @ router_w.T
    grads = {"x": gx, "router_w": x.T @ grad_z, "w1": gw1, "w2": gw2}
    for name, g in grads.items():
        _finite_layer(g, f"gradient of {name} (with grad_output)")
    return grads
