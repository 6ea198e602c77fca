"""Pipeline orders: the vectorised tables equal the plain-loop reference; the V schedules
(zb-v, dualpipe-v) equal PyTorch's ScheduleZBVZeroBubble and ScheduleDualPipeV."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from scaleout import pipeline as P
from scaleout.pipeline import reference

# torch's _ComputationType names -> the book's kinds
KIND = {"FORWARD": "F", "BACKWARD_INPUT": "B", "BACKWARD_WEIGHT": "W", "FULL_BACKWARD": "BW"}


def torch_order(cls, p, m):
    """Each rank's order from PyTorch's own schedule class, without a process group:
    ``_calculate_single_rank_operations(rank)`` on an instance holding only the sizes it
    reads; None slots dropped, OVERLAP_F_B expanded into its sub-actions in order."""
    s = cls.__new__(cls)
    s.pp_group_size, s._n_microbatches, s.num_stages = p, m, 2 * p
    out = []
    for r in range(p):
        ops = []
        for a in s._calculate_single_rank_operations(r):
            if a is None:
                continue
            for x in a.sub_actions or (a,):
                assert x.stage_index in (r, 2 * p - 1 - r)
                ops.append((KIND[x.computation_type.name], x.microbatch_index,
                            0 if x.stage_index == r else 1))  # fmt: skip
        out.append(ops)
    return out


@pytest.mark.parametrize("p", range(2, 9))
def test_v_orders_equal_torch(p):
    sched = pytest.importorskip("torch.distributed.pipelining.schedules")
    for m in (1, 2, p, 2 * p - 1, 2 * p, 2 * p + 1, 3 * p, 4 * p + 3):
        assert P.stage_order("zb-v", p, m, 2) == torch_order(sched.ScheduleZBVZeroBubble, p, m)
        if m >= 2 * p:
            got = P.stage_order("dualpipe-v", p, m, 2)
            assert got == torch_order(sched.ScheduleDualPipeV, p, m), (p, m)


@st.composite
def any_config(draw):
    name = draw(st.sampled_from(P.ALL_SCHEDULES))
    p = draw(st.integers(1, 12))
    if name == "interleaved":
        v = draw(st.integers(2, 4))
        group = draw(st.integers(p, 3 * p))
        m = group * draw(st.integers(1, 3)) + draw(st.sampled_from([0, p, group - 1]))
        m = max(m, group)
        if 0 < m % group < p:
            m += p - m % group
        return name, p, m, v, group
    if name in P.V_SCHEDULES:
        p = max(p, 2) if name == "dualpipe-v" else p
        low = 2 * p if name == "dualpipe-v" else 1
        return name, p, draw(st.integers(low, low + 24)), 2, None
    return name, p, draw(st.integers(1, 40)), 1, None


@given(any_config())
def test_vectorised_orders_equal_the_plain_loops(cfg):
    name, p, m, v, group = cfg
    assert P.stage_order(name, p, m, v, group) == reference.stage_order(name, p, m, v, group)


@given(any_config())
def test_every_operation_runs_once_and_the_simulation_finishes(cfg):
    name, p, m, v, group = cfg
    s = P.schedule(name, p, m, v, group=group)
    kinds = {"F", "B", "W", "BW"} if name == "dualpipe-v" else {"F", "B", "W"}
    assert set(s.phase.tolist()) <= kinds
    for r in range(p):
        ops = s.ops(r)
        assert len(set(ops)) == len(ops)
        fwd = {(j, c) for k, j, c in ops if k == "F"}
        bwd = {(j, c) for k, j, c in ops if k in ("B", "BW")}
        assert fwd == bwd == {(j, c) for j in range(m) for c in range(v)}
        weights = [(j, c) for k, j, c in ops if k == "W"]
        split = sorted((j, c) for k, j, c in ops if k == "B") if name in P.SPLIT_BACKWARD else []
        assert sorted(weights) == split
    # every dependency ends before its operation starts
    has = s.dep >= 0
    assert np.all(s.end[s.dep[has]] <= s.start[has] + 1e-12)


def test_v_schedules_checks():
    with pytest.raises(ValueError, match="v must be 2 for 'zb-v'"):
        P.stage_order("zb-v", 4, 8)
    with pytest.raises(ValueError, match="m must be >= 2p = 8 for 'dualpipe-v'"):
        P.stage_order("dualpipe-v", 4, 7, 2)
    with pytest.raises(ValueError, match="name must be"):
        P.bubble_closed_form("zb-v", 4, 8, 2)
    with pytest.raises(ValueError, match="operations for 'zb-v'"):
        P.stage_order("zb-v", 1024, 1 << 12, 2)


def test_zb_v_bubble_and_memory():
    """ZB-V with T_F = T_B = T_W (t_b = 2, t_w = 1): the steady state has no bubble, so the
    bubble is that of the ramp only and shrinks as 1/m; each device holds at most about 2p
    chunks of activations (p micro-batches), as 1F1B's first stage does."""
    for p in (4, 8):
        for m in (4 * p, 8 * p):
            zbv = P.schedule("zb-v", p, m, 2, t_f=1.0, t_b=2.0, t_w=1.0)
            one = P.schedule("1f1b", p, m, t_f=1.0, t_b=2.0)
            assert P.bubble_fraction(zbv) < P.bubble_fraction(one) / 2
            assert P.peak_in_flight(zbv).max() <= p + 0.5
        small, big = (P.bubble_fraction(P.schedule("zb-v", p, k * p, 2)) for k in (4, 8))
        assert big < small
