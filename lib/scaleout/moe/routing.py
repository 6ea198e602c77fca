"""The router of a mixture-of-experts layer: gate scores, top-k, capacity, dropped tokens.

Taught in chapter 7 ("Expert parallelism"). A router turns each token's logits (one per
expert) into k chosen experts and k gate weights:

* **Gating.** ``"softmax"``: p = softmax(z / temperature) over all experts (Switch, GShard,
  Mixtral); ``"sigmoid"``: s = sigmoid(z / temperature) per expert (DeepSeek-V3). The k
  experts with the highest scores win (ties: the lower expert index). The gate weights are
  the winners' scores, normalised over the k winners when ``normalize`` (softmax with k > 1:
  GShard's top-2 and Mixtral, where softmax over the top-k logits is the same thing;
  sigmoid: DeepSeek-V3 always), not for Switch's top-1 (the weight is p itself), then
  multiplied by ``scale`` (DeepSeek-V3's ``route_scale`` = 2.5). Megatron-Core's
  ``topk_routing_with_score_function`` (``megatron/core/transformer/moe/moe_utils.py``)
  computes the same.
* **Node-limited routing** (DeepSeek-V3, arXiv 2412.19437, Sec. 2.1.2 and 3.2.2; its
  ``inference/model.py``, ``Gate.forward``): the experts form ``groups`` equal groups (one
  per node); a group's score is the sum of its ``group_top`` highest scores, by default
  ``max(1, k // max_groups)`` (the paper's "sum of the highest K_r/M affinity scores",
  top-2 in the V3 code with K_r = 8, M = 4; ``group_top=1``, the group's best score, is
  what DeepEP's ``tests/test_internode.py`` routes with); only the ``max_groups`` best
  groups stay eligible, so a token reaches at most ``max_groups`` nodes. ``bias``
  (DeepSeek-V3's auxiliary-loss-free balancing, Sec. 2.1.2) is added to the scores for
  the *choice* only; the weights use the raw scores.
* **Capacity.** With a ``capacity_factor`` each expert takes at most
  ``C = ceil((k * tokens / experts) * capacity_factor)`` token copies per block of tokens
  (Megatron-Core's ``get_capacity`` called with ``num_tokens * topk`` in
  ``apply_router_token_dropping``; Switch Transformer eq. 3 for k = 1, GShard's ``2S/E`` for
  top-2); the rest are *dropped*: they skip the expert (the residual connection carries the
  token on). ``None`` is dropless (MegaBlocks, Gale et al. 2023; Megatron-Core without
  ``moe_expert_capacity_factor``).
* **Order of claims** (who gets a slot when an expert is full). ``"choice"``: all first
  choices claim in token order, then all second choices, and so on: GShard's Algorithm 2
  (arXiv 2006.16668) as fairscale implements it (``fairscale/nn/moe/top2gate.py``,
  ``top2gating``: ``locations2 = cumsum(mask2) - 1 + sum(mask1)``, a slot is kept while its
  location is below the capacity). ``"probs"``: each expert keeps its C copies with the
  highest gate weight (Megatron-Core's default ``drop_policy="probs"``,
  ``apply_router_token_dropping``); ties go to the earlier claim of the ``"choice"`` order.
  Weights are normalised before dropping and not renormalised after (Megatron-Core).
* **Blocks.** Capacity is claimed within each of ``blocks`` equal, contiguous blocks of
  tokens: one block per rank is what GShard (one group per device) and Megatron-Core (each
  rank drops among its own tokens) do.

Limits: at most ``MAX_TOKENS`` tokens, ``MAX_EXPERTS`` experts and
``scaleout.checks.MAX_ELEMENTS`` logits; :func:`scaleout.moe.route` takes at most
``MAX_ROUTE_LOGITS``
(tokens x experts, 2**24): it holds about ten arrays of that many values at once (its sort
and group selection included), 1.3 GiB at the limit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .. import checks

#: Most tokens one routing takes (a global batch of a million tokens).
MAX_TOKENS = 2**20
#: Most experts (Switch-C has 2,048; DeepSeek-V3 256 per layer).
MAX_EXPERTS = 4096
#: Most logits (tokens x experts) one :func:`route` takes (memory: see the module docstring).
MAX_ROUTE_LOGITS = 2**24
#: Largest capacity factor (beyond ``experts``, nothing can be dropped anyway).
MAX_CAPACITY_FACTOR = 1e6
GATINGS = ("softmax", "sigmoid")
ORDERS = ("choice", "probs")


def gate_scores(logits, gating="softmax", temperature=1.0) -> np.ndarray:
    """Scores (tokens, experts): softmax over experts, or a sigmoid per expert, of
    ``logits / temperature``. A lower temperature sharpens the router."""
    z = checks.array("logits", logits, ndim=2)
    gating = checks.choice("gating", gating, GATINGS)
    temperature = checks.real("temperature", temperature, 1e-3, 1e3)
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        zt = z / temperature
        if gating == "softmax":
            if not np.all(np.isfinite(zt)):  # z / T overflowed: shift first, (z - max) / T
                zt = (z - z.max(axis=1, keepdims=True)) / temperature  # is in [-inf, 0]
            e = np.exp(zt - zt.max(axis=1, keepdims=True))
            return e / e.sum(axis=1, keepdims=True)
        return 1.0 / (1.0 + np.exp(-zt))


def capacity(tokens: int, experts: int, k: int, capacity_factor) -> int | None:
    """Expert capacity ``ceil((k * tokens / experts) * capacity_factor)`` (Megatron-Core's
    ``get_capacity`` with ``num_tokens * topk``), or None (dropless) for ``None``."""
    tokens = checks.integer("tokens", tokens, 1, MAX_TOKENS)
    experts = checks.integer("experts", experts, 1, MAX_EXPERTS)
    k = checks.integer("k", k, 1, experts)
    if capacity_factor is None:
        return None
    cf = checks.real("capacity_factor", capacity_factor, 0.0, MAX_CAPACITY_FACTOR, low_open=True)
    return int(math.ceil((k * tokens / experts) * cf))


def _top_k(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k largest scores per row, best first, ties to the lower index."""
    return np.argsort(-scores, axis=1, kind="stable")[:, :k]


def _eligible(select: np.ndarray, best: int, groups: int, max_groups: int) -> np.ndarray:
    """``select`` with the experts outside each token's ``max_groups`` best groups (a
    group's score: the sum of its ``best`` highest scores) at -inf."""
    t, e = select.shape
    per = e // groups
    grouped = select.reshape(t, groups, per)
    group_score = -np.sort(-grouped, axis=2)[:, :, :best].sum(axis=2)  # (t, groups)
    keep = _top_k(group_score, max_groups)
    mask = np.zeros((t, groups), dtype=bool)
    np.put_along_axis(mask, keep, True, axis=1)
    return np.where(np.repeat(mask, per, axis=1), select, -np.inf)


def claim_order(tokens: int, k: int, blocks: int = 1) -> np.ndarray:
    """The ``"choice"`` order of claims: (claims, 2) rows of (token, choice), block by
    block, and inside a block all first choices in token order, then all second choices..."""
    tokens = checks.integer("tokens", tokens, 1, MAX_TOKENS)
    k = checks.integer("k", k, 1, MAX_EXPERTS)
    blocks = _blocks(blocks, tokens)
    if tokens * k > checks.MAX_ELEMENTS:
        raise checks.fail("tokens x k", f"at most {checks.MAX_ELEMENTS}", tokens * k)
    size = tokens // blocks
    b, j, t = np.meshgrid(np.arange(blocks), np.arange(k), np.arange(size), indexing="ij")
    return np.stack([(b * size + t).ravel(), j.ravel()], axis=1)


def _blocks(blocks, tokens: int) -> int:
    blocks = checks.integer("blocks", blocks, 1, tokens)
    if tokens % blocks:
        raise checks.fail("blocks", f"a divisor of the {tokens} tokens", blocks)
    return blocks


@dataclass(frozen=True, eq=False)
class Routing:
    """What :func:`~scaleout.moe.route` decided: ``experts`` (tokens, k) chosen expert of
    each choice, best first; ``weights`` (tokens, k) gate weights (zero where dropped); ``dropped``
    (tokens, k); ``scores`` (tokens, experts) the gate scores; ``routed`` (experts,) copies
    each expert was chosen for, ``counts`` (experts,) copies it kept; ``capacity`` per block
    (None: dropless); ``blocks`` the blocks capacity was claimed in."""

    experts: np.ndarray
    weights: np.ndarray
    dropped: np.ndarray
    scores: np.ndarray
    routed: np.ndarray
    counts: np.ndarray
    capacity: int | None
    blocks: int = 1
    gating: str = "softmax"

    def __post_init__(self):
        scores = checks.array("scores", self.scores, ndim=2, low=0.0)
        t, e = scores.shape
        experts = checks.array("experts", self.experts, ndim=2, integer=True, low=0, high=e - 1)
        if experts.shape[0] != t or experts.shape[1] > e:
            raise checks.fail("experts", f"of shape ({t}, k <= {e})", experts.shape)
        weights = checks.array("weights", self.weights, ndim=2)
        if not isinstance(self.dropped, np.ndarray) or self.dropped.dtype != bool:
            raise checks.fail("dropped", "a boolean numpy array", self.dropped)
        for name, arr in (("weights", weights), ("dropped", self.dropped)):
            if arr.shape != experts.shape:
                raise checks.fail(name, f"of shape {experts.shape}", arr.shape)
        routed = checks.array("routed", self.routed, ndim=1, integer=True, low=0)
        counts = checks.array("counts", self.counts, ndim=1, integer=True, low=0)
        if routed.shape != (e,) or counts.shape != (e,) or np.any(counts > routed):
            raise checks.fail("routed and counts", f"({e},) each, counts <= routed", counts)
        if self.capacity is not None:
            checks.integer("capacity", self.capacity, 1, MAX_TOKENS * MAX_EXPERTS)
        blocks = _blocks(self.blocks, t)
        checks.choice("gating", self.gating, GATINGS)
        if self.gating == "sigmoid" and np.any(scores.sum(axis=1) == 0.0):
            raise checks.fail("scores", "rows with a positive score under sigmoid gating (the "
                              "loss normalises each token's scores)", "a row of zeros")  # fmt: skip
        for name, value in (
            ("experts", experts),
            ("weights", weights),
            ("scores", scores),
            ("routed", routed),
            ("counts", counts),
            ("blocks", blocks),
        ):
            object.__setattr__(self, name, value)  # fmt: skip

    @property
    def tokens(self) -> int:
        return int(self.experts.shape[0])

    @property
    def k(self) -> int:
        return int(self.experts.shape[1])

    @property
    def n_experts(self) -> int:
        return int(self.scores.shape[1])

    @property
    def kept(self) -> np.ndarray:
        """(tokens, k) True where the copy reaches its expert."""
        return ~self.dropped

    @property
    def dropped_fraction(self) -> float:
        """Dropped copies over all ``tokens * k`` copies."""
        return float(self.dropped.mean())

    @property
    def probability(self) -> np.ndarray:
        """(experts,) P_i, the mean gate probability of each expert over the tokens
        (sigmoid scores normalised per token first, as Megatron-Core does for the loss)."""
        p = self.scores
        if self.gating == "sigmoid":
            p = p / p.sum(axis=1, keepdims=True)
        return p.mean(axis=0)

    @property
    def aux_loss(self) -> float:
        """The load-balancing loss ``E * sum_i f_i * P_i`` without its coefficient, f_i the
        fraction of the ``k * tokens`` copies routed to expert i (before capacity), P_i the
        mean probability of expert i (sigmoid scores normalised per token first). 1 when
        both are uniform. Switch Transformer eqs. 4-6 (k = 1; the paper multiplies by
        alpha = 0.01); Megatron-Core's ``switch_load_balancing_loss_func`` for top-k."""
        f = self.routed / (self.k * self.tokens)
        return float(self.n_experts * np.sum(f * self.probability))

    @property
    def imbalance(self) -> float:
        """Largest kept load over the mean kept load (1 = perfectly balanced)."""
        mean = self.counts.mean()
        return float(self.counts.max() / mean) if mean > 0 else 1.0


def route(
    logits,
    k,
    capacity_factor=None,
    *,
    gating="softmax",
    normalize=None,
    temperature=1.0,
    scale=1.0,
    order="choice",
    blocks=1,
    groups=None,
    max_groups=None,
    bias=None,
    group_top=None,
) -> Routing:
    """Route ``logits`` (tokens, experts) to ``k`` experts per token (see the module
    docstring for every rule and its source). ``normalize=None`` follows the convention of
    the gating: softmax normalises for k > 1 (GShard, Mixtral) and not for k = 1 (Switch),
    sigmoid always (DeepSeek-V3). ``groups``/``max_groups``: node-limited routing, each
    group scored by the sum of its ``group_top`` best scores (default ``max(1, k //
    max_groups)``). ``bias`` (experts,): added to the scores for the choice only."""
    z = checks.array("logits", logits, ndim=2, max_size=MAX_ROUTE_LOGITS)
    t, e = z.shape
    checks.integer("tokens", t, 1, MAX_TOKENS)
    checks.integer("experts", e, 1, MAX_EXPERTS)
    k = checks.integer("k", k, 1, e)
    blocks = _blocks(blocks, t)
    cap = capacity(t // blocks, e, k, capacity_factor)
    order = checks.choice("order", order, ORDERS)
    gating = checks.choice("gating", gating, GATINGS)
    if normalize is None:
        normalize = gating == "sigmoid" or k > 1
    normalize = checks.boolean("normalize", normalize)
    scale = checks.real("scale", scale, 0.0, 1e3, low_open=True)
    scores = gate_scores(z, gating, temperature)
    if gating == "sigmoid" and np.any(scores.max(axis=1) == 0.0):
        row = int(np.argmin(scores.max(axis=1)))
        raise checks.fail("logits", "rows with a logit / temperature above about -745 under "
                          "sigmoid gating (below it every score of the token rounds to 0, and "
                          "its normalised weights would be 0/0)",
                          f"row {row} of largest logit {z[row].max():.6g}")  # fmt: skip
    select = scores
    if bias is not None:
        select = scores + checks.array("bias", bias, ndim=1, low=-1e6, high=1e6, max_size=e)
        if select.shape != scores.shape:
            raise checks.fail("bias", f"one value per expert ({e})", np.shape(bias))
    if (groups is None) != (max_groups is None):
        raise checks.fail("groups and max_groups", "both None or both given", (groups, max_groups))
    if groups is not None:
        groups = checks.integer("groups", groups, 1, e)
        if e % groups:
            raise checks.fail("groups", f"a divisor of the {e} experts", groups)
        max_groups = checks.integer("max_groups", max_groups, 1, groups)
        if max_groups * (e // groups) < k:
            raise checks.fail("max_groups", f"enough groups to hold k = {k} experts", max_groups)
        best = max(1, k // max_groups) if group_top is None else group_top
        best = checks.integer("group_top", best, 1, e // groups)
        select = _eligible(select, best, groups, max_groups)
    elif group_top is not None:
        raise checks.fail("group_top", "None without groups", group_top)
    chosen = _top_k(select, k)  # (t, k)
    weights = np.take_along_axis(scores, chosen, axis=1)
    if normalize:
        weights = weights / weights.sum(axis=1, keepdims=True)
    weights = weights * scale
    routed = np.bincount(chosen.ravel(), minlength=e)
    dropped = np.zeros((t, k), dtype=bool)
    if cap is not None:
        dropped = _drop(chosen, weights, cap, order, blocks, e)
    weights = np.where(dropped, 0.0, weights)
    counts = np.bincount(chosen[~dropped], minlength=e)
    return Routing(chosen, weights, dropped, scores, routed, counts, cap, blocks, gating)


def _drop(chosen: np.ndarray, weights: np.ndarray, cap: int, order: str, blocks: int, e: int):
    """(tokens, k) True for the copies beyond their expert's capacity in their block."""
    t, k = chosen.shape
    claims = claim_order(t, k, blocks)  # (t*k, 2): the "choice" order
    tok, j = claims[:, 0], claims[:, 1]
    expert = chosen[tok, j]
    block = tok // (t // blocks)
    rank_in_order = np.arange(tok.size)
    if order == "choice":
        keys = (rank_in_order, expert, block)  # lexsort: last key is the primary one
    else:
        keys = (rank_in_order, -weights[tok, j], expert, block)
    perm = np.lexsort(keys)
    group = block[perm] * e + expert[perm]  # one id per (block, expert)
    starts = np.r_[True, group[1:] != group[:-1]]
    first = np.maximum.accumulate(np.where(starts, np.arange(perm.size), 0))
    position = np.arange(perm.size) - first  # slot each claim asks for, per (block, expert)
    dropped = np.zeros((t, k), dtype=bool)
    over = perm[position >= cap]
    dropped[tok[over], j[over]] = True
    return dropped


def nodes_per_token(routing: Routing, experts_per_node: int) -> np.ndarray:
    """(tokens,) distinct nodes each token's kept copies reach, experts laid out in order,
    ``experts_per_node`` to a node (node-limited routing caps it at ``max_groups``)."""
    checks.instance("routing", routing, Routing)
    per = checks.integer("experts_per_node", experts_per_node, 1, routing.n_experts)
    if routing.n_experts % per:
        raise checks.fail("experts_per_node", f"a divisor of {routing.n_experts}", per)
    node = np.where(routing.kept, routing.experts // per, -1)
    ordered = np.sort(node, axis=1)
    new = np.concatenate([np.ones_like(ordered[:, :1], dtype=bool),
                          ordered[:, 1:] != ordered[:, :-1]], axis=1)  # fmt: skip
    return np.sum(new & (ordered >= 0), axis=1)
