"""Ring attention over cp ranks: sharding the sequence, passing K/V around, the work per step.

Taught in chapter 8 (``chapters/08_context_parallel.ipynb``). Ring attention (Liu, Zaharia &
Abbeel 2023, arXiv 2310.01889, Sec. 3): the sequence is split over ``cp`` ranks; rank r keeps
its queries and, at step t = 0 .. cp-1, holds the keys and values that started on rank
(r - t) mod cp. It computes attention of its queries over that block
(:func:`~scaleout.context_parallel.block_attention`), merges it into its running result
(:func:`~scaleout.context_parallel.merge`), and passes the block on to rank r + 1 while receiving
the next from rank r - 1. After cp steps every query has seen every key.

With a causal mask a query sees only earlier keys, so how the sequence is cut decides how
much each rank works at each step (:data:`~scaleout.context_parallel.ring.LAYOUTS`):

* ``"contiguous"``: rank r holds positions [r s/cp, (r+1) s/cp). A block from a later rank
  is entirely masked (no work) and one from an earlier rank entirely visible: after step 0,
  rank cp-1 always works a full block while rank 0 idles, and every step waits for the
  busiest rank.
* ``"zigzag"``: the sequence is cut into 2 cp chunks and rank r holds chunks r and
  2cp-1-r (Megatron-LM/Transformer Engine's load balancing, ``get_batch_on_this_cp_rank``;
  zhuzilin/ring-flash-attention issue 2; Llama 3, arXiv 2407.21783, Sec. 3.3.2). Every rank
  then computes the same number of query-key pairs at every step.
* ``"striped"``: rank r holds positions r, r + cp, r + 2 cp, ... (Brandon et al. 2023,
  "Striped Attention", arXiv 2311.09431): balanced to within one row per step.

``work[r, t]`` counts the query-key pairs (per head and sequence) rank r computes at step t:
the pairs its mask leaves visible. A kernel skips fully masked blocks, so time follows this
count (to within its tile size).

Limits: ``cp`` at most :data:`~scaleout.context_parallel.ring.MAX_CP`;
:func:`~scaleout.context_parallel.ring_work` takes sequences up to
:data:`~scaleout.context_parallel.ring.MAX_SEQ` tokens;
:func:`~scaleout.context_parallel.ring_attention` arrays as in
:mod:`~scaleout.context_parallel.attention` and at most ``MAX_RING_STEPS`` block steps
(cp x cp, each a Python step: cp <= 64); ``ring_work`` with ``documents`` at most
``MAX_DOCUMENT_WORK`` = documents x cp x cp run pairs counted (and so
:func:`~scaleout.context_parallel.attention_seconds`).
:func:`scaleout.context_parallel.balance` counts exactly (Python integers: no int64 wrap).
"""

from __future__ import annotations

import numpy as np

from .. import checks
from .attention import Partial, _qkv, block_attention, causal_mask, merge

__all__ = [
    "LAYOUTS",
    "MAX_CP",
    "MAX_DOCUMENTS",
    "MAX_DOCUMENT_WORK",
    "MAX_RING_STEPS",
    "MAX_SEQ",
    "balance",
    "chunks_per_rank",
    "ring_attention",
    "ring_work",
    "shard_positions",
]

#: How the sequence is cut over the ranks (module docstring).
LAYOUTS = ("contiguous", "zigzag", "striped")
#: Most ranks in one context-parallel group.
MAX_CP = 1024
#: Longest sequence the work and cost formulas take, in tokens (16M).
MAX_SEQ = 2**24
#: Most documents packed into one sequence (``documents`` of
#: :func:`~scaleout.context_parallel.ring_work`).
MAX_DOCUMENTS = 4096
#: Most block steps (cp x cp) one :func:`ring_attention` simulates.
MAX_RING_STEPS = 4096
#: Most (document, rank, step) triples :func:`ring_work` counts with ``documents``.
MAX_DOCUMENT_WORK = 2**22


def chunks_per_rank(layout: str) -> int:
    """How many equal chunks of the sequence each rank holds: 1 (contiguous), 2 (zigzag);
    striped holds s/cp chunks of one token."""
    layout = checks.choice("layout", layout, LAYOUTS)
    return {"contiguous": 1, "zigzag": 2, "striped": 0}[layout]


def _sizes(seq, cp, layout, max_seq=MAX_SEQ):
    seq = checks.integer("seq", seq, 1, max_seq)
    cp = checks.integer("cp", cp, 1, MAX_CP)
    layout = checks.choice("layout", layout, LAYOUTS)
    parts = 2 * cp if layout == "zigzag" else cp
    if seq % parts:
        raise checks.fail("seq", f"a multiple of {parts} ({'2 cp' if layout == 'zigzag' else 'cp'}"
                          f" for the {layout} layout with cp = {cp})", seq)  # fmt: skip
    return seq, cp, layout


def shard_positions(seq, cp, layout="zigzag") -> np.ndarray:
    """The global positions each rank holds, (cp, seq/cp) int64, in increasing order:
    ``contiguous`` [r n, (r+1) n); ``zigzag`` chunk r then chunk 2cp-1-r (chunks of
    seq/(2cp)); ``striped`` r, r + cp, r + 2cp, ... Every position appears exactly once."""
    seq, cp, layout = _sizes(seq, cp, layout, checks.MAX_ELEMENTS)
    n = seq // cp
    r = np.arange(cp)[:, None]
    if layout == "contiguous":
        return r * n + np.arange(n)[None, :]
    if layout == "striped":
        return r + cp * np.arange(n)[None, :]
    c = n // 2
    first = r * c + np.arange(c)[None, :]
    second = (2 * cp - 1 - r) * c + np.arange(c)[None, :]
    return np.concatenate([first, second], axis=1)


def _runs(seq, cp, layout):
    """Each rank's positions as runs (start, length): (cp, k) arrays (k = 1 or 2)."""
    n = seq // cp
    r = np.arange(cp)
    if layout == "contiguous":
        return (r * n)[:, None], np.full((cp, 1), n)
    c = n // 2
    return np.stack([r * c, (2 * cp - 1 - r) * c], axis=1), np.full((cp, 2), c)


def _visible_pairs(qa, ql, ka, kl):
    """Pairs (i, j), i in [qa, qa+ql), j in [ka, ka+kl), with j <= i: sum over i of
    clamp(i - ka + 1, 0, kl), in closed form (exact integers, vectorised)."""

    def prefix(x):  # sum_{y=1}^{x} clamp(y, 0, kl) for x >= 0 (0 for x <= 0)
        x = np.maximum(x, 0)
        low = np.minimum(x, kl)
        return low * (low + 1) // 2 + np.maximum(x - kl, 0) * kl

    lo = qa - ka + 1  # value of i - ka + 1 at the first query
    return prefix(lo + ql - 1) - prefix(lo - 1)


def _document_bounds(documents, seq):
    """(starts, ends) of the packed documents, checked: positive integer lengths adding up
    to ``seq``, at most :data:`MAX_DOCUMENTS` of them."""
    if isinstance(documents, str | bytes) or not isinstance(documents, list | tuple | np.ndarray):
        raise checks.fail("documents", "a sequence of document lengths (tokens)", documents)
    if not 1 <= len(documents) <= MAX_DOCUMENTS:
        raise checks.fail("documents", f"1 to {MAX_DOCUMENTS} document lengths", len(documents))
    lengths = [checks.integer("documents entry", x, 1, MAX_SEQ) for x in documents]
    if sum(lengths) != seq:
        raise checks.fail("documents", f"lengths adding up to seq = {seq}", sum(lengths))
    ends = np.cumsum(np.asarray(lengths, dtype=np.int64))
    return ends - np.asarray(lengths, dtype=np.int64), ends


def ring_work(seq, cp, layout="zigzag", causal=True, documents=None) -> np.ndarray:
    """``work[r, t]``: query-key pairs (per head and sequence) that rank r computes at ring
    step t, when it holds the keys of rank (r - t) mod cp; (cp, cp) int64, exact.

    Without the causal mask every entry is (seq/cp)^2. With it, only pairs with key
    position <= query position count. With n = seq/cp: contiguous n(n+1)/2 at t = 0, then
    n^2 on ranks r >= t and 0 on the others; zigzag n(n+1)/2 at t = 0 and n^2/2 at every
    later step, on every rank; striped n(n+1)/2 where the keys come from a rank <= r,
    n(n-1)/2 where they come from a later one. Runs of positions are counted in closed
    form, so long sequences cost nothing.

    ``documents`` (lengths adding up to ``seq``; contiguous and zigzag layouts, causal
    only) packs several documents into the sequence with a block-diagonal causal mask: a
    pair counts only when query and key lie in the same document (the packing of
    ``flash_attn_varlen_func``; Llama 3 masks across documents, arXiv 2407.21783, Sec.
    3.2). Each run of positions is cut at the document bounds and counted as above."""
    seq, cp, layout = _sizes(seq, cp, layout)
    causal = checks.boolean("causal", causal)
    bounds = None
    if documents is not None:
        bounds = _document_bounds(documents, seq)
        if not causal:
            raise checks.fail("causal", "True with documents (a causal mask per document)", causal)
        if layout == "striped":
            raise checks.fail("layout", "contiguous or zigzag with documents", layout)
        if len(bounds[0]) * cp * cp > MAX_DOCUMENT_WORK:
            raise checks.fail("documents x cp x cp", f"at most {MAX_DOCUMENT_WORK} (the pairs "
                              "of runs counted)", len(bounds[0]) * cp * cp)  # fmt: skip
    n = seq // cp
    if not causal:
        return np.full((cp, cp), n * n, dtype=np.int64)
    r = np.arange(cp)[:, None]
    src = (r - np.arange(cp)[None, :]) % cp  # whose keys rank r holds at step t
    if layout == "striped":
        return np.where(src <= r, n * (n + 1) // 2, n * (n - 1) // 2).astype(np.int64)
    starts, lengths = _runs(seq, cp, layout)
    qa, ql = starts[r][..., :, None], lengths[r][..., :, None]  # (cp, 1, k, 1)
    ka, kl = starts[src][..., None, :], lengths[src][..., None, :]  # (cp, cp, 1, k)
    if bounds is None:
        return _visible_pairs(qa, ql, ka, kl).sum(axis=(2, 3)).astype(np.int64)
    work = np.zeros((cp, cp), dtype=np.int64)
    for lo, hi in zip(*bounds, strict=True):  # the runs' parts inside one document
        qs, ks = np.clip(qa, lo, hi), np.clip(ka, lo, hi)
        qe, ke = np.clip(qa + ql, lo, hi), np.clip(ka + kl, lo, hi)
        work += _visible_pairs(qs, qe - qs, ks, ke - ks).sum(axis=(2, 3)).astype(np.int64)
    return work


def balance(work) -> dict:
    """What a work table costs in lockstep: every ring step lasts as long as its busiest
    rank. Returns ``critical`` (sum over steps of the largest entry: the pairs the slowest
    path computes), ``ideal`` (all pairs / cp: perfect balance), ``efficiency`` (ideal /
    critical) and ``idle`` (fraction of rank-steps spent waiting, 1 - efficiency)."""
    w = checks.array("work", work, ndim=2, integer=True, low=0)
    if w.shape[0] != w.shape[1]:
        raise checks.fail("work", "a square (cp, cp) table", w.shape)
    critical = sum(int(x) for x in w.max(axis=0))  # Python integers: no int64 wrap
    ideal = float(np.sum(w, dtype=np.float64)) / w.shape[0]
    efficiency = ideal / critical if critical else 1.0
    return {"critical": critical, "ideal": ideal, "efficiency": efficiency, "idle": 1 - efficiency}


def ring_attention(q, k, v, cp, causal=True, layout="zigzag"):
    """Ring attention of ``q``, ``k``, ``v`` (heads, s, head_dim) over ``cp`` simulated
    ranks; returns ``(output, work)``: the attention output (heads, s, head_dim) in the
    original token order, and ``work[r, step]``, the query-key pairs rank r computed at
    each step, counted from the masks it applied (compare
    :func:`~scaleout.context_parallel.ring_work`).

    Each rank keeps the rows of :func:`~scaleout.context_parallel.shard_positions`; at every step
    it attends to the K/V block it holds (skipping it if every pair is masked), merges the partial
    result with the exact log-sum-exp rule, then every rank passes its block to rank r + 1."""
    q, k, v = _qkv(q, k, v)
    causal = checks.boolean("causal", causal)
    if q.shape != k.shape:
        raise checks.fail("k", f"keys and values of the queries' shape {q.shape}", k.shape)
    seq, cp, layout = _sizes(q.shape[1], cp, layout, checks.MAX_ELEMENTS)
    if cp * cp > MAX_RING_STEPS:
        raise checks.fail("cp", f"at most {int(MAX_RING_STEPS**0.5)} (cp x cp block steps at "
                          f"most {MAX_RING_STEPS})", cp)  # fmt: skip
    pos = shard_positions(seq, cp, layout)
    local_q = [q[:, p] for p in pos]
    held = [(k[:, p], v[:, p], p) for p in pos]  # the K/V block (and its positions) on rank r
    result: list[Partial | None] = [None] * cp
    work = np.zeros((cp, cp), dtype=np.int64)
    for step in range(cp):
        for r in range(cp):
            kb, vb, kpos = held[r]
            mask = causal_mask(pos[r], kpos) if causal else None
            visible = int(mask.sum()) if causal else pos[r].size * kpos.size
            work[r, step] = visible
            if visible:
                part = block_attention(local_q[r], kb, vb, mask)
                result[r] = part if result[r] is None else merge(result[r], part)
        held = [held[(r - 1) % cp] for r in range(cp)]  # send to r + 1, receive from r - 1
    out = np.empty_like(q)
    for r in range(cp):
        out[:, pos[r]] = result[r].out
    return out, work
