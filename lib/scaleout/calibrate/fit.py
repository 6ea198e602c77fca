"""Latency and bandwidth from measured times: ``time = latency + bytes / bandwidth``.

The alpha-beta line of chapter 1 (:func:`scaleout.costmodel.fit_alpha_beta` fits the
ring formula's alpha and beta); here the line is fitted to a log's own times, with a
robust loss so that one disturbed size (a hiccup, a protocol switch) does not drag it:
iteratively reweighted least squares (Holland & Welsch, "Robust regression using
iteratively reweighted least-squares", 1977) with Huber's loss on the *relative* residual
``(model - measured) / measured`` (the times span orders of magnitude, so absolute
residuals would let the largest size decide everything). Huber's threshold
``HUBER_DELTA`` (10 %) is a choice, not a fitted constant: residuals below it count
squared, above it linearly.

Held out: with ``holdout="alternate"`` (the default) the line is fitted on every other size
(the 1st, 3rd, ...) and its error reported on the others; ``"upper"`` fits the smaller half
and predicts the larger (extrapolation); ``"none"`` fits everything and reports nothing
held out.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import checks
from .records import MAX_ROWS, Log, Row

HOLDOUTS = ("alternate", "upper", "none")
HUBER_DELTA = 0.10
MAX_ITERATIONS = 50


@dataclass(frozen=True)
class Fit:
    """A fitted line: ``latency_s`` and ``bandwidth_bytes_per_s``; per size (sorted):
    ``nbytes``, measured ``seconds``, ``fitted`` (used by the fit) and ``rel_err``
    ((model - measured) / measured). ``held_out_err``: the errors of the sizes not fitted."""

    latency_s: float
    bandwidth_bytes_per_s: float
    nbytes: np.ndarray
    seconds: np.ndarray
    fitted: np.ndarray
    rel_err: np.ndarray
    holdout: str

    def __post_init__(self):
        checks.nonnegative("latency_s", self.latency_s)
        checks.positive("bandwidth_bytes_per_s", self.bandwidth_bytes_per_s)
        checks.choice("holdout", self.holdout, HOLDOUTS)
        n = checks.array("nbytes", self.nbytes, ndim=1, low=0.0, max_size=2 * MAX_ROWS)
        for name in ("seconds", "rel_err"):
            arr = checks.array(name, getattr(self, name), ndim=1, max_size=2 * MAX_ROWS)
            if arr.shape != n.shape:
                raise checks.fail(name, f"{n.size} values, one per size", arr.size)
        mask = self.fitted
        if not isinstance(mask, np.ndarray):
            raise checks.fail("fitted", "a boolean numpy array", mask)
        if mask.dtype != bool or mask.shape != n.shape:
            raise checks.fail("fitted", f"{n.size} booleans, one per size", self.fitted)

    def seconds_for(self, nbytes):
        """The line's time for ``nbytes`` (vectorised)."""
        n = checks.array("nbytes", nbytes, low=0.0, max_size=MAX_ROWS)
        out = self.latency_s + n / self.bandwidth_bytes_per_s
        return float(out) if out.ndim == 0 else out

    @property
    def held_out_err(self) -> np.ndarray:
        return self.rel_err[~self.fitted]

    @property
    def held_out_median_abs(self) -> float:
        """Median absolute relative error on the held-out sizes (NaN when none is held out)."""
        e = np.abs(self.held_out_err)
        return float(np.median(e)) if e.size else float("nan")

    @property
    def held_out_max_abs(self) -> float:
        e = np.abs(self.held_out_err)
        return float(e.max()) if e.size else float("nan")


def _points(rows) -> tuple[np.ndarray, np.ndarray]:
    if isinstance(rows, Log):
        rows = rows.rows
    if isinstance(rows, tuple | list) and all(isinstance(r, Row) for r in rows):
        if len(rows) > MAX_ROWS:
            raise checks.fail("rows", f"at most {MAX_ROWS} rows", len(rows))
        timed = [r for r in rows if r.nbytes > 0 and r.seconds]
        n = np.array([r.nbytes for r in timed], dtype=float)
        t = np.array([r.seconds for r in timed], dtype=float)
    else:
        arr = checks.array("rows", rows, ndim=2, low=0.0, max_size=2 * MAX_ROWS)
        if arr.shape[1] != 2:
            raise checks.fail("rows", "a Log, Rows, or an (n, 2) array of (bytes, seconds)",
                              arr.shape)  # fmt: skip
        keep = (arr[:, 0] > 0) & (arr[:, 1] > 0)
        n, t = arr[keep, 0], arr[keep, 1]
    order = np.argsort(n, kind="stable")
    return n[order], t[order]


def fit_mask(count: int, holdout: str) -> np.ndarray:
    """Which of ``count`` sorted sizes the fit uses under ``holdout``."""
    count = checks.integer("count", count, 0, 2 * MAX_ROWS)
    checks.choice("holdout", holdout, HOLDOUTS)
    idx = np.arange(count)
    if holdout == "alternate":
        return idx % 2 == 0
    if holdout == "upper":
        return idx < (count + 1) // 2
    return np.ones(count, dtype=bool)


def robust_line(x: np.ndarray, y: np.ndarray, delta: float = HUBER_DELTA):
    """(intercept >= 0, slope > 0) of ``y = a + b x`` minimising Huber's loss of the relative
    residual (IRLS; ``MAX_ITERATIONS`` rounds at most)."""
    x = checks.array("x", x, ndim=1, low=0.0, max_size=2 * MAX_ROWS)
    y = checks.array("y", y, ndim=1, low=0.0, low_open=True, max_size=2 * MAX_ROWS)
    delta = checks.positive("delta", delta, 10.0)
    if x.shape != y.shape or x.size < 2 or np.unique(x).size < 2:
        raise checks.fail("x", "at least two distinct sizes, as many as y", x.size)
    scale = x.max()
    xs = x / scale
    w = np.ones_like(y)
    a = b = 0.0
    for _ in range(MAX_ITERATIONS):
        wt = w / y**2  # relative residuals: weight 1 / y^2
        A = np.stack([np.ones_like(xs), xs], axis=1) * np.sqrt(wt)[:, None]
        (a_new, b_new), *_ = np.linalg.lstsq(A, y * np.sqrt(wt), rcond=None)
        if a_new < 0:  # the latency cannot be negative: fit through the origin
            a_new = 0.0
            b_new = float(np.sum(wt * xs * y) / np.sum(wt * xs * xs))
        if not b_new > 0:
            raise checks.fail("y", "times that grow with the size (a bandwidth term)",
                              "no positive slope")  # fmt: skip
        r = np.abs((a_new + b_new * xs - y) / y)
        w = np.where(r <= delta, 1.0, delta / np.maximum(r, 1e-300))
        done = abs(a_new - a) <= 1e-12 * max(a_new, 1e-30) and abs(b_new - b) <= 1e-12 * b_new
        a, b = float(a_new), float(b_new)
        if done:
            break
    return a, b / scale


def fit_latency_bandwidth(rows, holdout: str = "alternate") -> Fit:
    """``latency_s`` and ``bandwidth_bytes_per_s`` of ``time = latency + bytes /
    bandwidth`` fitted with Huber's loss to the out-of-place times of ``rows`` (a
    :class:`~scaleout.calibrate.records.Log`, its rows, or an (n, 2) array of bytes and
    seconds), sizes of 0 bytes and rows without a time left out; ``holdout`` says which
    sizes are held out (see the module docstring). Bytes are the log's ``size`` column, so
    the bandwidth is the asymptotic *algorithm* bandwidth (times the collective's busbw
    factor for the bus bandwidth)."""
    checks.choice("holdout", holdout, HOLDOUTS)
    n, t = _points(rows)
    mask = fit_mask(n.size, holdout)
    if np.unique(n[mask]).size < 2 or (holdout != "none" and mask.all()):
        raise checks.fail("rows", f"at least 2 distinct timed sizes to fit and 1 to hold out "
                          f"(holdout={holdout!r})", n.size)  # fmt: skip
    a, b = robust_line(n[mask], t[mask])
    bandwidth = 1.0 / b
    model = a + n * b
    return Fit(a, bandwidth, n, t, mask, (model - t) / t, holdout)
