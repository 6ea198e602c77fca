"""How ZeRO splits and schedules: PyTorch ZeroRedundancyOptimizer's greedy partition of
parameters over ranks, and ZeRO-3's step as frames (all-gathers, compute, reduce-scatters).

Taught in chapter 6, "ZeRO sharding" (``chapters/06_zero.ipynb``); sources and units in
:mod:`scaleout.memory`.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

import numpy as np

from .. import checks
from .limits import MAX_RANKS, MAX_STEP_LAYERS, MAX_TENSORS, Z3_GRADS, Z3_OPS


def greedy_partition(numels, dp: int):
    """Which rank owns each tensor when ``torch.distributed.optim.ZeroRedundancyOptimizer``
    shards optimizer states over ``dp`` ranks: tensors sorted by size (largest first, stable),
    each given to the rank with the fewest elements so far (lowest rank on ties). Replays
    ``ZeroRedundancyOptimizer._partition_parameters``. Returns (owner per tensor, elements
    per rank) as int arrays. At most ``MAX_TENSORS`` tensors and ``MAX_RANKS`` ranks; a heap
    of (elements, rank) finds the emptiest rank in O(log dp)."""
    sizes = checks.array("numels", numels, ndim=1, integer=True, low=0, max_size=MAX_TENSORS)
    dp = checks.integer("dp", dp, 1, MAX_RANKS)
    if sizes.sum(dtype=object) >= 2**62:
        raise checks.fail("numels", "tensor sizes adding up to less than 2**62", numels)
    owner, per_rank = np.zeros(len(sizes), dtype=np.int64), np.zeros(dp, dtype=np.int64)
    heap = [(0, r) for r in range(dp)]  # already a heap: sorted
    for i in np.argsort(-sizes, kind="stable"):
        load, rank = heapq.heappop(heap)  # fewest elements, lowest rank first: _get_min_index
        owner[i] = rank
        per_rank[rank] = load + int(sizes[i])
        heapq.heappush(heap, (int(per_rank[rank]), rank))
    return owner, per_rank


@dataclass(frozen=True)
class Zero3Frame:
    """One moment of a ZeRO-3 step, the same on every rank. Per layer: ``gathered`` (the full
    parameters are materialised), ``grad`` ("none", "full": this rank's unreduced gradient of
    the whole layer, "shard": the reduced gradient of its own shard), ``updated``."""

    title: str
    op: str  # "", "all-gather", "compute", "reduce-scatter", "update"
    layer: int  # the layer acted on, -1 for none or all
    gathered: tuple
    grad: tuple
    updated: tuple

    def __post_init__(self):
        checks.text("title", self.title)
        checks.choice("op", self.op, Z3_OPS)
        for key in ("gathered", "grad", "updated"):
            value = getattr(self, key)
            if not isinstance(value, tuple) or not 1 <= len(value) <= MAX_STEP_LAYERS:
                raise checks.fail(key, f"a tuple of 1 to {MAX_STEP_LAYERS} entries", value)
        layers = len(self.gathered)
        if len(self.grad) != layers or len(self.updated) != layers:
            raise checks.fail("grad, updated", f"tuples of {layers} entries like gathered",
                              (len(self.grad), len(self.updated)))  # fmt: skip
        checks.integer("layer", self.layer, -1, layers - 1)
        for g, u, x in zip(self.gathered, self.updated, self.grad, strict=True):
            checks.boolean("gathered entry", g)
            checks.boolean("updated entry", u)
            checks.choice("grad entry", x, Z3_GRADS)


def zero3_step(layers: int, dp: int, prefetch: int = 0):
    """The frames of one ZeRO-3 training step over ``layers`` equal layers and ``dp`` ranks
    (ZeRO section 5.3 and 7.2.2; FSDP, Zhao et al. 2023, Section 3): forward, per layer,
    all-gather then compute and free; backward, in reverse, all-gather, compute the full
    local gradient, reduce-scatter it and free; then each rank updates only its shard.

    With ``prefetch`` = q >= 1 the all-gathers of the next q layers run while a layer
    computes (FSDP's default prefetches one): only the first gather of each pass stands
    alone, and up to 1 + q layers are gathered at once. At most ``MAX_STEP_LAYERS`` layers.
    """
    layers = checks.integer("layers", layers, 1, MAX_STEP_LAYERS)
    dp = checks.integer("dp", dp, 1, MAX_RANKS)
    prefetch = checks.integer("prefetch", prefetch, 0, MAX_STEP_LAYERS)
    gathered, grad, updated = [False] * layers, ["none"] * layers, [False] * layers
    frames = []

    def add(title, op, layer):
        frames.append(Zero3Frame(title, op, layer, tuple(gathered), tuple(grad), tuple(updated)))

    def ahead(order, j):
        """The layers gathered while order[j] computes: it and the next ``prefetch``."""
        return order[j : j + 1 + prefetch]

    def names(ls):
        return ", ".join(str(x) for x in ls)

    add(f"start: each of {dp} ranks holds 1/{dp} of every layer and of its optimizer states",
        "", -1)  # fmt: skip
    for phase, order in (("forward", list(range(layers))), ("backward", list(range(layers))[::-1])):
        again = " again" if phase == "backward" else ""
        for j, i in enumerate(order):
            if prefetch == 0 or j == 0:
                gathered[i] = True
                add(f"{phase}: all-gather layer {i}'s parameters{again}", "all-gather", i)
            nxt = ahead(order, j)[1:]
            for x in nxt:
                gathered[x] = True
            meanwhile = f" while all-gathering layer {names(nxt)}" if nxt else ""
            if phase == "forward":
                if prefetch == 0:
                    gathered[i] = False
                    add(f"forward: compute layer {i}, then free the gathered shards", "compute", i)
                else:
                    add(f"forward: compute layer {i}{meanwhile}", "compute", i)
                    gathered[i] = False
            else:
                grad[i] = "full"
                add(f"backward: compute layer {i}'s gradient on each rank's own data{meanwhile}",
                    "compute", i)  # fmt: skip
                gathered[i], grad[i] = False, "shard"
                add(f"backward: reduce-scatter layer {i}'s gradient, free parameters",
                    "reduce-scatter", i)  # fmt: skip
        if phase == "forward":
            gathered[:] = [False] * layers  # prefetched for a next layer that does not exist
    updated[:] = [True] * layers
    add("optimizer: each rank updates only its own shard with its own Adam states", "update", -1)
    return frames
