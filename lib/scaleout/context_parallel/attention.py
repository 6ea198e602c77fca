"""Attention block by block: the online softmax and the exact merge of partial results.

Taught in chapter 8, "Sequence and context parallelism" (``chapters/08_context_parallel.ipynb``).
Arrays have shape ``(heads, sequence, head_dim)``; scores are scaled by ``1/sqrt(head_dim)``
(Vaswani et al. 2017, eq. 1).

Softmax attention of a query row over all keys equals a combination of attention over
*blocks* of keys, if each block also returns the log-sum-exp of its scores (Milakov &
Gimelshein 2018, "Online normalizer calculation for softmax", arXiv 1805.02867;
FlashAttention, Dao et al. 2022, Sec. 3.1; FlashAttention-2, Dao 2023, Sec. 3.1). For a
block B with scores x_j = q.k_j / sqrt(d):

    lse_B = log sum_{j in B} exp(x_j),     out_B = sum_{j in B} exp(x_j - lse_B) v_j,

and two disjoint blocks merge exactly:

    lse = log(exp(lse_A) + exp(lse_B)),    out = exp(lse_A - lse) out_A + exp(lse_B - lse) out_B.

A query row with no visible key in a block (every key masked) has lse = -inf and out = 0,
the merge's identity. Ring attention and FlashAttention's inner loop are this merge applied
block after block; the order of the blocks does not matter.

Limits: every array at most ``checks.MAX_ELEMENTS`` values, and the score matrix of one
block (heads x queries x keys) as well;
:func:`scaleout.context_parallel.blockwise_attention` at most ``MAX_BLOCK_STEPS`` blocks
(ceil(keys / block), each a Python step) and at most ``MAX_ATTENTION_WORK`` multiply-adds
in all (heads x queries x keys x head_dim). Scores q.k / sqrt(d) and outputs must be finite
in float64: inputs whose product overflows are
rejected (never reported as "no visible key").
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import checks

__all__ = [
    "MAX_ATTENTION_WORK",
    "MAX_BLOCK_STEPS",
    "Partial",
    "attention_reference",
    "block_attention",
    "blockwise_attention",
    "causal_mask",
    "merge",
]

#: Largest head dimension accepted (the largest in use is 256).
MAX_HEAD_DIM = 4096
#: Most key blocks :func:`blockwise_attention` loops over (one Python step each).
MAX_BLOCK_STEPS = 4096
#: Most multiply-adds (heads x queries x keys x head_dim) of one attention call.
MAX_ATTENTION_WORK = 2**32


def _qkv(q, k, v):
    """q (h, sq, d), k and v (h, sk, d): finite float64 arrays of matching shapes."""
    q = checks.array("q", q, ndim=3)
    k = checks.array("k", k, ndim=3)
    v = checks.array("v", v, ndim=3)
    if q.shape[2] > MAX_HEAD_DIM:
        raise checks.fail("q", f"an array whose head_dim is at most {MAX_HEAD_DIM}", q.shape)
    if k.shape != v.shape or k.shape[0] != q.shape[0] or k.shape[2] != q.shape[2]:
        raise checks.fail("q, k, v", "arrays (heads, s_q, d), (heads, s_k, d) and (heads, s_k, d)",
                          (q.shape, k.shape, v.shape))  # fmt: skip
    if q.shape[0] * q.shape[1] * k.shape[1] > checks.MAX_ELEMENTS:
        raise checks.fail("q, k", f"blocks whose score matrix holds at most "
                          f"{checks.MAX_ELEMENTS} values", (q.shape, k.shape))  # fmt: skip
    work = q.shape[0] * q.shape[1] * k.shape[1] * q.shape[2]
    if work > MAX_ATTENTION_WORK:
        raise checks.fail("heads x queries x keys x head_dim", f"at most {MAX_ATTENTION_WORK} "
                          "multiply-adds", work)  # fmt: skip
    return q, k, v


def _scores(q, k):
    """Scaled scores q k^T / sqrt(d), (h, sq, sk); an overflow is the caller's error."""
    with np.errstate(over="ignore", invalid="ignore"):
        scores = q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[2])
    if not np.all(np.isfinite(scores)):
        raise checks.fail("q and k", "values whose scaled scores q.k / sqrt(head_dim) are "
                          "finite in float64 (scale them down)", "an overflow")  # fmt: skip
    return scores


def _finite_out(out):
    if not np.all(np.isfinite(out)):
        raise checks.fail("v", "values whose attention output (a weighted mean of them) stays "
                          "finite in float64", "an output that overflows")  # fmt: skip
    return out


@dataclass(frozen=True)
class Partial:
    """Attention of some query rows over one block (or a union of blocks) of keys:
    ``out`` (heads, queries, head_dim), normalised over those keys, and ``lse`` (heads,
    queries), the log-sum-exp of their scaled scores (-inf where no key was visible)."""

    out: np.ndarray
    lse: np.ndarray

    def __post_init__(self):
        out = checks.array("out", self.out, ndim=3)
        lse = checks.array("lse", self.lse, ndim=2, finite=False)
        if np.any(lse == np.inf):
            raise checks.fail("lse", "log-sum-exps < +inf", float(np.inf))
        if lse.shape != out.shape[:2]:
            raise checks.fail("lse", f"an array of shape {out.shape[:2]} (heads, queries)",
                              lse.shape)  # fmt: skip
        if np.any(out[np.isneginf(lse)] != 0):
            raise checks.fail("out", "zero on rows whose lse is -inf (no visible key)", "non-zero")
        object.__setattr__(self, "out", out)
        object.__setattr__(self, "lse", lse)


def _mask(name, mask, shape):
    """None (every key visible) or a boolean (queries, keys) array, True = visible."""
    if mask is None:
        return None
    try:
        m = np.asarray(mask) if isinstance(mask, np.ndarray | list | tuple) else None
    except ValueError:  # ragged nested lists
        m = None
    if m is None or m.dtype != bool or m.shape != shape:
        raise checks.fail(name, f"None or a boolean array of shape {shape} (True = visible)",
                          mask if m is None else f"{m.dtype} array of shape {m.shape}")  # fmt: skip
    return m


def block_attention(q, k, v, mask=None) -> Partial:
    """Attention of queries ``q`` (h, sq, d) over one block of keys and values ``k``, ``v``
    (h, sk, d), with an optional boolean ``mask`` (sq, sk), True where query i may see key
    j: the block's normalised output and its log-sum-exp (see the module docstring).

    The maximum score of each row is subtracted before ``exp`` (no overflow), as
    FlashAttention does (Dao et al. 2022, Algorithm 1)."""
    q, k, v = _qkv(q, k, v)
    mask = _mask("mask", mask, (q.shape[1], k.shape[1]))
    scores = _scores(q, k)  # (h, sq, sk)
    if mask is not None:
        scores = np.where(mask[None], scores, -np.inf)
    row_max = np.max(scores, axis=2, keepdims=True, initial=-np.inf)  # (h, sq, 1)
    seen = np.isfinite(row_max)
    shift = np.where(seen, row_max, 0.0)
    with np.errstate(under="ignore"):
        p = np.exp(scores - shift)  # masked entries: exp(-inf) = 0
    total = p.sum(axis=2, keepdims=True)
    with np.errstate(over="ignore", invalid="ignore"):
        out = _finite_out(np.where(seen, p @ v / np.where(seen, total, 1.0), 0.0))
    with np.errstate(divide="ignore"):
        lse = np.where(seen, shift + np.log(np.where(seen, total, 1.0)), -np.inf)[..., 0]
    return Partial(out, lse)


def merge(a: Partial, b: Partial) -> Partial:
    """The exact combination of two partial results over disjoint key blocks (module
    docstring): lse = logaddexp(lse_a, lse_b), out = the two outputs weighted by
    exp(lse_a - lse) and exp(lse_b - lse). Rows no key of either block sees stay -inf."""
    checks.instance("a", a, Partial)
    checks.instance("b", b, Partial)
    if a.out.shape != b.out.shape:
        raise checks.fail("b", f"a Partial of the same shape as a, {a.out.shape}", b.out.shape)
    lse = np.logaddexp(a.lse, b.lse)
    seen = np.isfinite(lse)
    ref = np.where(seen, lse, 0.0)
    with np.errstate(under="ignore"):
        wa = np.where(seen, np.exp(a.lse - ref), 0.0)[..., None]
        wb = np.where(seen, np.exp(b.lse - ref), 0.0)[..., None]
    with np.errstate(over="ignore", invalid="ignore"):
        return Partial(_finite_out(wa * a.out + wb * b.out), lse)


def causal_mask(q_positions, k_positions) -> np.ndarray:
    """The causal mask between queries and keys at global sequence positions: True where
    key position <= query position (a token sees itself and the tokens before it)."""
    qp = checks.array("q_positions", q_positions, ndim=1, integer=True, low=0)
    kp = checks.array("k_positions", k_positions, ndim=1, integer=True, low=0)
    if qp.size * kp.size > checks.MAX_ELEMENTS:
        raise checks.fail("q_positions, k_positions", f"at most {checks.MAX_ELEMENTS} pairs",
                          qp.size * kp.size)  # fmt: skip
    return kp[None, :] <= qp[:, None]


def attention_reference(q, k, v, causal=True) -> np.ndarray:
    """Softmax attention softmax(q k^T / sqrt(d)) v in one piece, the reference every
    parallel version is checked against; ``causal``: query i sees keys 0..i (q and k of the
    same length). Returns (heads, s, head_dim)."""
    q, k, v = _qkv(q, k, v)
    causal = checks.boolean("causal", causal)
    if causal and q.shape[1] != k.shape[1]:
        raise checks.fail("k", f"keys as many as the queries ({q.shape[1]}) when causal",
                          k.shape[1])  # fmt: skip
    scores = _scores(q, k)
    if causal:
        scores = np.where(np.tril(np.ones(scores.shape[1:], dtype=bool))[None], scores, -np.inf)
    scores = scores - scores.max(axis=2, keepdims=True)
    with np.errstate(under="ignore", over="ignore", invalid="ignore"):
        weights = np.exp(scores)
        return _finite_out((weights / weights.sum(axis=2, keepdims=True)) @ v)


def blockwise_attention(q, k, v, block, causal=True) -> Partial:
    """Attention computed one key block of ``block`` keys at a time and merged (the
    flash-style loop of one device): equal to
    :func:`~scaleout.context_parallel.attention_reference`, with the final log-sum-exp of every
    row."""
    q, k, v = _qkv(q, k, v)
    causal = checks.boolean("causal", causal)
    sk = k.shape[1]
    block = checks.integer("block", block, 1, sk)
    if -(-sk // block) > MAX_BLOCK_STEPS:
        raise checks.fail("block", f"at least keys / {MAX_BLOCK_STEPS} = "
                          f"{-(-sk // MAX_BLOCK_STEPS)} (ceil(keys / block) steps at most "
                          f"{MAX_BLOCK_STEPS})", block)  # fmt: skip
    if causal and q.shape[1] != sk:
        raise checks.fail("k", f"keys as many as the queries ({q.shape[1]}) when causal", sk)
    qpos = np.arange(q.shape[1])
    total = None
    for start in range(0, sk, block):  # ceil(sk / block) <= sk iterations
        kpos = np.arange(start, min(start + block, sk))
        mask = causal_mask(qpos, kpos) if causal else None
        part = block_attention(q, k[:, kpos], v[:, kpos], mask)
        total = part if total is None else merge(total, part)
    return total
