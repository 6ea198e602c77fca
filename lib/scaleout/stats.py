"""The one rank correlation and error summary every comparison with published numbers uses.

* :func:`ranks`: ranks 1..n, ties given their average rank.
* :func:`spearman`: Spearman's rank correlation, the Pearson correlation of the ranks.
  **Contract on constant input:** when either sequence is constant its ranks have no
  variance and the correlation is undefined: the result is NaN (not an error), so a table
  of skills can show "undefined" for a model that predicts one value for every row; callers
  that need a number check ``math.isnan``. Different lengths, fewer than 2 values, NaN or
  infinite values raise ``ValueError``.
* :func:`relative_errors`, :func:`error_summary`: predicted / measured - 1 and its median
  and largest absolute value, with the rank correlation.

Limits: at most 10**6 values.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import checks

MAX_VALUES = 10**6


def ranks(x) -> np.ndarray:
    """Ranks 1..n of ``x``, ties given their average rank (for Spearman's correlation)."""
    x = checks.array("x", x, ndim=1, max_size=MAX_VALUES)
    order = np.argsort(x, kind="stable")
    r = np.empty(x.size)
    r[order] = np.arange(1, x.size + 1)
    values, inverse, counts = np.unique(x, return_inverse=True, return_counts=True)
    if values.size < x.size:  # average the ranks of ties
        sums = np.zeros(values.size)
        np.add.at(sums, inverse, r)
        r = (sums / counts)[inverse]
    return r


def _pair(x, y):
    x = checks.array("x", x, ndim=1, max_size=MAX_VALUES)
    y = checks.array("y", y, ndim=1, max_size=MAX_VALUES)
    if x.size != y.size or x.size < 2:
        raise checks.fail("y", f"an array of {x.size} values (as many as x, at least 2)", y.size)
    return x, y


def spearman(x, y) -> float:
    """Spearman's rank correlation of two equally long 1-D arrays; NaN if one is constant
    (module docstring)."""
    x, y = _pair(x, y)
    rx, ry = ranks(x) - (x.size + 1) / 2, ranks(y) - (y.size + 1) / 2
    denom = np.sqrt((rx * rx).sum() * (ry * ry).sum())
    return float("nan") if denom == 0 else float((rx * ry).sum() / denom)


def relative_errors(predicted, measured) -> np.ndarray:
    """predicted / measured - 1 per row (``measured`` must be positive)."""
    p, m = _pair(predicted, measured)
    if np.any(m <= 0):
        raise checks.fail("measured", "positive values", m[m <= 0][:3].tolist())
    return p / m - 1.0


@dataclass(frozen=True)
class ErrorSummary:
    """Error and ranking skill over ``count`` rows: the median and largest absolute
    relative error and Spearman's correlation (NaN when one side is constant)."""

    count: int
    median_abs_error: float
    max_abs_error: float
    spearman: float

    def __post_init__(self):
        checks.integer("count", self.count, 1, MAX_VALUES)
        checks.nonnegative("median_abs_error", self.median_abs_error)
        checks.nonnegative("max_abs_error", self.max_abs_error)
        rho = self.spearman
        if not (checks.is_real(rho) and (rho != rho or -1.0 <= rho <= 1.0)):
            raise checks.fail("spearman", "a number in [-1, 1], or NaN", rho)


def error_summary(predicted, measured) -> ErrorSummary:
    """:class:`ErrorSummary` of a model's ``predicted`` values against ``measured`` ones."""
    err = np.abs(relative_errors(predicted, measured))
    return ErrorSummary(int(err.size), float(np.median(err)), float(err.max()),
                        spearman(predicted, measured))  # fmt: skip
