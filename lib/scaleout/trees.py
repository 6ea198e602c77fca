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
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import checks
from . import collectives as C
from . import costmodel as M

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


# ------------------------------------------------------------------------------- checks


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


# ------------------------------------------------------------- pipelined tree all-reduce


@dataclass(frozen=True)
class TreeAllreduceSchedule:
    """Every message of a pipelined (two-)tree all-reduce, one entry per message.

    Part t of the buffer (``chunk_bounds(numel, ntrees)``) travels over tree t, cut into
    ``chunks`` pieces; ``up`` messages carry partial sums to the parent (the receiver adds),
    the others carry the final sum to a child (the receiver copies). Arrays are sorted by step.
    """

    p: int
    numel: int
    chunks: int
    ntrees: int
    depth: int  # depth of each tree, ceil(log2 p)
    nsteps: int  # chunks + 2 * depth - 1 (0 for p = 1)
    step: np.ndarray  # (m,) int64
    tree: np.ndarray  # (m,) 0 or 1
    chunk: np.ndarray  # (m,) chunk index within its part
    src: np.ndarray  # (m,)
    dst: np.ndarray  # (m,)
    up: np.ndarray  # (m,) bool
    offset: np.ndarray  # (m,) first element
    count: np.ndarray  # (m,) elements

    def __post_init__(self):
        p = _ranks(self.p, "p")
        numel = checks.integer("numel", self.numel, 1, C.MAX_COUNT)
        ntrees = _trees(self.ntrees)
        chunks = checks.integer("chunks", self.chunks, 1, MAX_CHUNKS)
        depth = checks.integer("depth", self.depth, 0, 64)
        nsteps = checks.integer("nsteps", self.nsteps, 0, MAX_CHUNKS + 2 * 64)
        for name, value in (("p", p), ("numel", numel), ("ntrees", ntrees), ("chunks", chunks),
                            ("depth", depth), ("nsteps", nsteps)):  # fmt: skip
            object.__setattr__(self, name, value)
        highs = {"step": max(nsteps - 1, 0), "tree": ntrees - 1, "chunk": chunks - 1,
                 "src": p - 1, "dst": p - 1, "offset": numel, "count": numel}  # fmt: skip
        m = None
        for name, high in highs.items():
            arr = checks.array(name, getattr(self, name), ndim=1, integer=True, low=0,
                               high=high, empty=True, max_size=MAX_MESSAGES)  # fmt: skip
            if m is not None and arr.size != m:
                raise checks.fail(name, f"an array of {m} messages, like step", arr.size)
            m = arr.size
            object.__setattr__(self, name, arr)
        up = self.up
        if not isinstance(up, np.ndarray) or up.dtype != bool or up.shape != (m,):
            raise checks.fail("up", f"a 1-D bool array of {m} messages", self.up)
        object.__setattr__(self, "up", up.copy())
        if np.any(self.offset + self.count > numel) or np.any(np.diff(self.step) < 0):
            raise checks.fail("offset, count and step", f"messages within numel = {numel}, "
                              "sorted by step", "messages out of range or order")  # fmt: skip

    def steps(self) -> list[C.Step]:
        """The schedule as a list of :class:`scaleout.collectives.Step`, one per step."""
        bounds = np.searchsorted(self.step, np.arange(self.nsteps + 1))
        out = []
        for s in range(self.nsteps):
            sl = slice(bounds[s], bounds[s + 1])
            up = self.up[sl]
            phase = "reduce+broadcast" if up.any() and not up.all() else (
                "reduce" if up.any() else "broadcast")  # fmt: skip
            rows = zip(self.src[sl].tolist(), self.dst[sl].tolist(), self.offset[sl].tolist(),
                       self.count[sl].tolist(), up.tolist(), strict=True)  # fmt: skip
            transfers = tuple(C.Transfer(a, b, -1, o, k, u) for a, b, o, k, u in rows)
            out.append(C.Step(phase, transfers))
        return out


def tree_allreduce_schedule(
    p: int, numel: int, chunks: int = 1, trees: int = 2, nccl_version=RULE_CHANGED
) -> TreeAllreduceSchedule:
    """The pipelined all-reduce over NCCL's tree (``trees=1``) or double tree (``trees=2``).

    ``p`` ranks, ``numel`` elements per rank, each tree's part cut into ``chunks`` pieces
    (empty pieces, when numel is small, send nothing). A rank of height h sends its partial
    sum of chunk c up in step c + h, after both children's arrived; a rank of depth l >= 1
    receives the final chunk c in step c + d + l - 1. Per tree and step a rank sends at most
    one message up and one to each child, so its port carries at most 3 messages each way.
    The schedule holds ``2 * trees * chunks * (p - 1)`` messages, at most
    :data:`MAX_MESSAGES`, and ``chunks`` is at most :data:`MAX_CHUNKS`.
    """
    p, trees = _ranks(p, "p"), _trees(trees)
    numel = checks.integer("numel", numel, 1, C.MAX_COUNT)
    most = max(1, min(MAX_CHUNKS, MAX_MESSAGES // max(1, 2 * trees * (p - 1))))
    if checks.is_integer(chunks) and chunks > most:
        raise checks.fail("chunks", f"an integer in [1, {most}] for p = {p} and {trees} "
                          f"tree(s) (2 * trees * chunks * (p - 1) messages, at most "
                          f"MAX_MESSAGES = {MAX_MESSAGES})", chunks)  # fmt: skip
    chunks = checks.integer("chunks", chunks, 1, most)
    pair = double_binary_tree(p, nccl_version)
    parts = C.chunk_bounds(numel, trees)
    depth = int(M.ceil_log2(p))
    c = np.arange(chunks)[:, None]  # (chunks, 1): one row per chunk
    cols = {k: [] for k in ("step", "tree", "chunk", "src", "dst", "up", "offset", "count")}
    for t in range(trees):
        tree = pair[t]
        kids = np.flatnonzero(tree.parent >= 0)[None, :]  # (1, p - 1): every non-root rank
        height, level = tree.heights()[kids], tree.depths()[kids]
        bounds = parts[t] + C.chunk_bounds(int(parts[t + 1] - parts[t]), chunks)
        for up in (True, False):
            step = c + height if up else c + depth + level - 1  # (chunks, p - 1)
            src, dst = (kids, tree.parent[kids]) if up else (tree.parent[kids], kids)
            shape = step.shape
            for key, val in (("step", step), ("tree", t), ("chunk", c), ("src", src),
                             ("dst", dst), ("up", up), ("offset", bounds[c]),
                             ("count", np.diff(bounds)[c])):  # fmt: skip
                cols[key].append(np.broadcast_to(val, shape).reshape(-1))
    cols = {k: np.concatenate(v) if v else np.zeros(0, np.int64) for k, v in cols.items()}
    keep = cols["count"] > 0
    cols = {k: v[keep] for k, v in cols.items()}
    order = np.lexsort((cols["dst"], cols["src"], ~cols["up"].astype(bool), cols["tree"],
                        cols["step"]))  # fmt: skip
    cols = {k: v[order].astype(bool if k == "up" else np.int64) for k, v in cols.items()}
    nsteps = chunks + 2 * depth - 1 if p > 1 else 0
    return TreeAllreduceSchedule(p, numel, chunks, trees, depth, nsteps, **cols)


def tree_allreduce(buffers, chunks: int = 1, trees: int = 2) -> C.CollectiveRun:
    """Run :func:`tree_allreduce_schedule` on a (p, n) array: every row ends with the sum."""
    x = C._as_buffers(buffers)
    steps = tree_allreduce_schedule(*x.shape, chunks=chunks, trees=trees).steps()
    return C.CollectiveRun(C.replay(x, steps), steps)


def _check_ranks(s: int, src: np.ndarray, dst: np.ndarray, p: int) -> None:
    if src.max() >= p or dst.max() >= p:
        raise checks.fail(f"steps[{s}]", f"transfers between ranks in [0, {p})",
                          f"a transfer to or from rank {max(src.max(), dst.max())}")  # fmt: skip


def flows_per_step(steps, p: int) -> tuple[np.ndarray, np.ndarray]:
    """Fan-in and fan-out of any schedule (a list of :class:`scaleout.collectives.Step`).

    Returns ``(flows_in, flows_out)``, each (len(steps), p): how many distinct ranks send to
    rank r in step s, and to how many distinct ranks r sends. A ring is 1-to-1 everywhere.
    The two arrays hold at most ``checks.MAX_ELEMENTS`` numbers each.
    """
    steps = C._as_steps(steps)
    p = _ranks(p, "p")
    if len(steps) * p > checks.MAX_ELEMENTS:
        raise checks.fail("steps", f"at most {checks.MAX_ELEMENTS // p} steps for p = {p}",
                          f"{len(steps)} steps")  # fmt: skip
    fin, fout = np.zeros((len(steps), p), np.int64), np.zeros((len(steps), p), np.int64)
    for s, step in enumerate(steps):
        pairs = {(t.src, t.dst) for t in step.transfers}
        if pairs:
            src, dst = np.array(sorted(pairs)).T
            _check_ranks(s, src, dst, p)
            np.add.at(fout[s], src, 1)
            np.add.at(fin[s], dst, 1)
    return fin, fout


def schedule_time(steps, p: int, itemsize: int, alpha, beta) -> float:
    """Seconds for a schedule in the one-port model: each rank has one full-duplex port of
    1/beta bytes/s per direction, shared by all its messages of a step; a step lasts alpha
    plus the time of its busiest port (bytes sent or received, whichever is more)."""
    steps = C._as_steps(steps)
    p = _ranks(p, "p")
    itemsize = checks.integer("itemsize", itemsize, 1, C.MAX_ITEMSIZE)
    alpha, beta = checks.nonnegative("alpha", alpha), checks.nonnegative("beta", beta)
    total = 0.0
    for s, step in enumerate(steps):
        sent, recv = np.zeros(p), np.zeros(p)
        if step.transfers:
            src, dst, count = np.array([(t.src, t.dst, t.count) for t in step.transfers]).T
            _check_ranks(s, src, dst, p)
            np.add.at(sent, src, count * float(itemsize))
            np.add.at(recv, dst, count * float(itemsize))
        total += alpha + beta * max(sent.max(), recv.max())
    return float(checks.finite_result("schedule_time", total))


def port_messages(tree: BinaryTree) -> np.ndarray:
    """(n,) messages each rank sends (= receives) per tree in a full pipeline step:
    one up unless it is the root, one down to each child."""
    tree = checks.instance("tree", tree, BinaryTree)
    return (tree.parent >= 0) + tree.nchildren


def port_load(p, trees: int = 2):
    """Busiest port per steady-state step, in units of message/chunks bytes (vectorised).

    One tree: max of :func:`port_messages` = 3 for p >= 4 (a rank with a parent and two
    children), else p - 1. Two trees, each message half as large: (messages over both
    trees) / 2 = 2 for p >= 4 (3 in the tree where a rank is interior, 1 where it is a
    leaf); 1 and 1.5 for p = 2 and 3. Tested against the trees for every p up to 1024.
    """
    trees = _trees(trees)
    p = M._ranks(p)
    small = {1: (0.0, 0.0), 2: (1.0, 1.0), 3: (2.0, 1.5)}
    out = np.full(p.shape, 3.0 if trees == 1 else 2.0)
    for q, loads in small.items():
        out = np.where(p == q, loads[trees - 1], out)
    return M._out(out)


def tree_allreduce_time(nbytes, p, alpha, beta, chunks=1, trees: int = 2):
    """Seconds for the pipelined tree all-reduce of ``nbytes`` per rank (vectorised).

    ``(chunks + 2 ceil(log2 p) - 1) * (alpha + port_load(p) * nbytes / chunks * beta)``:
    the number of steps of :func:`tree_allreduce_schedule` times the cost of its busiest
    step in the one-port model of :func:`schedule_time` (an upper bound on that model's
    time: the first and last steps are lighter). For many chunks the bandwidth term tends to
    ``port_load * nbytes * beta``: 2 n beta for two trees, against 2 (p-1)/p n beta for the
    ring, and 3 n beta for one tree. Same shape as the pipelined-tree costs of Sanders,
    Speck & Traeff (Parallel Computing 2009): latency ~ (log p + chunks), bandwidth ~
    n/chunks per step. ``chunks`` may be any finite number > 0 here (a continuous model).
    """
    trees = _trees(trees)
    n, p = M._real("nbytes", nbytes), M._ranks(p)
    a, b = M._real("alpha", alpha), M._real("beta", beta)
    k = M._real("chunks", chunks, positive=True)
    with np.errstate(over="ignore", invalid="ignore"):
        steps = np.where(p > 1, k + 2 * M._lg(p) - 1, 0.0)
        return M._out(steps * (a + port_load(p, trees) * n / k * b), "tree_allreduce_time")


def optimal_chunks(nbytes, p, alpha, beta, trees: int = 2):
    """The integer chunks >= 1 that minimises :func:`tree_allreduce_time` (vectorised).

    The continuous optimum is sqrt((2 ceil(log2 p) - 1) * load * n * beta / alpha); the best
    integer is its floor or its ceiling. Needs alpha > 0.
    """
    trees = _trees(trees)
    n, p = M._real("nbytes", nbytes), M._ranks(p)
    a, b = M._real("alpha", alpha, positive=True), M._real("beta", beta)
    with np.errstate(over="ignore", invalid="ignore"):
        best = np.sqrt(np.maximum(2 * M._lg(p) - 1, 0) * port_load(p, trees) * n * b / a)
    checks.finite_result("optimal_chunks", best)
    lo = np.maximum(np.floor(best), 1.0)
    hi = lo + 1
    t_lo = tree_allreduce_time(n, p, a, b, lo, trees)
    t_hi = tree_allreduce_time(n, p, a, b, hi, trees)
    return M._out(np.where(t_hi < t_lo, hi, lo), "optimal_chunks")


def best_tree_time(nbytes, p, alpha, beta, trees: int = 2):
    """:func:`tree_allreduce_time` at :func:`optimal_chunks` (vectorised), in seconds."""
    k = optimal_chunks(nbytes, p, alpha, beta, trees)
    return tree_allreduce_time(nbytes, p, alpha, beta, k, trees)


def crossover_vs_ring(p, alpha, beta, trees: int = 2):
    """Bytes per rank below which the tree all-reduce (best chunks) beats the ring (vectorised).

    The ring is ``scaleout.costmodel``'s ``2(p-1) alpha + 2((p-1)/p) n beta``. At n = 0 the
    tree costs 2 ceil(log2 p) alpha against the ring's 2 (p-1) alpha, so it wins small
    messages from p = 4 on (nan below: no crossover); every tree cost line grows faster
    in n than the ring's, so there is exactly one crossover, found by bisection on log n.
    It lies below ``hi = 2 p (p - 1) alpha / beta`` (the tree's bandwidth term is at least
    2 n beta, the ring's at most 2 n beta (p - 1) / p) and above ``hi / 2**64`` (the tree
    with one chunk wins up to alpha / (3 d beta)): 80 halvings of that range in log2 give the
    crossover to float64 precision.
    """
    trees = _trees(trees)
    p = M._ranks(p)
    a, b = M._real("alpha", alpha, positive=True), M._real("beta", beta, positive=True)
    p, a, b = np.broadcast_arrays(p, a, b)
    with np.errstate(over="ignore", divide="ignore"):
        top = np.log2(2 * p * np.maximum(p - 1, 1)) + np.log2(a) - np.log2(b)
    checks.finite_result("crossover_vs_ring", top)

    def tree_wins(log2n):
        with np.errstate(over="ignore"):
            n = 2.0**log2n  # an overflow to inf is rejected by collective_time
        ring = M.collective_time("allreduce", "ring", n, p, a, b)
        return best_tree_time(n, p, a, b, trees) < ring

    lo, hi = top - 64.0, top
    for _ in range(80):
        mid = (lo + hi) / 2
        wins = tree_wins(mid)
        lo, hi = np.where(wins, mid, lo), np.where(wins, hi, mid)
    out = np.where((p >= 4) & tree_wins(top - 64.0), 2.0**lo, np.nan)
    return float(out) if out.ndim == 0 else out


# ------------------------------------------------------- published measurements (Summit)

#: Where :data:`SUMMIT_ALLREDUCE_8B` comes from.
SUMMIT_SOURCE = (
    "Jeaugey, 'Massively Scale Your Deep Learning Training with NCCL 2.4', NVIDIA blog, "
    "2019, figure 3 ('NCCL latency, Allreduce, 8 bytes'; NCCL 2.4 trees, NCCL 2.3 rings, "
    "Summit, 96 to 24,576 GPUs); values read off the published figure (log axis, 38 pixels "
    "per doubling: about +-3 %)"
)
#: V100 GPUs per Summit node (6, on NVLink, with 2 POWER9 CPUs; nodes on EDR InfiniBand).
SUMMIT_GPUS_PER_NODE = 6
#: (GPUs, NCCL 2.4 two trees in us, NCCL 2.3 ring in us) for an 8-byte all-reduce on Summit.
SUMMIT_ALLREDUCE_8B = (
    (96, 127.0, 174.0),
    (192, 139.0, 356.0),
    (384, 155.0, 648.0),
    (768, 169.0, 1310.0),
    (1536, 180.0, 2650.0),
    (3072, 198.0, 5410.0),
    (6144, 207.0, 10700.0),
    (12288, 226.0, 21400.0),
    (24576, 248.0, 45200.0),
)


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
