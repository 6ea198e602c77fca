"""DeepSpeed-Ulysses and all-gather context parallelism, in numpy.

Taught in chapter 8 (``chapters/08_context_parallel.ipynb``). Arrays (heads, s, head_dim).

* **Ulysses** (Jacobs et al. 2023, "DeepSpeed Ulysses", arXiv 2309.14509, Sec. 3): every
  rank holds s/cp tokens of all heads. An all-to-all swaps the sharded dimension: afterwards
  rank j holds *all* s tokens of heads j h/cp .. (j+1) h/cp - 1, computes ordinary attention
  for them, and a second all-to-all swaps back. The number of heads (and of key/value
  heads) must be divisible by cp. The all-to-alls use the definition of
  :func:`scaleout.collectives.reference`.
* **All-gather** (Llama 3, arXiv 2407.21783, Sec. 3.3.2; Megatron-Core's description of its
  CP): every rank all-gathers the keys and values of the whole sequence, then computes
  attention for its own queries. Simple, supports any mask, but the all-gather is exposed
  and each rank briefly holds all of K and V.

Limits: ``cp`` at most :data:`~scaleout.context_parallel.ring.MAX_CP`; arrays as in
:mod:`~scaleout.context_parallel.attention`.
"""

from __future__ import annotations

import numpy as np

from .. import checks
from .. import collectives as C
from .attention import _qkv, attention_reference, block_attention, causal_mask
from .ring import LAYOUTS, MAX_CP, shard_positions

__all__ = ["allgather_attention", "heads_to_sequence", "sequence_to_heads", "ulysses_attention"]


def _shards(name, shards, ndim=4):
    x = checks.array(name, shards, ndim=ndim)
    if x.shape[0] > MAX_CP:
        raise checks.fail(name, f"at most {MAX_CP} shards (one per rank)", x.shape[0])
    return x


def sequence_to_heads(shards) -> np.ndarray:
    """Ulysses' first all-to-all. ``shards[r]`` (heads, s/cp, d) is rank r's slice of the
    sequence for all heads; returns (cp, heads/cp, s, d): rank j's heads for the whole
    sequence. Rank r sends its block of heads j to rank j (an all-to-all: chunk j of rank
    r's buffer lands on rank j, :func:`scaleout.collectives.reference`)."""
    x = _shards("shards", shards)
    cp, h, n, d = x.shape
    if h % cp:
        raise checks.fail("shards", f"shards whose head count is divisible by cp = {cp}", h)
    recv = C.reference("alltoall", x.reshape(cp, -1))  # chunk j of a buffer = heads block j
    return np.stack([r.reshape(cp, h // cp, n, d).transpose(1, 0, 2, 3).reshape(h // cp, cp * n, d)
                     for r in recv])  # fmt: skip


def heads_to_sequence(shards) -> np.ndarray:
    """Ulysses' second all-to-all, the inverse of
    :func:`~scaleout.context_parallel.sequence_to_heads`: ``shards[j]`` (heads/cp, s, d) on rank j
    becomes (cp, heads, s/cp, d), rank r's slice of the sequence for all heads."""
    x = _shards("shards", shards)
    cp, hc, s, d = x.shape
    if s % cp:
        raise checks.fail("shards", f"shards whose sequence length is divisible by cp = {cp}", s)
    send = x.reshape(cp, hc, cp, s // cp, d).transpose(0, 2, 1, 3, 4)  # chunk r: seq block r
    recv = C.reference("alltoall", send.reshape(cp, -1))
    return np.stack([r.reshape(cp * hc, s // cp, d) for r in recv])


def ulysses_attention(q, k, v, cp, causal=True) -> np.ndarray:
    """Attention with DeepSpeed-Ulysses over ``cp`` simulated ranks: sequence-sharded q, k,
    v (contiguous slices of s/cp tokens), all-to-all to head-sharded, attention over the
    whole sequence for heads/cp heads per rank, all-to-all back. Returns (heads, s, d) in
    the original order. ``heads`` and ``s`` must be divisible by ``cp``."""
    q, k, v = _qkv(q, k, v)
    causal = checks.boolean("causal", causal)
    cp = checks.integer("cp", cp, 1, MAX_CP)
    h, s, d = q.shape
    if k.shape != q.shape:
        raise checks.fail("k", f"keys and values of the queries' shape {q.shape}", k.shape)
    if h % cp:
        raise checks.fail("cp", f"a divisor of the number of heads ({h})", cp)
    if s % cp:
        raise checks.fail("cp", f"a divisor of the sequence length ({s})", cp)

    def by_sequence(x):  # (cp, h, s/cp, d): rank r's contiguous slice
        return x.reshape(h, cp, s // cp, d).transpose(1, 0, 2, 3)

    qh, kh, vh = (sequence_to_heads(by_sequence(x)) for x in (q, k, v))  # (cp, h/cp, s, d)
    out = np.stack([attention_reference(qh[j], kh[j], vh[j], causal) for j in range(cp)])
    back = heads_to_sequence(out)  # (cp, h, s/cp, d)
    return back.transpose(1, 0, 2, 3).reshape(h, s, d)


def allgather_attention(q, k, v, cp, causal=True, layout="zigzag") -> np.ndarray:
    """Attention with all-gather context parallelism (Llama 3's): each of ``cp`` ranks holds
    the rows of :func:`~scaleout.context_parallel.shard_positions` (``layout``),
    all-gathers every rank's keys and values, and attends its own queries over all of them
    with the causal mask of their global positions. Returns (heads, s, d) in order."""
    q, k, v = _qkv(q, k, v)
    causal = checks.boolean("causal", causal)
    layout = checks.choice("layout", layout, LAYOUTS)
    if k.shape != q.shape:
        raise checks.fail("k", f"keys and values of the queries' shape {q.shape}", k.shape)
    pos = shard_positions(q.shape[1], cp, layout)
    gathered = pos.reshape(-1)  # the all-gather concatenates every rank's block
    kg, vg = k[:, gathered], v[:, gathered]
    out = np.empty_like(q)
    for r in range(pos.shape[0]):
        mask = causal_mask(pos[r], gathered) if causal else None
        out[:, pos[r]] = block_attention(q[:, pos[r]], kg, vg, mask).out
    return out
