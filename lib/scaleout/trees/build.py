"""NCCL's binary tree and double binary tree over ranks 0..n-1 (numpy only).

Part of :mod:`scaleout.trees` (chapter 9): ``ncclGetBtree`` and ``ncclGetDtree`` of NCCL's
``src/graph/trees.cc``, re-implemented vectorised over all ranks; the package docstring
gives the releases and lines. Limits: trees span at most :data:`MAX_RANKS` ranks.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import checks
from .. import collectives as C

NCCL_SOURCE = (
    "NVIDIA/nccl src/graph/trees.cc: ncclGetBtree (line 31) and ncclGetDtree (line 88) in "
    "release 2.8.3 (tag v2.8.3-1); the same rule up to 2.30.7"
)
TREES_FROM = (2, 4, 0)  # NCCL release that introduced the double binary tree
RULE_CHANGED = (2, 8, 3)  # release from which odd n shift and even n mirror (before: the reverse)
#: Most ranks (in NCCL, nodes) a tree may span; building and checking 2**20 takes seconds.
MAX_RANKS = 2**20
#: Most messages of one pipelined schedule (the transfers of its steps fit a collectives Step).
MAX_MESSAGES = C.MAX_TRANSFERS
#: Most chunks per tree of one pipelined schedule.
MAX_CHUNKS = 2**16
TREE_COUNTS = (1, 2)


def _ranks(n, name: str = "n") -> int:
    return checks.integer(name, n, 1, MAX_RANKS)


def _trees(trees) -> int:
    return checks.choice("trees", trees, TREE_COUNTS)


def _version(nccl_version) -> tuple[int, ...]:
    ok = isinstance(nccl_version, tuple | list) and 1 <= len(nccl_version) <= 3
    if not ok or not all(checks.is_integer(v) and 0 <= v <= 999 for v in nccl_version):
        raise checks.fail("nccl_version", "a tuple of 1 to 3 integers in [0, 999] such as "
                          "(2, 8, 3)", nccl_version)  # fmt: skip
    version = tuple(int(v) for v in nccl_version)
    if version < TREES_FROM:
        raise checks.fail("nccl_version", f"a release >= {TREES_FROM} (no trees before)",
                          nccl_version)  # fmt: skip
    return version


def _floor_pow2(x: np.ndarray) -> np.ndarray:
    """Largest power of two <= x for integer x >= 1 (exact below 2**53); 0 where x <= 0."""
    x = np.asarray(x, dtype=np.int64)
    exp = np.frexp(np.maximum(x, 1).astype(np.float64))[1] - 1
    return np.where(x >= 1, np.left_shift(np.int64(1), exp), 0)


@dataclass(frozen=True)
class BinaryTree:
    """One spanning tree over ranks 0..n-1, as NCCL stores it per rank.

    ``parent[r]`` is r's parent (-1 for the root); ``children[r]`` holds NCCL's two child
    slots ``down[0], down[1]`` (-1 for none); ``child_type[r]`` is NCCL's
    ``parentChildType`` (0 or 1: the slot of r in its parent, -1 for the root).
    """

    parent: np.ndarray  # (n,) int64
    children: np.ndarray  # (n, 2) int64
    child_type: np.ndarray  # (n,) int64

    def __post_init__(self):
        parent = checks.array("parent", self.parent, ndim=1, integer=True, low=-1,
                              max_size=MAX_RANKS)  # fmt: skip
        n = parent.size
        if parent.max() > n - 1:
            raise checks.fail("parent", f"ranks in [-1, {n - 1}] for n = {n}", int(parent.max()))
        children = checks.array("children", self.children, ndim=2, integer=True, low=-1,
                                high=n - 1, max_size=2 * MAX_RANKS)  # fmt: skip
        if children.shape != (n, 2):
            raise checks.fail("children", f"an (n, 2) array for n = {n} ranks",
                              f"shape {children.shape}")  # fmt: skip
        child_type = checks.array("child_type", self.child_type, ndim=1, integer=True,
                                  low=-1, high=1, max_size=MAX_RANKS)  # fmt: skip
        if child_type.shape != (n,):
            raise checks.fail("child_type", f"an (n,) array for n = {n} ranks",
                              f"shape {child_type.shape}")  # fmt: skip
        for name, value in (("parent", parent), ("children", children), ("child_type", child_type)):
            object.__setattr__(self, name, value)

    @property
    def n(self) -> int:
        return int(self.parent.shape[0])

    @property
    def root(self) -> int:
        """The rank without a parent (the first one, if the arrays hold several)."""
        roots = np.flatnonzero(self.parent < 0)
        if roots.size == 0:
            raise ValueError("not a tree: no rank is a root (every parent is set)")
        return int(roots[0])

    @property
    def nchildren(self) -> np.ndarray:
        """(n,) number of children of each rank (0, 1 or 2)."""
        return (self.children >= 0).sum(axis=1)

    @property
    def is_leaf(self) -> np.ndarray:
        """True for the ranks without children, shape (n,)."""
        return self.nchildren == 0

    def depths(self) -> np.ndarray:
        """(n,) edges from each rank up to the root, by pointer doubling (O(n log n)).

        Raises ValueError if some rank never reaches a root (the parents form a cycle).
        """
        n = self.n
        anc = np.where(self.parent >= 0, self.parent, np.arange(n))
        depth = (self.parent >= 0).astype(np.int64)  # distance from r to anc[r]
        for _ in range(n.bit_length() + 1):
            depth, anc = depth + depth[anc], anc[anc]  # jump twice as far
        if np.any(self.parent[anc] >= 0):
            raise ValueError("not a tree: some rank never reaches a root (a cycle)")
        return depth

    @property
    def depth(self) -> int:
        """Edges on the longest root-to-leaf path."""
        return int(self.depths().max())

    def heights(self) -> np.ndarray:
        """(n,) edges on the longest path from each rank down to a leaf (0 for leaves)."""
        depth = self.depths()
        height = np.zeros(self.n, dtype=np.int64)
        for level in range(int(depth.max()), 0, -1):
            ranks = np.flatnonzero(depth == level)
            np.maximum.at(height, self.parent[ranks], height[ranks] + 1)
        return height


def binary_tree(n: int, nccl_version=RULE_CHANGED) -> BinaryTree:
    """NCCL's binary tree over ranks 0..n-1 (``ncclGetBtree``, ``src/graph/trees.cc`` line 31
    in 2.8.3), for 1 <= n <= :data:`MAX_RANKS`.

    The rule, for rank r with lowest set bit b (rank 0: none): rank 0 is the root and its
    only child is the largest power of two below n. Any other rank's parent is
    ``(r ^ b) | (b << 1)`` (clear b, set the next bit), or ``r ^ b`` when that is >= n. Its
    children are ``r - b/2`` and ``r + L`` with L the largest of b/2, b/4, ... 1 for which
    ``r + L < n`` (none if there is none); odd ranks (b = 1) are the leaves. The result is an
    in-order tree: left subtree < r < right subtree. From 2.8.3 on the root's child sits in
    slot 1 (before: slot 0) and ``child_type`` is NCCL's ``parentChildType``: 0 if r is
    smaller than its parent, else 1 (before 2.8.3 it did not exist; we give r's slot).
    """
    n, version = _ranks(n), _version(nccl_version)
    r = np.arange(n, dtype=np.int64)
    bit = r & -r  # lowest set bit; 0 for rank 0
    up = (r ^ bit) | (bit << 1)
    up = np.where(up >= n, r ^ bit, up)
    low = bit >> 1
    down0 = np.where(low > 0, r - low, -1)
    room = np.minimum(low, _floor_pow2(n - 1 - r))  # largest allowed power of two <= b/2
    down1 = np.where(room > 0, r + room, -1)
    parent = np.where(r == 0, -1, up)
    children = np.stack([down0, down1], axis=1)
    child_type = np.where(r == 0, -1, (r > up).astype(np.int64))
    if n > 1:
        slot = 1 if version >= RULE_CHANGED else 0
        children[0, slot] = int(_floor_pow2(n - 1))
        if version < RULE_CHANGED:
            child_type[children[0, slot]] = slot
    return BinaryTree(parent, children, child_type)


def _second_tree_is_shifted(n: int, version: tuple[int, ...]) -> bool:
    """From 2.8.3: shift for odd n, mirror for even n. Before: shift even, mirror odd."""
    return (n % 2 == 1) == (version >= RULE_CHANGED)


def double_binary_tree(n: int, nccl_version=RULE_CHANGED) -> tuple[BinaryTree, BinaryTree]:
    """NCCL's two trees over ranks 0..n-1 (``ncclGetDtree``, ``src/graph/trees.cc`` line 88
    in 2.8.3).

    Tree 1 is :func:`binary_tree`. Tree 2 is tree 1 relabelled: *shifted* by one rank
    (rank r plays the role rank (r - 1) mod n has in tree 1, and every neighbour x becomes
    (x + 1) mod n) or *mirrored* (r plays n - 1 - r, x becomes n - 1 - x). From NCCL 2.8.3
    on odd n is shifted and even n mirrored; before 2.8.3 it was the other way round
    (``nccl_version`` picks the rule). Child slots keep NCCL's order, so in a mirrored tree
    slot 0 may hold the larger child (NVIDIA/nccl pull request 1602 discusses swapping
    them); ``child_type`` is NCCL's ``parentChildType1``, computed on the relabelled rank.
    """
    n, version = _ranks(n), _version(nccl_version)
    first = binary_tree(n, version)
    r = np.arange(n, dtype=np.int64)
    if _second_tree_is_shifted(n, version):
        role, relabel = (r - 1) % n, lambda x: (x + 1) % n
    else:
        role, relabel = n - 1 - r, lambda x: n - 1 - x
    parent, children = first.parent[role], first.children[role]
    second = BinaryTree(
        np.where(parent >= 0, relabel(parent), -1),
        np.where(children >= 0, relabel(children), -1),
        first.child_type[role],
    )
    return first, second


def dtree_roots(n: int, nccl_version=RULE_CHANGED) -> tuple[int, int]:
    """Roots of the two trees: 0, and 1 (shifted) or n - 1 (mirrored).

    A helper of this book, not an NCCL function: NCCL has no call for the roots (in no
    release up to 2.30.7); in ``ncclGetDtree`` a root is the rank whose parent is -1.
    """
    n, version = _ranks(n), _version(nccl_version)
    return 0, (1 % n if _second_tree_is_shifted(n, version) else n - 1)
