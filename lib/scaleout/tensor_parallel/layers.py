"""Reference layers of tensor parallelism, in numpy: split GEMMs, Megatron's MLP and attention.

Sources: Shoeybi et al., "Megatron-LM" (arXiv 1909.08053), Sec. 3: the column and the row
split of Z = X Y (eqs. 2-3), the MLP split by columns then rows, attention split by heads.
Every function returns the per-rank partial results and the combined result, so a test can
compare them with the dense layer (chapter 4 does, and so do the torch layers of
:mod:`scaleout.demos.tensor_parallel`).

Inputs are checked with :mod:`scaleout.checks`: arrays are finite and real, shapes must
agree, t must divide the split dimension (:mod:`scaleout.tensor_parallel.sizes` for the
limits), and every array a function builds holds at most ``checks.MAX_ELEMENTS`` values.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .. import checks
from .sizes import MAX_HEADS, MAX_HIDDEN, MAX_T, divides, t_size

COMBINES = ("allgather", "allreduce")
MODES = ("column", "row")


def shard_slice(size: int, t: int, rank: int) -> slice:
    """The contiguous 1/t of ``size`` that ``rank`` holds; t must divide size."""
    size = checks.integer("size", size, 1, checks.MAX_ELEMENTS)
    t = t_size(t)
    divides(t, size, "the split dimension")
    rank = checks.integer("rank", rank, 0, t - 1)
    width = size // t
    return slice(rank * width, (rank + 1) * width)


def _index_pair(name: str, value) -> tuple[slice, slice]:
    if not (
        isinstance(value, tuple) and len(value) == 2 and all(isinstance(v, slice) for v in value)
    ):
        raise checks.fail(name, "a (row slice, column slice) pair", value)
    return value


@dataclass(frozen=True)
class Shard:
    """What one rank holds of X (m, k) and Y (k, n) and which block of Z = X Y it computes:
    (row slice, column slice) each; in the row split its Z block is a partial sum."""

    rank: int
    x: tuple[slice, slice]
    y: tuple[slice, slice]
    z: tuple[slice, slice]

    def __post_init__(self):
        checks.integer("rank", self.rank, 0, MAX_T - 1)
        for name in ("x", "y", "z"):
            _index_pair(name, getattr(self, name))


def matmul_shards(mode: str, m: int, k: int, n: int, t: int) -> list[Shard]:
    """Per-rank blocks of Z = X Y split t ways (Shoeybi et al. 2019, Sec. 3, eqs. 2-3).

    ``"column"``: Y split by columns, X replicated; rank i computes column block i of Z
    (combine: all-gather). ``"row"``: X split by columns and Y by rows; rank i computes a
    full-size partial Z_i = X_i Y_i (combine: all-reduce, Z = sum_i Z_i).
    """
    mode = checks.choice("mode", mode, MODES)
    m, k, n = (
        checks.integer(name, v, 1, checks.MAX_ELEMENTS)
        for name, v in zip("mkn", (m, k, n), strict=True)
    )
    t = t_size(t)
    divides(t, n if mode == "column" else k, "the split dimension")
    every = slice(None)
    shards = []
    for r in range(t):
        if mode == "column":
            cols = shard_slice(n, t, r)
            shards.append(Shard(r, (every, every), (every, cols), (every, cols)))
        else:
            inner = shard_slice(k, t, r)
            shards.append(Shard(r, (every, inner), (inner, every), (every, every)))
    return shards


@dataclass(frozen=True)
class SplitResult:
    """Per-rank local results (t, ...) and the combined result every rank ends with."""

    partials: np.ndarray
    output: np.ndarray
    combine: str  # "allgather" (concatenate) or "allreduce" (sum)

    def __post_init__(self):
        object.__setattr__(self, "partials", checks.array("partials", self.partials))
        object.__setattr__(self, "output", checks.array("output", self.output))
        if self.partials.ndim < 1:
            raise checks.fail("partials", "an array with one row per rank", self.partials)
        checks.choice("combine", self.combine, COMBINES)


def _size_of(shape) -> int:
    return math.prod(int(d) for d in shape)


def _bounded(name: str, shape) -> None:
    """Raise if an array of ``shape`` that a function would build is too large."""
    if _size_of(shape) > checks.MAX_ELEMENTS:
        raise ValueError(
            f"{name} must have at most {checks.MAX_ELEMENTS} elements, got shape {tuple(shape)}"
        )


def _matrices(x, y):
    x = checks.array("x", x)
    y = checks.array("y", y, ndim=2)
    if x.ndim < 2 or x.shape[-1] != y.shape[0]:
        raise ValueError(f"x must be (..., m, k) with k = y.shape[0] = {y.shape[0]}, got {x.shape}")
    return x, y


def _finite(name: str, value):
    with np.errstate(all="ignore"):
        return checks.finite_result(name, value)


def column_parallel_matmul(x, y, t: int) -> SplitResult:
    """Z = X Y with Y split by columns: partials (t, ..., m, n/t), output their concatenation."""
    x, y = _matrices(x, y)
    shards = matmul_shards("column", x.shape[-2], y.shape[0], y.shape[1], t)
    _bounded("the product x @ y", (*x.shape[:-1], y.shape[1]))
    with np.errstate(all="ignore"):
        partials = np.stack([x @ y[s.y] for s in shards])  # rank i: X Y_i, (..., m, n/t)
    partials = _finite("the product x @ y", partials)
    return SplitResult(partials, np.concatenate(list(partials), axis=-1), "allgather")


def row_parallel_matmul(x, y, t: int) -> SplitResult:
    """Z = X Y with X split by columns, Y by rows: partials (t, ..., m, n), output their sum."""
    x, y = _matrices(x, y)
    shards = matmul_shards("row", x.shape[-2], y.shape[0], y.shape[1], t)
    _bounded("the partial products (t, ..., m, n)", (len(shards), *x.shape[:-1], y.shape[1]))
    with np.errstate(all="ignore"):
        partials = np.stack([x[..., s.x[1]] @ y[s.y] for s in shards])  # rank i: X_i Y_i
        output = partials.sum(axis=0)
    return SplitResult(
        _finite("the product x @ y", partials), _finite("x @ y", output), "allreduce"
    )


def gelu(x):
    """GeLU, tanh form (Hendrycks & Gimpel, arXiv 1606.08415, Sec. 2; torch's
    ``F.gelu(x, approximate="tanh")``): 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).

    ``x``: finite real numbers (a scalar gives a float). For abs(x) beyond ~1e102 the cube
    overflows to +-inf, tanh gives +-1, and the result is its limit, x or -0.
    """
    x = checks.array("x", x, empty=True)
    with np.errstate(over="ignore"):
        y = 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))
    return float(y) if y.ndim == 0 else y


def _mlp_weights(x, w1, b1, w2, b2):
    x = checks.array("x", x)
    w1, w2 = checks.array("w1", w1, ndim=2), checks.array("w2", w2, ndim=2)
    b1, b2 = checks.array("b1", b1, ndim=1), checks.array("b2", b2, ndim=1)
    h, f = w1.shape
    if x.ndim < 1 or x.shape[-1] != h:
        raise ValueError(f"x must be (..., h) with h = w1.shape[0] = {h}, got {x.shape}")
    for name, arr, shape in (("w2", w2, (f, h)), ("b1", b1, (f,)), ("b2", b2, (h,))):
        if arr.shape != shape:
            raise ValueError(f"{name} must have shape {shape} (w1 is {w1.shape}), got {arr.shape}")
    _bounded("the MLP's hidden activation (..., f)", (*x.shape[:-1], f))
    return x, w1, b1, w2, b2


def mlp(x, w1, b1, w2, b2):
    """Dense MLP: GeLU(x w1 + b1) w2 + b2; x (..., h), w1 (h, f), b1 (f,), w2 (f, h), b2 (h,)."""
    x, w1, b1, w2, b2 = _mlp_weights(x, w1, b1, w2, b2)
    with np.errstate(all="ignore"):
        z = gelu(_finite("x @ w1 + b1", x @ w1 + b1)) @ w2 + b2
    return _finite("the MLP output", z)


def megatron_mlp(x, w1, b1, w2, b2, t: int) -> SplitResult:
    """The MLP on t ranks (Shoeybi et al. 2019, Sec. 3, Fig. 3a): w1, b1 split by columns,
    GeLU applied locally, w2 split by rows; the partials (t, ..., h) are summed by g's
    all-reduce, then b2 (replicated) is added once. t must divide f = w1.shape[1]."""
    x, w1, b1, w2, b2 = _mlp_weights(x, w1, b1, w2, b2)
    t = t_size(t)
    divides(t, w1.shape[1], "the MLP width f")
    _bounded("the partial outputs (t, ..., h)", (t, *x.shape))
    cols = [shard_slice(w1.shape[1], t, r) for r in range(t)]
    with np.errstate(all="ignore"):
        hidden = [_finite("x @ w1 + b1", x @ w1[:, c] + b1[c]) for c in cols]  # (..., f/t)
        partials = np.stack([gelu(a) @ w2[c] for a, c in zip(hidden, cols, strict=True)])
        output = partials.sum(axis=0) + b2
    return SplitResult(
        _finite("the partial outputs", partials), _finite("the MLP output", output), "allreduce"
    )


def _attention_inputs(x, ws, heads, t=1):
    x = checks.array("x", x)
    if x.ndim < 2:
        raise ValueError(f"x must be (..., s, h), got an array of shape {x.shape}")
    h = x.shape[-1]
    checks.integer("h", h, 1, MAX_HIDDEN)
    out = []
    for name, w in zip(("wq", "wk", "wv", "wo"), ws, strict=True):
        w = checks.array(name, w, ndim=2)
        if w.shape != (h, h):
            raise ValueError(f"{name} must have shape {(h, h)} (x is {x.shape}), got {w.shape}")
        out.append(w)
    heads = checks.integer("heads", heads, 1, MAX_HEADS)
    if h % heads:
        raise checks.fail("heads", f"a divisor of h = {h}", heads)
    t = t_size(t)
    divides(t, heads, "the number of heads")
    s = x.shape[-2]
    _bounded("the attention scores (..., heads, s, s)", (*x.shape[:-2], heads, s, s))
    _bounded("the partial outputs (t, ..., s, h)", (t, *x.shape))
    return x, out, heads, t, h // heads  # d = h / heads values per head


def _softmax(z):
    z = z - z.max(axis=-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


def _attend(x, wq, wk, wv, nheads: int, d: int, causal: bool):
    """Heads side by side: (..., s, nheads * d). Head j uses columns j*d:(j+1)*d."""
    s = x.shape[-2]

    def split(w):  # (..., s, nheads*d) -> (..., nheads, s, d)
        return np.swapaxes((x @ w).reshape(*x.shape[:-1], nheads, d), -2, -3)

    q, k, v = split(wq), split(wk), split(wv)
    scores = _finite("the attention scores", q @ np.swapaxes(k, -1, -2) / math.sqrt(d))
    if causal:
        scores = np.where(np.triu(np.ones((s, s), dtype=bool), 1), -np.inf, scores)
    out = _softmax(scores) @ v  # (..., nheads, s, d)
    return np.swapaxes(out, -2, -3).reshape(*x.shape[:-1], nheads * d)


def attention(x, wq, wk, wv, wo, heads: int, causal: bool = True):
    """Dense multi-head self-attention without biases (Vaswani et al. 2017, Sec. 3.2):
    x (..., s, h), wq/wk/wv/wo (h, h); softmax(q k^T / sqrt(d)) v per head, then x wo."""
    x, (wq, wk, wv, wo), heads, _, d = _attention_inputs(x, (wq, wk, wv, wo), heads)
    causal = checks.boolean("causal", causal)
    with np.errstate(all="ignore"):
        return _finite("the attention output", _attend(x, wq, wk, wv, heads, d, causal) @ wo)


def tensor_parallel_attention(x, wq, wk, wv, wo, heads: int, t: int, causal=True):
    """Attention split by heads (Shoeybi et al. 2019, Sec. 3, Fig. 3b): rank i holds heads
    i a/t .. (i+1) a/t, i.e. columns of wq, wk, wv and rows of wo; partials (t, ..., s, h)
    are summed by g. t must divide the head count."""
    x, (wq, wk, wv, wo), heads, t, d = _attention_inputs(x, (wq, wk, wv, wo), heads, t)
    causal = checks.boolean("causal", causal)
    rows = [shard_slice(x.shape[-1], t, r) for r in range(t)]
    with np.errstate(all="ignore"):
        partials = np.stack(
            [_attend(x, wq[:, c], wk[:, c], wv[:, c], heads // t, d, causal) @ wo[c] for c in rows]
        )
        output = partials.sum(axis=0)
    return SplitResult(
        _finite("the partial outputs", partials),
        _finite("the attention output", output),
        "allreduce",
    )


def valid_tensor_parallel_sizes(
    h: int, heads: int, limit: int = 64, *, kv_heads: int | None = None
) -> list[int]:
    """Every t <= ``limit`` that divides h, the head count (and so 4h) and, with grouped-query
    attention, the ``kv_heads`` key/value heads (None: as many as query heads).

    Megatron-Core splits the key/value heads over the tensor-parallel ranks and requires t to
    divide them (``megatron/core/transformer/attention.py``: ``divide(num_query_groups,
    world_size)`` asserts it); with more ranks than KV heads each rank would hold copies of
    the KV projections (inference engines such as vLLM replicate them). ``limit`` is at most
    ``MAX_T``; the loop runs over t <= min(limit, heads) only.
    """
    h = checks.integer("h", h, 1, MAX_HIDDEN)
    heads = checks.integer("heads", heads, 1, MAX_HEADS)
    limit = checks.integer("limit", limit, 1, MAX_T)
    kv = heads if kv_heads is None else checks.integer("kv_heads", kv_heads, 1, heads)
    if heads % kv:
        raise checks.fail("kv_heads", f"a divisor of heads ({heads})", kv)
    return [t for t in range(1, min(limit, kv) + 1) if h % t == 0 and kv % t == 0]
