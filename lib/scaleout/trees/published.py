"""The 8-byte all-reduces NCCL's developers measured on Summit, beside this chapter's
model. Part of :mod:`scaleout.trees` (chapter 9). The readings and Summit's GPUs per node
are the rows of ``data/trees.csv``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import checks, data
from .. import costmodel as M
from .cost import best_tree_time

#: Where :data:`SUMMIT_ALLREDUCE_8B` comes from.
SUMMIT_SOURCE = (
    "Jeaugey, 'Massively Scale Your Deep Learning Training with NCCL 2.4', NVIDIA blog, "
    "2019, figure 3 ('NCCL latency, Allreduce, 8 bytes'; NCCL 2.4 trees, NCCL 2.3 rings, "
    "Summit, 96 to 24,576 GPUs); values read off the published figure (log axis, 38 pixels "
    "per doubling: about +-3 %)"
)
_TREE, _RING = "NCCL 2.4 two trees", "NCCL 2.3 ring"


def _summit_rows() -> tuple:
    """(GPUs per node, the readings by GPU count) from ``data/trees.csv``."""
    rows = [v for v in data.load("trees") if v.get("system") == "Summit"]
    (per_node,) = (v.value for v in rows if v.get("quantity") == "gpus_per_node")
    times = {}
    for v in rows:
        if v.get("quantity") == "allreduce_8B_latency":
            times.setdefault(int(v.get("gpus")), {})[v.get("algorithm")] = v.value
    return per_node, tuple((n, t[_TREE], t[_RING]) for n, t in times.items())


#: V100 GPUs per Summit node (6, on NVLink, with 2 POWER9 CPUs; nodes on dual-rail EDR
#: InfiniBand, two 100 Gb/s ports per node).
SUMMIT_GPUS_PER_NODE = _summit_rows()[0]
#: (GPUs, NCCL 2.4 two trees in us, NCCL 2.3 ring in us) for an 8-byte all-reduce on Summit.
SUMMIT_ALLREDUCE_8B = _summit_rows()[1]

_SUMMIT = {v.get("quantity"): v.value for v in data.load("trees") if v.get("system") == "Summit"}
#: Summit's network per node, dual-rail EDR InfiniBand with 2 ports of 100 Gb/s.
SUMMIT_NIC_PORTS_PER_NODE = int(_SUMMIT["nic_ports_per_node"])
SUMMIT_NIC_GBIT_PER_S = _SUMMIT["nic_port_speed"]
#: The blog's "up to 180x improvement at 24k GPUs" (trees over rings, 8-byte all-reduce).
SUMMIT_STATED_SPEEDUP = _SUMMIT["allreduce_8B_speedup"]


@dataclass(frozen=True)
class PublishedComparison:
    """Measured and modelled all-reduce times on the rows of :data:`SUMMIT_ALLREDUCE_8B`.

    ``model_*_us`` is this chapter's model as the chapter uses it: every GPU a rank, every
    step ``alpha``, two trees at their best chunk count (:func:`best_tree_time`) and the
    ring of :mod:`scaleout.costmodel`. ``*_steps`` count the steps of what NCCL runs: the
    ring over all GPUs, 2(p - 1) steps; the trees over *nodes*, with the GPUs of a node in a
    chain below each tree node, 2 (g - 1 + log2 nodes) steps (g GPUs per node; the
    latency count of NCCL's ``tuning.cc``). Nothing is fitted."""

    gpus: np.ndarray
    nodes: np.ndarray
    measured_tree_us: np.ndarray
    measured_ring_us: np.ndarray
    model_tree_us: np.ndarray
    model_ring_us: np.ndarray
    tree_steps: np.ndarray
    ring_steps: np.ndarray
    source: str

    def __post_init__(self):
        for name in ("gpus", "nodes", "measured_tree_us", "measured_ring_us", "model_tree_us",
                     "model_ring_us", "tree_steps", "ring_steps"):  # fmt: skip
            value = checks.array(name, getattr(self, name), ndim=1, low=0.0, low_open=True)
            if value.shape != np.shape(self.gpus):
                raise checks.fail(name, f"one value per row ({np.size(self.gpus)})", value.size)
            object.__setattr__(self, name, value)
        checks.text("source", self.source, 600)

    @property
    def tree_err(self) -> np.ndarray:
        """(model - measured) / measured for the trees."""
        return self.model_tree_us / self.measured_tree_us - 1

    @property
    def ring_err(self) -> np.ndarray:
        """(model - measured) / measured for the ring."""
        return self.model_ring_us / self.measured_ring_us - 1

    @property
    def measured_ratio(self) -> np.ndarray:
        """Ring time over tree time, measured."""
        return self.measured_ring_us / self.measured_tree_us

    @property
    def model_ratio(self) -> np.ndarray:
        """Ring time over tree time, in the model."""
        return self.model_ring_us / self.model_tree_us

    @property
    def same_winner(self) -> np.ndarray:
        """Whether, row by row, the model picks the faster algorithm the measurement shows."""
        return (self.model_tree_us < self.model_ring_us) == (
            self.measured_tree_us < self.measured_ring_us
        )

    @property
    def us_per_step(self) -> tuple[np.ndarray, np.ndarray]:
        """The measured times over the step counts of what NCCL runs, trees and ring, in us."""
        return self.measured_tree_us / self.tree_steps, self.measured_ring_us / self.ring_steps


def summit_comparison(alpha, beta, nbytes=8.0) -> PublishedComparison:
    """This chapter's model (seconds per step ``alpha``, per byte ``beta``) against the
    8-byte all-reduces NCCL's developers measured on Summit (:data:`SUMMIT_ALLREDUCE_8B`).

    ``nbytes`` is the message (8 bytes in the source; up to 1 GB accepted)."""
    a, b = checks.nonnegative("alpha", alpha, 1.0), checks.nonnegative("beta", beta, 1.0)
    if a == 0:
        raise checks.fail("alpha", "> 0 (the comparison is of latencies)", alpha)
    n = checks.positive("nbytes", nbytes, 1e9)
    rows = np.array(SUMMIT_ALLREDUCE_8B)
    gpus, tree, ring = rows.T
    nodes = gpus / SUMMIT_GPUS_PER_NODE
    return PublishedComparison(
        gpus=gpus,
        nodes=nodes,
        measured_tree_us=tree,
        measured_ring_us=ring,
        model_tree_us=np.asarray(best_tree_time(n, gpus, a, b, trees=2)) * 1e6,
        model_ring_us=np.asarray(M.collective_time("allreduce", "ring", n, gpus, a, b)) * 1e6,
        tree_steps=2 * (SUMMIT_GPUS_PER_NODE - 1 + np.asarray(M.ceil_log2(nodes))),
        ring_steps=2 * (gpus - 1),
        source=SUMMIT_SOURCE,
    )
