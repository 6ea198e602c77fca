"""Checks of NCCL's trees: spanning, consistent, degree, depth, and the double-tree
property (every rank a leaf in at most one tree). Part of :mod:`scaleout.trees` (chapter 9).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import checks
from .. import costmodel as M
from .build import (
    RULE_CHANGED,
    BinaryTree,
    _ranks,
    _second_tree_is_shifted,
    _version,
    double_binary_tree,
)


@dataclass(frozen=True)
class TreeReport:
    """What :func:`check_tree` found for one tree."""

    n: int
    spanning: bool  # exactly one root and every rank reaches it
    consistent: bool  # r's parent lists r as a child, and r's children name r as parent
    max_children: int
    depth: int  # edges on the longest root-to-leaf path (-1 if not spanning)
    ceil_log2_n: int

    def __post_init__(self):
        n = _ranks(self.n)
        object.__setattr__(self, "n", n)
        for name in ("spanning", "consistent"):
            object.__setattr__(self, name, checks.boolean(name, getattr(self, name)))
        for name, low in (("max_children", 0), ("depth", -1), ("ceil_log2_n", 0)):
            object.__setattr__(self, name, checks.integer(name, getattr(self, name), low, n))

    @property
    def ok(self) -> bool:
        """Spanning, consistent, at most two children each, depth exactly ceil(log2 n)."""
        return (
            self.spanning
            and self.consistent
            and self.max_children <= 2
            and (self.depth == self.ceil_log2_n)
        )


def check_tree(tree: BinaryTree) -> TreeReport:
    """Check one tree: spanning, parent/child agreement (NCCL's child slots included), degree
    and depth. For NCCL's trees the depth is exactly ceil(log2 n): the path from the root
    through its child 2^j (2^j < n <= 2^(j+1)), 2^(j-1), ..., 2, 1 has j + 1 edges, and no
    rank lies deeper."""
    checks.instance("tree", tree, BinaryTree)
    n, parent, children = tree.n, tree.parent, tree.children
    in_range = bool(
        np.all((parent >= -1) & (parent < n)) and np.all((children >= -1) & (children < n))
    )
    spanning = in_range and int(np.sum(parent < 0)) == 1
    depth = -1
    if spanning:
        try:
            depth = int(tree.depths().max())
        except ValueError:
            spanning = False
    consistent = in_range
    if in_range:
        r = np.arange(n)
        has_parent = parent >= 0
        slot = tree.child_type
        in_parent = np.any(children[np.maximum(parent, 0)] == r[:, None], axis=1)
        slot_ok = children[np.maximum(parent, 0), np.clip(slot, 0, 1)] == r
        kids = children[children >= 0]
        owners = np.repeat(r, 2)[(children >= 0).reshape(-1)]
        consistent = bool(
            np.all(in_parent[has_parent] & slot_ok[has_parent] & (slot[has_parent] >= 0))
            and np.all(parent[kids] == owners)
            and np.unique(kids).size == kids.size  # no rank is the child of two ranks
            and not np.any(kids == owners)
        )
    return TreeReport(n, spanning, consistent, int(tree.nchildren.max()), depth,
                      int(M.ceil_log2(n)))  # fmt: skip


@dataclass(frozen=True)
class DoubleTreeReport:
    """What :func:`check_double_tree` found for the pair of trees on n ranks."""

    n: int
    trees: tuple[TreeReport, TreeReport]
    max_parents: int  # parents of one rank, both trees together
    max_children: int  # children of one rank, both trees together
    leaf_in_both: np.ndarray  # ranks that are leaves of both trees (never forward data)
    interior_in_both: np.ndarray  # ranks with children in both trees
    notes: tuple[str, ...]  # why a property fails, where it does

    def __post_init__(self):
        n = _ranks(self.n)
        object.__setattr__(self, "n", n)
        trees = self.trees
        if not (isinstance(trees, tuple | list) and len(trees) == 2
                and all(isinstance(t, TreeReport) and t.n == n for t in trees)):  # fmt: skip
            raise checks.fail("trees", f"a pair of TreeReports for n = {n}", trees)
        object.__setattr__(self, "trees", tuple(trees))
        for name in ("max_parents", "max_children"):
            object.__setattr__(self, name, checks.integer(name, getattr(self, name), 0, 2 * n))
        for name in ("leaf_in_both", "interior_in_both"):
            ranks = getattr(self, name)
            if (isinstance(ranks, list | tuple) and not ranks) or (
                isinstance(ranks, np.ndarray) and ranks.size == 0
            ):
                ranks = np.zeros(0, np.int64)  # [] is float64 to numpy: no rank at all
            ranks = checks.array(name, ranks, ndim=1, integer=True, low=0, high=n - 1,
                                 empty=True, max_size=n)  # fmt: skip
            object.__setattr__(self, name, ranks)
        notes = self.notes
        if not isinstance(notes, tuple | list) or len(notes) > 8:
            raise checks.fail("notes", "a tuple of at most 8 strings", notes)
        object.__setattr__(self, "notes", tuple(checks.text("notes[i]", t, 2000) for t in notes))

    @property
    def complementary(self) -> bool:
        """Every rank is a leaf in exactly one tree and interior in the other."""
        return self.leaf_in_both.size == 0 and self.interior_in_both.size == 0

    @property
    def ok(self) -> bool:
        """Both trees ok, at most two parents and two children per rank over both trees,
        and no rank a leaf of both (Sanders et al.'s condition for full bandwidth)."""
        return (
            all(t.ok for t in self.trees)
            and self.max_parents <= 2
            and self.max_children <= 2
            and self.leaf_in_both.size == 0
        )


def check_double_tree(n: int, nccl_version=RULE_CHANGED) -> DoubleTreeReport:
    """Build NCCL's two trees for n ranks and check the double-tree properties.

    Why "leaf in one, interior in the other" cannot hold for every rank when n is odd: each
    tree has floor(n / 2) leaves (tree 1's leaves are its odd ranks), so the two trees have
    2 floor(n / 2) = n - 1 leaf places for n ranks, and at least one rank is interior in
    both. With the 2.8.3 rule that rank is 0 (tree 1's root, and in tree 2 it takes the
    place of rank n - 1, which has a child). n = 1 is degenerate: one rank, root and leaf of
    both trees, nothing to send.
    """
    n, version = _ranks(n), _version(nccl_version)
    first, second = double_binary_tree(n, version)
    leaves = np.stack([first.is_leaf, second.is_leaf])  # (2, n)
    leaf_in_both = np.flatnonzero(leaves.all(axis=0))
    interior_in_both = np.flatnonzero(~leaves.any(axis=0))
    parents = (first.parent >= 0).astype(int) + (second.parent >= 0)
    notes = []
    if n == 1:
        notes.append("1 rank: it is root and leaf of both trees; nothing is sent.")
    elif leaf_in_both.size:
        note = (
            f"ranks {leaf_in_both.tolist()} are leaves of both trees, so they never forward "
            "data and the trees cannot reach full bandwidth"
        )
        if n % 2 and not _second_tree_is_shifted(n, version):
            note += (
                ": mirroring an odd number of ranks maps the odd ranks (tree 1's leaves) onto "
                "odd ranks, the rule NCCL replaced in 2.8.3"
            )
        notes.append(note + ".")
    if n > 1 and interior_in_both.size:
        total = first.nchildren + second.nchildren
        one = interior_in_both.size == 1
        who = f"rank {interior_in_both[0]} is" if one else f"ranks {interior_in_both.tolist()} are"
        note = f"{who} interior in both trees"
        if n % 2:
            note += (
                f": with an odd number of ranks each tree has {n // 2} leaves, "
                f"{2 * (n // 2)} leaf places for {n} ranks, so at least one is interior twice"
            )
        most = int(total[interior_in_both].max())
        has = f"it has {most}" if one else f"they have at most {most}"
        notes.append(note + f"; {has} children over both trees.")
    return DoubleTreeReport(
        n,
        (check_tree(first), check_tree(second)),
        int(parents.max()),
        int((first.nchildren + second.nchildren).max()),
        leaf_in_both,
        interior_in_both,
        tuple(notes),
    )
