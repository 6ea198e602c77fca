"""Regression tests for issue 31 ("Robustness, second pass"): limits that hold jointly,
results that stay finite, the library's ValueError instead of other exceptions, no
injection through str subclasses, and errors that name what the caller gave."""

from __future__ import annotations

import dataclasses
import functools
import itertools
import math
import time

import ipywidgets as W
import numpy as np
import plotly.graph_objects as go
import pytest

from scaleout import checks, compute, moe, nccl, widgets
from scaleout import context_parallel as CP
from scaleout import zero_published as Z
from scaleout.context_parallel import attention as A
from scaleout.context_parallel import ring as R
from scaleout.nccl import p2p, search, shm, tuning
from scaleout.planner import comm as PC
from scaleout.rdma import QueuePair
from scaleout.rdma import experiments as RX
from scaleout.rdma import qp as QP
from scaleout.viz import render

pytestmark = pytest.mark.timeout(120)

H100 = nccl.topology("dgx-h100", nodes=2)


@functools.cache
def _table():
    return tuning.tune_model(H100)


def _quick(fn, *args, budget_s=5.0, **kwargs):
    """fn(...) must raise the library's ValueError, and do so fast (checked before work)."""
    start = time.monotonic()
    with pytest.raises(ValueError, match=" must ") as info:
        fn(*args, **kwargs)
    assert time.monotonic() - start < budget_s, f"{fn.__name__} worked before refusing"
    return str(info.value)


# ---- joint work and memory limits -------------------------------------------------------


def test_ring_attention_bounds_cp_squared_block_steps():
    q = np.ones((1, 2048, 1))
    msg = _quick(CP.ring_attention, q, q, q, 1024)
    assert "cp x cp block steps" in msg and str(R.MAX_RING_STEPS) in msg
    out, _ = CP.ring_attention(q[:, :128], q[:, :128], q[:, :128], 64, causal=False)
    assert np.all(np.isfinite(out))


def test_blockwise_attention_bounds_its_block_steps_and_total_work():
    q = np.ones((1, 1, 1))
    k = np.ones((1, 2**20, 1))
    msg = _quick(CP.blockwise_attention, q, k, k, 1, causal=False)
    assert str(A.MAX_BLOCK_STEPS) in msg
    # the product heads x queries x keys x head_dim, each array and the scores legal alone
    q = np.ones((1, 2**13, 256))
    msg = _quick(CP.block_attention, q, q, q)
    assert "heads x queries x keys x head_dim" in msg and str(A.MAX_ATTENTION_WORK) in msg


def test_ring_work_with_many_documents_is_bounded_jointly():
    seq = 4096 * 256
    docs = [256] * 4096
    msg = _quick(CP.ring_work, seq, 1024, "contiguous", documents=docs)
    assert "documents x cp x cp" in msg and str(R.MAX_DOCUMENT_WORK) in msg
    _quick(CP.attention_seconds, "ring", seq, 1024, documents=docs)
    # legal jointly: a few documents on many ranks, many documents on a few ranks
    assert CP.ring_work(seq, 8, "zigzag", documents=docs).shape == (8, 8)


def test_nccl_tuning_prices_many_sizes_vectorised_and_bounds_them():
    table = _table()
    sizes = np.geomspace(1.0, 2.0**50, tuning.MAX_SIZES)
    start = time.monotonic()
    t = tuning.algo_time_us(table, 4, 1, 2, sizes)  # tree allreduce: the corrected path
    assert time.monotonic() - start < 20
    reference = np.array([tuning._log2i(int(b) >> 6) for b in sizes[::997]])
    assert np.array_equal(tuning._log2_array(sizes[::997].astype(np.int64) >> 6), reference)
    assert np.all(np.isfinite(t))
    _quick(tuning.algo_time_us, table, 4, 1, 2, np.ones(tuning.MAX_SIZES + 1))
    _quick(tuning.fastest, table, 4, np.ones(tuning.MAX_SIZES + 1), (0, 1), (0, 1, 2))


def test_fastest_does_not_materialise_a_huge_range_of_algorithms():
    msg = _quick(tuning.fastest, _table(), 4, np.array([8.0]), range(10**9), (0, 1, 2))
    assert "at most 64 indices" in msg
    _quick(tuning.fastest, _table(), 4, np.array([8.0]), (0,), itertools.count())


def test_rdma_sweep_is_bounded_jointly_and_simulate_within_its_limits():
    msg = _quick(RX.sweep, "loss", np.zeros(256), message_bytes=2**22 * 4096)
    assert "strategies x values x packets per write" in msg and str(RX.MAX_SWEEP_PACKETS) in msg
    _quick(RX.sweep, "mtu_bytes", [256, 4096], message_bytes=2**20 * 4096)
    sw = RX.sweep("loss", [0.0, 0.01], ("go-back-n",), message_bytes=64 * 4096)
    assert sw.goodput_fraction.shape == (1, 2)


def test_route_bounds_its_logits_before_it_copies_them():
    assert moe.MAX_ROUTE_LOGITS if hasattr(moe, "MAX_ROUTE_LOGITS") else True
    from scaleout.moe import routing

    logits = np.zeros((routing.MAX_ROUTE_LOGITS // 16 + 1, 16), dtype=np.float32)
    msg = _quick(moe.route, logits, 2)
    assert str(routing.MAX_ROUTE_LOGITS) in msg


def test_explorer_static_values_are_never_materialised_beyond_the_limit():
    slider = W.IntSlider(value=0, min=0, max=10)
    start = time.monotonic()
    with pytest.raises(ValueError, match="at most 640 values"):
        widgets.Explorer("x", {"p": slider}, lambda p: go.Figure(), static={"p": itertools.count()})
    assert time.monotonic() - start < 5
    with pytest.raises(ValueError, match="iterable"):
        widgets.Explorer("x", {"p": slider}, lambda p: go.Figure(), static={"p": 3})


# ---- finite results from finite inputs ---------------------------------------------------


def test_gate_scores_stay_finite_at_the_lowest_temperature():
    z = np.array([[1e306, -1e306, 0.0], [5.0, 5.0, -1e300]])
    for gating in moe.GATINGS if hasattr(moe, "GATINGS") else ("softmax", "sigmoid"):
        s = moe.gate_scores(z, gating, temperature=1e-3)
        assert np.all(np.isfinite(s)) and np.all(s >= 0)
    s = moe.gate_scores(z, "softmax", temperature=1e-3)
    assert np.allclose(s.sum(axis=1), 1.0) and s[0, 0] == 1.0 and s[1, 0] == 0.5
    # unchanged where it always worked
    w = np.array([[0.3, -1.2, 2.0]])
    ref = np.exp(w / 0.7) / np.exp(w / 0.7).sum()
    np.testing.assert_allclose(moe.gate_scores(w, temperature=0.7), ref, rtol=1e-14)


def test_sigmoid_routing_never_divides_zero_by_zero():
    logits = np.array([[-1e4, -1e4], [1.0, 2.0]])
    with pytest.raises(ValueError, match="logits must be rows with a logit") as info:
        moe.route(logits, 1, gating="sigmoid")
    assert "weights" not in str(info.value).split(" must ")[0]
    r = moe.route(np.array([[-700.0, -701.0], [1.0, 2.0]]), 1, gating="sigmoid")
    assert math.isfinite(r.aux_loss) and np.all(np.isfinite(r.weights))
    with pytest.raises(ValueError, match="scores must be rows with a positive score"):
        dataclasses.replace(r, scores=np.zeros((2, 2)))


def test_dispatch_plan_sums_stay_finite():
    per = np.full((2, 4), 1e308)
    with pytest.raises(ValueError, match="per_expert must be counts whose total"):
        moe.DispatchPlan(per, 2)
    with pytest.raises(ValueError, match="per_expert must be counts whose total"):
        moe.DispatchPlan(np.full((2, 4), 1e303), 2, token_bytes=2.0**22)
    plan = moe.DispatchPlan(np.full((2, 4), 1e300), 2)
    assert np.all(np.isfinite(plan.bytes)) and np.isfinite(plan.off_rank_fraction)


def test_moe_layer_reference_and_backward_reject_overflow():
    experts = moe.random_experts(4, 8, 16, seed=0)
    rng = np.random.default_rng(0)
    x, w = rng.normal(size=(6, 8)), rng.normal(size=(8, 4))
    with pytest.raises(ValueError, match="x and router_w must be values whose router logits"):
        moe.layer_reference(x * 1e200, w * 1e200, experts, 2)
    huge = dataclasses.replace(experts, w1=experts.w1 * 1e200, w2=experts.w2 * 1e200)
    with pytest.raises(ValueError, match="x, router_w and experts must be values whose layer"):
        moe.layer_reference(x, w, huge, 2)
    with pytest.raises(ValueError, match="x, router_w and experts must be values whose layer"):
        moe.layer_backward(x, w, experts, 2, np.full(x.shape, 1e308))
    assert np.all(np.isfinite(moe.layer_reference(x, w, experts, 2)))


def test_block_attention_reports_overflow_not_no_visible_key():
    q = np.full((1, 1, 1), 1e200)
    with pytest.raises(ValueError, match="q and k must be values whose scaled scores"):
        CP.block_attention(q, q, np.ones((1, 1, 1)))
    with pytest.raises(ValueError, match="q and k must be values whose scaled scores"):
        CP.attention_reference(np.full((1, 2, 1), 1e200), np.full((1, 2, 1), 1e200),
                               np.ones((1, 2, 1)))  # fmt: skip
    with pytest.raises(ValueError, match="v must be values whose attention output"):
        CP.block_attention(np.ones((1, 1, 1)), np.ones((1, 2, 1)), np.full((1, 2, 1), 1.7e308))
    masked = CP.block_attention(np.ones((1, 1, 1)), np.ones((1, 1, 1)), np.ones((1, 1, 1)),
                                np.zeros((1, 1), dtype=bool))  # fmt: skip
    assert masked.lse[0, 0] == -np.inf  # a real "no visible key" still is one


def test_balance_counts_exactly_without_int64_wrap():
    b = CP.balance(np.full((2, 2), 2**62, dtype=np.int64))
    assert b["critical"] == 2**63 and b["efficiency"] == 1.0 and b["idle"] == 0.0
    b = CP.balance(np.full((4, 4), 2**62, dtype=np.int64))
    assert b["critical"] == 2**64 and b["critical"] > 0


def test_tp_exposed_never_overflows_to_inf_or_nan():
    big = {"allreduce": 1e308, "allgather": 1e308, "reducescatter": 1e308}
    with pytest.raises(ValueError, match="allreduce must be"):
        PC.tp_exposed(big, (1.0, 1.0), (1.0, 1.0), 8, True, "pipelined")
    top = {"allreduce": 1e9, "allgather": 1e9, "reducescatter": 1e9}
    out = PC.tp_exposed(top, (1e9, 1e9), (1e9, 1e9), 8, True, "pipelined")
    assert all(math.isfinite(x) and x >= 0 for x in out)


def test_alltoall_us_is_finite_on_every_legal_topology():
    for g, nodes, k in itertools.product([1, 2, 8, 64], [1, 2, 64], [1, 8]):
        try:
            topo = H100.with_(gpus_per_node=g, nodes=nodes, nics_per_node=k)
        except ValueError:
            continue
        t = p2p.alltoall_us(np.array([5e-324, 8.0, 2.0**50]), machine=topo)
        assert np.all(np.isfinite(t)) and np.all(t >= 0)


def test_fit_rate_is_never_zero():
    run = dataclasses.replace(Z.SC21_ZERO3[0], tflops=5e-324)
    with pytest.raises(ValueError, match="positive and finite"):
        Z.fit_rate(run)
    assert Z.fit_rate(Z.SC21_ZERO3[0]) > 0


# ---- the library's ValueError, not another exception ---------------------------------------


def test_connect_rc_with_a_peer_missing_a_key_is_a_value_error():
    for peer in ({"qp_num": 4, "gid": "fe80::9", "extra": 1}, {"psn": 1, "gid": "g", "x": 0}):
        with pytest.raises(ValueError, match="peer must be a dict"):
            QP.connect_rc(QueuePair(3), peer, psn=11)


def test_mfu_with_subnormals_is_a_value_error():
    with pytest.raises(ValueError, match="seconds x peak_flops must be"):
        compute.mfu(1.0, 5e-324, 5e-324)
    with pytest.raises(ValueError, match="must stay finite") as info:
        compute.mfu(1.0, 5e-324, 1e15)
    assert "seconds=5e-324" in str(info.value)  # names what the caller gave


def test_search_capacity_with_a_subnormal_speed_is_capped_not_overflowing():
    c = search.capacity(H100, "ring", 5e-324, 5e-324, 32)
    assert c == 32
    assert search.capacity(H100, "tree", 5e-324, 48.0, 16) <= 16


@pytest.mark.parametrize("slider", [W.IntSlider, W.FloatSlider])
def test_explorer_slider_with_step_zero_is_a_value_error(slider):
    control = slider(value=1, min=1, max=3, step=0)
    with pytest.raises(ValueError, match="step must be > 0"):
        widgets.Explorer("x", {"p": control}, lambda p: go.Figure())


def test_portable_on_deep_nesting_is_a_value_error():
    deep = functools.reduce(lambda a, _: [a], range(10_000), 1.0)
    with pytest.raises(ValueError, match="nested at most"):
        render.portable(deep)
    deep_dict = functools.reduce(lambda a, _: {"k": a}, range(100), 1.0)
    with pytest.raises(ValueError, match="nested at most"):
        render.portable(deep_dict)
    assert render.portable({"a": [[1.23456789]]}) == {"a": [[1.23457]]}


class _FakeLink:
    pass


@pytest.mark.parametrize(
    "deadline", [float("nan"), float("inf"), time.monotonic() + 1e9], ids=["nan", "inf", "1e9 s on"]
)
@pytest.mark.parametrize("recv", [shm.ll_recv, shm.simple_recv])
def test_shm_receives_refuse_deadlines_that_would_poll_forever(recv, deadline):
    # A plain buffer: a SharedMemory block would start multiprocessing's resource tracker, a
    # process that outlives the test (the launcher tests forbid leftover children).
    buf = bytearray(shm.Link.size(64) * 2)
    link = shm.Link(memoryview(buf), 0, 64)
    start = time.monotonic()
    with pytest.raises(ValueError, match="deadline must be"):
        recv(link, 1, deadline)
    assert time.monotonic() - start < 1
    with pytest.raises(ValueError, match="link must be"):
        recv(_FakeLink(), 1, time.monotonic() + 0.01)
    with pytest.raises(TimeoutError):
        recv(link, 1, time.monotonic() + 0.05)


# ---- no injection through str subclasses ----------------------------------------------------


class _Sneaky(str):
    def __format__(self, spec):
        return '"><script>alert(1)</script>'

    def __str__(self):
        return '"><img src=x onerror=alert(1)>'


def test_check_name_returns_a_plain_str():
    name = render.check_name(_Sneaky("fig-1"))
    assert type(name) is str and name == "fig-1" and f"{name}" == "fig-1"
    text = checks.text("label", _Sneaky("hello"))
    assert type(text) is str and f"{text}" == "hello"
    e = widgets.Explorer(
        _Sneaky("safe-id"), {"p": W.IntSlider(value=1, min=1, max=2)}, lambda p: go.Figure()
    )
    assert type(e.name) is str and "script" not in f"{e.name}"


# ---- errors name what the caller gave ---------------------------------------------------------


def test_finite_result_names_the_calling_functions_arguments():
    def cost(nbytes, ranks=4):
        return checks.finite_result("seconds", nbytes * 1e300)

    with pytest.raises(ValueError, match=r"seconds must stay finite") as info:
        cost(1e300)
    assert "cost(nbytes=1e+300, ranks=4)" in str(info.value)
