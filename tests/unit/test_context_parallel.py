"""scaleout.context_parallel: block attention and its merge, ring attention and its layouts,
Ulysses and all-gather CP, the cost and memory models, the published rows; its figures. Sequence
parallelism, ring attention and Ulysses on real gloo processes: tests/integration."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scaleout import compute, nccl, planner, viz
from scaleout import context_parallel as CP
from scaleout import memory as M
from scaleout.context_parallel import published as P
from scaleout.demos import context_parallel as demo
from scaleout.nccl import p2p
from scaleout.viz import context_parallel as V

SETTINGS = settings(max_examples=40, deadline=None)


def qkv(seed, heads, seq, d):
    return np.random.default_rng(seed).standard_normal((3, heads, seq, d))


# ------------------------------------------------------------------ blocks and the merge


@given(
    heads=st.integers(1, 3),
    seq=st.integers(1, 24),
    d=st.integers(1, 6),
    cuts=st.lists(st.integers(1, 23), max_size=5),
    causal=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
    order=st.randoms(use_true_random=False),
)
@SETTINGS
def test_merged_blocks_equal_softmax_attention(heads, seq, d, cuts, causal, seed, order):
    q, k, v = qkv(seed, heads, seq, d)
    bounds = sorted({0, seq, *(c for c in cuts if c < seq)})
    blocks = [np.arange(a, b) for a, b in zip(bounds, bounds[1:], strict=False)]
    order.shuffle(blocks)  # the order of the blocks does not matter
    total = None
    for kpos in blocks:
        mask = CP.causal_mask(np.arange(seq), kpos) if causal else None
        part = CP.block_attention(q, k[:, kpos], v[:, kpos], mask)
        total = part if total is None else CP.merge(total, part)
    np.testing.assert_allclose(total.out, CP.attention_reference(q, k, v, causal), atol=1e-12)
    scores = q @ k.transpose(0, 2, 1) / math.sqrt(d)
    if causal:
        scores = np.where(np.tril(np.ones((seq, seq), bool)), scores, -np.inf)
    np.testing.assert_allclose(total.lse, np.logaddexp.reduce(scores, axis=2), atol=1e-12)


@given(
    seq=st.integers(1, 20), block=st.integers(1, 20), causal=st.booleans(), seed=st.integers(0, 99)
)
@SETTINGS
def test_blockwise_loop_equals_the_reference(seq, block, causal, seed):
    q, k, v = qkv(seed, 2, seq, 3)
    out = CP.blockwise_attention(q, k, v, min(block, seq), causal).out
    np.testing.assert_allclose(out, CP.attention_reference(q, k, v, causal), atol=1e-12)


def test_a_fully_masked_block_is_the_identity_of_the_merge():
    q, k, v = qkv(0, 2, 4, 3)
    empty = CP.block_attention(q, k, v, np.zeros((4, 4), dtype=bool))
    assert np.all(np.isneginf(empty.lse)) and not empty.out.any()
    full = CP.block_attention(q, k, v)
    merged = CP.merge(full, empty)
    np.testing.assert_array_equal(merged.out, full.out)
    np.testing.assert_array_equal(merged.lse, full.lse)
    both = CP.merge(empty, empty)
    assert np.all(np.isneginf(both.lse)) and not both.out.any()


def test_large_scores_do_not_overflow():
    q, k, v = qkv(1, 1, 6, 4)
    out = CP.blockwise_attention(300 * q, 300 * k, v, 2, causal=True).out
    assert np.all(np.isfinite(out))
    np.testing.assert_allclose(out, CP.attention_reference(300 * q, 300 * k, v), atol=1e-10)


# ------------------------------------------------------------------ ring attention


@given(
    cp=st.sampled_from([1, 2, 3, 4, 6, 8]),
    chunks=st.integers(1, 3),
    layout=st.sampled_from(CP.LAYOUTS),
    causal=st.booleans(),
    seed=st.integers(0, 99),
)
@SETTINGS
def test_ring_attention_equals_the_reference_and_counts_the_closed_form_work(
    cp, chunks, layout, causal, seed
):
    seq = 2 * cp * chunks
    q, k, v = qkv(seed, 2, seq, 3)
    out, work = CP.ring_attention(q, k, v, cp, causal=causal, layout=layout)
    np.testing.assert_allclose(out, CP.attention_reference(q, k, v, causal), atol=1e-12)
    np.testing.assert_array_equal(work, CP.ring_work(seq, cp, layout, causal))
    total = seq * (seq + 1) // 2 if causal else seq * seq
    assert work.sum() == total  # every visible pair exactly once


@given(cp=st.integers(1, 64), chunk=st.integers(1, 512))
@settings(max_examples=80, deadline=None)
def test_zigzag_is_balanced_exactly_for_causal_masks(cp, chunk):
    seq = 2 * cp * chunk
    n = seq // cp
    work = CP.ring_work(seq, cp, "zigzag")
    assert np.all(work == work[0])  # every rank the same at every step
    assert work[0, 0] == n * (n + 1) // 2 and np.all(work[0, 1:] == n * n // 2)
    summary = CP.balance(work)
    assert summary["efficiency"] == 1.0 and summary["idle"] == 0.0


@given(cp=st.integers(2, 64), n=st.integers(1, 4096))
@settings(max_examples=80, deadline=None)
def test_contiguous_causal_leaves_ranks_idle(cp, n):
    work = CP.ring_work(cp * n, cp, "contiguous")
    r, t = np.meshgrid(np.arange(cp), np.arange(cp), indexing="ij")
    expected = np.where(t == 0, n * (n + 1) // 2, np.where(r >= t, n * n, 0))
    np.testing.assert_array_equal(work, expected)
    summary = CP.balance(work)
    assert summary["critical"] == n * (n + 1) // 2 + (cp - 1) * n * n
    # efficiency tends to cp / (2 cp - 1) for long shards
    assert abs(summary["efficiency"] - cp / (2 * cp - 1)) < 1.0 / n


@given(cp=st.integers(1, 64), n=st.integers(1, 2048))
@SETTINGS
def test_striped_is_balanced_to_within_one_row(cp, n):
    work = CP.ring_work(cp * n, cp, "striped")
    assert np.all(work.max(axis=0) - work.min(axis=0) <= n)
    assert work.sum() == cp * n * (cp * n + 1) // 2


@pytest.mark.parametrize("layout", CP.LAYOUTS)
def test_shards_partition_the_sequence(layout):
    pos = CP.shard_positions(48, 4, layout)
    assert pos.shape == (4, 12)
    assert sorted(pos.ravel().tolist()) == list(range(48))
    assert np.all(np.diff(pos, axis=1) > 0)
    if layout == "zigzag":  # rank i: chunks i and 2cp-1-i of 6 tokens
        assert pos[1].tolist() == [*range(6, 12), *range(36, 42)]


def test_ring_rejects_sizes_it_cannot_cut():
    q, k, v = qkv(0, 2, 12, 3)
    with pytest.raises(ValueError, match="seq must be a multiple of 16"):
        CP.ring_attention(q, k, v, 8, layout="zigzag")
    with pytest.raises(ValueError, match="cp must be an integer in"):
        CP.ring_work(1024, 0)
    with pytest.raises(ValueError, match="layout must be one of"):
        CP.ring_work(1024, 4, "diagonal")
    with pytest.raises(ValueError, match="work must be a square"):
        CP.balance(np.ones((2, 3), dtype=int))


# ------------------------------------------------------------------ Ulysses, all-gather


@given(cp=st.sampled_from([1, 2, 4]), causal=st.booleans(), seed=st.integers(0, 99))
@SETTINGS
def test_ulysses_and_allgather_equal_the_reference(cp, causal, seed):
    q, k, v = qkv(seed, 4, 8 * cp, 3)
    ref = CP.attention_reference(q, k, v, causal)
    np.testing.assert_allclose(CP.ulysses_attention(q, k, v, cp, causal), ref, atol=1e-12)
    for layout in CP.LAYOUTS:
        out = CP.allgather_attention(q, k, v, cp, causal, layout)
        np.testing.assert_allclose(out, ref, atol=1e-12)


def test_the_two_all_to_alls_are_inverses_and_swap_the_sharded_dimension():
    x = np.random.default_rng(0).standard_normal((4, 8, 3, 2))  # (cp, h, s/cp, d)
    heads = CP.sequence_to_heads(x)
    assert heads.shape == (4, 2, 12, 2)
    np.testing.assert_array_equal(heads[1][:, 3:6], x[1][2:4])  # rank 1: heads 2-3, seq 3-5
    np.testing.assert_array_equal(CP.heads_to_sequence(heads), x)


def test_ulysses_needs_heads_divisible_by_cp():
    q, k, v = qkv(0, 6, 16, 3)
    with pytest.raises(ValueError, match="cp must be a divisor of the number of heads"):
        CP.ulysses_attention(q, k, v, 4)
    with pytest.raises(ValueError, match="divisor of the heads per rank"):
        CP.attention_seconds("ulysses", 65536, 16, "llama3-8b")  # 8 kv heads


# ------------------------------------------------------------------ traffic and time


def test_traffic_formulas():
    m = CP.model("llama3-8b")
    s, cp, g, d = 65536, 8, m.kv_heads, m.head_dim
    fwd, bwd = CP.traffic_bytes("ring", s, cp, m)
    block = 2 * (s / cp) * g * d * 2
    assert fwd == (cp - 1) * block and bwd == (2 * cp - 1) * block
    fwd, bwd = CP.traffic_bytes("ulysses", s, cp, m)
    assert fwd == bwd == (s / cp) * (2 * m.heads + 2 * g) * d * 2 * (cp - 1) / cp
    fwd, bwd = CP.traffic_bytes("allgather", s, cp, m)
    assert fwd == 2 * s * g * d * 2 * (cp - 1) / cp and bwd == 2 * fwd
    assert CP.traffic_bytes("hybrid", s, cp, m, ulysses=1) == CP.traffic_bytes("ring", s, cp, m)
    assert CP.traffic_bytes("hybrid", s, cp, m, ulysses=cp) == CP.traffic_bytes("ulysses", s, cp, m)


@given(k=st.sampled_from([1, 2, 4]))
@SETTINGS
def test_ulysses_volume_per_link_is_constant_when_s_and_cp_grow_together(k):
    """Jacobs et al.: 4 N h / P per link for multi-head attention (a = g, heads = h / d)."""
    mha = CP.AttentionShape("mha", 32, 32, 128, 4096, 16384, 32)
    s, cp = 8192 * k, 8 * k
    fwd, _ = CP.traffic_bytes("ulysses", s, cp, mha)
    assert fwd == pytest.approx(4 * s * mha.hidden * 2 / cp * (cp - 1) / cp)
    ring_fwd, _ = CP.traffic_bytes("ring", s, cp, mha)
    assert ring_fwd == pytest.approx(2 * s * mha.hidden * 2 * (cp - 1) / cp)  # grows with s


@given(
    scheme=st.sampled_from(CP.SCHEMES),
    seq_k=st.sampled_from([1, 8, 64, 1024]),
    cp=st.sampled_from([1, 2, 4, 8, 16, 64]),
    net=st.sampled_from(list(CP.NETWORKS)),
    name=st.sampled_from(list(CP.MODELS)),
    tp=st.sampled_from([1, 8]),
    layout=st.sampled_from(CP.LAYOUTS),
)
@settings(max_examples=120, deadline=None)
def test_times_are_finite_nonnegative_and_consistent(scheme, seq_k, cp, net, name, tp, layout):
    seq = 1024 * seq_k
    u = min(cp, 8 // tp) if scheme == "hybrid" else 1
    try:
        t = CP.attention_seconds(scheme, seq, cp, name, tp, layout=layout, ulysses=u, machine=net)
    except ValueError as e:
        assert "divisor of the heads per rank" in str(e) or "multiple of" in str(e)
        return
    values = (t.forward, t.backward, t.compute, t.comm, t.exposed)
    assert all(math.isfinite(x) and x >= 0 for x in values)
    assert t.total >= t.compute * (1 - 1e-12)
    if cp == 1:
        assert t.comm == 0 and t.exposed <= 1e-12 * t.total  # rounding only
    # never faster than the balanced compute alone, each pass at its own rate
    flops = CP.attention_flops(seq, name, tp=tp) / cp
    ideal = flops / CP.ATTENTION_FORWARD_FLOPS_PER_S
    ideal += CP.BACKWARD_FACTOR * flops / CP.ATTENTION_BACKWARD_FLOPS_PER_S
    assert CP.ideal_seconds(seq, cp, name, tp) == pytest.approx(ideal, rel=1e-12)
    assert t.total >= ideal * (1 - 1e-9)


def test_ring_overlap_hides_the_transfer_until_the_block_is_too_small():
    slow = CP.attention_seconds("ring", 1024 * 16, 16, "llama3-8b", tp=8, machine="dgx-h100")
    fast = CP.attention_seconds("ring", 1024 * 1024, 16, "llama3-8b", tp=8, machine="dgx-h100")
    assert slow.exposed / slow.compute > 0.5  # 1K tokens per rank over the NIC: exposed
    assert fast.exposed / fast.compute < 0.01  # 64K tokens per rank: hidden
    n = CP.overlap_threshold_tokens("llama3-8b", tp=8, cross_node=True, machine="dgx-h100")
    m = CP.model("llama3-8b")
    compute = 0.5 * 4 * m.head_dim * (m.heads / 8) * n * n / CP.ATTENTION_FORWARD_FLOPS_PER_S
    transfer = CP.transfer_seconds(
        "p2p", 2 * n * 1 * m.head_dim * 2, 2, stride=8, machine="dgx-h100"
    )
    assert compute == pytest.approx(transfer, rel=1e-6)


def test_overlap_threshold_is_liu_et_al_block_size_for_mha_without_mask():
    """Liu et al.: block size >= F / bandwidth for 2-byte MHA without the causal mask; the
    NCCL model's latency adds a little."""
    mha = CP.AttentionShape("mha", 32, 32, 128, 4096, 16384, 32)
    n = CP.overlap_threshold_tokens(mha, causal=False, flops_per_s=312e12, machine="dgx-a100")
    topo = nccl.topology("dgx-a100")
    bw = p2p.nvlink_gb_per_s(machine=topo) * 1e9  # bytes/s one GPU sends to a peer
    f_over_b = 312e12 / bw
    big = 1e8  # above the LL threshold: Simple, latency + bytes / bandwidth
    latency = float(p2p.sendrecv_us(big, True, machine=topo.group(2, 1))) * 1e-6 - big / bw
    a, b = 4 * 128 * 32 / 312e12, 2 * 32 * 128 * 2 / bw  # seconds per n^2, per n
    root = (b + math.sqrt(b * b + 4 * a * latency)) / (2 * a)
    assert f_over_b == pytest.approx(b / a)  # without latency: exactly F / bandwidth
    assert n == pytest.approx(root, rel=1e-6) and n > f_over_b


def test_activation_memory_with_and_without_cp():
    m = CP.model("llama3-8b")
    one = CP.activation_bytes_per_rank(131072, 1, m)
    eight = CP.activation_bytes_per_rank(131072, 8, m)
    assert eight == pytest.approx(one / 8)  # every term linear in the local tokens
    # 36 bytes per token and hidden unit: 10 replicated (with 2 of dropout masks), Q 2, K and
    # V 2 g/a each, the output projection's input 2, the SwiGLU MLP 6 f/h; plus the core
    assert one == pytest.approx((10 + 4 + 4 * 8 / 32 + 6 * 14336 / 4096) * 131072 * 4096
                                + 4 * m.heads * 131072, rel=1e-12)  # fmt: skip
    stored = CP.activation_bytes_per_rank(131072, 8, m, flash_attention=False)
    assert stored - eight == pytest.approx(5 * m.heads * 16384 * 131072 - 4 * m.heads * 16384)
    with pytest.raises(ValueError, match="seq must be a multiple of cp"):
        CP.activation_bytes_per_rank(1000, 3)


# ------------------------------------------------------------------ the network stand-in


def test_transfers_are_the_nccl_models():
    h100 = nccl.topology("dgx-h100", nodes=2)
    inside = CP.transfer_seconds("p2p", 1e8, 8, machine="dgx-h100")
    assert inside == pytest.approx(p2p.sendrecv_us(1e8, True, machine=h100.group(8, 1)) * 1e-6)
    across = CP.transfer_seconds("p2p", 1e8, 2, stride=8, machine="dgx-h100")  # one rank per server
    assert across == pytest.approx(p2p.sendrecv_us(1e8, False, machine=h100.group(1, 2)) * 1e-6)
    assert across > 5 * inside  # a NIC against NVLink
    a2a = CP.transfer_seconds("alltoall", 1e8, 16, machine="dgx-h100")
    assert a2a == pytest.approx(nccl.collective_seconds("alltoall", 1e8, 8, 2, machine="dgx-h100"))
    ag = CP.transfer_seconds("allgather", 1e8, 16, stride=8, machine="dgx-h100")
    assert ag == pytest.approx(nccl.collective_seconds("allgather", 1e8, 1, 16, machine="dgx-h100"))
    assert CP.ranks_per_node(16, 2, machine="dgx-h100") == 4
    assert CP.ranks_per_node(16, 8, machine="gb200-nvl72") == 8  # 9 GPUs of stride 8: 8 divide 16
    assert CP.transfer_seconds("allgather", 0.0, 8) == 0.0 == CP.transfer_seconds("p2p", 1e6, 1)
    assert CP.cluster("gb200-nvl72").gpus_per_node == 72


# ------------------------------------------------------------------ published rows


def test_published_rows_reproduce_the_readme_percentages():
    readme = [52.1, 85.2, 74.4, 53.9, 90.2, 82.9, 51.4, 81.7, 69.6, 52.5, 89.8, 82.6]
    got = [100 * r.efficiency for r in P.RING_BENCHMARKS]
    assert np.all(np.abs(np.array(got) - readme) < 0.5)  # iter/s are rounded there
    varlen = [49.1, 70.2, 57.0, 51.1, 75.9, 58.1, 49.8, 72.0, 51.6, 52.1, 80.2, 58.0]
    got = [100 * r.efficiency for r in P.RING_VARLEN_BENCHMARKS]
    assert np.all(np.abs(np.array(got) - varlen) < 0.5)
    assert [r.scheme for r in P.RING_VARLEN_BENCHMARKS[:3]] == ["ring", "ring", "allgather"]
    for docs in P.VARLEN_DOCUMENTS:  # cu_seqlens of the benchmark: one GPU's 8,192 tokens
        assert sum(docs) == 8192
    assert len(P.USP_BENCHMARKS) == 24 and {r.ring for r in P.USP_BENCHMARKS} == {1, 2, 4, 8}
    long = P.LLAMA3_SETUPS[2]
    assert long.seq // long.cp == 8192 and long.seq % (2 * long.cp) == 0


def test_llama3_table4_dp_is_the_one_gpus_and_batch_imply():
    """Regression: Table 4 prints DP = 4 for the long-context row; the GPUs (16,384 / (8 x 16
    x 16)) and the batch (16M tokens / 131,072 / 16) both give 8."""
    assert [s.printed_dp for s in P.LLAMA3_SETUPS] == [64, 128, 4]
    assert [s.dp for s in P.LLAMA3_SETUPS] == [64, 128, 8]
    assert [s.dp_from_batch for s in P.LLAMA3_SETUPS] == [64, 128, 8]
    long = P.LLAMA3_SETUPS[2]
    assert long.tp * long.cp * long.pp * long.printed_dp == 8192 != long.gpus


def test_published_records_are_the_csv_rows():
    """Every record of context_parallel.published is built from context_parallel.csv."""
    from scaleout import data

    rows = data.load("context_parallel")

    def pick(table, quantity):
        return [v for v in rows if v.get("table") == table and v.get("quantity") == quantity]

    for table, records in (("batch", P.RING_BENCHMARKS), ("varlen", P.RING_VARLEN_BENCHMARKS)):
        flash = {(v.get("gpu"), v.get("passes")): v.value
                 for v in pick(table, "iter_per_s") if v.get("method") == "flash_attn"}  # fmt: skip
        measured = [v for v in pick(table, "iter_per_s") if v.get("method") != "flash_attn"]
        assert len(records) == len(measured) == 12 and len(flash) == 4
        for r, v in zip(records, measured, strict=True):
            assert (r.gpu, r.passes, r.iter_per_s) == (v.get("gpu"), v.get("passes"), v.value)
            assert r.flash_iter_per_s == flash[r.gpu, r.passes] and r.api == table
            assert (r.cp, r.tokens_per_gpu) == (8, 8192) and type(r.cp) is int
    usp = pick("usp", "iter_per_s")
    assert [(r.ulysses, r.iter_per_s) for r in P.USP_BENCHMARKS] == [
        (int(v.get("ulysses")), v.value) for v in usp
    ]
    assert [r.packed for r in P.USP_BENCHMARKS[:6]] == [True] * 3 + [False] * 3
    ends = [int(v.value) for v in pick("varlen", "cu_seqlens")]
    assert ends == [e for docs in P.VARLEN_DOCUMENTS for e in np.cumsum(docs).tolist()]
    assert [s.tflops_per_gpu for s in P.LLAMA3_SETUPS] == [
        v.value for v in pick("llama3", "tflops_per_gpu")
    ]
    assert [s.printed_dp for s in P.LLAMA3_SETUPS] == [
        v.value for v in pick("llama3", "printed_dp")
    ]
    assert P.TOKENS_PER_BATCH == pick("llama3", "tokens_per_batch")[0].value == 2**24
    striped = {v.get("quantity"): v for v in rows if v.get("table") == "striped"}
    s = P.STRIPED_TPU
    assert (s.devices, s.seq, s.speedup) == tuple(
        striped[q].value for q in ("devices", "seq", "speedup")
    )
    assert type(s.devices) is int and type(s.seq) is int and s.accelerator == "TPUv4"
    assert (s.devices, s.seq, s.speedup) == (16, 768 * 1024, 1.65)  # "786k" read as 768 x 1,024
    assert striped["seq"].kind == "assumed" and "786k" in striped["seq"].note
    assert {v.source for v in striped.values()} == {"brandon2023striped"}


# ------------------------------------------------------------------ documents, rates, GEMMs


@given(
    cp=st.integers(1, 4),
    zig=st.booleans(),
    per=st.integers(1, 4),
    cuts=st.sets(st.integers(1, 63), max_size=5),
)
@SETTINGS
def test_document_work_counts_the_block_diagonal_causal_mask(cp, zig, per, cuts):
    layout = "zigzag" if zig else "contiguous"
    seq = (2 * cp if zig else cp) * per
    bounds = sorted({c for c in cuts if c < seq})
    docs = np.diff([0, *bounds, seq]).tolist()
    doc = np.repeat(np.arange(len(docs)), docs)
    pos = CP.shard_positions(seq, cp, layout)
    want = np.zeros((cp, cp), dtype=np.int64)
    for r in range(cp):
        for t in range(cp):
            q, k = pos[r][:, None], pos[(r - t) % cp][None, :]
            want[r, t] = ((k <= q) & (doc[q] == doc[k])).sum()
    np.testing.assert_array_equal(CP.ring_work(seq, cp, layout, documents=docs), want)
    if len(docs) == 1:
        np.testing.assert_array_equal(want, CP.ring_work(seq, cp, layout))


def test_documents_are_checked():
    with pytest.raises(ValueError, match="documents must be lengths adding up to seq = 16"):
        CP.ring_work(16, 4, "contiguous", documents=[8, 4])
    with pytest.raises(ValueError, match="layout must be contiguous or zigzag with documents"):
        CP.ring_work(16, 4, "striped", documents=[16])
    with pytest.raises(ValueError, match="causal must be True with documents"):
        CP.ring_work(16, 4, "zigzag", causal=False, documents=[16])
    with pytest.raises(ValueError, match="documents entry must be an integer"):
        CP.attention_seconds("allgather", 16, 4, documents=[8, 8.0])


def test_forward_and_backward_run_at_their_own_rates():
    """Regression: one 740 TFLOP/s best case used to price both passes."""
    assert CP.ATTENTION_FORWARD_FLOPS_PER_S == 616e12  # FA3, Fig. 5d
    assert CP.ATTENTION_BACKWARD_FLOPS_PER_S == 561e12  # FA3, Fig. 6
    for scheme in ("ring", "allgather", "ulysses"):
        one = CP.attention_seconds(scheme, 65536, 8, flops_per_s=5e14, backward_flops_per_s=5e14)
        slow = CP.attention_seconds(scheme, 65536, 8, flops_per_s=5e14, backward_flops_per_s=2.5e14)
        assert slow.forward == one.forward
        fwd_compute = one.compute / (1 + CP.BACKWARD_FACTOR)
        assert slow.compute == pytest.approx(fwd_compute * (1 + 2 * CP.BACKWARD_FACTOR))
        assert slow.backward > one.backward
    base = CP.attention_seconds("ring", 65536, 8)
    ideal = CP.ideal_seconds(65536, 8)
    assert base.compute == pytest.approx(ideal, rel=1e-3)  # zig-zag: balanced, hidden


def test_ulysses_degree_is_the_largest_that_fits_heads_and_server():
    """Regression: the hybrid's Ulysses degree lived untested in the notebook."""
    assert CP.ulysses_degree(16, "llama3-8b", 1, machine="dgx-h100") == 8  # 8 kv heads, 8 GPUs
    assert CP.ulysses_degree(16, "llama3-8b", 2, machine="dgx-h100") == 4  # 4 kv heads, 4 GPUs free
    assert CP.ulysses_degree(16, "llama3-70b", 8, machine="dgx-h100") == 1  # 1 kv head per rank
    assert CP.ulysses_degree(6, "llama3-8b", 1, machine="dgx-h100") == 2  # divides 6 and 8
    assert CP.ulysses_degree(64, "llama3-8b", 1, machine="gb200-nvl72") == 8  # the kv heads bound
    for cp in (1, 2, 4, 8, 16, 32, 64):
        u = CP.ulysses_degree(cp, "llama3-8b", 1, machine="dgx-h100")
        CP.attention_seconds("hybrid", 65536, cp, "llama3-8b", ulysses=u)  # runs
    with pytest.raises(ValueError, match="cp must be an integer"):
        CP.ulysses_degree(0)


def test_layer_gemms_are_chapter_13s_model():
    m = CP.model("llama3-405b")
    seconds = CP.layer_gemm_seconds(8192, m, tp=8)
    layer = compute.Layer(16384, 128, 8192, 8, 53248, swiglu=True)
    timing = compute.layer_time(layer, 1, "H100-SXM", t=8, sp=True)
    assert seconds == timing.seconds(kind="gemm")
    gemm_flops = sum(p.flops for p in timing.parts if p.kind == "gemm")
    assert gemm_flops == pytest.approx(3 * CP.layer_gemm_flops(8192, m, tp=8))
    rate = gemm_flops / seconds
    assert 0.5 * CP.PEAK_FLOPS_PER_S < rate < CP.PEAK_FLOPS_PER_S


def test_activations_are_chapter_14s_count():
    """Regression: chapters 8 and 15 counted the activations of the same models differently."""
    for name in CP.MODELS:
        m = CP.model(name)
        pm = planner.Model(name, m.layers, m.hidden, m.heads, seq=4096, kv_heads=m.kv_heads,
                           ffn=m.ffn, swiglu=True, positions=False)  # fmt: skip
        for tp in (1, 8):
            want = planner.activation_bytes(pm, 2, tp, "none", True, True)
            assert CP.activation_bytes_per_rank(4096 * 4, 4, m, batch=2, tp=tp) == pytest.approx(
                float(want), rel=1e-12)  # fmt: skip


@given(
    seq_k=st.sampled_from([1, 8, 128, 1024]),
    cp=st.sampled_from([1, 2, 8, 64]),
    name=st.sampled_from(list(CP.MODELS)),
    fwd=st.floats(1e12, 1e15),
    bwd=st.floats(1e12, 1e15),
)
@SETTINGS
def test_ideal_and_gemm_times_are_finite_and_positive(seq_k, cp, name, fwd, bwd):
    seq = 1024 * seq_k
    t = CP.ideal_seconds(seq, cp, name, flops_per_s=fwd, backward_flops_per_s=bwd)
    assert math.isfinite(t) and t > 0
    g = CP.layer_gemm_seconds(max(1, seq // cp), name)
    assert math.isfinite(g) and g > 0
    a = CP.activation_bytes_per_rank(seq, cp, name)
    assert math.isfinite(a) and a > 0


# ------------------------------------------------------------------ figures


@pytest.mark.parametrize("layout", CP.LAYOUTS)
def test_ring_animation_shows_the_work_table(layout):
    fig = V.ring_animation(16, 4, layout)
    spec = viz.figure_spec(fig)
    assert len(spec["frames"]) == 5
    work = CP.ring_work(16, 4, layout)
    for step, frame in enumerate(spec["frames"][:4]):
        assert frame["data"][1]["y"] == work[:, step].tolist()
    z = np.array(spec["frames"][-1]["data"][0]["z"], dtype=float)
    assert np.isnan(z[0, 1]) and not np.isnan(np.diag(z)).any()  # causal: upper triangle empty
    if layout == "contiguous":
        for step in range(4):  # ranks r < t idle at step t
            assert f"{step} of 4 idle" in spec["frames"][step]["layout"]["title"]["text"]


def test_figures_build_and_reject_bad_data():
    viz.figure_spec(V.layouts_figure(16, 4))
    seqs = [1024, 2048]
    spec = viz.figure_spec(V.memory_figure(seqs, {"a": [1e9, 2e9]}))
    gpu_line = spec["data"][-1]  # the default GPU is memory's, an H100 SXM's 80 GB
    assert gpu_line["y"] == [M.DEFAULT_GPU_BYTES / 1e9] * 2 == [80.0, 80.0]
    assert gpu_line["name"] == "GPU memory (80 GB)"
    viz.figure_spec(V.scheme_figure([1, 2], {"ring": [1.0, float("nan")]}, "ms", "t"))
    viz.figure_spec(V.benchmark_figure(["x"], [0.5], [0.53]))
    spec = viz.figure_spec(V.hybrid_figure([8, 1], {"a": [2.0, 1.0]}, {"a": [2.1, 1.2]}))
    assert [tr["name"] for tr in spec["data"]] == ["a, measured", "a, model"]
    with pytest.raises(ValueError, match="predicted must be the labels of measured"):
        V.hybrid_figure([8, 1], {"a": [2.0, 1.0]}, {"b": [2.1, 1.2]})
    with pytest.raises(ValueError, match="2 values, one per x"):
        V.memory_figure(seqs, {"a": [1e9]})
    with pytest.raises(ValueError, match="seq must be an integer in"):
        V.ring_animation(1000, 4)


# ------------------------------------------------------------------ regressions


def test_ragged_mask_is_a_clear_error():
    q, k, v = qkv(0, 1, 2, 2)
    with pytest.raises(ValueError, match="mask must be None or a boolean array"):
        CP.block_attention(q, k, v, [[True], [True, False]])


def test_a_tiny_flop_rate_is_rejected_not_overflowed():
    with pytest.raises(ValueError, match="flops_per_s must be a finite number in"):
        CP.attention_seconds("ring", 65536, 8, flops_per_s=1e-300)


# ------------------------------------------------------------------ real processes


@pytest.mark.parametrize("arg", ["--seq", "--heads", "--head-dim", "--hidden"])
def test_demo_rejects_bad_sizes_before_starting(arg):
    with pytest.raises(SystemExit) as info:
        demo.main([arg, "0"])
    assert info.value.code == 2
