"""What a checkpoint weighs and what writing it costs: synchronous, asynchronous, in memory.

Taught in chapter 17 (``chapters/17_failures.ipynb``). Units: bytes, seconds, GB/s (1e9
bytes per second).

Size. A checkpoint holds the parameters and, to resume training exactly, the optimizer
states (not the gradients: a step recomputes them). Both come from the ZeRO chapter's
accounting (:func:`scaleout.memory.model_state_bytes`, chapter 6): with Megatron's bf16
training and Adam, 2 bytes of parameters and 12 of fp32 master copy and moments per
parameter. Written without duplicates (``torch.distributed.checkpoint`` saves a replicated
tensor once), the total spreads over the GPUs; what each GPU *holds* of it depends on the
model-parallel size and the ZeRO stage.

Three ways to write it (each a :class:`Strategy` for
:func:`scaleout.failures.renewal.goodput`):

* ``"synchronous"``: every GPU waits until storage has the whole checkpoint:
  stall = total bytes / storage write bandwidth (aggregate).
* ``"asynchronous"``: each GPU copies its share to host memory (the stall, at the
  device-to-host bandwidth, all GPUs in parallel), then a background thread writes it to
  storage while training goes on; durable after total bytes / storage bandwidth.
  PyTorch's ``torch.distributed.checkpoint.async_save``; CheckFreq (Mohan et al., FAST 2021)
  splits a checkpoint into this snapshot and persist.
* ``"in-memory"``: the snapshot to host memory, then a copy to a peer server's host memory
  over the network (Gemini, Wang et al., SOSP 2023); a restart reloads from the peer at
  network speed instead of from storage. (A job still writes to storage now and then, for
  the rare failure that takes a server and its peer; this model ignores that.)

A restart costs ``restart_s`` (detect, reschedule, initialise) plus reading the checkpoint
back: from storage at ``storage_gb_per_s`` (assumed symmetric), or from the peer.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import checks, memory
from .intervals import MAX_SECONDS, optimal_interval
from .renewal import MAX_GPUS, goodput

#: The ways to write a checkpoint that :func:`strategies` prices.
STRATEGIES = ("synchronous", "asynchronous", "in-memory")
#: Largest model, in parameters, the size functions take (1e15).
MAX_PARAMS = 1e15
#: Bandwidths in GB/s are checked to lie in (0, MAX_GB_PER_S].
MAX_GB_PER_S = 1e6
_GRID = 256  # points of the interval search for asynchronous strategies


@dataclass(frozen=True)
class CheckpointSize:
    """Bytes of one checkpoint: ``parameters`` and ``optimizer_states`` (whole model),
    ``total``, ``per_gpu`` (the total spread evenly, as a deduplicating writer does) and
    ``held_per_gpu`` (what one GPU holds of it, before deduplication)."""

    parameters: float
    optimizer_states: float
    total: float
    per_gpu: float
    held_per_gpu: float


def checkpoint_size(
    params,
    gpus,
    *,
    model_parallel=1,
    stage=1,
    optimizer_states=True,
    optimizer="adam",
    precision="megatron-bf16",
) -> CheckpointSize:
    """Checkpoint bytes of a model of ``params`` parameters trained on ``gpus`` GPUs, from
    :func:`scaleout.memory.model_state_bytes`: the parameters plus (``optimizer_states``)
    the optimizer states, per GPU and in total. ``model_parallel`` (t x p) GPUs split one
    replica; ZeRO ``stage`` shards over the data-parallel size gpus / model_parallel."""
    psi = checks.positive("params", params, high=MAX_PARAMS)
    n = checks.integer("gpus", gpus, 1, MAX_GPUS)
    mp = checks.integer("model_parallel", model_parallel, 1, MAX_GPUS)
    if n % mp:
        raise checks.fail("model_parallel", f"a divisor of gpus = {n}", mp)
    with_opt = checks.boolean("optimizer_states", optimizer_states)
    whole = memory.model_state_bytes(psi, 0, 1, optimizer, precision=precision)
    held = memory.model_state_bytes(psi / mp, stage, n // mp, optimizer, precision=precision)
    opt = whole.optimizer_states if with_opt else 0.0
    total = whole.parameters + opt
    held_gpu = held.parameters + (held.optimizer_states if with_opt else 0.0)
    return CheckpointSize(
        float(whole.parameters), float(opt), float(total), float(total / n), float(held_gpu)
    )


@dataclass(frozen=True)
class Strategy:
    """How a job checkpoints: it stalls ``stall_s`` seconds per checkpoint, the checkpoint
    is durable ``background_s`` later, and a restart takes ``restart_s`` in all."""

    name: str
    stall_s: float
    background_s: float
    restart_s: float

    def __post_init__(self):
        checks.text("name", self.name)
        checks.nonnegative("stall_s", self.stall_s, high=MAX_SECONDS)
        checks.nonnegative("background_s", self.background_s, high=MAX_SECONDS)
        checks.nonnegative("restart_s", self.restart_s, high=MAX_SECONDS)


def strategies(
    total_bytes, gpus, *, storage_gb_per_s, host_gb_per_s, peer_gb_per_s, restart_s
) -> dict[str, Strategy]:
    """The three :data:`STRATEGIES` for a checkpoint of ``total_bytes`` spread over ``gpus``
    GPUs: storage write bandwidth (aggregate, GB/s), device-to-host bandwidth per GPU, and
    network bandwidth per GPU to a peer; ``restart_s`` before any reload."""
    total = checks.positive("total_bytes", total_bytes, high=MAX_PARAMS * 64)
    n = checks.integer("gpus", gpus, 1, MAX_GPUS)
    storage = checks.positive("storage_gb_per_s", storage_gb_per_s, high=MAX_GB_PER_S) * 1e9
    host = checks.positive("host_gb_per_s", host_gb_per_s, high=MAX_GB_PER_S) * 1e9
    peer = checks.positive("peer_gb_per_s", peer_gb_per_s, high=MAX_GB_PER_S) * 1e9
    r = checks.nonnegative("restart_s", restart_s, high=MAX_SECONDS)
    write, share = total / storage, total / n
    times = (write, share / host, share / peer)
    if max(times) + r > MAX_SECONDS:
        raise checks.fail("total_bytes", "a checkpoint written within 100 years", total)
    return {
        "synchronous": Strategy("synchronous", write, 0.0, r + write),
        "asynchronous": Strategy("asynchronous", share / host, write, r + write),
        "in-memory": Strategy("in-memory", share / host, share / peer, r + share / peer),
    }


def best(mtbf_s, strategy: Strategy) -> tuple[float, float]:
    """(interval_s, goodput) of ``strategy`` at its best interval for job MTBF ``mtbf_s``:
    the exact optimum when nothing happens in the background, else the best of a
    log-spaced search (256 points, then 256 around the best) over intervals of at least
    ``background_s``."""
    m = checks.positive("mtbf_s", mtbf_s, high=MAX_SECONDS)
    checks.instance("strategy", strategy, Strategy)
    c, w, r = strategy.stall_s, strategy.background_s, strategy.restart_s
    if w == 0.0:
        if c == 0.0:  # free checkpoints: the limit tau -> 0 loses only the restarts
            tau = min(m * 1e-6, MAX_SECONDS)
            return tau, float(goodput(m, 0.0, r, tau))
        tau = float(optimal_interval(c, m))
        return tau, float(goodput(m, c, r, tau))
    lo, hi = max(w, m * 1e-6), max(w, m) * 4.0
    for _ in range(2):
        grid = np.geomspace(lo, min(hi, MAX_SECONDS), _GRID)
        g = goodput(m, c, r, grid, background_s=w)
        i = int(np.argmax(g))
        lo, hi = grid[max(i - 1, 0)], grid[min(i + 1, _GRID - 1)]
    return float(grid[i]), float(g[i])
