"""Data parallelism: gradient averaging, DDP's gradient buckets, and a step timeline model.

Taught in chapter 2, "Data parallelism" (``chapters/02_data_parallel.ipynb``).

* **Gradient averaging.** Each of p replicas computes the mean gradient of its shard of the
  batch; an all-reduce (sum) divided by p gives every replica the same average, which equals
  the full-batch mean gradient when the shards are equal (Li et al., "PyTorch Distributed:
  Experiences on Accelerating Data Parallel Training", VLDB 2020, Sec. 2-3).
* **Buckets.** PyTorch DDP all-reduces gradients in *buckets*: parameters are taken in
  reverse registration order (an approximation of the order the backward pass produces
  their gradients) and a bucket is closed as soon as its size reaches its cap; the first
  bucket may have a smaller cap (Li et al. 2020, Sec. 3.2; PyTorch
  ``torch/csrc/distributed/c10d/reducer.cpp``, ``compute_bucket_assignment_by_size``, and
  ``torch/nn/parallel/distributed.py``, ``_BucketCapacityConfig``).
* **Timeline.** Backward computes one parameter's gradient after another; a bucket's
  all-reduce may start when its last gradient is ready and the previous bucket's all-reduce
  has finished (DDP reduces buckets in order, one at a time); all-reduce times come from
  :func:`scaleout.costmodel.collective_time`. Naive data parallelism is the case of one
  bucket holding everything, whose all-reduce starts after the whole backward pass.

Units: bytes, seconds. ``MIB`` = 2**20 bytes: DDP's ``bucket_cap_mb`` is in MiB.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import collectives, costmodel

MIB = 2**20  # bytes in one MiB; DDP's "MB" (torch/nn/parallel/distributed.py, _MB_TO_BYTES)
DEFAULT_BUCKET_CAP_MB = 25  # torch/nn/parallel/distributed.py, _DEFAULT_BUCKET_CAP_MB
DEFAULT_FIRST_BUCKET_BYTES = MIB  # torch.distributed._DEFAULT_FIRST_BUCKET_BYTES (reducer.hpp)


def _array(name: str, x, positive=False, ndim: int | None = 1, inf=False, signed=False):
    """``x`` as a float64 array after checks: ``ndim`` dimensions (None: any), not empty,
    no nan, no inf unless ``inf``, and > 0 (``positive``), any sign (``signed``) or >= 0."""
    try:
        arr = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a real number or array, got {x!r}") from None
    if ndim is not None and arr.ndim != ndim:
        raise ValueError(f"{name} must be a {ndim}-D array, got shape {arr.shape}")
    if arr.ndim and arr.size == 0:
        raise ValueError(f"{name} must not be empty")
    bad = np.isnan(arr) | (np.isinf(arr) & (not inf))
    if not signed:
        bad |= (arr <= 0) if positive else (arr < 0)
    if np.any(bad):
        rng = "" if signed else (" and > 0" if positive else " and >= 0")
        what = "a number" if inf else "finite"
        allowed = " (inf allowed)" if inf else ""
        first = arr[bad].ravel()[0] if arr.ndim else arr
        raise ValueError(f"{name} must be {what}{rng}{allowed}, got {first!r}")
    return arr


def _count(name: str, x, low: int = 1) -> int:
    if isinstance(x, bool) or not isinstance(x, int | np.integer) or x < low:
        raise ValueError(f"{name} must be an integer >= {low}, got {x!r}")
    return int(x)


# ----------------------------------------------------------------- gradient averaging


def shard_sizes(batch_size: int, world_size: int) -> np.ndarray:
    """Samples per rank when ``batch_size`` samples are split into ``world_size`` contiguous
    shards as ``np.array_split`` does (:func:`scaleout.collectives.chunk_bounds`)."""
    batch, ranks = _count("batch_size", batch_size), _count("world_size", world_size)
    return np.diff(collectives.chunk_bounds(batch, ranks))


def local_gradients(per_sample_grads, sizes) -> np.ndarray:
    """(p, d): rank r's mean gradient over its shard of ``sizes[r]`` consecutive samples.

    ``per_sample_grads`` is (B, d) (one row per sample, as a loss that averages over the
    batch would weigh them); ``sizes`` are p shard sizes >= 1 that add up to B.
    """
    g = _array("per_sample_grads", per_sample_grads, ndim=None, signed=True)
    if g.ndim != 2 or g.shape[0] < 1:
        raise ValueError(f"per_sample_grads must be (B, d) with B >= 1, got shape {g.shape}")
    sizes = np.asarray(sizes)
    if sizes.ndim != 1 or sizes.size < 1 or sizes.dtype.kind not in "iu" or np.any(sizes < 1):
        raise ValueError(f"sizes must be a 1-D array of integers >= 1, got {sizes!r}")
    if sizes.sum() != g.shape[0]:
        raise ValueError(f"sizes must add up to the batch size {g.shape[0]}, got {sizes.sum()}")
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    return np.add.reduceat(g, starts, axis=0) / sizes[:, None]


def average_gradients(rank_grads, sizes=None) -> np.ndarray:
    """(p, d): what every rank holds after all-reducing (sum) its gradient and dividing.

    ``sizes=None`` divides by p, as DDP and the hand-written all-reduce do (an unweighted
    mean of the ranks' means). Given the shard sizes, each rank first multiplies its mean
    by ``p * sizes[r] / B``, so that the average is the full-batch mean even for unequal
    shards. The sum is :func:`scaleout.collectives.reference` ("allreduce").
    """
    g = _array("rank_grads", rank_grads, ndim=2, signed=True)
    p = g.shape[0]
    if sizes is not None:
        sizes = np.asarray(sizes, dtype=np.float64)
        if sizes.shape != (p,) or np.any(sizes <= 0):
            raise ValueError(f"sizes must hold {p} positive shard sizes, got {sizes!r}")
        g = g * (p * sizes / sizes.sum())[:, None]
    return np.stack(collectives.reference("allreduce", g)) / p


def equivalence_error(per_sample_grads, sizes, weighted: bool = False) -> float:
    """Largest absolute difference between the data-parallel gradient of any rank and the
    full-batch mean gradient, over ranks and elements.

    Zero (up to rounding) for equal shards, or for any shards with ``weighted=True``: then p
    replicas take exactly the step that one process takes on the whole batch, and by
    induction over steps (same initial weights, same update) train the same model.
    """
    g = _array("per_sample_grads", per_sample_grads, ndim=2, signed=True)
    dp = average_gradients(local_gradients(g, sizes), sizes if weighted else None)
    return float(np.max(np.abs(dp - g.mean(axis=0))))


def squared_error_grads(w, x, y) -> np.ndarray:
    """(B, d) per-sample gradients of the loss 0.5 (x_b . w - y_b)^2 of a linear model:
    (x_b . w - y_b) x_b. ``w`` (d,), ``x`` (B, d), ``y`` (B,)."""
    w, x, y = np.asarray(w, float), np.asarray(x, float), np.asarray(y, float)
    if x.ndim != 2 or w.shape != (x.shape[1],) or y.shape != (x.shape[0],):
        raise ValueError(f"need w (d,), x (B, d), y (B,); got {w.shape}, {x.shape}, {y.shape}")
    return (x @ w - y)[:, None] * x


def data_parallel_sgd(
    per_sample_grads, w0, batches, world_size: int, lr: float, weighted: bool = False
) -> np.ndarray:
    """Train with plain SGD on ``world_size`` replicas; return their weights, (p, d).

    Every replica starts from ``w0``; for each ``(x, y)`` of ``batches`` rank r takes its
    shard (:func:`shard_sizes`), computes its mean gradient with
    ``per_sample_grads(w, x, y) -> (B, d)``, all-reduces (:func:`average_gradients`) and
    steps ``w -= lr * g``. ``world_size=1`` is single-process full-batch training, so
    ``data_parallel_sgd(..., p, ...)`` equal to it row by row is the equivalence of data
    parallelism and full-batch training (exact for equal shards, or ``weighted=True``).
    """
    p = _count("world_size", world_size)
    step = float(_array("lr", lr, positive=True, ndim=0))
    w = np.tile(np.asarray(w0, dtype=np.float64), (p, 1))  # (p, d): one replica per row
    for i, (x, y) in enumerate(batches):
        if len(x) < p:
            raise ValueError(f"batches[{i}] must hold >= world_size={p} samples, got {len(x)}")
        bounds = collectives.chunk_bounds(len(x), p)  # rank r: samples bounds[r]..bounds[r+1]
        shards = [slice(bounds[r], bounds[r + 1]) for r in range(p)]
        local = np.stack([per_sample_grads(w[r], x[s], y[s]).mean(0) for r, s in enumerate(shards)])
        sizes = np.diff(bounds)
        w = w - step * average_gradients(local, sizes if weighted else None)
    return w


# ------------------------------------------------------------------------ buckets


def bucket_caps(bucket_cap_mb: float | None = None) -> tuple[int, int]:
    """(first bucket cap, bucket cap) in bytes, as DDP (torch 2.13) derives them.

    ``None`` (DDP's default) gives (1 MiB, 25 MiB). An explicit ``bucket_cap_mb`` gives the
    same cap to every bucket, first included (``_BucketCapacityConfig.create`` in
    torch/nn/parallel/distributed.py: the small first bucket applies only to the default).
    """
    if bucket_cap_mb is None:
        return DEFAULT_FIRST_BUCKET_BYTES, DEFAULT_BUCKET_CAP_MB * MIB
    cap = int(_array("bucket_cap_mb", bucket_cap_mb, positive=True, ndim=0) * MIB)
    if cap < 1:
        raise ValueError(f"bucket_cap_mb must be at least 1 byte (1 / 2**20), got {bucket_cap_mb}")
    return cap, cap


@dataclass(frozen=True)
class Buckets:
    """DDP's buckets, in the order they are filled and all-reduced (bucket 0 first)."""

    params: tuple[np.ndarray, ...]  # indices in registration order, in fill order
    nbytes: np.ndarray  # (n_buckets,) bytes of each bucket
    caps: np.ndarray  # (n_buckets,) cap in bytes that applied to each bucket

    def __len__(self) -> int:
        return len(self.params)

    def bucket_of(self) -> np.ndarray:
        """(n_params,) the bucket of each parameter, indexed in registration order."""
        out = np.empty(sum(len(b) for b in self.params), dtype=np.int64)
        for k, members in enumerate(self.params):
            out[members] = k
        return out


def assign_buckets(
    param_bytes,
    bucket_cap_bytes=DEFAULT_BUCKET_CAP_MB * MIB,
    first_bucket_cap_bytes=DEFAULT_FIRST_BUCKET_BYTES,
) -> Buckets:
    """Group parameters into DDP's gradient buckets.

    ``param_bytes[i]`` is the gradient size of the i-th parameter in registration order
    (``model.parameters()``). Parameters are taken in reverse order; each is added to the
    open bucket, which is closed as soon as its size is >= its cap, so a bucket exceeds its
    cap by at most its last parameter. The first bucket's cap is ``first_bucket_cap_bytes``,
    every later one's ``bucket_cap_bytes``; whatever is left forms the last bucket. Source:
    ``compute_bucket_assignment_by_size`` in torch/csrc/distributed/c10d/reducer.cpp, called
    with limits [first cap, cap] in gradient-ready order when DDP rebuilds its buckets after
    the first iteration; one dtype and device assumed (DDP buckets each pair separately).
    Pass ``np.inf`` as both caps for a single bucket (naive data parallelism).
    """
    sizes = _array("param_bytes", param_bytes, positive=True)
    cap = float(_array("bucket_cap_bytes", bucket_cap_bytes, positive=True, ndim=0, inf=True))
    first = float(
        _array("first_bucket_cap_bytes", first_bucket_cap_bytes, positive=True, ndim=0, inf=True)
    )
    order = np.arange(sizes.size)[::-1]
    cum = np.cumsum(sizes[order])  # bytes taken after each parameter, in reverse order
    params, nbytes, caps = [], [], []
    start, taken, limit = 0, 0.0, first
    while start < order.size:  # one iteration per bucket: O(buckets * log(params))
        end = int(np.searchsorted(cum, taken + limit, side="left"))  # first index reaching cap
        end = min(end, order.size - 1) + 1
        params.append(order[start:end])
        nbytes.append(cum[end - 1] - taken)
        caps.append(limit)
        start, taken, limit = end, cum[end - 1], cap
    return Buckets(tuple(params), np.array(nbytes), np.array(caps))


# ------------------------------------------------------------------------ timeline


@dataclass(frozen=True)
class StepTimeline:
    """One training step on one replica: backward compute and bucket all-reduces.

    Times in seconds from the start of the backward pass (the forward pass, ``forward_s``,
    comes before it and only enters ``step_s``).
    """

    grad_ready_s: np.ndarray  # (n_params,) when each parameter's gradient is ready
    compute_s: np.ndarray  # (n_params,) backward seconds spent on each parameter
    backward_s: float  # when the backward pass ends
    buckets: Buckets
    ready_s: np.ndarray  # (n_buckets,) when each bucket's last gradient is ready
    start_s: np.ndarray  # (n_buckets,) when its all-reduce starts
    end_s: np.ndarray  # (n_buckets,) when its all-reduce ends
    forward_s: float

    @property
    def comm_s(self) -> float:
        """Total all-reduce time (seconds), overlapped or not."""
        return float(np.sum(self.end_s - self.start_s))

    @property
    def exposed_comm_s(self) -> float:
        """Seconds of all-reduce that the backward pass does not hide (after it ends)."""
        return float(max(0.0, self.end_s[-1] - self.backward_s))

    @property
    def step_s(self) -> float:
        """Forward + backward + exposed communication (the optimizer step is left out)."""
        return self.forward_s + self.backward_s + self.exposed_comm_s


def step_timeline(
    param_bytes,
    backward_s,
    world_size,
    alpha_s,
    beta_s_per_byte,
    *,
    bucket_cap_bytes=DEFAULT_BUCKET_CAP_MB * MIB,
    first_bucket_cap_bytes=DEFAULT_FIRST_BUCKET_BYTES,
    forward_s=0.0,
    gamma_s_per_byte=0.0,
) -> StepTimeline:
    """Timeline of one step with DDP's bucketed, overlapped gradient all-reduce.

    ``param_bytes[i]`` and ``backward_s[i]``: gradient bytes and backward compute seconds of
    parameter i (registration order). Backward runs in reverse order, so parameter i's
    gradient is ready at ``sum(backward_s[i:])``. Bucket k is ready when its last gradient
    is; its all-reduce (ring, :func:`scaleout.costmodel.collective_time` on ``world_size``
    ranks) starts at ``max(ready_k, end_{k-1})``: one all-reduce at a time, in bucket order,
    as DDP's Reducer launches them (Li et al. 2020, Sec. 3.2). The recurrence is solved in
    closed form, ``end_k = C_k + max_{j <= k}(ready_j - C_{j-1})`` with C the cumulative
    all-reduce times, so 10^4 parameters cost microseconds. Communication is assumed not
    to slow compute down. ``np.inf`` caps give the naive timeline.
    """
    sizes = _array("param_bytes", param_bytes, positive=True)
    compute = _array("backward_s", backward_s)
    if compute.shape != sizes.shape:
        raise ValueError(
            f"backward_s must have one entry per parameter ({sizes.size}), got {compute.size}"
        )
    p = _count("world_size", world_size)
    fwd = float(_array("forward_s", forward_s, ndim=0))
    buckets = assign_buckets(sizes, bucket_cap_bytes, first_bucket_cap_bytes)
    ready = np.cumsum(compute[::-1])[::-1]  # (n_params,) parameter i ready after i..n-1
    last = np.array([b[-1] for b in buckets.params])  # each bucket's last-filled parameter
    bucket_ready = ready[last]
    duration = np.asarray(
        costmodel.collective_time(
            "allreduce", "ring", buckets.nbytes, p, alpha_s, beta_s_per_byte, gamma_s_per_byte
        ),
        dtype=np.float64,
    ).reshape(-1)
    cum = np.cumsum(duration)
    end = cum + np.maximum.accumulate(bucket_ready - (cum - duration))
    start = end - duration
    return StepTimeline(ready, compute, float(ready[0]), buckets, bucket_ready, start, end, fwd)


def naive_timeline(
    param_bytes,
    backward_s,
    world_size,
    alpha_s,
    beta_s_per_byte,
    *,
    forward_s=0.0,
    gamma_s_per_byte=0.0,
) -> StepTimeline:
    """One all-reduce of every gradient, started when the backward pass has ended."""
    return step_timeline(
        param_bytes,
        backward_s,
        world_size,
        alpha_s,
        beta_s_per_byte,
        bucket_cap_bytes=np.inf,
        first_bucket_cap_bytes=np.inf,
        forward_s=forward_s,
        gamma_s_per_byte=gamma_s_per_byte,
    )


@dataclass(frozen=True)
class Accumulation:
    """One optimizer step made of ``k`` micro-steps (forward + backward each)."""

    k: int
    step_s: float  # seconds per optimizer step
    allreduces: int  # bucket all-reduces per optimizer step
    comm_s: float  # all-reduce seconds per optimizer step (overlapped or not)
    exposed_comm_s: float  # all-reduce seconds not hidden behind backward


def accumulation(timeline: StepTimeline, k: int, no_sync: bool = True) -> Accumulation:
    """Gradient accumulation over ``k`` micro-steps, each like ``timeline``.

    With ``no_sync`` (DDP's context manager) the first k - 1 micro-steps only accumulate
    local gradients and the last one all-reduces the sum: one micro-step's communication
    per optimizer step. Without it every micro-step all-reduces (Li et al. 2020, Sec. 3.2,
    gradient accumulation).
    """
    k = _count("k", k)
    synced = 1 if no_sync else k
    compute = timeline.forward_s + timeline.backward_s
    return Accumulation(
        k=k,
        step_s=(k - synced) * compute + synced * timeline.step_s,
        allreduces=synced * len(timeline.buckets),
        comm_s=synced * timeline.comm_s,
        exposed_comm_s=synced * timeline.exposed_comm_s,
    )


# ------------------------------------------------------------------------ model sizes


def uniform_layers(n_params: float, n_layers: int) -> np.ndarray:
    """(n_layers,) parameters per layer of a model of ``n_params`` parameters split evenly
    into ``n_layers`` parameter tensors. Gradient bytes = parameters x bytes per element
    (4 for fp32 gradients, the dtype DDP reduces for fp32 weights; 2 for bf16)."""
    n = float(_array("n_params", n_params, positive=True, ndim=0))
    return np.full(_count("n_layers", n_layers), n / n_layers)


def backward_seconds(layer_params, tokens: float, flops_per_s: float) -> np.ndarray:
    """Backward compute seconds per layer: 4 FLOPs per parameter per token (twice the
    forward's 2; Kaplan et al., "Scaling Laws for Neural Language Models", 2020, Sec. 2.1)
    at an achieved ``flops_per_s``. The forward pass is half of it."""
    params = _array("layer_params", layer_params, positive=True)
    t = float(_array("tokens", tokens, positive=True, ndim=0))
    f = float(_array("flops_per_s", flops_per_s, positive=True, ndim=0))
    return 4.0 * params * t / f


def uniform_model_timelines(
    n_params: float,
    n_layers: int,
    world_size: int,
    alpha_s: float,
    beta_s_per_byte: float,
    *,
    bucket_cap_mb: float | None = None,
    tokens: float = 16384,
    flops_per_s: float = 400e12,
    bytes_per_param: float = 2.0,
) -> tuple[StepTimeline, StepTimeline]:
    """(naive, DDP) timelines of one step of a model of ``n_params`` parameters in
    ``n_layers`` equal tensors (:func:`uniform_layers`), ``tokens`` per rank per step,
    backward at ``flops_per_s`` (:func:`backward_seconds`; forward = half the backward),
    gradients of ``bytes_per_param`` bytes (2: bf16), caps from :func:`bucket_caps`."""
    layers = uniform_layers(n_params, n_layers)
    backward = backward_seconds(layers, tokens, flops_per_s)
    nbytes = layers * float(_array("bytes_per_param", bytes_per_param, positive=True, ndim=0))
    first, cap = bucket_caps(bucket_cap_mb)
    link = dict(world_size=world_size, alpha_s=alpha_s, beta_s_per_byte=beta_s_per_byte)
    forward = float(backward.sum()) / 2
    naive = naive_timeline(nbytes, backward, forward_s=forward, **link)
    ddp = step_timeline(
        nbytes,
        backward,
        bucket_cap_bytes=cap,
        first_bucket_cap_bytes=first,
        forward_s=forward,
        **link,
    )
    return naive, ddp
