"""scaleout.moe: router, dispatch plans, the reference layer, costs, placement, published
numbers. The expert-parallel layer on gloo processes and under torchrun: tests/integration."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from scaleout import costmodel, moe
from scaleout.demos import moe as demo

# --- the router ------------------------------------------------------------------------


def _claims_by_hand(experts, weights, cap, order, blocks):
    """Drop decisions of a naive loop over claims (the rule as the docstring states it)."""
    t, k = experts.shape
    size = t // blocks
    dropped = np.zeros((t, k), dtype=bool)
    for b in range(blocks):
        claims = [(tok, j) for j in range(k) for tok in range(b * size, (b + 1) * size)]
        if order == "probs":  # per expert: highest weight first, ties to the earlier claim
            claims = sorted(claims, key=lambda c: -weights[c])
        used = {}
        for tok, j in claims:
            e = experts[tok, j]
            used[e] = used.get(e, 0) + 1
            dropped[tok, j] = used[e] > cap
    return dropped


@settings(max_examples=150, deadline=None)
@given(
    tokens_per_block=st.integers(1, 24),
    blocks=st.sampled_from([1, 2, 3]),
    experts=st.integers(1, 10),
    k=st.integers(1, 4),
    cf=st.one_of(st.none(), st.floats(0.1, 3.0)),
    order=st.sampled_from(moe.ORDERS),
    gating=st.sampled_from(moe.GATINGS),
    seed=st.integers(0, 2**16),
)
def test_router_properties(tokens_per_block, blocks, experts, k, cf, order, gating, seed):
    k = min(k, experts)
    t = tokens_per_block * blocks
    logits = np.random.default_rng(seed).normal(size=(t, experts)) * 2
    r = moe.route(logits, k, cf, order=order, gating=gating, blocks=blocks)
    # shapes, distinct experts per token, best first
    assert r.experts.shape == r.weights.shape == r.dropped.shape == (t, k)
    assert all(len(set(row)) == k for row in r.experts)
    chosen = np.take_along_axis(r.scores, r.experts, axis=1)
    assert np.all(np.diff(chosen, axis=1) <= 0)
    # counts: k x tokens minus the drops; never above capacity in any block
    assert r.counts.sum() == k * t - r.dropped.sum()
    assert np.array_equal(r.routed, np.bincount(r.experts.ravel(), minlength=experts))
    if cf is None:
        assert r.capacity is None and not r.dropped.any()
    else:
        assert r.capacity == math.ceil((k * tokens_per_block / experts) * cf)
        for b in range(blocks):
            rows = slice(b * tokens_per_block, (b + 1) * tokens_per_block)
            kept = r.experts[rows][r.kept[rows]]
            assert np.bincount(kept, minlength=experts).max(initial=0) <= r.capacity
        # the dropped copies are exactly those beyond capacity in the stated order
        raw = moe.route(logits, k, None, gating=gating).weights  # before dropping
        want = _claims_by_hand(r.experts, raw, r.capacity, order, blocks)
        assert np.array_equal(r.dropped, want)
    assert np.all(r.weights[r.dropped] == 0) and np.all(r.weights[r.kept] > 0)


def test_choice_order_first_choices_before_second_choices():
    # 4 tokens, 2 experts, k = 2: every token picks both; capacity ceil(2*4/2*0.5) = 2.
    logits = np.array([[1.0, 0.0], [0.0, 2.0], [2.0, 0.0], [3.0, 0.0]])
    r = moe.route(logits, 2, 0.5)
    assert r.capacity == 2
    # expert 0: first choices of tokens 0, 2, 3 claim in token order -> token 3 dropped;
    # expert 1: first choice of token 1, then second choices of tokens 0, 2, 3 -> 0 kept.
    assert r.dropped.tolist() == [[False, False], [False, True], [False, True], [True, True]]
    assert r.counts.tolist() == [2, 2]
    probs = moe.route(logits, 2, 0.5, order="probs")  # highest weight wins instead
    # expert 0 keeps tokens 3 and 2 (weights 0.95, 0.88), not token 0 (0.73)
    assert probs.dropped.tolist() == [[True, False], [False, True], [False, True], [False, True]]


def test_capacity_formula_is_megatrons():
    assert moe.capacity(16, 8, 2, 1.25) == 5  # ceil(16 * 2 / 8 * 1.25)
    assert moe.capacity(10, 4, 1, 1.0) == 3  # Switch eq. 3: ceil(10 / 4)
    assert moe.capacity(8, 4, 2, 1.0) == 4  # GShard's 2S/E
    assert moe.capacity(8, 4, 2, None) is None


def test_gating_conventions():
    z = np.array([[1.0, 3.0, 2.0, 0.0]])
    p = np.exp(z) / np.exp(z).sum()
    top1 = moe.route(z, 1)  # Switch: weight = p of the winner
    assert top1.experts.tolist() == [[1]] and np.isclose(top1.weights[0, 0], p[0, 1])
    top2 = moe.route(z, 2)  # Mixtral: softmax over the two best logits
    best = np.exp([3.0, 2.0]) / np.exp([3.0, 2.0]).sum()
    assert top2.experts.tolist() == [[1, 2]] and np.allclose(top2.weights[0], best)
    sig = moe.route(z, 2, gating="sigmoid", scale=2.5)  # DeepSeek-V3
    s = 1 / (1 + np.exp(-z[0, [1, 2]]))
    assert np.allclose(sig.weights[0], 2.5 * s / s.sum())
    cold = moe.route(z, 1, temperature=0.1)
    assert cold.weights[0, 0] > top1.weights[0, 0]
    assert moe.route(np.zeros((1, 4)), 2).experts.tolist() == [[0, 1]]  # ties: lower index


def _deepseek_gate(scores, bias, k, groups, max_groups):
    """DeepSeek-V3's Gate.forward rule (inference/model.py), restated in torch."""
    s = torch.tensor(scores)
    sel = s + torch.tensor(bias)
    t, e = s.shape
    g = sel.view(t, groups, -1)
    group_scores = g.topk(2, dim=-1)[0].sum(dim=-1)
    keep = group_scores.topk(max_groups, dim=-1)[1]
    mask = torch.ones(t, groups, dtype=torch.bool).scatter_(1, keep, False)
    sel = g.masked_fill(mask.unsqueeze(-1), float("-inf")).flatten(1)
    idx = sel.topk(k, dim=-1)[1]
    w = s.gather(1, idx)
    return idx.numpy(), (w / w.sum(dim=-1, keepdim=True)).numpy()


@pytest.mark.parametrize("seed", range(5))
def test_node_limited_routing_matches_deepseek_v3_gate(seed):
    rng = np.random.default_rng(seed)
    z, bias = rng.normal(size=(32, 64)), rng.normal(size=64) * 0.1
    r = moe.route(z, 8, gating="sigmoid", groups=8, max_groups=4, bias=bias)
    idx, w = _deepseek_gate(r.scores, bias, 8, 8, 4)
    assert np.array_equal(np.sort(r.experts, axis=1), np.sort(idx, axis=1))
    order = np.argsort(r.experts, axis=1)
    assert np.allclose(np.take_along_axis(r.weights, order, axis=1),
                       np.take_along_axis(w, np.argsort(idx, axis=1), axis=1))  # fmt: skip
    assert moe.nodes_per_token(r, 8).max() <= 4
    free = moe.route(z, 8, gating="sigmoid", bias=bias)
    assert moe.nodes_per_token(free, 8).max() > 4  # without the limit some reach more


def test_aux_loss_is_switch_and_megatron():
    rng = np.random.default_rng(3)
    z = rng.normal(size=(64, 8))
    r = moe.route(z, 2, 1.25)
    tokens_per_expert = np.bincount(r.experts.ravel(), minlength=8)  # before capacity
    megatron = np.sum(r.scores.sum(0) * tokens_per_expert) * 8 / (2 * 64 * 64)
    assert np.isclose(r.aux_loss, megatron)
    assert np.isclose(moe.route(np.zeros((8, 4)), 1).aux_loss, 1.0)  # uniform P
    skew = np.tile([10.0, 0, 0, 0], (8, 1))
    assert np.isclose(moe.route(skew, 1).aux_loss, 4 * moe.route(skew, 1).scores[0, 0])
    assert np.allclose(r.probability, r.scores.mean(axis=0))
    sig = moe.route(z, 2, gating="sigmoid")
    assert np.isclose(sig.probability.sum(), 1.0)  # normalised per token for the loss


def test_claim_order_lists_first_choices_first():
    order = moe.claim_order(3, 2, blocks=1)
    assert order.tolist() == [[0, 0], [1, 0], [2, 0], [0, 1], [1, 1], [2, 1]]
    assert moe.claim_order(4, 1, blocks=2).tolist() == [[0, 0], [1, 0], [2, 0], [3, 0]]


# --- dispatch plans ----------------------------------------------------------------------


@settings(max_examples=100, deadline=None)
@given(
    ep=st.sampled_from([1, 2, 4]),
    tokens_per_rank=st.integers(1, 12),
    experts_per_rank=st.integers(1, 3),
    k=st.integers(1, 3),
    cf=st.one_of(st.none(), st.floats(0.2, 2.0)),
    seed=st.integers(0, 2**16),
    token_bytes=st.floats(1.0, 1e5),
)
def test_dispatch_plan_matches_routing(ep, tokens_per_rank, experts_per_rank, k, cf, seed,
                                       token_bytes):  # fmt: skip
    e, t = ep * experts_per_rank, ep * tokens_per_rank
    k = min(k, e)
    z = np.random.default_rng(seed).normal(size=(t, e))
    r = moe.route(z, k, cf, blocks=ep)
    plan = moe.dispatch_plan(r, ep, token_bytes)
    assert plan.tokens.sum() == r.counts.sum()
    assert np.array_equal(plan.per_expert.sum(axis=0), r.counts)
    for i in range(ep):  # row i: rank i's kept copies, by destination rank
        rows = slice(i * tokens_per_rank, (i + 1) * tokens_per_rank)
        dest = r.experts[rows][r.kept[rows]] // experts_per_rank
        assert plan.send_splits(i) == np.bincount(dest, minlength=ep).tolist()
        assert plan.recv_splits(i) == plan.tokens[:, i].astype(int).tolist()
    assert np.allclose(plan.bytes, plan.tokens * token_bytes)
    assert np.allclose(plan.combine_bytes, plan.bytes.T)
    if cf is not None:
        padded = moe.dispatch_plan(r, ep, token_bytes, pad=True)
        assert np.all(padded.tokens == experts_per_rank * r.capacity)
        assert np.all(padded.tokens >= plan.tokens)


def test_expected_plan_is_even():
    plan = moe.expected_plan(4096, 8, 64, token_bytes=7168, experts=256)
    assert np.allclose(plan.tokens, 4096 * 8 / 64)
    assert np.isclose(plan.off_rank_fraction, 63 / 64)


# --- the reference layer and its gradient ---------------------------------------------


def _torch_layer(x, router_w, experts, k, **kw):
    """The same layer in torch autograd: routing decisions from moe.route, weights
    differentiable."""
    xt = torch.tensor(x, requires_grad=True)
    wt = torch.tensor(router_w, requires_grad=True)
    w1 = torch.tensor(experts.w1, requires_grad=True)
    w2 = torch.tensor(experts.w2, requires_grad=True)
    z = (xt @ wt) / kw.get("temperature", 1.0)
    r = moe.route((x @ router_w), k, **kw)
    idx = torch.tensor(r.experts)
    scores = torch.softmax(z, 1) if r.gating == "softmax" else torch.sigmoid(z)
    w = scores.gather(1, idx)
    normalize = kw.get("normalize")
    if normalize is None:
        normalize = r.gating == "sigmoid" or k > 1
    if normalize:
        w = w / w.sum(1, keepdim=True)
    w = w * kw.get("scale", 1.0) * torch.tensor(r.kept)
    y = torch.zeros_like(xt)
    for j in range(k):
        out = torch.relu(torch.einsum("th,thf->tf", xt, w1[idx[:, j]]))
        out = torch.einsum("tf,tfh->th", out, w2[idx[:, j]])
        y = y + w[:, j : j + 1] * out
    return y, (xt, wt, w1, w2)


@pytest.mark.parametrize(
    "kw",
    [
        {},
        {"capacity_factor": 0.75},
        {"capacity_factor": 1.0, "blocks": 4, "order": "probs"},
        {"gating": "sigmoid", "scale": 2.5, "capacity_factor": 1.25},
        {"normalize": False, "temperature": 0.5},
        {"gating": "sigmoid", "groups": 4, "max_groups": 2, "bias": np.linspace(-0.1, 0.1, 8)},
    ],
)
def test_layer_reference_and_gradient_equal_torch_autograd(kw):
    rng = np.random.default_rng(7)
    x, router_w = rng.normal(size=(16, 5)), rng.normal(size=(5, 8))
    experts, gy = moe.random_experts(8, 5, 6, seed=2), rng.normal(size=(16, 5))
    k = 2
    y = moe.layer_reference(x, router_w, experts, k, **kw)
    yt, leaves = _torch_layer(x, router_w, experts, k, **kw)
    np.testing.assert_allclose(y, yt.detach().numpy(), rtol=1e-12, atol=1e-12)
    (yt * torch.tensor(gy)).sum().backward()
    grads = moe.layer_backward(x, router_w, experts, k, gy, **kw)
    for name, leaf in zip(("x", "router_w", "w1", "w2"), leaves, strict=True):
        np.testing.assert_allclose(grads[name], leaf.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_dropped_copies_contribute_nothing():
    rng = np.random.default_rng(0)
    x, router_w = rng.normal(size=(12, 4)), rng.normal(size=(4, 4))
    experts = moe.random_experts(4, 4, 5)
    y, r = moe.layer_forward(x, router_w, experts, 1, capacity_factor=0.5)
    assert r.dropped.any()
    np.testing.assert_array_equal(y[r.dropped[:, 0]], 0.0)  # top-1: dropped -> zero


# --- the expert-parallel layer on processes ---------------------------------------------


def test_demo_rejects_bad_arguments_before_starting():
    for argv in (["--tokens", "0"], ["--ep", "3"]):
        with pytest.raises(SystemExit) as info:
            demo.main(argv)
        assert info.value.code == 2


# --- costs -----------------------------------------------------------------------------


def test_alltoall_inside_a_node_is_the_pairwise_bandwidth_term():
    net = moe.network(gpus_per_node=8)
    n = 8e6  # bytes each rank sends in all (n / 8 to each rank)
    t = moe.alltoall_seconds(np.full((8, 8), n / 8), machine=net)
    beta_only = costmodel.collective_time("alltoall", "pairwise", n, 8, 0.0, 1 / (450e9))
    assert np.isclose(t.seconds, beta_only + net.nvlink_alpha_s)
    assert t.bottleneck == "NVLink" and np.allclose(t.nvlink_bytes, n * 7 / 8)


@pytest.mark.parametrize("name, nodes", [("dgx-h100", 2), ("dgx-h100", 8), ("dgx-a100", 4)])
def test_even_alltoall_is_the_nccl_models_when_the_network_limits(name, nodes):
    from scaleout import nccl

    topo = nccl.topology(name, nodes=nodes)
    net = moe.nccl_network(topo)
    n = topo.ranks
    plan = moe.expected_plan(4096, 8, n, 14336, experts=n * 4)
    ours = moe.alltoall_seconds(plan.bytes, machine=net)
    theirs = nccl.predict("alltoall", 4096 * 8 * 14336, machine=topo).seconds
    assert ours.bottleneck == "network" and np.isclose(ours.seconds, theirs, rtol=1e-9)
    assert moe.nccl_network("dgx-h100") == moe.nccl_network(nccl.PRESETS["dgx-h100"])
    assert moe.as_network("dgx-h100") == moe.nccl_network("dgx-h100")
    assert moe.as_network(net) is net
    with pytest.raises(ValueError, match="machine must be"):
        moe.nccl_network(42)
    with pytest.raises(ValueError, match="machine must be"):
        moe.alltoall_seconds(plan.bytes, machine=42)


def test_alltoall_across_nodes_waits_for_the_nic():
    net = moe.network(gpus_per_node=8)
    b = np.full((16, 16), 1e6)
    t = moe.alltoall_seconds(b, machine=net)
    assert t.bottleneck == "network" and np.allclose(t.network_bytes, 8e6)
    assert np.isclose(t.seconds, 8e6 / 50e9 + net.nvlink_alpha_s + net.network_alpha_s)
    hot = b.copy()
    hot[:, 3] *= 4  # rank 3 receives 4x: it sets the pace
    assert int(np.argmax(moe.alltoall_seconds(hot, machine=net).rank_seconds)) == 3
    assert moe.alltoall_seconds(np.eye(4), machine=net).bottleneck == "none"


def test_two_hop_sends_a_token_once_per_node():
    # 4 ranks on 2 nodes (2 GPUs each), 8 experts (2 per rank), 4 tokens (one per rank).
    # Token 0 (rank 0, node 0) picks experts 4 and 6 (ranks 2 and 3, both on node 1):
    # one network copy to rank 2 (rank 0's rail peer), which forwards one to rank 3.
    logits = np.full((4, 8), -5.0)
    logits[0, [4, 6]] = 5.0
    logits[1, [0, 1]] = 5.0  # token 1 (rank 1): both experts on rank 0, same node
    logits[2, [2, 7]] = 5.0  # token 2 (rank 2): rank 1 (node 0) and rank 3 (own node)
    logits[3, [6, 7]] = 5.0  # token 3 (rank 3): its own experts, nothing moves
    r = moe.route(logits, 2)
    net_out, net_in, nv_out, nv_in = moe.two_hop_bytes(r, 4, 2, token_bytes=10.0)
    assert net_out.tolist() == [10, 0, 10, 0]  # tokens 0 and 2 cross once each
    assert net_in.tolist() == [10, 0, 10, 0]  # to the rail peers: rank 2 and rank 0
    # NVLink: token 0 relay 2 -> 3; token 1: 1 -> 0 once (two experts, one GPU);
    # token 2: relay 0 -> 1, and 2 -> 3 inside its own node
    assert nv_out.tolist() == [10, 10, 20, 0] and nv_in.tolist() == [10, 10, 0, 20]
    plain = moe.dispatch_plan(r, 4, 10.0)
    assert plain.tokens[0].tolist() == [0, 0, 1, 1]  # without dedup: two network copies
    t = moe.two_hop_seconds(r, 4, 10.0, machine=moe.network(gpus_per_node=2))
    assert t.bottleneck == "network" and t.seconds > 0


def test_layer_alltoall_has_four_all_to_alls():
    plan = moe.expected_plan(4096, 8, 64, 7168, experts=256)
    net = moe.H800_NETWORK
    layer = moe.layer_alltoall(plan, combine_token_bytes=2 * 7168, machine=net)
    assert np.isclose(layer.combine, 2 * layer.dispatch, rtol=0.05)
    assert layer.dispatch_backward == layer.combine_backward == layer.combine
    assert np.isclose(layer.total, layer.forward + layer.backward)
    sent = 4096 * 8 * 63 / 64
    assert np.isclose(layer.busiest_rank_bytes, sent * (7168 + 3 * 2 * 7168))


def test_expert_compute_waits_for_the_busiest_rank():
    plan = moe.DispatchPlan(np.array([[10.0, 30.0], [10.0, 30.0]]), 2)  # rank 1 gets 60
    c = moe.expert_compute_seconds(plan, 64, 128, matmuls=2, peak_flops=1e12)
    assert np.isclose(c.forward, 2 * 2 * 60 * 64 * 128 / 1e12)
    assert np.isclose(c.backward, 2 * c.forward) and c.rank_forward[0] < c.rank_forward[1]


def test_expert_gemms_use_the_compute_model():
    from scaleout import compute

    plan = moe.DispatchPlan(np.array([[100.0, 3.0, 0.0, 10.0], [28.0, 0.0, 0.0, 6.0]]), 2)
    c = moe.expert_gemm_seconds(plan, 256, 512, "H100-SXM", matmuls=3)

    # rank 0 holds experts 0 and 1 (128 and 3 copies), rank 1 experts 2 and 3 (0 and 16)
    def fwd(m):
        return 2 * compute.gemm_seconds(m, 512, 256, "H100-SXM") + compute.gemm_seconds(
            m, 256, 512, "H100-SXM"
        )

    assert np.allclose(c.rank_forward, [fwd(128) + fwd(3), fwd(16)])
    assert c.forward == max(c.rank_forward) and c.backward > c.forward
    peak = moe.expert_compute_seconds(plan, 256, 512, matmuls=3)
    assert np.all(c.rank_forward >= peak.rank_forward)  # never faster than dense peak
    big = moe.expected_plan(4096, 8, 64, experts=256)
    small = moe.expected_plan(4096, 8, 1, experts=256)  # 256 experts of 128 copies each
    ratio = [
        moe.expert_gemm_seconds(p, 7168, 2048).total / moe.expert_compute_seconds(
            p, 7168, 2048, matmuls=3).total
        for p in (big, small)
    ]  # fmt: skip
    assert 1 < ratio[0] < ratio[1]  # small per-expert GEMMs run further below peak


@settings(max_examples=100, deadline=None)
@given(
    ep=st.sampled_from([1, 2, 8, 16, 64]),
    tokens=st.floats(1.0, 1e6),
    k=st.integers(1, 8),
    token_bytes=st.floats(1.0, 1e5),
    g=st.sampled_from([1, 4, 8, 72]),
)
def test_costs_finite_nonnegative_and_monotone(ep, tokens, k, token_bytes, g):
    net = moe.network(gpus_per_node=g)
    plan = moe.expected_plan(tokens, min(k, ep), ep, token_bytes)
    t = moe.alltoall_seconds(plan.bytes, machine=net)
    t2 = moe.alltoall_seconds(plan.bytes * 2, machine=net)
    assert np.isfinite(t.seconds) and t.seconds >= 0 and t2.seconds >= t.seconds
    layer = moe.layer_alltoall(plan, machine=net)
    assert np.isfinite(layer.total) and layer.total >= 0
    c = moe.expert_compute_seconds(plan, 128, 256)
    assert np.isfinite(c.total) and c.total >= 0
    g = moe.expert_gemm_seconds(plan, 128, 256)
    assert np.isfinite(g.total) and g.total >= c.total * 0.999


# --- placement and memory --------------------------------------------------------------


def test_mesh_groups_follow_megatrons_expert_order():
    m = moe.mesh(8, 2, tp=2)  # tp fastest, then ep, then expert-dp
    assert m.groups("tp") == [[0, 1], [2, 3], [4, 5], [6, 7]]
    assert m.groups("ep") == [[0, 2], [1, 3], [4, 6], [5, 7]]
    assert m.groups("expert_dp") == [[0, 4], [1, 5], [2, 6], [3, 7]]
    assert m.groups("dp") == [[0, 2, 4, 6], [1, 3, 5, 7]]
    assert m.coords(6) == {"expert_dp": 1, "ep": 1, "tp": 0}
    for kind in ("tp", "ep", "expert_dp", "dp"):  # each kind partitions the world
        assert sorted(r for g in m.groups(kind) for r in g) == list(range(8))


def test_published_records_are_the_csv_rows():
    """Every record of moe.published is built from moe.csv (same values, ints as ints)."""
    from scaleout import data

    rows = data.load("moe")
    by = {v.key: v.value for v in rows}
    bandwidth = [
        v for v in rows if v.get("subject") == "DeepEP" and v.get("quantity") == "bandwidth"
    ]
    assert len(bandwidth) == len(moe.DEEPEP_MEASUREMENTS) == 28
    for v, m in zip(bandwidth, moe.DEEPEP_MEASUREMENTS, strict=True):
        setting = (v.get("kernel"), v.get("phase"), int(v.get("ep")), v.get("version"))
        assert (m.kernel, m.phase, m.ep, m.table) == setting
        assert m.gb_per_s == v.value and type(m.gb_per_s) is int
    latency = {(v.get("version"), v.get("phase"), int(v.get("ep"))): v.value
               for v in rows if v.get("quantity") == "latency"}  # fmt: skip
    low = [m for m in moe.DEEPEP_MEASUREMENTS if m.kernel == "low-latency"]
    assert {(m.table, m.phase, m.ep): m.microseconds for m in low} == latency
    v3, mix = moe.DEEPSEEK_V3, moe.MIXTRAL_8X7B
    for model, prefix in ((v3, "v3"), (mix, "mixtral")):
        for field in ("layers", "hidden", "experts", "k", "expert_ffn", "vocab", "matmuls"):
            got = getattr(model, field)
            assert got == by[f"{prefix}-{field.replace('_', '-')}"] and type(got) is int
    assert v3.attention == moe.published.mla_parameters(
        *(int(by[f"v3-{q}"]) for q in ("hidden", "heads", "q-lora-rank", "kv-lora-rank",
                                       "qk-nope-head-dim", "qk-rope-head-dim", "v-head-dim"))
    )  # fmt: skip
    counts = [(p.total, p.active) for p in moe.PUBLISHED_COUNTS]
    assert counts == [(by["v3-total"], by["v3-active"]), (by["mixtral-total"],
                      by["mixtral-active"]), (by["switch-c-total"], None)]  # fmt: skip
    t = moe.DEEPSEEK_V3_TRAINING
    assert (t.gpus, t.pp, t.ep, t.tp, t.seq, t.batch) == tuple(
        by[f"v3-train-{q}"] for q in ("gpus", "pp", "ep", "tp", "seq", "batch")
    )
    assert type(t.seq) is int and type(t.batch) is int
    assert moe.published.DEEPSEEK_V3_HEADS == by["v3-heads"] == 128
    net = moe.H800_NETWORK
    assert (net.nvlink_gb_per_s, net.network_gb_per_s) == (by["h800-nvlink"], by["h800-rdma"])
    assert moe.FP8_SCALE_BYTES_PER_ELEMENT == 4 / by["v3-fp8-tile"]
    # the settings chapter 7's prose quotes (issue 24, prose audit)
    assert (moe.V3_ROUTE_SCALE, moe.SWITCH_AUX_LOSS_COEF) == (by["v3-route-scale"], 0.01)
    assert (moe.V3_EXPERT_GROUPS, moe.V3_LIMITED_GROUPS) == (by["v3-expert-groups"], 4)
    assert type(moe.V3_EXPERT_GROUPS) is int and moe.V3_LIMITED_GROUPS == t.max_nodes_per_token
    assert moe.SWITCH_C_EXPERTS == by["switch-c-experts"] == 2048
    v2 = [v for v in rows if v.get("subject") == "DeepEP V2"]
    assert len(v2) == len(moe.DEEPEP_V2_GB_PER_S) == 4
    assert moe.DEEPEP_V2_GB_PER_S == {(v.get("phase"), int(v.get("ep"))): v.value for v in v2}
    assert {v.source for v in v2} == {"deepepv2"} and {v.unit for v in v2} == {"GB/s"}
    assert moe.LL_HEADER_BYTES == by["deepep-ll-header-bytes"] and type(moe.LL_HEADER_BYTES) is int
    assert moe.LL_MASKED_DRAWS == by["deepep-ll-masked-draws"] and type(moe.LL_MASKED_DRAWS) is int


def test_parameter_counts_match_the_published_ones():
    v3 = moe.moe_parameters(moe.DEEPSEEK_V3)
    assert round(v3.total / 1e9) == 671 and round(v3.active / 1e9) == 38  # published 37B
    mix = moe.moe_parameters(moe.MIXTRAL_8X7B)
    assert round(mix.total / 1e9, 1) == 46.7 and round(mix.active / 1e9, 1) == 12.9
    assert moe.mla_parameters(7168, 128, 1536, 512, 128, 64, 128) == 187_107_328


def test_state_bytes_shard_experts_over_ep_and_their_optimizer_over_expert_dp():
    m = moe.DEEPSEEK_V3
    counts = moe.moe_parameters(m)
    one = moe.moe_state_bytes(m, 1, 1)
    assert np.isclose(one.total, 18 * counts.total)
    s = moe.moe_state_bytes(m, 64, 2, pp=16)
    assert np.isclose(s.experts, counts.routed_experts / (64 * 16) * (6 + 12 / 2))
    assert np.isclose(s.dense, counts.dense / 16 * (6 + 12 / 128))


def test_training_setup_degrees():
    v3 = moe.DEEPSEEK_V3_TRAINING
    assert (v3.dp, v3.expert_dp, v3.nodes_per_ep_group) == (128, 2, 8)


def test_deepep_table_is_complete():
    rows = moe.DEEPEP_MEASUREMENTS
    assert len([r for r in rows if r.kernel == "normal"]) == 8
    low = [r for r in rows if r.kernel == "low-latency"]
    assert len(low) == 20 and {r.table for r in low} == {"dd758ca", "ebfe47e"}
    # today's table: EP 8-64 re-measured with NVLink (PR #173), 128 and 256 as first published
    today = {(r.phase, r.ep): r.transport for r in low if r.table == "dd758ca"}
    assert today == {
        (ph, ep): "nvlink+rdma" if ep <= 64 else "rdma"
        for ph in ("dispatch", "combine")
        for ep in (8, 16, 32, 64, 128, 256)
    }
    assert all(r.transport == "rdma" for r in low if r.table == "ebfe47e")
    with pytest.raises(ValueError, match="transport must be 'two-hop' exactly"):
        dataclasses.replace(rows[0], transport="rdma")


def test_deepep_low_latency_bytes_are_what_deepep_counts():
    # every published us x GB/s is the counted bytes (7408 or 14336 per copy, 1024 copies
    # less the ~10 masked) to the tables' rounding; 128 x 8 x 7392 would miss the 43 GB/s row
    for m in moe.DEEPEP_MEASUREMENTS:
        if m.kernel == "low-latency":
            p = moe.price_low_latency(m)
            assert abs(p.implied_bytes / p.counted_bytes - 1) < 0.015, m
    m = next(r for r in moe.DEEPEP_MEASUREMENTS if r.kernel == "low-latency" and r.ep == 64)
    assert moe.counted_copy_bytes(m) == 7408
    assert abs(128 * 8 * 7392 / (m.microseconds * 1e-6) / 1e9 - m.gb_per_s) > 0.5
    assert moe.low_latency_copies(m) == pytest.approx(1024 - 1024 * (1 - (1 - 1 / 1024) ** 10))


def test_deepep_low_latency_transports():
    low = [m for m in moe.DEEPEP_MEASUREMENTS if m.kernel == "low-latency"]
    rows = {(m.table, m.phase, m.ep): m for m in low}
    now, first = rows["dd758ca", "dispatch", 8], rows["ebfe47e", "dispatch", 8]
    # the re-measured E_p = 8 row moves more off each GPU than one 50 GB/s NIC can carry
    off_gpu = moe.price_low_latency(now).counted_bytes * 7 / 8 / (now.microseconds * 1e-6)
    assert off_gpu > 1.6 * moe.H800_NETWORK.network_gb_per_s * 1e9
    p_now, p_first = moe.price_low_latency(now), moe.price_low_latency(first)
    assert p_now.model.bottleneck == "NVLink" and p_now.model.network_bytes.max() == 0
    assert p_first.model.bottleneck == "network" and p_first.model.nvlink_bytes.max() == 0
    assert np.isclose(p_first.model.network_bytes.max(), p_first.counted_bytes * 7 / 8)
    assert p_now.seconds < p_first.seconds and now.microseconds < first.microseconds
    assert moe.rdma_only(moe.H800_NETWORK).gpus_per_node == 1


def test_deepep_normal_rows_name_the_binding_link():
    rows = {(m.phase, m.ep): m for m in moe.DEEPEP_MEASUREMENTS if m.kernel == "normal"}
    gpu = moe.deepep_routing(16, tokens_per_rank=1024)
    p16 = moe.price_normal(rows["dispatch", 16], gpu=gpu)
    # DeepEP issue #285: at 43 GB/s of RDMA, NVLink runs above 140 GB/s and binds
    assert p16.model.bottleneck == "NVLink"
    assert p16.counted_nvlink_bytes / p16.measured_seconds > 140e9
    # issue #51: the RDMA count includes the own node, N / (N - 1) = 2 on two nodes
    assert p16.counted_rdma_bytes / p16.model.network_bytes.mean() == pytest.approx(2, rel=0.01)
    p8 = moe.price_normal(rows["dispatch", 8], gpu=moe.deepep_routing(8, tokens_per_rank=512))
    assert p8.counted_rdma_bytes == 0 and p8.model.bottleneck == "NVLink"
    combine = moe.price_normal(rows["combine", 16], gpu=gpu)
    assert combine.seconds == pytest.approx(p16.seconds * 14336 / 7392, rel=0.02)
    with pytest.raises(ValueError, match="m must be a normal-kernel row"):
        moe.price_normal(next(m for m in moe.DEEPEP_MEASUREMENTS if m.kernel != "normal"))


def test_deepep_routing_follows_the_test_and_two_hop_time_agrees():
    gpu = moe.deepep_routing(64, tokens_per_rank=64, seed=3)
    assert gpu.shape == (64 * 64, 8)
    nodes = np.array([len(set(row // 8)) for row in gpu])
    assert nodes.max() <= 4  # top-4 of 8 nodes
    z = np.random.default_rng(0).normal(size=(64, 16))
    r = moe.route(z, 4, gating="sigmoid", groups=4, max_groups=2)
    a = moe.two_hop_seconds(r, 8, 10.0, machine=moe.network(gpus_per_node=2))
    b = moe.two_hop_time(r.experts // 2, 8, 10.0, machine=moe.network(gpus_per_node=2))
    assert a.seconds == b.seconds and np.array_equal(a.network_bytes, b.network_bytes)


def test_group_top_scores_a_group_by_its_best_experts():
    # sigmoid scores: group 0 holds the best one (0.9999) and a low one (0.5); group 1 two
    # high ones (0.9933 each): by the sum of its top 2 group 1 wins, by its best group 0
    logits = np.array([[9.0, 0.0, 5.0, 5.0]])
    kw = dict(gating="sigmoid", groups=2, max_groups=1)
    by_sum, by_max = moe.route(logits, 2, **kw), moe.route(logits, 2, **kw, group_top=1)
    assert set(by_sum.experts[0]) == {2, 3} and set(by_max.experts[0]) == {0, 1}
    with pytest.raises(ValueError, match="group_top must be None without groups"):
        moe.route(logits, 2, group_top=1)


@settings(max_examples=40, deadline=None)
@given(
    nodes=st.sampled_from([1, 2, 4]),
    tokens=st.integers(1, 32),
    phase=st.sampled_from(["dispatch", "combine"]),
    seed=st.integers(0, 2**16),
)
def test_deepep_prices_are_finite_and_counts_bounded(nodes, tokens, phase, seed):
    ep = 8 * nodes
    bpe = 1 if phase == "dispatch" else 2
    link = "RDMA" if nodes > 1 else "NVLink"
    m = moe.AllToAllMeasurement(
        "normal", phase, ep, tokens, 7168, 8, bpe, 50.0, None, "two-hop", link, "t", "test"
    )
    p = moe.price_normal(m, gpu=moe.deepep_routing(ep, tokens_per_rank=tokens, seed=seed))
    assert np.isfinite(p.seconds) and p.seconds > 0 and np.isfinite(p.error)
    # per rank: a token reaches 1 to 4 nodes and 1 to 8 GPUs, and a node only through a GPU
    per_copy = moe.counted_copy_bytes(m) * tokens
    assert p.counted_rdma_bytes <= p.counted_nvlink_bytes * (1 + 1e-12)
    assert p.counted_nvlink_bytes <= 8 * per_copy * (1 + 1e-12)
    if nodes > 1:
        assert per_copy * (1 - 1e-12) <= p.counted_rdma_bytes <= min(nodes, 4) * per_copy * 1.0001
    else:
        assert p.counted_rdma_bytes == 0
    for ll in moe.DEEPEP_MEASUREMENTS[8:12]:
        q = moe.price_low_latency(ll)
        assert np.isfinite(q.seconds) and 0 < q.seconds < q.measured_seconds


# --- bad input -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: moe.route(np.zeros((4, 4)), 5), "k must be an integer in \\[1, 4\\]"),
        (lambda: moe.route(np.zeros((4, 4)), 2, 0.0), "capacity_factor must be"),
        (lambda: moe.route(np.zeros((4, 4)), 2, blocks=3), "blocks must be a divisor"),
        (lambda: moe.route(np.zeros((4, 6)), 2, groups=4, max_groups=2), "groups must be"),
        (lambda: moe.route(np.zeros((4, 4)), 2, groups=2), "groups and max_groups"),
        (lambda: moe.route([[np.nan, 0.0]], 1), "logits must be"),
        (lambda: moe.dispatch_plan(moe.route(np.zeros((4, 4)), 2), 3), "ep must be a divisor"),
        (lambda: moe.dispatch_plan(moe.route(np.zeros((4, 4)), 2, 1.0), 2, pad=True), "pad must"),
        (lambda: moe.mesh(8, 3), "tp x ep must be a divisor"),
        (lambda: moe.alltoall_seconds(np.ones((2, 3)), machine=moe.network()), "pair_bytes must"),
        (lambda: moe.moe_state_bytes(moe.MIXTRAL_8X7B, 3, 1), "ep must be a divisor"),
    ],
)
def test_bad_inputs_raise_value_error_naming_the_argument(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_figures_build_from_library_data():
    from scaleout.viz import moe as VM

    r = moe.route(np.random.default_rng(0).normal(size=(32, 4)), 2, 1.0)
    frames = VM.routing_animation(r).frames
    assert len(frames) <= 60 and frames[-1].name == "64"  # 64 claims, grouped in pairs
    plan = moe.dispatch_plan(r, 4, 2.0)
    heat = VM.plan_matrix(plan, "copies").data[0]
    assert np.array_equal(np.array(heat.z), plan.tokens)
    bars = VM.load_bars(r, ymax=40).data
    assert list(bars[0].y) == r.counts.tolist()
    assert list(bars[1].y) == (r.routed - r.counts).tolist()
    t = moe.alltoall_seconds(moe.expected_plan(64, 2, 16).bytes, machine=moe.network())
    VM.alltoall_topology(t.nvlink_bytes, t.network_bytes, 8, 450.0, 50.0)
    VM.mesh_figure(moe.mesh(8, 4), 8)
    with pytest.raises(ValueError, match="labels must be"):
        VM.measured_vs_model("ab", [1.0, 2.0], [1.0, 2.0])
    fig = VM.measured_vs_model(["a", "b", "c"], [1.0, 2.0, 3.0], [1.0, 2.0, 3.0],
                               groups=["g", "h", "g"])  # fmt: skip
    assert [len(tr.x) for tr in fig.data[1:]] == [2, 1] and fig.data[1].name == "g"
    fig = VM.cost_curves([1, 2], {"a": [1.0, 2.0]}, "x", "y", highlight=(2, 2.0, "E_p = 2"))
    assert fig.data[-1].name == "E_p = 2" and fig.data[-1].marker.symbol == "diamond"


@settings(max_examples=60, deadline=None)
@given(
    nodes=st.sampled_from([1, 2, 4]),
    g=st.sampled_from([1, 2, 4]),
    tokens_per_rank=st.integers(1, 16),
    k=st.integers(1, 4),
    limited=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_two_hop_never_sends_more_over_the_network(nodes, g, tokens_per_rank, k, limited, seed):
    ep = nodes * g
    e = 2 * ep
    z = np.random.default_rng(seed).normal(size=(ep * tokens_per_rank, e))
    kw = dict(groups=nodes, max_groups=max(1, nodes // 2)) if limited and nodes > 1 else {}
    if kw and kw["max_groups"] * (e // nodes) < k:
        kw = {}
    r = moe.route(z, min(k, e), **kw)
    net = moe.network(gpus_per_node=g)
    two = moe.two_hop_seconds(r, ep, 100.0, machine=net)
    plain = moe.alltoall_seconds(moe.dispatch_plan(r, ep, 100.0).bytes, machine=net)
    out, inn, nv_out, nv_in = moe.two_hop_bytes(r, ep, g, 100.0)
    assert np.isclose(out.sum(), inn.sum()) and np.isclose(nv_out.sum(), nv_in.sum())
    pairs = moe.dispatch_plan(r, ep, 100.0).bytes
    node = np.arange(ep) // g
    remote = pairs[node[:, None] != node[None, :]].sum()  # every copy to another node
    assert out.sum() <= remote + 1e-9  # one copy per (token, node) instead
    assert np.isfinite(plain.seconds)
    assert np.isfinite(two.seconds) and two.seconds >= 0
    if nodes == 1:
        assert out.sum() == 0  # one node: nothing leaves it
