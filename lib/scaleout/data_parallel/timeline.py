"""A data-parallel step on a timeline: backward, each bucket's all-reduce, the exposed
communication; naive data parallelism, gradient accumulation, and uniform model sizes.

Taught in chapter 2, "Data parallelism" (``chapters/02_data_parallel.ipynb``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import checks, costmodel, nccl
from .. import machine as M
from .buckets import Buckets, _sizes, assign_buckets, bucket_caps
from .limits import (
    DEFAULT_BUCKET_CAP_MB,
    DEFAULT_FIRST_BUCKET_BYTES,
    MAX_MICRO_STEPS,
    MAX_PARAMS,
    MAX_RANKS,
    MAX_TENSORS,
    MIB,
)


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
    machine=None,
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

    Each bucket's all-reduce time on ``world_size`` ranks: with ``machine`` (an
    :class:`scaleout.nccl.topo.Topology` of ``world_size`` ranks, e.g. :func:`dp_network`, or a
    :class:`scaleout.machine.Machine` of that many GPUs), what
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
    allreduce = _allreduce_seconds(p, alpha_s, beta_s_per_byte, gamma_s_per_byte, machine)
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
    machine=None,
) -> StepTimeline:
    """One all-reduce of every gradient, started when the backward pass has ended (the
    network arguments and ``machine`` as in :func:`step_timeline`)."""
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
        machine=machine,
    )


def _allreduce_seconds(p: int, alpha_s, beta_s_per_byte, gamma_s_per_byte, machine):
    """A function bucket bytes -> all-reduce seconds on p ranks: NCCL's model on
    ``machine``, or the alpha-beta-gamma ring (exactly one of the two descriptions)."""
    if machine is None:
        if alpha_s is None or beta_s_per_byte is None:
            pair = (alpha_s, beta_s_per_byte)
            raise checks.fail("alpha_s and beta_s_per_byte", "both given when machine is None",
                              pair)  # fmt: skip
        alpha = checks.nonnegative("alpha_s", alpha_s)
        beta = checks.nonnegative("beta_s_per_byte", beta_s_per_byte)
        gamma = checks.nonnegative("gamma_s_per_byte", gamma_s_per_byte)

        def ring(nbytes):
            seconds = costmodel.collective_time("allreduce", "ring", nbytes, p, alpha, beta, gamma)
            return np.asarray(seconds, dtype=np.float64).reshape(-1)

        return ring
    topo = M.as_topology(machine)
    if topo.ranks != p:
        raise checks.fail("world_size", f"the machine's {topo.ranks} ranks", p)
    for name, value in (("alpha_s", alpha_s), ("beta_s_per_byte", beta_s_per_byte)):
        if value is not None:
            raise checks.fail(name, "None when machine is given (NCCL's model prices it)", value)
    if checks.nonnegative("gamma_s_per_byte", gamma_s_per_byte) != 0:
        raise checks.fail("gamma_s_per_byte", "0 when machine is given", gamma_s_per_byte)

    def priced(nbytes):
        nbytes = np.asarray(nbytes, dtype=np.float64).reshape(-1)
        seconds = np.zeros(nbytes.shape)
        sent = nbytes > 0
        if np.any(sent):
            seconds[sent] = nccl.predict("allreduce", nbytes[sent], machine=topo).seconds
        return seconds

    return priced


def dp_network(world_size: int, gpus_per_server: int = 1, *, machine="dgx-h100", **overrides):
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
    machine=None,
) -> tuple[StepTimeline, StepTimeline]:
    """(naive, DDP) timelines of one step of a model of ``n_params`` parameters in
    ``n_layers`` equal tensors (:func:`uniform_layers`), ``tokens`` per rank per step,
    backward at ``flops_per_s`` (:func:`backward_seconds`; forward = half the backward;
    the default 400 TFLOP/s per GPU is a round *achieved* rate, that of Llama 3 405B's
    training on H100s, Dubey et al. 2024, Table 4, not a peak; chapter 2 passes instead the
    rate :func:`scaleout.compute.layer_time` predicts for its example's layer shape),
    gradients of ``bytes_per_param`` bytes on the wire (2: bf16 weights, or fp32 weights
    with a bf16 compression hook; 4: fp32 without one; at most 16), caps from
    :func:`bucket_caps`; all-reduces priced on ``machine`` (NCCL's model) or by
    ``alpha_s``/``beta_s_per_byte`` (:func:`step_timeline`)."""
    layers = uniform_layers(n_params, n_layers)
    backward = backward_seconds(layers, tokens, flops_per_s)
    itemsize = checks.real("bytes_per_param", bytes_per_param, 0.0, 16.0, low_open=True)
    first, cap = bucket_caps(bucket_cap_mb)
    link = dict(world_size=world_size, alpha_s=alpha_s, beta_s_per_byte=beta_s_per_byte,
                machine=machine)  # fmt: skip
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
