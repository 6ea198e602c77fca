"""scaleout.stats: one Spearman correlation with one contract."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from scaleout import stats
from scaleout.compute import validation
from scaleout.nccl import published


def test_spearman_values():
    assert stats.spearman([1, 2, 3], [10, 20, 30]) == 1.0
    assert stats.spearman([1, 2, 3], [3, 2, 1]) == -1.0
    assert stats.spearman([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx(0.8)
    # ties share their average rank
    assert list(stats.ranks([3.0, 1.0, 2.0, 2.0])) == [4.0, 1.0, 2.5, 2.5]


def test_constant_input_is_nan():
    assert math.isnan(stats.spearman([1, 1, 1], [1, 2, 3]))
    assert math.isnan(stats.spearman([1, 2, 3], [5, 5, 5]))


@pytest.mark.parametrize(
    ("x", "y", "match"),
    [
        ([1, 2], [1, 2, 3], "y must be"),
        ([1], [1], "y must be"),
        ([1, float("nan")], [1, 2], "x must be"),
        ([1, 2], [1, float("inf")], "y must be"),
    ],
)
def test_bad_input_raises(x, y, match):
    with pytest.raises(ValueError, match=match):
        stats.spearman(x, y)


def _pearson_of_ranks(x, y):
    rx, ry = stats.ranks(x), stats.ranks(y)
    return float(np.corrcoef(rx, ry)[0, 1])


@given(st.lists(st.tuples(st.integers(-5, 5), st.integers(-5, 5)), min_size=2, max_size=40))
def test_spearman_is_the_pearson_correlation_of_ranks(pairs):
    x, y = (np.array(v, dtype=float) for v in zip(*pairs, strict=True))
    rho = stats.spearman(x, y)
    if np.all(x == x[0]) or np.all(y == y[0]):
        assert math.isnan(rho)
        return
    assert rho == pytest.approx(_pearson_of_ranks(x, y), abs=1e-12)
    assert -1 <= rho <= 1
    # the chapters' older names are this function
    assert validation.spearman(x, y) == rho
    assert published.spearman(x, y) == rho


def test_error_summary():
    s = stats.error_summary([1.1, 1.8, 3.0], [1.0, 2.0, 3.0])
    assert s.count == 3
    assert s.median_abs_error == pytest.approx(0.1)
    assert s.max_abs_error == pytest.approx(0.1)
    assert s.spearman == 1.0
    with pytest.raises(ValueError, match="measured must be positive"):
        stats.relative_errors([1.0, 2.0], [1.0, 0.0])
