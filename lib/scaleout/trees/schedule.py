"""The pipelined (two-)tree all-reduce as a schedule of messages, its replay, and the
one-port time of any schedule. Part of :mod:`scaleout.trees` (chapter 9); the package
docstring states the schedule (chunk c goes up in step c + h, down in step c + d + l - 1).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import checks
from .. import collectives as C
from .. import costmodel as M
from .build import MAX_CHUNKS, MAX_MESSAGES, RULE_CHANGED, _ranks, _trees, double_binary_tree


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
