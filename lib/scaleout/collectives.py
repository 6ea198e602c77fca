"""Reference collective algorithms as explicit step-by-step schedules (numpy only).

Taught in chapter 1, "Collective communication" (chapters/01_collectives.ipynb).

Every algorithm is split in two: a *schedule* (a pure function of ``p`` ranks, ``n``
elements per rank and the root, returning a list of :class:`Step`) and :func:`replay`,
which applies a schedule to a ``(p, n)`` array whose row ``r`` is rank ``r``'s buffer.
Inside one step all transfers are simultaneous: every send reads the state *before* the
step, then every receive is applied (copied, or added when ``reduce`` is true).

Limits (checked; beyond them a function raises ``ValueError``): a schedule spans at most
:data:`MAX_RANKS` ranks and holds at most :data:`MAX_TRANSFERS` transfers, which the ring
schedules (``2p(p-1)`` transfers for the all-reduce) reach at :data:`MAX_RING_RANKS`;
element counts and offsets are at most :data:`MAX_COUNT`; buffers, like every array of the
library, hold at most ``checks.MAX_ELEMENTS`` numbers (a trajectory of states included).

Sources: Thakur, Rabenseifner & Gropp, "Optimization of Collective Communication
Operations in MPICH", IJHPCA 19(1), 2005 (the files under MPICH ``src/mpi/coll``);
Patarasuk & Yuan, "Bandwidth optimal all-reduce algorithms for clusters of workstations",
JPDC 69(2), 2009 (ring all-reduce). Chunks follow :func:`chunk_bounds`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from . import checks

#: Most ranks a schedule may span (the book's largest clusters are 65,536 ranks).
MAX_RANKS = 65_536
#: Most transfers one schedule may hold (about 300 MB of :class:`Transfer` records).
MAX_TRANSFERS = 2**21
#: Most ranks of a ring schedule (the ring all-reduce's 2p(p-1) transfers fit MAX_TRANSFERS).
MAX_RING_RANKS = 1024
#: Largest element count or offset (exact in float64 as well as int64).
MAX_COUNT = 2**53
#: Largest bytes per element :func:`bytes_sent_per_rank` accepts.
MAX_ITEMSIZE = 2**30

REFERENCE_COLLECTIVES = tuple(
    "broadcast reduce allreduce reducescatter allgather alltoall scatter gather".split()
)


@dataclass(frozen=True, slots=True)
class Transfer:
    """One message: ``count`` elements from ``offset`` on, sent from ``src`` to ``dst``."""

    src: int  # sending rank
    dst: int  # receiving rank
    chunk: int  # index in the p-way split (chunk_bounds) if the range is exactly one chunk, else -1
    offset: int  # first element
    count: int  # number of elements
    reduce: bool  # True: dst adds the data into its buffer; False: dst overwrites (copy)

    def __post_init__(self):
        ints = ((self.src, 0, MAX_RANKS - 1), (self.dst, 0, MAX_RANKS - 1),
                (self.chunk, -1, MAX_RANKS - 1), (self.offset, 0, MAX_COUNT),
                (self.count, 0, MAX_COUNT))  # fmt: skip
        if not all(type(v) is int and lo <= v <= hi for v, lo, hi in ints):  # slow path
            for name, (v, lo, hi) in zip(("src", "dst", "chunk", "offset", "count"), ints,
                                         strict=True):  # fmt: skip
                object.__setattr__(self, name, checks.integer(name, v, lo, hi))
        if type(self.reduce) is not bool:
            object.__setattr__(self, "reduce", checks.boolean("reduce", self.reduce))
        if self.src == self.dst:
            raise checks.fail("dst", f"a rank other than src = {self.src}", self.dst)
        if self.offset + self.count > MAX_COUNT:
            raise checks.fail("offset + count", f"at most {MAX_COUNT}", self.offset + self.count)


@dataclass(frozen=True, slots=True)
class Step:
    """Transfers that happen at the same time; ``phase`` names the part of the algorithm."""

    phase: str
    transfers: tuple[Transfer, ...]

    def __post_init__(self):
        checks.text("phase", self.phase)
        transfers = self.transfers
        if not isinstance(transfers, tuple | list) or len(transfers) > MAX_TRANSFERS:
            raise checks.fail("transfers", f"a tuple of at most {MAX_TRANSFERS} Transfers",
                              transfers)  # fmt: skip
        if not all(type(t) is Transfer for t in transfers):
            bad = next(t for t in transfers if type(t) is not Transfer)
            raise checks.fail("transfers", "a tuple of Transfer records", bad)
        object.__setattr__(self, "transfers", tuple(transfers))


class _Run(NamedTuple):
    buffers: np.ndarray
    steps: list[Step]


class CollectiveRun(_Run):
    """What a runner returns: ``buffers``, the final (p, n) per-rank buffers (row r = rank
    r), and ``steps``, the schedule that produced them. Unpacks as ``final, steps = run``."""

    __slots__ = ()

    def __new__(cls, buffers, steps):
        return super().__new__(cls, _as_buffers(buffers), _as_steps(steps))


def _as_buffers(buffers, name: str = "buffers") -> np.ndarray:
    """A float64 copy of ``buffers`` after checking it is a finite numeric (p, n) array."""
    x = checks.array(name, buffers, ndim=2)
    if x.shape[0] > MAX_RANKS:
        raise checks.fail(name, f"a (p, n) array with at most {MAX_RANKS} ranks (rows)",
                          f"{x.shape[0]} rows")  # fmt: skip
    return x  # checks.array returns a new float64 array: the caller's data is never aliased


def _as_steps(steps, name: str = "steps") -> list[Step]:
    """``steps`` as a list after checking it is a sequence of :class:`Step`."""
    if not isinstance(steps, list | tuple):
        raise checks.fail(name, "a list of Step records", steps)
    for i, step in enumerate(steps):
        if type(step) is not Step:
            raise checks.fail(f"{name}[{i}]", "a Step", step)
    return list(steps)


def _ranks(p) -> int:
    return checks.integer("p", p, 1, MAX_RANKS)


def _ring_ranks(p) -> int:
    if checks.is_integer(p) and p > MAX_RING_RANKS:
        what = (f"an integer in [1, {MAX_RING_RANKS}] for a ring schedule (2p(p-1) transfers, "
                f"at most MAX_TRANSFERS = {MAX_TRANSFERS})")  # fmt: skip
        raise checks.fail("p", what, p)
    return _ranks(p)


def _elements(n, low: int = 1) -> int:
    return checks.integer("n", n, low, MAX_COUNT)


def _root(root, p: int, name: str = "root") -> int:
    return checks.integer(name, root, 0, p - 1)


def chunk_bounds(n: int, p: int) -> np.ndarray:
    """Offsets ``(p + 1,)`` of the p-way split of n elements, as ``np.array_split`` does.

    The first ``n % p`` chunks hold one element more; chunks are empty when ``n < p``.
    ``n`` is at most :data:`MAX_COUNT`; ``p + 1`` is at most ``checks.MAX_ELEMENTS``.
    """
    n = _elements(n, 0)
    p = checks.integer("p", p, 1, checks.MAX_ELEMENTS - 1)
    sizes = np.full(p, n // p, dtype=np.int64)
    sizes[: n % p] += 1
    return np.concatenate(([0], np.cumsum(sizes)))


def _step(phase: str, bounds: np.ndarray, src, dst, lo, hi, reduce: bool) -> Step:
    """A step from arrays of sources, destinations and element ranges [lo, hi); empty ranges
    are dropped, and ``chunk`` is the p-way chunk a range is exactly equal to, else -1."""
    src, dst, lo, hi = np.broadcast_arrays(*(np.asarray(v, dtype=np.int64).reshape(-1)
                                             for v in (src, dst, lo, hi)))  # fmt: skip
    keep = hi > lo
    src, dst, lo, hi = src[keep], dst[keep], lo[keep], hi[keep]
    c = np.searchsorted(bounds, lo, side="right") - 1  # last chunk starting at <= lo
    chunk = np.where((bounds[c] == lo) & (bounds[np.minimum(c + 1, bounds.size - 1)] == hi), c, -1)
    rows = zip(src.tolist(), dst.tolist(), chunk.tolist(), lo.tolist(), (hi - lo).tolist(),
               strict=True)  # fmt: skip
    return Step(phase, tuple(Transfer(s, d, k, o, m, reduce) for s, d, k, o, m in rows))


# ----------------------------------------------------------------------------- ring


def _ring(p: int, n: int, phase: str, reduce: bool, shift: int) -> list[Step]:
    """p-1 steps; in step s rank r sends chunk (r - s - shift) mod p to rank r+1."""
    b, r = chunk_bounds(n, p), np.arange(p)
    steps = []
    for s in range(p - 1):
        c = (r - s - shift) % p
        steps.append(_step(phase, b, r, (r + 1) % p, b[c], b[c + 1], reduce))
    return steps


def ring_reduce_scatter_schedule(p: int, n: int) -> list[Step]:
    """Ring reduce-scatter: after p-1 steps rank r's chunk r holds the sum over all ranks.

    Chunk c starts at rank c+1 and travels around the ring, each rank adding its own
    contribution, until it arrives complete at rank c (torch.distributed.reduce_scatter's
    convention: rank r owns chunk r). Thakur et al. 2005; Patarasuk & Yuan 2009.
    ``p`` is at most :data:`MAX_RING_RANKS`.
    """
    return _ring(_ring_ranks(p), _elements(n), "reduce-scatter", True, 1)


def ring_allgather_schedule(p: int, n: int) -> list[Step]:
    """Ring all-gather: in step s rank r forwards chunk (r - s) mod p to rank r+1.

    Input: rank r's chunk r is its contribution. Thakur et al. 2005 (MPICH
    ``src/mpi/coll/allgather/allgather_intra_ring.c``). ``p`` is at most
    :data:`MAX_RING_RANKS`.
    """
    return _ring(_ring_ranks(p), _elements(n), "all-gather", False, 0)


def ring_allreduce_schedule(p: int, n: int) -> list[Step]:
    """Ring reduce-scatter then ring all-gather: 2(p-1) steps, each rank sends 2(p-1)/p * n.

    Bandwidth-optimal (Patarasuk & Yuan, JPDC 2009); MPICH ``allreduce_intra_ring.c``.
    ``p`` is at most :data:`MAX_RING_RANKS` (2p(p-1) transfers).
    """
    return ring_reduce_scatter_schedule(p, n) + ring_allgather_schedule(p, n)


# ------------------------------------------------- power-of-two algorithms with folding


def _fold(p: int, n: int, bounds: np.ndarray):
    """MPICH's non-power-of-two rule: returns (pof2, real rank of each new rank, fold, unfold).

    With pof2 the largest power of two <= p and rem = p - pof2, each even rank r < 2*rem
    sends its whole buffer to r+1 (which adds it) and sits out; the pof2 survivors run the
    power-of-two algorithm as new ranks (odd r < 2*rem -> r // 2, r >= 2*rem -> r - rem);
    at the end each odd r < 2*rem copies the result back to r-1. See
    ``allreduce_intra_recursive_doubling.c`` and ``allreduce_intra_reduce_scatter_allgather.c``.
    """
    pof2 = 1 << (p.bit_length() - 1)
    rem = p - pof2
    v = np.arange(pof2)
    real = np.where(v < rem, 2 * v + 1, v + rem)
    even = 2 * np.arange(rem)
    fold = [_step("fold", bounds, even, even + 1, 0, n, True)] if rem else []
    unfold = [_step("unfold", bounds, even + 1, even, 0, n, False)] if rem else []
    return pof2, real, fold, unfold


def recursive_doubling_allreduce_schedule(p: int, n: int) -> list[Step]:
    """Recursive doubling: in step k new rank v exchanges its whole buffer with v XOR 2^k.

    lg p steps of n elements each (Thakur et al. 2005; MPICH
    ``allreduce_intra_recursive_doubling.c``), plus fold/unfold when p is not a power of 2.
    """
    p, n = _ranks(p), _elements(n)
    bounds = chunk_bounds(n, p)
    pof2, real, fold, unfold = _fold(p, n, bounds)
    v, steps, mask = np.arange(pof2), [], 1
    while mask < pof2:
        steps.append(_step("recursive-doubling", bounds, real[v], real[v ^ mask], 0, n, True))
        mask <<= 1
    return fold + steps + unfold


def rabenseifner_allreduce_schedule(p: int, n: int) -> list[Step]:
    """Rabenseifner: recursive-halving reduce-scatter, then recursive-doubling all-gather.

    The buffer is cut into pof2 blocks (``chunk_bounds(n, pof2)``). Halving starts at
    distance pof2/2, as in MPICH's ``reduce_scatter_intra_recursive_halving.c``: the
    partner whose bit is set keeps the upper half, so new rank v ends with block v fully
    reduced; doubling then runs the distances back up. (MPICH's
    ``allreduce_intra_reduce_scatter_allgather.c`` starts at distance 1, which leaves the
    blocks in bit-reversed order at the same cost.) Non-powers of two are folded first
    (see ``_fold``); ``chunk`` is then -1 because blocks are not the p-way chunks.
    """
    p, n = _ranks(p), _elements(n)
    bounds = chunk_bounds(n, p)
    pof2, real, fold, unfold = _fold(p, n, bounds)
    blk = chunk_bounds(n, pof2)  # element offsets of the pof2 blocks
    v = np.arange(pof2)
    lo, hi = np.zeros(pof2, np.int64), np.full(pof2, pof2)  # block range each new rank holds
    steps, mask = [], pof2 // 2
    while mask >= 1:  # reduce-scatter by recursive halving
        mid, upper = (lo + hi) // 2, (v & mask) > 0
        send_lo, send_hi = np.where(upper, lo, mid), np.where(upper, mid, hi)
        steps.append(_step("reduce-scatter", bounds, real[v], real[v ^ mask], blk[send_lo],
                           blk[send_hi], True))  # fmt: skip
        lo, hi = np.where(upper, mid, lo), np.where(upper, hi, mid)
        mask //= 2
    mask = 1
    while mask < pof2:  # all-gather by recursive doubling
        steps.append(_step("all-gather", bounds, real[v], real[v ^ mask], blk[lo], blk[hi],
                           False))  # fmt: skip
        lo, hi = np.minimum(lo, lo[v ^ mask]), np.maximum(hi, hi[v ^ mask])
        mask <<= 1
    return fold + steps + unfold


# ----------------------------------------------------------------- trees and servers


def binomial_broadcast_schedule(p: int, n: int, root: int = 0) -> list[Step]:
    """Binomial-tree broadcast in ceil(lg p) steps, ranks taken relative to root.

    With relative rank v = (r - root) mod p and masks 2^(L-1), ..., 1 (L = ceil(lg p)),
    every v that is a multiple of 2*mask sends the buffer to v + mask: the root first
    reaches the farthest subtree. Thakur et al. 2005; MPICH
    ``src/mpi/coll/bcast/bcast_intra_binomial.c``.
    """
    p, n = _ranks(p), _elements(n)
    root = _root(root, p)
    bounds, steps = chunk_bounds(n, p), []
    for k in reversed(range((p - 1).bit_length())):
        mask = 1 << k
        v = np.arange(0, p - mask, 2 * mask)
        steps.append(_step("broadcast", bounds, (v + root) % p, (v + mask + root) % p, 0, n,
                           False))  # fmt: skip
    return steps


def binomial_reduce_schedule(p: int, n: int, root: int = 0) -> list[Step]:
    """Binomial-tree reduce in ceil(lg p) steps; the root's row ends with the sum.

    With masks 1, 2, 4, ..., every relative rank v with v mod 2*mask == mask sends its
    partial sum to v - mask and drops out. MPICH ``src/mpi/coll/reduce/reduce_intra_binomial.c``
    (Thakur et al. 2005). Other rows are left holding partial sums.
    """
    p, n = _ranks(p), _elements(n)
    root = _root(root, p)
    bounds, steps = chunk_bounds(n, p), []
    for k in range((p - 1).bit_length()):
        mask = 1 << k
        v = np.arange(mask, p, 2 * mask)
        steps.append(_step("reduce", bounds, (v + root) % p, (v - mask + root) % p, 0, n, True))
    return steps


def parameter_server_allreduce_schedule(p: int, n: int, server: int = 0) -> list[Step]:
    """Naive all-reduce through one server: push ("gather", summed), then pull ("broadcast").

    Two steps, but the server's link carries (p-1)n elements in and (p-1)n out.
    """
    p, n = _ranks(p), _elements(n)
    server = _root(server, p, "server")
    if p == 1:
        return []
    b, others = chunk_bounds(n, p), np.delete(np.arange(p), server)
    return [
        _step("gather", b, others, server, 0, n, True),
        _step("broadcast", b, np.full(p - 1, server), others, 0, n, False),
    ]


# ------------------------------------------------------------------ replay and runners


def replay(buffers, steps, trajectory: bool = False) -> np.ndarray:
    """Apply ``steps`` to a float64 copy of ``buffers`` (p, n).

    Returns the final (p, n) state, or with ``trajectory=True`` a (len(steps) + 1, p, n)
    array of states (state 0 is the input), which the animations draw; the trajectory holds
    at most ``checks.MAX_ELEMENTS`` numbers. Sums that overflow float64 raise.
    """
    x = _as_buffers(buffers)
    steps = _as_steps(steps)
    trajectory = checks.boolean("trajectory", trajectory)
    p, n = x.shape
    if trajectory and (len(steps) + 1) * x.size > checks.MAX_ELEMENTS:
        raise checks.fail("steps", f"short enough for a trajectory of at most "
                          f"{checks.MAX_ELEMENTS} numbers with trajectory=True",
                          f"{len(steps)} steps of {x.size} numbers")  # fmt: skip
    states = [x.copy()] if trajectory else None
    with np.errstate(over="ignore", invalid="ignore"):  # overflow is checked below
        _apply(x, steps, states)
        checks.finite_result("the replayed buffers", x)
    return np.stack(states) if trajectory else x


def _apply(x: np.ndarray, steps: list[Step], states: list | None) -> None:
    """Apply ``steps`` to ``x`` in place (appending each state to ``states`` if given)."""
    p, n = x.shape
    for i, step in enumerate(steps):
        moves = []
        for t in step.transfers:  # read every source before any receive is applied
            if t.src >= p or t.dst >= p:
                raise checks.fail(f"steps[{i}]", f"transfers between ranks in [0, {p})", t)
            if t.offset + t.count > n:
                raise checks.fail(f"steps[{i}]", f"transfers with offset + count in [0, {n}]", t)
            sl = slice(t.offset, t.offset + t.count)
            moves.append((t.dst, sl, t.reduce, x[t.src, sl].copy()))
        for dst, sl, reduce, data in moves:
            if reduce:
                x[dst, sl] += data
            else:
                x[dst, sl] = data
        if states is not None:
            states.append(x.copy())


def _run(buffers, schedule, *args) -> CollectiveRun:
    x = _as_buffers(buffers)
    steps = schedule(*x.shape, *args)
    return CollectiveRun(replay(x, steps), steps)


def ring_reduce_scatter(buffers) -> CollectiveRun:
    """Run :func:`ring_reduce_scatter_schedule`: rank r's chunk r ends with the sum."""
    return _run(buffers, ring_reduce_scatter_schedule)


def ring_allgather(buffers) -> CollectiveRun:
    """Run :func:`ring_allgather_schedule`: every row ends with every rank's own chunk."""
    return _run(buffers, ring_allgather_schedule)


def ring_allreduce(buffers) -> CollectiveRun:
    """Run :func:`ring_allreduce_schedule`: every row ends with the sum."""
    return _run(buffers, ring_allreduce_schedule)


def recursive_doubling_allreduce(buffers) -> CollectiveRun:
    """Run :func:`recursive_doubling_allreduce_schedule`: every row ends with the sum."""
    return _run(buffers, recursive_doubling_allreduce_schedule)


def rabenseifner_allreduce(buffers) -> CollectiveRun:
    """Run :func:`rabenseifner_allreduce_schedule`: every row ends with the sum."""
    return _run(buffers, rabenseifner_allreduce_schedule)


def binomial_broadcast(buffers, root: int = 0) -> CollectiveRun:
    """Run :func:`binomial_broadcast_schedule`: every row ends equal to the root's row."""
    return _run(buffers, binomial_broadcast_schedule, root)


def binomial_reduce(buffers, root: int = 0) -> CollectiveRun:
    """Run :func:`binomial_reduce_schedule`: the root's row ends with the sum."""
    return _run(buffers, binomial_reduce_schedule, root)


def parameter_server_allreduce(buffers, server: int = 0) -> CollectiveRun:
    """Run :func:`parameter_server_allreduce_schedule`: every row ends with the sum."""
    return _run(buffers, parameter_server_allreduce_schedule, server)


def bytes_sent_per_rank(steps, p: int, itemsize: int = 1) -> np.ndarray:
    """(p,) int64 array: elements each rank sends over all ``steps``, times ``itemsize``
    bytes (at most :data:`MAX_ITEMSIZE`); raises if a total would overflow int64."""
    steps = _as_steps(steps)
    p, itemsize = _ranks(p), checks.integer("itemsize", itemsize, 1, MAX_ITEMSIZE)
    src = np.fromiter((t.src for s in steps for t in s.transfers), np.int64)
    count = np.fromiter((t.count for s in steps for t in s.transfers), np.int64)
    if src.size and src.max() >= p:
        raise checks.fail("steps", f"transfers from ranks in [0, {p})", int(src.max()))
    if float(count.astype(np.float64).sum()) * itemsize >= 2**63:
        raise ValueError("bytes_sent_per_rank must stay below 2**63 bytes per rank, but it "
                         "overflows int64: use a smaller itemsize or fewer steps")  # fmt: skip
    sent = np.zeros(p, dtype=np.int64)
    np.add.at(sent, src, count)
    return sent * itemsize


def reference(collective: str, buffers, root: int = 0) -> list[np.ndarray]:
    """What each rank holds after ``collective``, by definition (torch.distributed semantics).

    No algorithm: sums are taken directly. "reducescatter", "scatter" and "alltoall" use the
    p-way split of :func:`chunk_bounds`; "alltoall" requires p to divide n; "gather" leaves
    empty arrays on non-root ranks; "allgather"/"gather" concatenate all rows (length p*n;
    all outputs together hold at most ``checks.MAX_ELEMENTS`` numbers).
    """
    collective = checks.choice("collective", collective, REFERENCE_COLLECTIVES)
    x = _as_buffers(buffers)
    p, n = x.shape
    root = _root(root, p)
    if collective == "allgather" and p * x.size > checks.MAX_ELEMENTS:
        raise checks.fail("buffers", f"small enough that p copies of all of them hold at most "
                          f"{checks.MAX_ELEMENTS} numbers", f"shape {x.shape}")  # fmt: skip
    if collective == "alltoall" and n % p:
        raise checks.fail("buffers", f"a (p, n) array with n divisible by p for alltoall "
                          f"(p = {p})", f"n = {n}")  # fmt: skip
    b = chunk_bounds(n, p)
    with np.errstate(over="ignore", invalid="ignore"):
        total = checks.finite_result("the sum over ranks", x.sum(axis=0))
    if collective == "broadcast":
        return [x[root].copy() for _ in range(p)]
    if collective == "reduce":
        return [total.copy() if r == root else x[r].copy() for r in range(p)]
    if collective == "allreduce":
        return [total.copy() for _ in range(p)]
    if collective == "reducescatter":
        return [total[b[r] : b[r + 1]].copy() for r in range(p)]
    if collective == "allgather":
        return [x.reshape(-1).copy() for _ in range(p)]
    if collective == "scatter":
        return [x[root, b[r] : b[r + 1]].copy() for r in range(p)]
    if collective == "gather":
        return [x.reshape(-1).copy() if r == root else np.empty(0) for r in range(p)]
    return [x[:, b[r] : b[r + 1]].reshape(-1).copy() for r in range(p)]  # alltoall
