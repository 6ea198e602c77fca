"""scaleout.overlap: the rules, and the copies that must follow them."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from scaleout import memory, overlap
from scaleout.planner import comm

seconds = st.floats(0.0, 1e-2, allow_nan=False)


def test_rules():
    assert overlap.bulk(3.0, 1.0) == 2.0 and overlap.bulk(1.0, 3.0) == 0.0
    assert overlap.pipelined(3.0, 2.0, 4) == 1.5  # 3 - 2 * 3/4
    assert overlap.pipelined(3.0, 2.0, 1) == 3.0  # one step: nothing to pipeline with
    assert overlap.exposed(3.0, 1.0, "none") == 3.0
    assert overlap.exposed(3.0, 1.0, "bulk") == 2.0
    # one piece: nothing overlaps; many: C - K or the first piece C/n
    assert overlap.pieces(2.0, 1.0, 1) == 2.0
    assert overlap.pieces(2.0, 1.0, 4) == pytest.approx(1.25)
    assert overlap.pieces(1.0, 2.0, 4) == pytest.approx(0.25)


@given(seconds, seconds, st.integers(1, 4096))
def test_pieces_is_memorys_exposed_comm(c, k, n):
    assert overlap.pieces(c, k, n) == float(memory.exposed_comm_seconds(c, k, n))


@given(
    st.fixed_dictionaries({k: seconds for k in overlap.COLLECTIVES}),
    st.tuples(seconds, seconds),
    st.tuples(seconds, seconds),
    st.sampled_from([1, 2, 4, 8, 16]),
    st.booleans(),
    st.sampled_from(overlap.TP_OVERLAPS),
)
def test_the_planners_tp_rules_are_these(sec, col, row, t, sp, how):
    # planner.comm.tp_exposed keeps its own loop (a hot path); it must give the same seconds
    regather = sp and how != "none"
    mine = overlap.tp_layer(sec, col, row, t, sp, how, regather)
    theirs = comm.tp_exposed(sec, col, row, t, sp, how)
    for a, b in zip(mine, theirs, strict=True):
        assert math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-18)


def test_exposed_never_exceeds_total():
    sec = {"allreduce": 2.0, "allgather": 1.0, "reducescatter": 1.0}
    for how in overlap.TP_OVERLAPS:
        for sp in (False, True):
            fe, be, ft, bt = overlap.tp_layer(sec, (1.0, 2.0), (0.5, 2.0), 8, sp, how,
                                              sp and how != "none")  # fmt: skip
            assert fe <= ft and be <= bt


def test_vectorised_pieces():
    got = overlap.pieces(np.array([1.0, 2.0]), 1.0, 2)
    assert list(got) == [0.5, 1.5]


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: overlap.bulk(-1.0, 1.0), "comm_s must be"),
        (lambda: overlap.pipelined(1.0, 1.0, 0), "t must be"),
        (lambda: overlap.exposed(1.0, 1.0, "hidden"), "how must be"),
        (lambda: overlap.pieces(1.0, float("nan"), 2), "compute_s must be"),
        (lambda: overlap.tp_layer({}, (1, 1), (1, 1), 2, False, "none", False), "sec must be"),
        (
            lambda: overlap.tp_layer(
                {k: 1.0 for k in overlap.COLLECTIVES}, (1, 1), (1,), 2, False, "none", False
            ),
            "row must be",
        ),  # fmt: skip
        (
            lambda: overlap.tp_work(
                {k: 1.0 for k in overlap.COLLECTIVES}, (1, 1), (1, 1), False, "none", True
            ),
            "regather must be",
        ),  # fmt: skip
    ],
)
def test_bad_input_raises(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_megatron_2022_schedule_is_a_legal_rule():
    rule = overlap.MEGATRON_2022
    assert rule.overlap in overlap.TP_OVERLAPS and "02bb1f5" in rule.source
    assert rule.regather(True) and not rule.regather(False)
    with pytest.raises(ValueError, match="overlap must be"):
        overlap.TPSchedule("x", "async", True, "src")
    with pytest.raises(ValueError, match="sp must be"):
        rule.regather("yes")
