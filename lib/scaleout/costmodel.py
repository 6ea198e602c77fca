"""Alpha-beta-gamma costs of collective algorithms, and nccl-tests bus bandwidth.

Model (Hockney; Thakur, Rabenseifner & Gropp, "Optimization of Collective Communication
Operations in MPICH", IJHPCA 19(1), 2005, and the comments in MPICH ``src/mpi/coll/*``):
a message of m bytes costs ``alpha + m * beta`` seconds, and reducing m bytes costs
``m * gamma``. Symbols: ``alpha`` seconds per message, ``beta`` seconds per byte,
``gamma`` seconds per byte reduced, ``p`` ranks, ``n`` bytes of the whole vector on each
rank (the buffer of all-reduce, reduce and broadcast; the output of all-gather; the input
of reduce-scatter; the send buffer of all-to-all). ``lg p`` is ``ceil(log2 p)``, exact for
powers of two and for the binomial trees at any p. When p is not a power of two, recursive
doubling, Rabenseifner and recursive halving first *fold* (MPICH): the ``rem = p - p'``
extra ranks (``p' = 2^floor(lg p)``) send their whole vector to a partner, the p' others run
the power-of-two algorithm, and the result goes back in one more message, so those rows
cost ``floor(lg p) + 2`` messages (``2 floor(lg p) + 2`` for Rabenseifner) and the fold's
bytes; their ``p - 1`` read as ``p' - 1``. These are the costs of
:mod:`scaleout.collectives`' schedules, and of MPICH's comments
(``allreduce_intra_reduce_scatter_allgather.c``). For all-gather MPICH runs recursive
doubling on powers of two only and Bruck's algorithm otherwise, at the same
``ceil(lg p) a + ((p-1)/p) n b`` (the comment of ``allgather_intra_brucks.c``).
Every cost is ``messages(p) * alpha + n * (beta_per_byte(p) * beta + gamma_per_byte(p) *
gamma)``, so it is linear in alpha, beta, gamma and n, and zero for p = 1.

Bus bandwidth follows nccl-tests ``doc/PERFORMANCE.md``: ``algbw = S / t`` and ``busbw =
algbw * factor`` with factor 2(p-1)/p for all-reduce, (p-1)/p for reduce-scatter,
all-gather and all-to-all (S = total size), 1 for broadcast and reduce.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from . import checks

COLLECTIVES = ("allreduce", "reducescatter", "allgather", "broadcast", "reduce", "alltoall")
#: Most ranks a cost formula takes (more than any machine built; p stays exact).
MAX_RANKS = 2**24
_BUSBW = {
    "allreduce": lambda p: 2 * (p - 1) / p,
    "reducescatter": lambda p: (p - 1) / p,
    "allgather": lambda p: (p - 1) / p,
    "alltoall": lambda p: (p - 1) / p,
    "broadcast": lambda p: 1.0,
    "reduce": lambda p: 1.0,
}


def _out(x, name: str = "the result"):
    """A Python float for 0-d results, else the float64 ndarray; overflow raises."""
    with np.errstate(over="ignore", invalid="ignore"):
        x = np.asarray(x, dtype=np.float64)
    checks.finite_result(name, x)
    return float(x) if x.ndim == 0 else x


def _real(name: str, x, positive: bool = False) -> np.ndarray:
    """A finite float64 array (or scalar) >= 0, or > 0 with ``positive``."""
    return checks.array(name, x, low=0.0, low_open=positive)


def _ranks(p, name: str = "p") -> np.ndarray:
    """Rank counts: integral values in [1, MAX_RANKS] (ints or integral floats), as float64."""
    arr = checks.array(name, p, low=1, high=MAX_RANKS)
    if np.any(arr != np.round(arr)):
        raise checks.fail(name, f"whole numbers of ranks in [1, {MAX_RANKS}]",
                          float(arr[arr != np.round(arr)].ravel()[0]))  # fmt: skip
    return arr


def ceil_log2(p) -> np.ndarray | float:
    """ceil(log2 p) for integer p >= 1 (vectorised, exact: the bit length of p - 1)."""
    p = _ranks(p)
    return _out(np.frexp(p - 1)[1])


def busbw_factor(collective: str, nranks: int) -> float:
    """nccl-tests bus-bandwidth factor (doc/PERFORMANCE.md) for ``nranks`` ranks."""
    collective = checks.choice("collective", collective, COLLECTIVES)
    nranks = checks.integer("nranks", nranks, 1, MAX_RANKS)
    return float(_BUSBW[collective](nranks))


def algbw(nbytes, seconds):
    """Algorithm bandwidth S / t in bytes/s (nccl-tests); vectorised over nbytes, seconds."""
    with np.errstate(over="ignore"):
        return _out(_real("nbytes", nbytes) / _real("seconds", seconds, positive=True), "algbw")


def busbw(collective: str, nbytes, seconds, nranks: int):
    """Bus bandwidth in bytes/s: algbw * busbw_factor (nccl-tests doc/PERFORMANCE.md)."""
    factor = busbw_factor(collective, nranks)
    return _out(np.asarray(algbw(nbytes, seconds)) * factor, "busbw")


@dataclass(frozen=True)
class CostFormula:
    """One row of the cost table: the formula as text, its source, and its coefficients."""

    formula: str
    source: str
    messages: Callable  # p -> alpha coefficient (messages on the critical path)
    beta_per_byte: Callable  # p -> beta coefficient per byte of n
    gamma_per_byte: Callable  # p -> gamma coefficient per byte of n

    def __post_init__(self):
        checks.text("formula", self.formula, 400)
        checks.text("source", self.source, 400)
        for name in ("messages", "beta_per_byte", "gamma_per_byte"):
            checks.function(name, getattr(self, name))


_THAKUR = "Thakur, Rabenseifner & Gropp, IJHPCA 2005"


def _lg(p):
    return np.frexp(p - 1)[1].astype(np.float64)


def _floor_lg(p):
    """floor(log2 p) for p >= 1 (exact: frexp gives p = m 2^e with m in [0.5, 1))."""
    return (np.frexp(p)[1] - 1).astype(np.float64)


def _pof2(p):
    """p' = 2^floor(lg p), the power of two the fold leaves (MPICH's ``pof2``)."""
    return np.exp2(_floor_lg(p))


def _folded(p):
    """1.0 where p is not a power of two (a fold and an unfold step are added), else 0.0."""
    return (p != _pof2(p)).astype(np.float64)


def _frac_pof2(p):
    """(p' - 1) / p': the share of the folded vector the power-of-two algorithm moves."""
    q = _pof2(p)
    return (q - 1) / q


def _rd_messages(p):
    return _floor_lg(p) + 2 * _folded(p)


def _rd_gamma(p):
    return _floor_lg(p) + _folded(p)


def _rab_messages(p):
    return 2 * _floor_lg(p) + 2 * _folded(p)


def _rab_beta(p):
    return 2 * _frac_pof2(p) + 2 * _folded(p)


def _rab_gamma(p):
    return _frac_pof2(p) + _folded(p)


def _rh_beta(p):
    return _frac_pof2(p) + _folded(p) * (1 + 1 / p)


def _rh_gamma(p):
    return _frac_pof2(p) + _folded(p)


def _frac(p):
    return (p - 1) / p


def _zero(p):
    return 0.0 * p


ALGORITHMS: dict[tuple[str, str], CostFormula] = {
    ("allreduce", "ring"): CostFormula(
        "2(p-1) a + 2((p-1)/p) n b + ((p-1)/p) n g",
        f"{_THAKUR}; Patarasuk & Yuan, JPDC 2009; MPICH allreduce_intra_ring.c",
        lambda p: 2 * (p - 1), lambda p: 2 * _frac(p), _frac,
    ),
    ("allreduce", "recursive_doubling"): CostFormula(
        "lg p a + n lg p b + n lg p g  (p a power of two; else fold and unfold: (L+2) a +"
        " (L+2) n b + (L+1) n g, L = floor(lg p))",
        f"{_THAKUR}; MPICH allreduce_intra_recursive_doubling.c (fold: the code)",
        _rd_messages, _rd_messages, _rd_gamma,
    ),
    ("allreduce", "rabenseifner"): CostFormula(
        "2 lg p a + 2((p-1)/p) n b + ((p-1)/p) n g  (p a power of two; else (2L+2) a +"
        " (2(p'-1)/p' + 2) n b + ((p'-1)/p' + 1) n g, L = floor(lg p), p' = 2^L)",
        f"{_THAKUR}; MPICH allreduce_intra_reduce_scatter_allgather.c (both costs in its"
        " comment, with p for p')",
        _rab_messages, _rab_beta, _rab_gamma,
    ),
    ("allreduce", "tree"): CostFormula(
        "2 lg p a + 2 n lg p b + n lg p g  (binomial reduce, then binomial broadcast)",
        f"{_THAKUR}: binomial reduce + binomial bcast rows added",
        lambda p: 2 * _lg(p), lambda p: 2 * _lg(p), _lg,
    ),
    ("allreduce", "parameter_server"): CostFormula(
        "2 a + 2(p-1) n b + (p-1) n g  (push: the server's link receives (p-1) n bytes and"
        " it sums them; pull: it sends (p-1) n bytes; the pull waits for the sum, so the two"
        " phases add; one alpha per phase assumes the server overlaps its p-1 messages)",
        "this book: the bottleneck is the server's link (no source formula to cite)",
        lambda p: 2.0 * (p > 1), lambda p: 2 * (p - 1), lambda p: p - 1,
    ),
    ("allgather", "ring"): CostFormula(
        "(p-1) a + ((p-1)/p) n b",
        f"{_THAKUR}; MPICH allgather_intra_ring.c",
        lambda p: p - 1, _frac, _zero,
    ),
    ("allgather", "recursive_doubling"): CostFormula(
        "lg p a + ((p-1)/p) n b  (p not a power of two: Bruck's algorithm, same cost)",
        f"{_THAKUR}; MPICH allgather_intra_recursive_doubling.c (powers of two only) and"
        " allgather_intra_brucks.c (ceil(lg p) steps, the same cost)",
        _lg, _frac, _zero,
    ),
    ("reducescatter", "ring"): CostFormula(
        "(p-1) a + ((p-1)/p) n (b + g)",
        f"{_THAKUR} (pairwise exchange); MPICH reduce_scatter_intra_pairwise.c",
        lambda p: p - 1, _frac, _frac,
    ),
    ("reducescatter", "recursive_halving"): CostFormula(
        "lg p a + ((p-1)/p) n (b + g)  (p a power of two; else (L+2) a + (1 + (p'-1)/p' +"
        " 1/p) n b + (1 + (p'-1)/p') n g, approximate: the folded blocks are uneven)",
        f"{_THAKUR}; MPICH reduce_scatter_intra_recursive_halving.c (fold: its code and"
        " comment)",
        _rd_messages, _rh_beta, _rh_gamma,
    ),
    ("broadcast", "binomial"): CostFormula(
        "lg p a + n lg p b",
        f"{_THAKUR}; MPICH bcast_intra_binomial.c",
        _lg, _lg, _zero,
    ),
    ("broadcast", "scatter_allgather"): CostFormula(
        "(lg p + p - 1) a + 2((p-1)/p) n b",
        f"{_THAKUR}; MPICH bcast_intra_scatter_ring_allgather.c",
        lambda p: _lg(p) + p - 1, lambda p: 2 * _frac(p), _zero,
    ),
    ("reduce", "binomial"): CostFormula(
        "lg p a + n lg p (b + g)",
        f"{_THAKUR}; MPICH reduce_intra_binomial.c",
        _lg, _lg, _lg,
    ),
    ("alltoall", "pairwise"): CostFormula(
        "(p-1) a + ((p-1)/p) n b  (n = send buffer; Thakur's n = bytes sent = ((p-1)/p) n)",
        f"{_THAKUR}; MPICH alltoall_intra_pairwise.c",
        lambda p: p - 1, _frac, _zero,
    ),
}  # fmt: skip


def _formula(collective: str, algorithm: str) -> CostFormula:
    collective = checks.choice("collective", collective, sorted({c for c, _ in ALGORITHMS}))
    algorithm = checks.choice(
        "algorithm", algorithm, [a for c, a in ALGORITHMS if c == collective]
    )  # the message lists the algorithms of that collective, e.g. ('ring', ...)
    return ALGORITHMS[(collective, algorithm)]


def _latency_and_per_byte(f: CostFormula, p, alpha, beta, gamma):
    """(alpha term in seconds, seconds per byte of n) for formula f."""
    p = _ranks(p)
    alpha, beta, gamma = _real("alpha", alpha), _real("beta", beta), _real("gamma", gamma)
    with np.errstate(over="ignore", invalid="ignore"):
        return f.messages(p) * alpha, f.beta_per_byte(p) * beta + f.gamma_per_byte(p) * gamma


def collective_time(collective: str, algorithm: str, nbytes, p, alpha, beta, gamma=0.0):
    """Seconds for ``algorithm`` of ``collective`` on p ranks with n = ``nbytes`` per rank.

    Vectorised: nbytes, p, alpha, beta and gamma broadcast against each other; returns a
    float for scalar inputs, else an ndarray. See ``ALGORITHMS`` for formulas and sources.
    Every input is finite and >= 0 (p a whole number in [1, :data:`MAX_RANKS`]); a time
    that overflows float64 raises.
    """
    f = _formula(collective, algorithm)
    n = _real("nbytes", nbytes)
    latency, per_byte = _latency_and_per_byte(f, p, alpha, beta, gamma)
    with np.errstate(over="ignore", invalid="ignore"):
        return _out(latency + n * per_byte, "collective_time")


class _Fit(NamedTuple):
    alpha: float  # seconds per message
    beta: float  # seconds per byte
    rel_err: np.ndarray  # per point, (model - measured) / measured
    fitted: np.ndarray  # per point, True where the point was used to fit


class AlphaBetaFit(_Fit):
    """Result of :func:`fit_alpha_beta`: ``alpha`` (seconds per message) and ``beta``
    (seconds per byte), both finite and >= 0; ``rel_err``, the model's relative error
    (model - measured) / measured at *every* measured point; and ``fitted``, a boolean
    array saying which points the fit used (all of them when ``fitted`` is not given).
    :attr:`held_out_err` is the error on the points the fit did not see."""

    __slots__ = ()

    def __new__(cls, alpha, beta, rel_err, fitted=None):
        alpha = checks.nonnegative("alpha", alpha)
        beta = checks.nonnegative("beta", beta)
        rel_err = checks.array("rel_err", rel_err, ndim=1)
        fitted = _rows("fitted", fitted, rel_err.size)
        return super().__new__(cls, alpha, beta, rel_err, fitted)

    @property
    def in_sample_err(self) -> np.ndarray:
        """Relative error on the points the fit used."""
        return self.rel_err[self.fitted]

    @property
    def held_out_err(self) -> np.ndarray:
        """Relative error on the points the fit did not use (empty if it used all)."""
        return self.rel_err[~self.fitted]


def _rows(name: str, rows, size: int) -> np.ndarray:
    """A boolean mask of ``size`` rows with at least two True: None (every row),
    "alternate" (rows 0, 2, 4, ...; the others are held out) or a boolean sequence."""
    if rows is None:
        return np.ones(size, dtype=bool)
    if isinstance(rows, str):
        checks.choice(name, rows, ("alternate",))
        mask = np.arange(size) % 2 == 0
    else:
        ok = isinstance(rows, np.ndarray) or (
            isinstance(rows, list | tuple) and all(isinstance(r, bool | np.bool_) for r in rows)
        )
        arr = np.asarray(rows) if ok else None
        if arr is None or arr.dtype != np.bool_ or arr.shape != (size,):
            raise checks.fail(name, f'None, "alternate" or {size} booleans', rows)
        mask = arr.copy()
    if mask.sum() < 2:
        raise checks.fail(name, "rows with at least two points to fit", rows)
    return mask


def _nnls2(a: np.ndarray, y: np.ndarray) -> np.ndarray:
    """argmin ||a x - y||^2 over x >= 0 for a (m, 2): the unconstrained optimum if feasible,
    else the best point on the faces x0 = 0 or x1 = 0 (the problem is convex)."""
    candidates = [np.zeros(2)]
    x, *_ = np.linalg.lstsq(a, y, rcond=None)
    if np.all(x >= 0):
        candidates.append(x)
    for j in range(2):
        col, x = a[:, j], np.zeros(2)
        norm2 = col @ col
        x[j] = max(0.0, (col @ y) / norm2) if norm2 > 0 else 0.0
        candidates.append(x)
    return min(candidates, key=lambda x: float(np.sum((a @ x - y) ** 2)))


#: Most measurements :func:`fit_alpha_beta` takes.
MAX_POINTS = 2**20


def fit_alpha_beta(nbytes, seconds, p, collective="allreduce", algorithm="ring", gamma=0.0,
                   fit_rows=None):  # fmt: skip
    """Fit alpha, beta >= 0 (gamma fixed) to measured times, minimising relative error.

    Each measurement gives one row of the linear model t = c_a(p) alpha + c_b(p) n beta +
    c_g(p) n gamma; rows are divided by the measured t, so small and large messages weigh
    the same, and the two-variable non-negative least squares is solved in closed form
    (columns scaled to unit length first, so the fit does not depend on the units).
    ``nbytes`` and ``seconds`` are 1-D of equal length (2 to :data:`MAX_POINTS`); p
    broadcasts to them. ``fit_rows`` picks the rows the fit may use: None (all),
    ``"alternate"`` (rows 0, 2, 4, ...) or a boolean mask; the error is reported at every
    row, so :attr:`AlphaBetaFit.held_out_err` is the error on rows the fit never saw.
    Raises if the measurements are so extreme that the fit overflows.
    """
    f = _formula(collective, algorithm)
    n = checks.array("nbytes", nbytes, ndim=1, low=0.0, max_size=MAX_POINTS)
    t = checks.array("seconds", seconds, ndim=1, low=0.0, low_open=True, max_size=MAX_POINTS)
    if t.shape != n.shape or n.size < 2:
        raise checks.fail("nbytes and seconds", "1-D of equal length >= 2",
                          f"lengths {n.size} and {t.size}")  # fmt: skip
    p = np.broadcast_to(_ranks(p), n.shape)
    g = checks.nonnegative("gamma", gamma)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore", under="ignore"):
        c_gamma = f.gamma_per_byte(p) * n * g
        a = np.stack([f.messages(p) / t, f.beta_per_byte(p) * n / t], axis=1)  # (m, 2)
        y = 1.0 - c_gamma / t
        if not (np.all(np.isfinite(a)) and np.all(np.isfinite(y))):
            raise checks.fail("nbytes and seconds", "measurements whose model rows stay "
                              "finite in float64", "an overflowing row")  # fmt: skip
        rows = _rows("fit_rows", fit_rows, n.size)
        scale = np.sqrt(np.sum(a[rows] * a[rows], axis=0))
        scale = np.where(np.isfinite(scale) & (scale > 0), scale, 1.0)
        alpha, beta = _nnls2(a[rows] / scale, y[rows]) / scale
        model = collective_time(collective, algorithm, n, p, alpha, beta, g)
        rel_err = checks.finite_result("the fit's errors", (model - t) / t)
    return AlphaBetaFit(float(alpha), float(beta), rel_err, rows)


def crossover_bytes(collective: str, alg_a: str, alg_b: str, p, alpha, beta, gamma=0.0):
    """Bytes per rank n > 0 at which ``alg_a`` and ``alg_b`` cost the same (nan if none).

    Both costs are L + n B, so the crossover is n = (L_a - L_b) / (B_b - B_a); NaN where the
    lines do not cross at a positive n, or where n would overflow float64.
    """
    fa, fb = _formula(collective, alg_a), _formula(collective, alg_b)
    la, ba = _latency_and_per_byte(fa, p, alpha, beta, gamma)
    lb, bb = _latency_and_per_byte(fb, p, alpha, beta, gamma)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        n = (la - lb) / (bb - ba)
        out = np.where(np.isfinite(n) & (n > 0), n, np.nan)
    return float(out) if out.ndim == 0 else out
