"""DDP's gradient buckets (torch 2.13's rule), the memory they take and the dtype they send.

Taught in chapter 2, "Data parallelism" (``chapters/02_data_parallel.ipynb``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import checks
from .limits import (
    COMM_HOOKS,
    DEFAULT_BUCKET_CAP_MB,
    DEFAULT_FIRST_BUCKET_BYTES,
    MAX_GRADIENT_BYTES,
    MAX_TENSORS,
    MIB,
    NO_CAP,
    PARAM_DTYPES,
)


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
