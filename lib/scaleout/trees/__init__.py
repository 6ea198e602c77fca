"""NCCL's double binary tree and a pipelined two-tree all-reduce (numpy only).

Taught in chapter 9, "Double binary trees" (chapters/09_double_binary_tree.ipynb).

Trees follow NCCL's ``src/graph/trees.cc`` (repository NVIDIA/nccl) as of release 2.8.3
(tag ``v2.8.3-1``): ``ncclGetBtree`` (line 31) gives one rank its parent, two child slots
and ``parentChildType``; ``ncclGetDtree`` (line 88) derives the second tree. The rule is
the same, up to formatting, in every later release up to 2.30.7 (tag ``v2.30.7-1``, lines
32 and 90). NCCL has no function for the roots: the root of a tree is the rank whose parent
comes back as -1 (:func:`dtree_roots` is this book's helper). NCCL calls ``ncclGetDtree``
with the number of *nodes* (``src/graph/connect.cc``, line 137 in 2.8.3): the trees span
servers, and the GPUs inside a server form a chain below each tree node. The rule before
2.8.3 (from 2.4.2, ``src/misc/trees.cu``; ``src/graph/trees.cc`` from 2.5) is kept for
comparison (``nccl_version < (2, 8, 3)``). This module re-implements the rule, vectorised
over all ranks; it does not copy NCCL's code. The idea of two trees that each carry half
the data, every rank a leaf in at most one of them, is from Sanders, Speck & Traeff,
"Two-tree algorithms for full bandwidth broadcast, reduction and scan", Parallel Computing
35(12), 2009; NCCL adopted it in 2.4 (Jeaugey, "Massively Scale Your Deep Learning Training
with NCCL 2.4", NVIDIA blog, 2019). NCCL runs trees for all-reduce only (``tuning.cc``).

The all-reduce schedule and its cost are this book's: the data is cut into one part per tree
and each part into ``chunks`` pieces; chunk c goes up a tree (every rank adds its children's
partial sums and passes the result to its parent), then the root's sum comes back down.
A rank of height h sends chunk c up in step ``c + h``; a rank of depth l >= 1 receives the
sum of chunk c in step ``c + d + l - 1`` (d = depth of the tree), so the reduce of later
chunks overlaps the broadcast of earlier ones and the schedule takes ``chunks + 2d - 1``
steps. Steps follow :mod:`scaleout.collectives`: a list of :class:`~scaleout.collectives.Step`
that :func:`scaleout.collectives.replay` applies (up transfers add, down transfers copy).

Limits (checked): trees span at most :data:`MAX_RANKS` ranks; a schedule holds at most
:data:`MAX_MESSAGES` messages and :data:`MAX_CHUNKS` chunks per tree; the cost models take
what :mod:`scaleout.costmodel` takes, and raise where a result would overflow float64.

The package, in reading order: ``build`` (the two trees), ``report`` (their properties),
``schedule`` (the pipelined all-reduce's messages and the one-port time of any schedule),
``cost`` (its closed-form cost, best chunk count, crossover with the ring) and
``published`` (Summit's measurements beside the model).
"""

from . import build as _build
from . import published as _published
from .build import (
    NCCL_SOURCE,
    RULE_CHANGED,
    TREE_COUNTS,
    TREES_FROM,
    BinaryTree,
    binary_tree,
    double_binary_tree,
    dtree_roots,
)
from .build import _second_tree_is_shifted as _second_tree_is_shifted  # viz.trees
from .build import _trees as _trees  # viz.trees
from .build import _version as _version  # viz.trees
from .cost import (
    best_tree_time,
    crossover_vs_ring,
    optimal_chunks,
    port_load,
    port_messages,
    tree_allreduce_time,
)
from .published import PublishedComparison, summit_comparison
from .report import DoubleTreeReport, TreeReport, check_double_tree, check_tree
from .schedule import (
    TreeAllreduceSchedule,
    flows_per_step,
    schedule_time,
    tree_allreduce,
    tree_allreduce_schedule,
)

# The documented constants are bound here too: autodoc reads the ``#:`` comment of a
# constant in the module it documents (this one), not where the constant is defined.

#: Most ranks (in NCCL, nodes) a tree may span; building and checking 2**20 takes seconds.
MAX_RANKS = _build.MAX_RANKS
#: Most messages of one pipelined schedule (the transfers of its steps fit a collectives Step).
MAX_MESSAGES = _build.MAX_MESSAGES
#: Most chunks per tree of one pipelined schedule.
MAX_CHUNKS = _build.MAX_CHUNKS
#: Where :data:`SUMMIT_ALLREDUCE_8B` comes from.
SUMMIT_SOURCE = _published.SUMMIT_SOURCE
#: V100 GPUs per Summit node (6, on NVLink, with 2 POWER9 CPUs; nodes on dual-rail EDR
#: InfiniBand, two 100 Gb/s ports per node).
SUMMIT_GPUS_PER_NODE = _published.SUMMIT_GPUS_PER_NODE
#: (GPUs, NCCL 2.4 two trees in us, NCCL 2.3 ring in us) for an 8-byte all-reduce on Summit.
SUMMIT_ALLREDUCE_8B = _published.SUMMIT_ALLREDUCE_8B
#: Summit's dual-rail EDR InfiniBand, its NIC ports per node and Gb/s per port.
SUMMIT_NIC_PORTS_PER_NODE = _published.SUMMIT_NIC_PORTS_PER_NODE
SUMMIT_NIC_GBIT_PER_S = _published.SUMMIT_NIC_GBIT_PER_S
#: The blog's "up to 180x improvement at 24k GPUs".
SUMMIT_STATED_SPEEDUP = _published.SUMMIT_STATED_SPEEDUP

__all__ = [
    "MAX_CHUNKS", "MAX_MESSAGES", "MAX_RANKS", "NCCL_SOURCE", "RULE_CHANGED",
    "SUMMIT_ALLREDUCE_8B", "SUMMIT_GPUS_PER_NODE", "SUMMIT_NIC_GBIT_PER_S",
    "SUMMIT_NIC_PORTS_PER_NODE", "SUMMIT_SOURCE", "SUMMIT_STATED_SPEEDUP", "TREES_FROM",
    "TREE_COUNTS", "BinaryTree", "DoubleTreeReport", "PublishedComparison", "TreeReport",
    "TreeAllreduceSchedule", "best_tree_time", "binary_tree", "check_double_tree",
    "check_tree", "crossover_vs_ring", "double_binary_tree", "dtree_roots", "flows_per_step",
    "optimal_chunks", "port_load", "port_messages", "schedule_time", "summit_comparison",
    "tree_allreduce", "tree_allreduce_schedule", "tree_allreduce_time",
]  # fmt: skip
