"""Data parallelism: gradient averaging, DDP's gradient buckets, and a step timeline model.

Taught in chapter 2, "Data parallelism" (``chapters/02_data_parallel.ipynb``).

* **Gradient averaging.** Each of p replicas computes the mean gradient of its shard of the
  batch; an all-reduce (sum) divided by p gives every replica the same average, which equals
  the full-batch mean gradient when the shards are equal (Li et al., "PyTorch Distributed:
  Experiences on Accelerating Data Parallel Training", VLDB 2020, Sec. 2-3).
* **Buckets.** PyTorch DDP all-reduces gradients in *buckets* (Li et al. 2020, Sec. 3.2).
  In torch 2.13, with the default ``find_unused_parameters=False``, the first iteration
  all-reduces one bucket of every parameter in registration order (``[sys.maxsize]``
  limits, ``_BucketCapacityConfig.compute_bucket_size_limits`` in
  torch/nn/parallel/distributed.py); after it, ``Reducer::rebuild_buckets``
  (torch/csrc/distributed/c10d/reducer.cpp) rebuilds them once, in the order the gradients
  arrived, with caps [first bucket cap, cap] (:func:`assign_buckets`, the rule of
  ``compute_bucket_assignment_by_size``). With ``find_unused_parameters=True`` the buckets
  are built at construction, in registration order, and never rebuilt
  (``Reducer::should_rebuild_buckets`` in reducer.hpp). :func:`ddp_buckets` covers all cases.
* **Memory and dtype.** Bucket buffers hold a copy of the gradients unless
  ``gradient_as_bucket_view=True`` (:func:`gradient_memory`); they have the parameters'
  dtype, which autocast does not change; compression hooks change what the all-reduce
  sends (:func:`allreduce_itemsize`).
* **Timeline.** Backward computes one parameter's gradient after another; a bucket's
  all-reduce may start when its last gradient is ready and the previous bucket's all-reduce
  has finished (DDP reduces buckets in order, one at a time); all-reduce times come from
  NCCL's cost model (``network=``, an :class:`scaleout.nccl.topo.Topology` such as
  :func:`dp_network` builds; chapter 10) or from chapter 1's alpha-beta ring on one link
  (:func:`scaleout.costmodel.collective_time`, ``alpha_s`` and ``beta_s_per_byte``). Naive
  data parallelism is the case of one bucket holding everything, whose all-reduce starts
  after the whole backward pass.
* **Inside 3D parallelism.** With t-way tensor and p-way pipeline parallelism, the
  gradients are all-reduced in t p concurrent data-parallel groups of d = N / (t p) GPUs
  (:class:`ParallelLayout`, :func:`data_parallel_groups`).

Units: bytes, seconds. ``MIB`` = 2**20 bytes: DDP's ``bucket_cap_mb`` is in MiB.

Limits (inputs beyond them raise ``ValueError``): at most :data:`MAX_RANKS` ranks, at most
:data:`MAX_TENSORS` parameter tensors, at most :data:`MAX_PARAMS` parameters, at most
:data:`MAX_GRADIENT_BYTES` bytes of gradients (float64 sums of byte counts stay exact), at
most :data:`MAX_MICRO_STEPS` micro-steps per optimizer step, :data:`MAX_SGD_WORK` elements
touched by :func:`data_parallel_sgd`.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

import numpy as np

from . import checks, collectives, costmodel, nccl
from . import machine as M

#: Bytes in one MiB, DDP's "MB" (torch/nn/parallel/distributed.py, ``_MB_TO_BYTES``).
MIB = 2**20
#: DDP's default ``bucket_cap_mb`` (torch/nn/parallel/distributed.py).
DEFAULT_BUCKET_CAP_MB = 25
#: ``torch.distributed._DEFAULT_FIRST_BUCKET_BYTES`` (``kDefaultFirstBucketBytes``, reducer.hpp).
DEFAULT_FIRST_BUCKET_BYTES = MIB
#: DDP's "no limit" (its first-iteration bucket limits are ``[sys.maxsize]``).
NO_CAP = sys.maxsize

#: Most ranks in a world or group, the book's largest case.
MAX_RANKS = 65536
#: Most parameter tensors (a 1T-parameter transformer has a few thousand).
MAX_TENSORS = 2**20
#: Most parameters of a model, 1000 times the largest published dense models.
MAX_PARAMS = 1e15
#: Most bytes of gradients in all (sums of integer byte counts stay exact in float64).
MAX_GRADIENT_BYTES = float(2**53)
#: Most micro-steps of gradient accumulation per optimizer step.
MAX_MICRO_STEPS = 2**20
#: Most elements (samples x features, over all steps) :func:`data_parallel_sgd` touches.
MAX_SGD_WORK = 2**26
#: Most samples in one global batch.
MAX_BATCH = 2**50

PARAM_DTYPES = {"float32": 4, "bfloat16": 2, "float16": 2}  # bytes per element
COMM_HOOKS = (None, "allreduce", "fp16_compress", "bf16_compress")


# ----------------------------------------------------------------- gradient averaging


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


# ------------------------------------------------------------------------ buckets


def bucket_caps(bucket_cap_mb: float | None = None) -> tuple[int, int]:
    """(first bucket cap, bucket cap) in bytes, as DDP (torch 2.13) derives them.

    ``None`` (DDP's default) gives (1 MiB, 25 MiB). An explicit ``bucket_cap_mb`` gives the
    same cap to every bucket, first included (``_BucketCapacityConfig.create`` in
    torch/nn/parallel/distributed.py: the small first bucket applies only to the default).
    At least 1 byte, at most 2**33 MiB (:data:`MAX_GRADIENT_BYTES`).
    """
    if bucket_cap_mb is None:
        return DEFAULT_FIRST_BUCKET_BYTES, DEFAULT_BUCKET_CAP_MB * MIB
    mb = checks.real("bucket_cap_mb", bucket_cap_mb, 1 / MIB, MAX_GRADIENT_BYTES / MIB)
    cap = int(mb * MIB)
    return cap, cap


def _cap(name: str, value) -> float:
    """A bucket cap in bytes: > 0; ``np.inf`` (or anything >= ``NO_CAP``) means no cap."""
    cap = checks.real(name, value, 0.0, low_open=True, finite=False)
    return float(min(cap, NO_CAP))


@dataclass(frozen=True)
class Buckets:
    """DDP's buckets, in the order they are all-reduced (bucket 0 first).

    ``params[k]`` lists the parameters of bucket k (indices in registration order, in the
    order they fill it); together they hold every parameter once. ``nbytes[k]`` is its
    size, ``caps[k]`` the cap that applied to it (:data:`NO_CAP`: none).
    """

    params: tuple[np.ndarray, ...]  # indices in registration order, in fill order
    nbytes: np.ndarray  # (n_buckets,) bytes of each bucket
    caps: np.ndarray  # (n_buckets,) cap in bytes that applied to each bucket

    def __post_init__(self):
        if not isinstance(self.params, tuple | list) or not 1 <= len(self.params) <= MAX_TENSORS:
            raise checks.fail("params", f"a tuple of 1 to {MAX_TENSORS} index arrays", self.params)
        members = tuple(
            m.astype(np.int64, copy=False)  # fast path: what _fill builds (checked below)
            if isinstance(m, np.ndarray) and m.ndim == 1 and m.dtype.kind in "iu" and m.size
            else checks.array(f"params[{k}]", m, ndim=1, integer=True, low=0, max_size=MAX_TENSORS)
            for k, m in enumerate(self.params)
        )
        flat = np.concatenate(members)
        if flat.size > MAX_TENSORS or not np.array_equal(np.sort(flat), np.arange(flat.size)):
            raise checks.fail("params", "every parameter index 0..n-1 exactly once", self.params)
        n = len(members)
        nbytes = checks.array("nbytes", self.nbytes, ndim=1, low=0.0, low_open=True,
                              high=MAX_GRADIENT_BYTES)  # fmt: skip
        caps = checks.array("caps", self.caps, ndim=1, low=0.0, low_open=True, high=NO_CAP)
        for name, arr in (("nbytes", nbytes), ("caps", caps)):
            if arr.shape != (n,):
                raise checks.fail(name, f"one value per bucket ({n})", arr.shape)
        object.__setattr__(self, "params", members)
        object.__setattr__(self, "nbytes", nbytes)
        object.__setattr__(self, "caps", caps)

    def __len__(self) -> int:
        return len(self.params)

    @property
    def capped(self) -> np.ndarray:
        """Whether a finite cap applied to each bucket, ``(n_buckets,)`` booleans (False for
        DDP's ``sys.maxsize``)."""
        return self.caps < NO_CAP

    def bucket_of(self) -> np.ndarray:
        """(n_params,) the bucket of each parameter, indexed in registration order."""
        out = np.empty(sum(len(b) for b in self.params), dtype=np.int64)
        for k, members in enumerate(self.params):
            out[members] = k
        return out


def _sizes(param_bytes) -> np.ndarray:
    sizes = checks.array("param_bytes", param_bytes, ndim=1, low=0.0, low_open=True,
                         max_size=MAX_TENSORS)  # fmt: skip
    total = float(sizes.sum())
    if total > MAX_GRADIENT_BYTES:
        raise checks.fail("param_bytes", f"at most {MAX_GRADIENT_BYTES:.4g} bytes in all", total)
    return sizes


def _fill(sizes: np.ndarray, order: np.ndarray, first: float, cap: float):
    """compute_bucket_assignment_by_size's rule over ``order``: append each tensor to the
    open bucket, close it as soon as its size >= its limit (``first``, then ``cap``).

    Every iteration closes a bucket of at least one tensor, so the loop runs at most
    ``len(order)`` times; all sums are of at most 2**53 bytes (exact for integer bytes).
    """
    cum = np.cumsum(sizes[order])  # bytes taken after each tensor, in fill order
    params, nbytes, caps = [], [], []
    start, taken, limit = 0, 0.0, first
    while start < order.size:  # one iteration per bucket: O(buckets * log(tensors))
        end = int(np.searchsorted(cum, taken + limit, side="left"))  # first tensor reaching cap
        end = min(max(end, start), order.size - 1) + 1  # at least one tensor: the loop advances
        params.append(order[start:end])
        nbytes.append(cum[end - 1] - taken)
        caps.append(limit)
        start, taken, limit = end, float(cum[end - 1]), cap
    return params, nbytes, caps


def assign_buckets(
    param_bytes,
    bucket_cap_bytes=DEFAULT_BUCKET_CAP_MB * MIB,
    first_bucket_cap_bytes=DEFAULT_FIRST_BUCKET_BYTES,
) -> Buckets:
    """Group parameters into DDP's gradient buckets as it rebuilds them.

    ``param_bytes[i]`` is the gradient size of the i-th parameter in registration order
    (``model.parameters()``). Parameters are taken in reverse order (the order in which
    the backward pass of a sequential model produces their gradients); each is added to the
    open bucket, which is closed as soon as its size is >= its cap, so a bucket exceeds its
    cap by at most its last parameter. The first bucket's cap is ``first_bucket_cap_bytes``,
    every later one's ``bucket_cap_bytes``; whatever is left forms the last bucket. Source:
    ``compute_bucket_assignment_by_size`` in torch/csrc/distributed/c10d/reducer.cpp, called
    by ``Reducer::rebuild_buckets`` with limits [first cap, cap] in gradient-arrival order
    after the first iteration; one dtype and device assumed (DDP buckets each separately).
    Pass ``np.inf`` as both caps for a single bucket (naive data parallelism).
    """
    sizes = _sizes(param_bytes)
    cap = _cap("bucket_cap_bytes", bucket_cap_bytes)
    first = _cap("first_bucket_cap_bytes", first_bucket_cap_bytes)
    params, nbytes, caps = _fill(sizes, np.arange(sizes.size)[::-1], first, cap)
    return Buckets(tuple(params), np.array(nbytes), np.array(caps))


def ddp_buckets(
    param_bytes,
    bucket_cap_mb=None,
    *,
    rebuilt: bool = True,
    find_unused_parameters: bool = False,
    arrival_order=None,
) -> Buckets:
    """The buckets torch 2.13's DDP all-reduces, in launch order.

    * ``find_unused_parameters=False`` (DDP's default; ``static_graph=True`` alike): the
      first iteration (``rebuilt=False``) has one bucket of every parameter in registration
      order, with no cap (limits ``[sys.maxsize]``); from the second on (``rebuilt=True``)
      buckets rebuilt in the order the gradients arrived in the first backward pass, with
      the caps of :func:`bucket_caps`. ``arrival_order`` lists the parameters (indices in
      registration order) in that order; ``None`` means reverse registration order, as in
      a sequential model in fp32 (then the buckets are :func:`assign_buckets`').
    * ``find_unused_parameters=True``: DDP fills buckets once, at construction, in
      registration order with limits [first cap, cap], all-reduces them last-filled first,
      and never rebuilds them (``Reducer::should_rebuild_buckets``), so ``rebuilt`` and
      ``arrival_order`` do not matter. The small first cap then applies to the bucket of
      the first layers, which is all-reduced last.

    Sources: ``_BucketCapacityConfig.compute_bucket_size_limits`` and ``_ddp_init_helper``
    (torch/nn/parallel/distributed.py), ``Reducer::rebuild_buckets`` (reducer.cpp).
    """
    sizes = _sizes(param_bytes)
    first, cap = bucket_caps(bucket_cap_mb)
    rebuilt = checks.boolean("rebuilt", rebuilt)
    unused = checks.boolean("find_unused_parameters", find_unused_parameters)
    n = sizes.size
    if arrival_order is None:
        order = np.arange(n)[::-1]
    else:
        order = checks.array("arrival_order", arrival_order, ndim=1, integer=True, low=0,
                             max_size=MAX_TENSORS)  # fmt: skip
        if not np.array_equal(np.sort(order), np.arange(n)):
            raise checks.fail("arrival_order", f"a permutation of the {n} parameter indices",
                              order.tolist())  # fmt: skip
    if unused:
        params, nbytes, caps = _fill(sizes, np.arange(n), first, cap)
        return Buckets(tuple(params[::-1]), np.array(nbytes[::-1]), np.array(caps[::-1]))
    if not rebuilt:
        return Buckets((np.arange(n),), np.array([sizes.sum()]), np.array([NO_CAP]))
    params, nbytes, caps = _fill(sizes, order, first, cap)
    return Buckets(tuple(params), np.array(nbytes), np.array(caps))


@dataclass(frozen=True)
class GradientMemory:
    """Bytes one replica holds for gradients under DDP."""

    grads_bytes: float  # the .grad tensors (one per parameter)
    bucket_bytes: float  # DDP's flat bucket buffers, beyond the .grad tensors

    def __post_init__(self):
        for name in ("grads_bytes", "bucket_bytes"):
            value = checks.nonnegative(name, getattr(self, name), MAX_GRADIENT_BYTES)
            object.__setattr__(self, name, value)

    @property
    def total_bytes(self) -> float:
        return self.grads_bytes + self.bucket_bytes


def gradient_memory(grad_bytes, gradient_as_bucket_view: bool = False) -> GradientMemory:
    """Gradient memory of a replica with ``grad_bytes`` bytes of gradients in all.

    DDP copies every gradient into its bucket's flat buffer before the all-reduce, and the
    buckets together hold every parameter: by default the buffers are a second copy of all
    gradients (``grad_bytes`` more). With ``gradient_as_bucket_view=True`` each ``.grad``
    becomes a view into its bucket (from the first bucket rebuild on), so nothing is held
    twice (DDP's docstring: "the saved memory size will be equal to the total gradients
    size"; ``Reducer::mark_variable_ready_dense`` in reducer.cpp). Not counted: the moment
    of the rebuild (the second forward pass), when DDP "may allocate new buckets before
    deallocating old buckets" (``_pre_forward`` in distributed.py).
    """
    total = checks.nonnegative("grad_bytes", grad_bytes, MAX_GRADIENT_BYTES)
    view = checks.boolean("gradient_as_bucket_view", gradient_as_bucket_view)
    return GradientMemory(total, 0.0 if view else total)


def allreduce_itemsize(param_dtype: str = "float32", comm_hook: str | None = None) -> int:
    """Bytes per gradient element that DDP's all-reduce sends.

    DDP's buckets have the parameters' dtype (the gradient of a parameter has its dtype;
    autocast changes the dtype of the computation, not of the parameters, so fp32 weights
    under autocast still give fp32 buckets). The default hook (``None`` or
    ``"allreduce"``) all-reduces the bucket as it is; ``"fp16_compress"`` and
    ``"bf16_compress"`` (``fp16_compress_hook`` / ``bf16_compress_hook``) cast it to a
    2-byte float and divide by the world size before the all-reduce, and copy the result
    back into the bucket after (``_compress_hook`` in
    torch/distributed/algorithms/ddp_comm_hooks/default_hooks.py).
    """
    dtype = checks.choice("param_dtype", param_dtype, tuple(PARAM_DTYPES))
    hook = checks.choice("comm_hook", comm_hook, COMM_HOOKS)
    return 2 if hook in ("fp16_compress", "bf16_compress") else PARAM_DTYPES[dtype]


# ------------------------------------------------------------------------ timeline


def _times(name: str, value, n: int | None = None) -> np.ndarray:
    arr = checks.array(name, value, ndim=1, low=0.0, max_size=MAX_TENSORS)
    if n is not None and arr.shape != (n,):
        raise checks.fail(name, f"an array of {n} values", arr.shape)
    return arr


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

    def __post_init__(self):
        buckets = checks.instance("buckets", self.buckets, Buckets, "a data_parallel.Buckets")
        n_params = sum(len(m) for m in buckets.params)
        fields = {
            "grad_ready_s": _times("grad_ready_s", self.grad_ready_s, n_params),
            "compute_s": _times("compute_s", self.compute_s, n_params),
            "backward_s": checks.nonnegative("backward_s", self.backward_s),
            "forward_s": checks.nonnegative("forward_s", self.forward_s),
        }
        for name in ("ready_s", "start_s", "end_s"):
            fields[name] = _times(name, getattr(self, name), len(buckets))
        if np.any(fields["start_s"] < fields["ready_s"]):
            raise checks.fail("start_s", "no earlier than ready_s (bucket by bucket)",
                              fields["start_s"].tolist())  # fmt: skip
        if np.any(fields["end_s"] < fields["start_s"]):
            raise checks.fail("end_s", "no earlier than start_s (bucket by bucket)",
                              fields["end_s"].tolist())  # fmt: skip
        for name, value in fields.items():
            object.__setattr__(self, name, value)

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
    alpha_s=None,
    beta_s_per_byte=None,
    *,
    bucket_cap_bytes=DEFAULT_BUCKET_CAP_MB * MIB,
    first_bucket_cap_bytes=DEFAULT_FIRST_BUCKET_BYTES,
    forward_s=0.0,
    gamma_s_per_byte=0.0,
    network=None,
) -> StepTimeline:
    """Timeline of one step with DDP's bucketed, overlapped gradient all-reduce.

    ``param_bytes[i]`` and ``backward_s[i]``: gradient bytes and backward compute seconds of
    parameter i (registration order). Backward runs in reverse order, so parameter i's
    gradient is ready at ``sum(backward_s[i:])``. Bucket k is ready when its last gradient
    is; its all-reduce starts at ``max(ready_k, end_{k-1})``: one all-reduce at a time, in
    bucket order, as DDP's Reducer launches them (Li et al. 2020, Sec. 3.2). The recurrence
    is solved in closed form, ``end_k = C_k + max_{j <= k}(ready_j - C_{j-1})`` with C the
    cumulative all-reduce times, so 10^4 parameters cost microseconds. Communication is assumed not
    to slow compute down. ``np.inf`` caps give the naive timeline.

    Each bucket's all-reduce time on ``world_size`` ranks: with ``network`` (an
    :class:`scaleout.nccl.topo.Topology` of ``world_size`` ranks, e.g. :func:`dp_network`), what
    NCCL's cost model predicts (:func:`scaleout.nccl.model.predict`: its choice of algorithm and
    protocol per bucket size; then leave ``alpha_s``, ``beta_s_per_byte`` and
    ``gamma_s_per_byte`` out); without, chapter 1's alpha-beta(-gamma) ring on one link
    (:func:`scaleout.costmodel.collective_time`, ``"ring"``).
    """
    sizes = _sizes(param_bytes)
    compute = _times("backward_s", backward_s)
    if compute.shape != sizes.shape:
        raise checks.fail(
            "backward_s", f"an array of one entry per parameter ({sizes.size})", compute.size
        )
    p = checks.integer("world_size", world_size, 1, MAX_RANKS)
    allreduce = _allreduce_seconds(p, alpha_s, beta_s_per_byte, gamma_s_per_byte, network)
    fwd = checks.nonnegative("forward_s", forward_s)
    buckets = assign_buckets(sizes, bucket_cap_bytes, first_bucket_cap_bytes)
    with np.errstate(all="ignore"):  # overflow is reported below, as the library's error
        ready = np.cumsum(compute[::-1])[::-1]  # (n_params,) parameter i ready after i..n-1
        last = np.array([b[-1] for b in buckets.params])  # each bucket's last-filled parameter
        bucket_ready = ready[last]
        duration = allreduce(buckets.nbytes)
        cum = np.cumsum(duration)
        end = cum + np.maximum.accumulate(bucket_ready - (cum - duration))
        start = np.maximum(end - duration, bucket_ready)  # = max(ready, previous end)
        end = np.maximum(end, start)  # both clamps only undo rounding
        times = np.concatenate([ready, start, end, [fwd + ready[0] + end[-1]]])
    checks.finite_result("the step's times", times)
    return StepTimeline(ready, compute, float(ready[0]), buckets, bucket_ready, start, end, fwd)


def naive_timeline(
    param_bytes,
    backward_s,
    world_size,
    alpha_s=None,
    beta_s_per_byte=None,
    *,
    forward_s=0.0,
    gamma_s_per_byte=0.0,
    network=None,
) -> StepTimeline:
    """One all-reduce of every gradient, started when the backward pass has ended (the
    network arguments as in :func:`step_timeline`)."""
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
        network=network,
    )


def _allreduce_seconds(p: int, alpha_s, beta_s_per_byte, gamma_s_per_byte, network):
    """A function bucket bytes -> all-reduce seconds on p ranks: NCCL's model on
    ``network``, or the alpha-beta-gamma ring (exactly one of the two descriptions)."""
    if network is None:
        if alpha_s is None or beta_s_per_byte is None:
            pair = (alpha_s, beta_s_per_byte)
            raise checks.fail("alpha_s and beta_s_per_byte", "both given when network is None",
                              pair)  # fmt: skip
        alpha = checks.nonnegative("alpha_s", alpha_s)
        beta = checks.nonnegative("beta_s_per_byte", beta_s_per_byte)
        gamma = checks.nonnegative("gamma_s_per_byte", gamma_s_per_byte)

        def ring(nbytes):
            seconds = costmodel.collective_time("allreduce", "ring", nbytes, p, alpha, beta, gamma)
            return np.asarray(seconds, dtype=np.float64).reshape(-1)

        return ring
    topo = checks.instance("network", network, nccl.Topology,
                           "an nccl.Topology (see data_parallel.dp_network) or None")  # fmt: skip
    if topo.ranks != p:
        raise checks.fail("world_size", f"the network's {topo.ranks} ranks", p)
    for name, value in (("alpha_s", alpha_s), ("beta_s_per_byte", beta_s_per_byte)):
        if value is not None:
            raise checks.fail(name, "None when network is given (NCCL's model prices it)", value)
    if checks.nonnegative("gamma_s_per_byte", gamma_s_per_byte) != 0:
        raise checks.fail("gamma_s_per_byte", "0 when network is given", gamma_s_per_byte)

    def priced(nbytes):
        nbytes = np.asarray(nbytes, dtype=np.float64).reshape(-1)
        seconds = np.zeros(nbytes.shape)
        sent = nbytes > 0
        if np.any(sent):
            seconds[sent] = nccl.predict("allreduce", nbytes[sent], topo).seconds
        return seconds

    return priced


def dp_network(world_size: int, gpus_per_server: int = 1, machine="dgx-h100", **overrides):
    """The data-parallel group of ``world_size`` GPUs, ``gpus_per_server`` of them on each
    server of ``machine`` (a preset name of :data:`scaleout.nccl.topo.PRESETS`, an
    :class:`scaleout.nccl.topo.Topology` or a :class:`scaleout.machine.Machine`: read by
    :func:`scaleout.machine.as_topology`; ``overrides`` change its fields, e.g. ``nic_gbps=100``),
    as NCCL sees it (:meth:`scaleout.nccl.topo.Topology.group`: the group keeps the NICs of its
    GPUs). ``gpus_per_server=1``: one GPU per server, e.g. tensor rank i of every replica
    when t fills the servers (chapter 2's data-parallel groups inside 3D parallelism, each
    on its own NIC); ``gpus_per_server=8``: replicas filling DGX servers. Fewer GPUs than a
    server holds sit on one server."""
    p = checks.integer("world_size", world_size, 1, MAX_RANKS)
    base = M.as_topology(machine)
    base = base.with_(**overrides) if overrides else base
    g = checks.integer("gpus_per_server", gpus_per_server, 1, base.gpus_per_node)
    if p <= g:
        return base.with_(nodes=1).group(p, 1)
    if p % g:
        raise checks.fail("world_size", f"a multiple of gpus_per_server = {g} (or at most it)", p)
    return base.with_(nodes=1).group(g, 1).with_(nodes=p // g)


@dataclass(frozen=True)
class Accumulation:
    """One optimizer step made of ``k`` micro-steps (forward + backward each)."""

    k: int
    step_s: float  # seconds per optimizer step
    allreduces: int  # bucket all-reduces per optimizer step
    comm_s: float  # all-reduce seconds per optimizer step (overlapped or not)
    exposed_comm_s: float  # all-reduce seconds not hidden behind backward

    def __post_init__(self):
        object.__setattr__(self, "k", checks.integer("k", self.k, 1, MAX_MICRO_STEPS))
        limit = MAX_MICRO_STEPS * MAX_TENSORS
        allreduces = checks.integer("allreduces", self.allreduces, 0, limit)
        object.__setattr__(self, "allreduces", allreduces)
        for name in ("step_s", "comm_s", "exposed_comm_s"):
            object.__setattr__(self, name, checks.nonnegative(name, getattr(self, name)))


def accumulation(timeline: StepTimeline, k: int, no_sync: bool = True) -> Accumulation:
    """Gradient accumulation over ``k`` micro-steps, each like ``timeline``.

    With ``no_sync`` (DDP's context manager) the first k - 1 micro-steps only accumulate
    local gradients and the last one all-reduces the sum: one micro-step's communication
    per optimizer step. Without it every micro-step all-reduces (Li et al. 2020, Sec. 3.2,
    gradient accumulation).
    """
    tl = checks.instance("timeline", timeline, StepTimeline, "a data_parallel.StepTimeline")
    k = checks.integer("k", k, 1, MAX_MICRO_STEPS)
    synced = 1 if checks.boolean("no_sync", no_sync) else k
    compute = tl.forward_s + tl.backward_s
    times = checks.finite_result(
        "the accumulated times",
        np.array([(k - synced) * compute + synced * tl.step_s, synced * tl.comm_s,
                  synced * tl.exposed_comm_s]),
    )  # fmt: skip
    return Accumulation(k, float(times[0]), synced * len(tl.buckets), *map(float, times[1:]))


# ------------------------------------------------------------------------ model sizes


def uniform_layers(n_params: float, n_layers: int) -> np.ndarray:
    """(n_layers,) parameters per layer of a model of ``n_params`` parameters split evenly
    into ``n_layers`` parameter tensors. Gradient bytes = parameters x bytes per element
    (:func:`allreduce_itemsize`: 4 for fp32 weights without a compression hook, 2 for bf16
    weights or a bf16/fp16 compression hook)."""
    n = checks.real("n_params", n_params, 0.0, MAX_PARAMS, low_open=True)
    layers = checks.integer("n_layers", n_layers, 1, MAX_TENSORS)
    return np.full(layers, n / layers)


def backward_seconds(layer_params, tokens: float, flops_per_s: float) -> np.ndarray:
    """Backward compute seconds per layer: 4 FLOPs per parameter per token (twice the
    forward's 2; Kaplan et al., "Scaling Laws for Neural Language Models", 2020, Sec. 2.1)
    at an achieved ``flops_per_s``. The forward pass is half of it."""
    params = checks.array("layer_params", layer_params, ndim=1, low=0.0, low_open=True,
                          high=MAX_PARAMS, max_size=MAX_TENSORS)  # fmt: skip
    t = checks.positive("tokens", tokens)
    f = checks.positive("flops_per_s", flops_per_s)
    with np.errstate(all="ignore"):
        seconds = 4.0 * params * t / f
    return checks.finite_result("the backward seconds", seconds)


def uniform_model_timelines(
    n_params: float,
    n_layers: int,
    world_size: int,
    alpha_s: float | None = None,
    beta_s_per_byte: float | None = None,
    *,
    bucket_cap_mb: float | None = None,
    tokens: float = 16384,
    flops_per_s: float = 400e12,
    bytes_per_param: float = 2.0,
    network=None,
) -> tuple[StepTimeline, StepTimeline]:
    """(naive, DDP) timelines of one step of a model of ``n_params`` parameters in
    ``n_layers`` equal tensors (:func:`uniform_layers`), ``tokens`` per rank per step,
    backward at ``flops_per_s`` (:func:`backward_seconds`; forward = half the backward;
    the default 400 TFLOP/s per GPU is a round *achieved* rate, that of Llama 3 405B's
    training on H100s, Dubey et al. 2024, Table 4, not a peak; chapter 2 passes instead the
    rate :func:`scaleout.compute.layer_time` predicts for its example's layer shape),
    gradients of ``bytes_per_param`` bytes on the wire (2: bf16 weights, or fp32 weights
    with a bf16 compression hook; 4: fp32 without one; at most 16), caps from
    :func:`bucket_caps`; all-reduces priced on ``network`` (NCCL's model) or by
    ``alpha_s``/``beta_s_per_byte`` (:func:`step_timeline`)."""
    layers = uniform_layers(n_params, n_layers)
    backward = backward_seconds(layers, tokens, flops_per_s)
    itemsize = checks.real("bytes_per_param", bytes_per_param, 0.0, 16.0, low_open=True)
    first, cap = bucket_caps(bucket_cap_mb)
    link = dict(world_size=world_size, alpha_s=alpha_s, beta_s_per_byte=beta_s_per_byte,
                network=network)  # fmt: skip
    forward = float(backward.sum()) / 2
    naive = naive_timeline(layers * itemsize, backward, forward_s=forward, **link)
    ddp = step_timeline(
        layers * itemsize,
        backward,
        bucket_cap_bytes=cap,
        first_bucket_cap_bytes=first,
        forward_s=forward,
        **link,
    )
    return naive, ddp


# ------------------------------------------------------------ inside 3D parallelism


def _divide(name: str, n: int, by: int, what: str) -> int:
    if n % by:
        raise checks.fail(name, f"a multiple of {what} = {by}", n)
    return n // by


@dataclass(frozen=True)
class ParallelLayout:
    """``world_size`` GPUs as t-way tensor x p-way pipeline x d-way data parallelism, and
    a global batch of ``global_batch`` samples in micro-batches of ``micro_batch``.

    Every GPU holds 1 / (t p) of the model; the d GPUs that hold the same shard (same
    tensor rank, same pipeline stage) are one data-parallel group, and the t p groups
    all-reduce their gradients at the same time (Narayanan et al., SC21, Sec. 2-3;
    Megatron-LM ``initialize_model_parallel``). For a fixed global batch each replica gets
    B / d samples, i.e. B / (d b) micro-batches: more replicas, fewer micro-batches per
    pipeline (a larger bubble, chapter 5).
    """

    world_size: int
    tensor: int
    pipeline: int
    global_batch: int
    micro_batch: int = 1

    def __post_init__(self):
        n = checks.integer("world_size", self.world_size, 1, MAX_RANKS)
        t = checks.integer("tensor", self.tensor, 1, MAX_RANKS)
        p = checks.integer("pipeline", self.pipeline, 1, MAX_RANKS)
        d = _divide("world_size", n, t * p, "tensor x pipeline")
        batch = checks.integer("global_batch", self.global_batch, 1, MAX_BATCH)
        b = checks.integer("micro_batch", self.micro_batch, 1, MAX_BATCH)
        _divide("global_batch", batch, d * b, "data x micro_batch")
        for name, value in zip(self.__dataclass_fields__, (n, t, p, batch, b), strict=True):
            object.__setattr__(self, name, value)

    @property
    def data(self) -> int:
        """The number d of replicas of every model shard (each data-parallel group's size)."""
        return self.world_size // (self.tensor * self.pipeline)

    @property
    def groups(self) -> int:
        """The number t p of data-parallel groups, all-reducing concurrently."""
        return self.tensor * self.pipeline

    @property
    def samples_per_replica(self) -> int:
        """B / d samples of each global batch on each replica."""
        return self.global_batch // self.data

    @property
    def micro_batches(self) -> int:
        """m = B / (d b) micro-batches per replica (and per pipeline) per step."""
        return self.samples_per_replica // self.micro_batch

    def gradient_bytes(self, n_params: float, bytes_per_param: float = 4.0) -> float:
        """Bytes each GPU all-reduces in its data-parallel group per step: its 1 / (t p)
        of the ``n_params`` parameters' gradients (an even split assumed)."""
        n = checks.real("n_params", n_params, 0.0, MAX_PARAMS, low_open=True)
        itemsize = checks.real("bytes_per_param", bytes_per_param, 0.0, 16.0, low_open=True)
        return n * itemsize / self.groups

    def data_parallel_groups(self) -> np.ndarray:
        """(t p, d) ranks of each data-parallel group: :func:`data_parallel_groups`."""
        return data_parallel_groups(self.world_size, self.tensor, self.pipeline)


def data_parallel_groups(world_size: int, tensor: int, pipeline: int) -> np.ndarray:
    """(t p, d) global ranks of every data-parallel group, in Megatron-LM's default rank
    order ("tp-cp-ep-dp-pp": tensor rank fastest, then data, then pipeline stage, so
    rank = stage d t + replica t + tensor rank; ``megatron/core/parallel_state.py``).
    Row ``stage * t + tensor_rank`` is the group of that stage and tensor rank. Its
    docstring's example, 16 GPUs with t = 2 and p = 4, gives [0, 2], [1, 3], [4, 6], ...
    """
    n = checks.integer("world_size", world_size, 1, MAX_RANKS)
    t = checks.integer("tensor", tensor, 1, MAX_RANKS)
    p = checks.integer("pipeline", pipeline, 1, MAX_RANKS)
    d = _divide("world_size", n, t * p, "tensor x pipeline")
    grid = np.arange(n).reshape(p, d, t)  # [stage, replica, tensor rank]
    return grid.transpose(0, 2, 1).reshape(p * t, d)
