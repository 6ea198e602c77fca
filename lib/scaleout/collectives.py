"""Reference collective algorithms as explicit step-by-step schedules (numpy only).

Every algorithm is split in two: a *schedule* (a pure function of ``p`` ranks, ``n``
elements per rank and the root, returning a list of :class:`Step`) and :func:`replay`,
which applies a schedule to a ``(p, n)`` array whose row ``r`` is rank ``r``'s buffer.
Inside one step all transfers are simultaneous: every send reads the state *before* the
step, then every receive is applied (copied, or added when ``reduce`` is true).

Sources: Thakur, Rabenseifner & Gropp, "Optimization of Collective Communication
Operations in MPICH", IJHPCA 19(1), 2005 (the files under MPICH ``src/mpi/coll``);
Patarasuk & Yuan, "Bandwidth optimal all-reduce algorithms for clusters of workstations",
JPDC 69(2), 2009 (ring all-reduce). Chunks follow :func:`chunk_bounds`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np


@dataclass(frozen=True)
class Transfer:
    """One message: ``count`` elements from ``offset`` on, sent from ``src`` to ``dst``."""

    src: int  # sending rank
    dst: int  # receiving rank
    chunk: int  # index in the p-way split (chunk_bounds) if the range is exactly one chunk, else -1
    offset: int  # first element
    count: int  # number of elements
    reduce: bool  # True: dst adds the data into its buffer; False: dst overwrites (copy)


@dataclass(frozen=True)
class Step:
    """Transfers that happen at the same time; ``phase`` names the part of the algorithm."""

    phase: str
    transfers: tuple[Transfer, ...]


class CollectiveRun(NamedTuple):
    buffers: np.ndarray  # final (p, n) per-rank buffers, row r = rank r
    steps: list[Step]


REFERENCE_COLLECTIVES = tuple(
    "broadcast reduce allreduce reducescatter allgather alltoall scatter gather".split()
)


def _check_int(name: str, value, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < low:
        raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
    return int(value)


def _check_root(root, p: int, name: str = "root") -> int:
    if isinstance(root, bool) or not isinstance(root, int | np.integer) or not 0 <= root < p:
        raise ValueError(
            f"{name} must be an integer rank in [0, {p}) for p={p} ranks, got {root!r}"
        )
    return int(root)


def _as_buffers(buffers) -> np.ndarray:
    """A float64 copy of ``buffers`` after checking it is a finite numeric (p, n) array."""
    try:
        raw = np.asarray(buffers)
    except ValueError as err:  # ragged nested lists
        raise ValueError(f"buffers must be a 2-D array (p, n), got ragged input: {err}") from None
    if raw.dtype.kind not in "biuf":
        raise ValueError(f"buffers must be numeric (bool, int or float), got dtype {raw.dtype}")
    if raw.ndim != 2 or raw.shape[0] < 1 or raw.shape[1] < 1:
        raise ValueError(
            f"buffers must be a 2-D array (p, n) with p >= 1 ranks and n >= 1 elements, "
            f"got shape {raw.shape}"
        )
    out = raw.astype(np.float64, copy=True)
    if not np.all(np.isfinite(out)):
        raise ValueError("buffers must be finite (no nan or inf)")
    return out


def chunk_bounds(n: int, p: int) -> np.ndarray:
    """Offsets ``(p + 1,)`` of the p-way split of n elements, as ``np.array_split`` does.

    The first ``n % p`` chunks hold one element more; chunks are empty when ``n < p``.
    """
    n, p = _check_int("n", n, 0), _check_int("p", p, 1)
    sizes = np.full(p, n // p, dtype=np.int64)
    sizes[: n % p] += 1
    return np.concatenate(([0], np.cumsum(sizes)))


def _step(phase: str, bounds: np.ndarray, moves) -> Step:
    """Build a step from ``(src, dst, lo, hi, reduce)`` element ranges; empty ranges dropped."""
    transfers = []
    for src, dst, lo, hi, reduce in moves:
        if hi <= lo:
            continue
        c = int(np.searchsorted(bounds, lo, side="right")) - 1  # last chunk starting at <= lo
        chunk = c if bounds[c] == lo and bounds[c + 1] == hi else -1
        transfers.append(Transfer(int(src), int(dst), chunk, int(lo), int(hi - lo), bool(reduce)))
    return Step(phase, tuple(transfers))


# ----------------------------------------------------------------------------- ring


def _ring(p: int, n: int, phase: str, reduce: bool, shift: int) -> list[Step]:
    """p-1 steps; in step s rank r sends chunk (r - s - shift) mod p to rank r+1."""
    b = chunk_bounds(n, p)
    steps = []
    for s in range(p - 1):
        chunks = [(r - s - shift) % p for r in range(p)]
        moves = ((r, (r + 1) % p, b[c], b[c + 1], reduce) for r, c in enumerate(chunks))
        steps.append(_step(phase, b, moves))
    return steps


def ring_reduce_scatter_schedule(p: int, n: int) -> list[Step]:
    """Ring reduce-scatter: after p-1 steps rank r's chunk r holds the sum over all ranks.

    Chunk c starts at rank c+1 and travels around the ring, each rank adding its own
    contribution, until it arrives complete at rank c (torch.distributed.reduce_scatter's
    convention: rank r owns chunk r). Thakur et al. 2005; Patarasuk & Yuan 2009.
    """
    return _ring(_check_int("p", p, 1), _check_int("n", n, 1), "reduce-scatter", True, 1)


def ring_allgather_schedule(p: int, n: int) -> list[Step]:
    """Ring all-gather: in step s rank r forwards chunk (r - s) mod p to rank r+1.

    Input: rank r's chunk r is its contribution. Thakur et al. 2005 (MPICH
    ``src/mpi/coll/allgather/allgather_intra_ring.c``).
    """
    return _ring(_check_int("p", p, 1), _check_int("n", n, 1), "all-gather", False, 0)


def ring_allreduce_schedule(p: int, n: int) -> list[Step]:
    """Ring reduce-scatter then ring all-gather: 2(p-1) steps, each rank sends 2(p-1)/p * n.

    Bandwidth-optimal (Patarasuk & Yuan, JPDC 2009); MPICH ``allreduce_intra_ring.c``.
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
    real = [2 * v + 1 if v < rem else v + rem for v in range(pof2)]
    fold = [_step("fold", bounds, ((2 * i, 2 * i + 1, 0, n, True) for i in range(rem)))]
    unfold = [_step("unfold", bounds, ((2 * i + 1, 2 * i, 0, n, False) for i in range(rem)))]
    return pof2, real, (fold if rem else []), (unfold if rem else [])


def recursive_doubling_allreduce_schedule(p: int, n: int) -> list[Step]:
    """Recursive doubling: in step k new rank v exchanges its whole buffer with v XOR 2^k.

    lg p steps of n elements each (Thakur et al. 2005; MPICH
    ``allreduce_intra_recursive_doubling.c``), plus fold/unfold when p is not a power of 2.
    """
    p, n = _check_int("p", p, 1), _check_int("n", n, 1)
    bounds = chunk_bounds(n, p)
    pof2, real, fold, unfold = _fold(p, n, bounds)
    steps = []
    mask = 1
    while mask < pof2:
        moves = ((real[v], real[v ^ mask], 0, n, True) for v in range(pof2))
        steps.append(_step("recursive-doubling", bounds, moves))
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
    p, n = _check_int("p", p, 1), _check_int("n", n, 1)
    bounds = chunk_bounds(n, p)
    pof2, real, fold, unfold = _fold(p, n, bounds)
    blk = chunk_bounds(n, pof2)  # element offsets of the pof2 blocks
    lo, hi = [0] * pof2, [pof2] * pof2  # block range [lo, hi) each new rank is working on
    steps = []
    mask = pof2 // 2
    while mask >= 1:  # reduce-scatter by recursive halving
        moves, new_lo, new_hi = [], lo[:], hi[:]
        for v in range(pof2):
            mid = (lo[v] + hi[v]) // 2
            send = (lo[v], mid) if v & mask else (mid, hi[v])
            new_lo[v], new_hi[v] = (mid, hi[v]) if v & mask else (lo[v], mid)
            moves.append((real[v], real[v ^ mask], blk[send[0]], blk[send[1]], True))
        steps.append(_step("reduce-scatter", bounds, moves))
        lo, hi = new_lo, new_hi
        mask //= 2
    mask = 1
    while mask < pof2:  # all-gather by recursive doubling
        moves = [(real[v], real[v ^ mask], blk[lo[v]], blk[hi[v]], False) for v in range(pof2)]
        steps.append(_step("all-gather", bounds, moves))
        lo = [min(lo[v], lo[v ^ mask]) for v in range(pof2)]
        hi = [max(hi[v], hi[v ^ mask]) for v in range(pof2)]
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
    p, n = _check_int("p", p, 1), _check_int("n", n, 1)
    root = _check_root(root, p)
    bounds = chunk_bounds(n, p)
    steps = []
    for k in reversed(range((p - 1).bit_length())):
        mask = 1 << k
        moves = [
            ((v + root) % p, (v + mask + root) % p, 0, n, False)
            for v in range(0, p - mask, 2 * mask)
        ]
        steps.append(_step("broadcast", bounds, moves))
    return steps


def binomial_reduce_schedule(p: int, n: int, root: int = 0) -> list[Step]:
    """Binomial-tree reduce in ceil(lg p) steps; the root's row ends with the sum.

    With masks 1, 2, 4, ..., every relative rank v with v mod 2*mask == mask sends its
    partial sum to v - mask and drops out. MPICH ``src/mpi/coll/reduce/reduce_intra_binomial.c``
    (Thakur et al. 2005). Other rows are left holding partial sums.
    """
    p, n = _check_int("p", p, 1), _check_int("n", n, 1)
    root = _check_root(root, p)
    bounds = chunk_bounds(n, p)
    steps = []
    for k in range((p - 1).bit_length()):
        mask = 1 << k
        moves = [
            ((v + root) % p, (v - mask + root) % p, 0, n, True) for v in range(mask, p, 2 * mask)
        ]
        steps.append(_step("reduce", bounds, moves))
    return steps


def parameter_server_allreduce_schedule(p: int, n: int, server: int = 0) -> list[Step]:
    """Naive all-reduce through one server: push ("gather", summed), then pull ("broadcast").

    Two steps, but the server's link carries (p-1)n elements in and (p-1)n out.
    """
    p, n = _check_int("p", p, 1), _check_int("n", n, 1)
    server = _check_root(server, p, "server")
    if p == 1:
        return []
    b, others = chunk_bounds(n, p), [r for r in range(p) if r != server]
    return [
        _step("gather", b, ((r, server, 0, n, True) for r in others)),
        _step("broadcast", b, ((server, r, 0, n, False) for r in others)),
    ]


# ------------------------------------------------------------------ replay and runners


def replay(buffers, steps, trajectory: bool = False) -> np.ndarray:
    """Apply ``steps`` to a float64 copy of ``buffers`` (p, n).

    Returns the final (p, n) state, or with ``trajectory=True`` a (len(steps) + 1, p, n)
    array of states (state 0 is the input), which the animations draw.
    """
    x = _as_buffers(buffers)
    p, n = x.shape
    states = [x.copy()] if trajectory else None
    for i, step in enumerate(steps):
        if not isinstance(step, Step):
            raise ValueError(f"steps[{i}] must be a Step, got {type(step).__name__}")
        before = x.copy()
        for t in step.transfers:
            if not (0 <= t.src < p and 0 <= t.dst < p and t.src != t.dst):
                raise ValueError(f"steps[{i}]: src and dst must differ and lie in [0, {p}): {t}")
            if not (t.offset >= 0 and t.count >= 0 and t.offset + t.count <= n):
                raise ValueError(f"steps[{i}]: offset + count must lie in [0, {n}]: {t}")
            sl = slice(t.offset, t.offset + t.count)
            if t.reduce:
                x[t.dst, sl] += before[t.src, sl]
            else:
                x[t.dst, sl] = before[t.src, sl]
        if trajectory:
            states.append(x.copy())
    return np.stack(states) if trajectory else x


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
    """(p,) int array: elements each rank sends over all ``steps``, times ``itemsize`` bytes."""
    p, itemsize = _check_int("p", p, 1), _check_int("itemsize", itemsize, 1)
    sent = np.zeros(p, dtype=np.int64)
    for i, step in enumerate(steps):
        for t in step.transfers:
            if not 0 <= t.src < p:
                raise ValueError(f"steps[{i}]: src must lie in [0, {p}), got {t.src}")
            sent[t.src] += t.count
    return sent * itemsize


def reference(collective: str, buffers, root: int = 0) -> list[np.ndarray]:
    """What each rank holds after ``collective``, by definition (torch.distributed semantics).

    No algorithm: sums are taken directly. "reducescatter", "scatter" and "alltoall" use the
    p-way split of :func:`chunk_bounds`; "alltoall" requires p to divide n; "gather" leaves
    empty arrays on non-root ranks; "allgather"/"gather" concatenate all rows (length p*n).
    """
    if collective not in REFERENCE_COLLECTIVES:
        raise ValueError(f"collective must be one of {REFERENCE_COLLECTIVES}, got {collective!r}")
    x = _as_buffers(buffers)
    p, n = x.shape
    root = _check_root(root, p)
    b, total = chunk_bounds(n, p), x.sum(axis=0)
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
    if n % p:  # alltoall
        raise ValueError(f"alltoall needs n divisible by p, got n={n}, p={p}")
    return [x[:, b[r] : b[r + 1]].reshape(-1).copy() for r in range(p)]
