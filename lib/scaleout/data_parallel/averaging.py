"""Gradient averaging: each replica's mean gradient, all-reduced and divided by p, equals
the full-batch mean gradient when the shards are equal (Li et al., VLDB 2020, Sec. 2-3);
a data-parallel SGD run that shows it.

Taught in chapter 2, "Data parallelism" (``chapters/02_data_parallel.ipynb``).
"""

from __future__ import annotations

import numpy as np

from .. import checks, collectives
from .limits import MAX_BATCH, MAX_RANKS, MAX_SGD_WORK


def shard_sizes(batch_size: int, world_size: int) -> np.ndarray:
    """Samples per rank when ``batch_size`` samples are split into ``world_size`` contiguous
    shards as ``np.array_split`` does (:func:`scaleout.collectives.chunk_bounds`)."""
    batch = checks.integer("batch_size", batch_size, 1, MAX_BATCH)
    ranks = checks.integer("world_size", world_size, 1, MAX_RANKS)
    return np.diff(collectives.chunk_bounds(batch, ranks))


def _grads(name: str, x, ndim: int = 2) -> np.ndarray:
    return checks.array(name, x, ndim=ndim)


def local_gradients(per_sample_grads, sizes) -> np.ndarray:
    """(p, d): rank r's mean gradient over its shard of ``sizes[r]`` consecutive samples.

    ``per_sample_grads`` is (B, d) (one row per sample, as a loss that averages over the
    batch would weigh them); ``sizes`` are p shard sizes >= 1 that add up to B.
    """
    g = _grads("per_sample_grads", per_sample_grads)
    sizes = checks.array("sizes", sizes, ndim=1, integer=True, low=1, max_size=MAX_RANKS)
    if int(sizes.sum()) != g.shape[0]:
        raise checks.fail("sizes", f"shard sizes that add up to the batch size {g.shape[0]}",
                          sizes.tolist())  # fmt: skip
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    means = np.add.reduceat(g, starts, axis=0) / sizes[:, None]
    return checks.finite_result("the shard gradients", means)


def average_gradients(rank_grads, sizes=None) -> np.ndarray:
    """(p, d): what every rank holds after all-reducing (sum) its gradient and dividing.

    ``sizes=None`` divides by p, as DDP and the hand-written all-reduce do (an unweighted
    mean of the ranks' means). Given the shard sizes, each rank first multiplies its mean
    by ``p * sizes[r] / B``, so that the average is the full-batch mean even for unequal
    shards. The sum is :func:`scaleout.collectives.reference` ("allreduce").
    """
    g = _grads("rank_grads", rank_grads)
    p = g.shape[0]
    if p > MAX_RANKS:
        raise checks.fail("rank_grads", f"one row per rank, at most {MAX_RANKS} rows", g.shape)
    if sizes is not None:
        sizes = checks.array("sizes", sizes, ndim=1, low=0.0, low_open=True, max_size=MAX_RANKS)
        if sizes.shape != (p,):
            raise checks.fail("sizes", f"{p} positive shard sizes (one per rank)", sizes.tolist())
        g = g * (p * (sizes / sizes.sum()))[:, None]
    with np.errstate(all="ignore"):  # overflow is reported below, as the library's error
        total = np.stack(collectives.reference("allreduce", g))
    return checks.finite_result("the all-reduced gradient", total / p)


def equivalence_error(per_sample_grads, sizes, weighted: bool = False) -> float:
    """Largest absolute difference between the data-parallel gradient of any rank and the
    full-batch mean gradient, over ranks and elements.

    Zero (up to rounding) for equal shards, or for any shards with ``weighted=True``: then p
    replicas take exactly the step that one process takes on the whole batch, and by
    induction over steps (same initial weights, same update) train the same model.
    """
    g = _grads("per_sample_grads", per_sample_grads)
    weighted = checks.boolean("weighted", weighted)
    local = local_gradients(g, sizes)
    dp = average_gradients(local, checks.array("sizes", sizes, ndim=1) if weighted else None)
    full = checks.finite_result("the full-batch gradient", g.mean(axis=0))
    return float(checks.finite_result("the difference", np.max(np.abs(dp - full))))


def squared_error_grads(w, x, y) -> np.ndarray:
    """(B, d) per-sample gradients of the loss 0.5 (x_b . w - y_b)^2 of a linear model:
    (x_b . w - y_b) x_b. ``w`` (d,), ``x`` (B, d), ``y`` (B,)."""
    w = checks.array("w", w, ndim=1)
    x = checks.array("x", x, ndim=2)
    y = checks.array("y", y, ndim=1)
    if w.shape != (x.shape[1],):
        raise checks.fail("w", f"a vector of x's {x.shape[1]} features", w.shape)
    if y.shape != (x.shape[0],):
        raise checks.fail("y", f"a vector of x's {x.shape[0]} samples", y.shape)
    with np.errstate(all="ignore"):  # overflow is reported below, as the library's error
        grads = (x @ w - y)[:, None] * x
    return checks.finite_result("the per-sample gradients", grads)


def _batch(i: int, pair, p: int) -> tuple[np.ndarray, np.ndarray]:
    if not isinstance(pair, list | tuple) or len(pair) != 2:
        raise checks.fail(f"batches[{i}]", "an (x, y) pair", pair)
    x = checks.array(f"batches[{i}][0]", pair[0], ndim=2)
    y = checks.array(f"batches[{i}][1]", pair[1], ndim=1)
    if len(y) != len(x):
        raise checks.fail(f"batches[{i}][1]", f"{len(x)} targets, one per sample", len(y))
    if len(x) < p:
        raise checks.fail(f"batches[{i}]", f"a batch of at least world_size={p} samples", len(x))
    return x, y


def data_parallel_sgd(
    per_sample_grads, w0, batches, world_size: int, lr: float, weighted: bool = False
) -> np.ndarray:
    """Train with plain SGD on ``world_size`` replicas; return their weights, (p, d).

    Every replica starts from ``w0``; for each ``(x, y)`` of ``batches`` (a list) rank r
    takes its shard (:func:`shard_sizes`), computes its mean gradient with
    ``per_sample_grads(w, x, y) -> (B, d)``, all-reduces (:func:`average_gradients`) and
    steps ``w -= lr * g``. ``world_size=1`` is single-process full-batch training, so
    ``data_parallel_sgd(..., p, ...)`` equal to it row by row is the equivalence of data
    parallelism and full-batch training (exact for equal shards, or ``weighted=True``).
    At most :data:`MAX_SGD_WORK` elements of data over all steps.
    """
    grad_fn = checks.function("per_sample_grads", per_sample_grads)
    p = checks.integer("world_size", world_size, 1, MAX_RANKS)
    step = checks.positive("lr", lr)
    weighted = checks.boolean("weighted", weighted)
    w0 = checks.array("w0", w0, ndim=1)
    if not isinstance(batches, list | tuple):
        raise checks.fail("batches", "a list of (x, y) pairs", batches)
    data = [_batch(i, pair, p) for i, pair in enumerate(batches)]
    work = sum(x.size for x, _ in data) + p * w0.size * max(1, len(data))
    if work > MAX_SGD_WORK:
        raise checks.fail("batches", f"at most {MAX_SGD_WORK} elements of work", work)
    w = np.tile(w0, (p, 1))  # (p, d): one replica per row
    for i, (x, y) in enumerate(data):
        if x.shape[1] != w0.size:
            raise checks.fail(f"batches[{i}][0]", f"samples of w0's {w0.size} features", x.shape)
        bounds = collectives.chunk_bounds(len(x), p)  # rank r: samples bounds[r]..bounds[r+1]
        local = []
        for r in range(p):
            s = slice(bounds[r], bounds[r + 1])
            g = checks.array("per_sample_grads(w, x, y)", grad_fn(w[r], x[s], y[s]), ndim=2)
            if g.shape != (s.stop - s.start, w0.size):
                raise checks.fail("per_sample_grads(w, x, y)", "one gradient row per sample",
                                  g.shape)  # fmt: skip
            local.append(g.mean(0))
        sizes = np.diff(bounds)
        with np.errstate(all="ignore"):
            w = w - step * average_gradients(np.stack(local), sizes if weighted else None)
        checks.finite_result("the weights", w)
    return w
