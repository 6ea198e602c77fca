"""Tests for scaleout.memory (ZeRO model states, activations, GPU counts), its figures. The
real ZeRO runs of scaleout.demos.zero against single-process Adam: tests/integration."""

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from scaleout import memory as M
from scaleout import zero_published as ZP
from scaleout.demos import zero as Z

GB = 1e9

# ZeRO (Rajbhandari et al., SC20, arXiv 1910.02054), Table 1 (rows of data/zero.csv, checked
# against the formula in tests/unit/test_zero_published.py). Bold in Table 1: the
# combinations that fit a cluster of 32 GB V100s.
PAPER_BOLD = [(7.5e9, 1, 64), (7.5e9, 2, 16), (7.5e9, 3, 4), (128e9, 3, 64), (1e12, 3, 1024)]


def test_bold_cells_are_where_32gb_v100s_first_fit():
    dps = list(ZP.TABLE1_DPS)
    for psi, stage, nd in PAPER_BOLD:
        need = M.min_dp_to_fit(psi, stage, gpu_bytes=32e9)
        assert need is not None and need <= nd
        smaller = dps[dps.index(nd) - 1]  # the previous column of the table does not fit
        assert need > smaller
        assert M.model_state_bytes(psi, stage, nd).total <= 32e9
        assert M.model_state_bytes(psi, stage, smaller).total > 32e9
    assert M.min_dp_to_fit(7.5e9, 0, gpu_bytes=32e9) is None  # plain DP never fits
    # The caption calls the bold entries "the combinations for which the model can fit", but
    # only the first fitting column of each row is bold: larger N_d fit too.
    cells = [(e.params, e.stage, e.dp) for e in ZP.TABLE1]
    fits = [c for c in cells if M.model_state_bytes(*c).total <= 32e9]
    assert set(PAPER_BOLD) < set(fits) and len(fits) == 3 + 4 + 5 + 3 + 1
    assert (7.5e9, 1, 256) in fits and (7.5e9, 1, 256) not in PAPER_BOLD
    assert M.min_dp_to_fit(1e9, 0, gpu_bytes=32e9) == 1


def test_facts_table_closed_forms():
    psi, nd, k = 3e9, 8, 12
    expect = {0: (4 + k) * psi, 1: 4 * psi + k * psi / nd, 2: 2 * psi + (2 + k) * psi / nd,
              3: (4 + k) * psi / nd}  # fmt: skip
    for stage, value in expect.items():
        assert M.model_state_bytes(psi, stage, nd).total == pytest.approx(value, rel=1e-15)


def test_breakdown_names_every_state():
    s = M.model_state_bytes(1e9, 2, 4)
    assert list(s.breakdown) == [
        "fp16 parameters", "fp16 gradients", "fp32 master parameters", "fp32 momentum",
        "fp32 variance",
    ]  # fmt: skip
    assert s.breakdown["fp16 parameters"] == 2e9 and s.breakdown["fp16 gradients"] == 0.5e9
    assert s.parameters == 2e9 and s.gradients == 0.5e9 and s.optimizer_states == 3e9
    assert s.total == pytest.approx(sum(s.breakdown.values()))


@pytest.mark.parametrize(
    "optimizer, precision, per_param",
    [("adam", "mixed", 16), ("sgd_momentum", "mixed", 12), ("sgd", "mixed", 8),
     ("adam", "fp32", 16), ("sgd_momentum", "fp32", 12), ("sgd", "fp32", 8)],
)  # fmt: skip
def test_optimizers_and_precisions(optimizer, precision, per_param):
    states = M.states_per_param(optimizer, precision)
    assert sum(s.bytes_per_param for s in states) == per_param
    assert M.model_state_bytes(10, 0, 1, optimizer, precision=precision).total == 10 * per_param
    master = any("master" in s.name for s in states)
    assert master == (precision != "fp32")
    assert M.bytes_per_param(optimizer, precision) == per_param


# Megatron-Core developer guide, "Distributed Optimizer", table of theoretical bytes per
# parameter (d = data-parallel size): (non-distributed, replicated part, sharded part).
MEGATRON_DISTRIB_OPTIMIZER_TABLE = {
    "megatron-fp16": (20, 4, 16),  # float16 param, float16 grads: 20, 4 + 16/d
    "megatron-bf16": (18, 6, 12),  # float16 param, fp32 grads: 18, 6 + 12/d
    "fp32": (16, 8, 8),  # fp32 param, fp32 grads: 16, 8 + 8/d
}


@pytest.mark.parametrize("precision", sorted(MEGATRON_DISTRIB_OPTIMIZER_TABLE))
def test_megatron_accountings_match_distributed_optimizer_table(precision):
    whole, replicated, sharded = MEGATRON_DISTRIB_OPTIMIZER_TABLE[precision]
    assert M.bytes_per_param("adam", precision) == whole
    assert M.model_state_bytes(1.0, 0, 1, precision=precision).total == whole
    for d in (1, 2, 8, 64, 1024):
        # ZeRO-1 shards exactly what Megatron's distributed optimizer shards
        got = M.model_state_bytes(1.0, 1, d, precision=precision).total
        assert got == pytest.approx(replicated + sharded / d, rel=1e-15), (precision, d)
        assert M.device_bytes(1.0, 1, d, precision=precision) == pytest.approx(got)


def test_megatron_bf16_fp32_gradient_replaces_the_bf16_one():
    states = {s.name: s for s in M.states_per_param("adam", "megatron-bf16")}
    assert list(states) == [
        "bf16 parameters", "fp32 gradient buffer (main_grad)", "fp32 master parameters",
        "fp32 momentum", "fp32 variance",
    ]  # fmt: skip
    assert states["fp32 gradient buffer (main_grad)"].kind == "gradients"
    assert sum(s.bytes_per_param for s in states.values() if s.kind == "gradients") == 4
    # 18, not 16 + 4 = 20: the fp32 buffer is the gradient, not an extra copy of it
    assert M.bytes_per_param("adam", "megatron-bf16") == M.bytes_per_param() + 2
    fp16 = M.model_state_bytes(1.0, 1, 8, precision="megatron-fp16")
    assert fp16.breakdown["fp32 gradient copy (optimizer)"] == 0.5  # sharded with the optimizer
    assert fp16.gradients == 2 and fp16.parameters == 2


def test_bytes_per_param_defaults_and_k():
    assert M.bytes_per_param() == 16.0
    assert M.bytes_per_param("adam", "mixed", k=20) == 24.0
    assert M.bytes_per_param("sgd", "megatron-bf16") == 10.0
    for bad in (dict(optimizer="lamb"), dict(precision="bf16"), dict(precision=["mixed"])):
        with pytest.raises(ValueError, match=next(iter(bad))):
            M.bytes_per_param(**bad)


def test_k_overrides_the_optimizer_states():
    assert M.model_state_bytes(1.0, 0, 1, k=12).total == 16
    assert M.model_state_bytes(1.0, 1, 4, k=0).total == 4
    assert M.model_state_bytes(1.0, 1, 4, k=20).optimizer_states == 5


@settings(max_examples=200, deadline=None)
@given(
    psi=st.floats(1.0, 1e13),
    dp=st.integers(1, 4096),
    optimizer=st.sampled_from(M.OPTIMIZERS),
    precision=st.sampled_from(M.PRECISIONS),
)
def test_properties(psi, dp, optimizer, precision):
    totals = [M.model_state_bytes(psi, s, dp, optimizer, None, precision).total for s in M.STAGES]
    # each stage saves memory
    assert all(a >= b * (1 - 1e-12) for a, b in zip(totals, totals[1:], strict=False))
    assert totals[3] * dp == pytest.approx(totals[0], rel=1e-12)  # ZeRO-3: exactly 1/N_d
    more = [M.model_state_bytes(psi, s, dp + 1, optimizer, None, precision).total for s in M.STAGES]
    assert more[0] == totals[0] and all(m <= t for m, t in zip(more, totals, strict=True))
    one = [M.model_state_bytes(psi, s, 1, optimizer, None, precision).total for s in M.STAGES]
    assert len(set(one)) == 1  # with one rank there is nothing to shard


def test_vectorised_over_dp_and_params():
    dps = np.array([1, 4, 16, 64])
    got = M.model_state_bytes(7.5e9, 3, dps).total
    np.testing.assert_allclose(got, 120e9 / dps)
    got = M.model_state_bytes(np.array([1e9, 2e9]), 0, 8).total
    np.testing.assert_allclose(got, [16e9, 32e9])


def test_device_bytes_adds_activations():
    assert M.device_bytes(7.5e9, 3, 64, 34e9) == 1.875e9 + 34e9
    np.testing.assert_allclose(M.device_bytes(1e9, 0, [1, 2], [0.0, 1e9]), [16e9, 17e9])
    with pytest.raises(ValueError, match="activation_bytes"):
        M.device_bytes(1e9, 0, 1, -1.0)


def test_comm_volume():
    assert [M.comm_volume(1e9, s) for s in M.STAGES] == [2e9, 2e9, 2e9, 3e9]
    assert M.comm_volume(1e9, 3) / M.comm_volume(1e9, 0) == 1.5  # ZeRO-3 only
    assert M.comm_volume(100, 0, dp=4) == 150 and M.comm_volume(100, 3, dp=4) == 225
    for stage, pattern in M.COMM_PATTERN.items():
        assert sum(v for _, _, v in pattern) == M.comm_volume(1, stage)


def test_activations_korthikanti_table2():
    s, b, h, a = 2048, 1, 4096, 32
    sbh = s * b * h
    assert M.activation_bytes_per_layer(s, b, h, a) == sbh * (34 + 5 * a * s / h)
    assert M.activation_bytes_per_layer(s, b, h, a, "selective") == sbh * 34
    assert M.activation_bytes_per_layer(s, b, h, a, "full") == 2 * sbh
    t = 8
    tp = M.activation_bytes_per_layer(s, b, h, a, tp=t)
    assert tp == pytest.approx(sbh * (10 + 24 / t + 5 * a * s / (h * t)))
    sp = M.activation_bytes_per_layer(s, b, h, a, tp=t, sequence_parallel=True)
    assert sp == pytest.approx(sbh * (34 / t + 5 * a * s / (h * t)))
    sel = M.activation_bytes_per_layer(s, b, h, a, "selective", tp=t, sequence_parallel=True)
    assert sel == pytest.approx(sbh * 34 / t)
    # full recomputation: the 2 s b h checkpoints of every layer, plus the full activations
    # of the one layer whose forward is rerun for its backward (review 3, ch. 6 item 4)
    assert M.activation_bytes(36, s, b, h, a, "full") == 36 * 2 * sbh + sbh * (34 + 5 * a * s / h)
    # vectorised over the sequence length; the attention term grows as s^2
    seqs = np.array([1024, 2048, 4096])
    none = M.activation_bytes_per_layer(seqs, b, h, a)
    assert none[2] / none[1] > none[1] / none[0] > 2


def test_narayanan_table1_parameter_counts():
    printed = {"1.7B": 1.7, "3.6B": 3.6, "7.5B": 7.5, "18.4B": 18.4, "39.1B": 39.1,
               "76.1B": 76.1, "145.6B": 145.6, "310.1B": 310.1, "529.6B": 529.6,
               "1T": 1008.0}  # fmt: skip
    assert list(M.TRANSFORMERS) == list(printed)
    for name, billions in printed.items():
        assert round(M.TRANSFORMERS[name].params / 1e9, 1) == billions, name


def test_seed_claims():
    # 16 bytes per parameter: 1T parameters -> 16 TB, not 24 TB; 24 TB is 1.5T parameters.
    assert M.model_state_bytes(1e12, 0, 1).total == 16e12
    assert M.model_state_bytes(1.5e12, 0, 1).total == 24e12
    # 24 TB over 80 GB GPUs of which 75 % is usable: 400 GPUs = 32 TB of GPU memory.
    assert M.gpus_to_hold(24e12, 80e9, 0.75) == 400
    assert M.gpus_to_hold(16e12, 80e9) == 200
    assert M.gpus_to_hold(np.array([1.0, 80e9, 80e9 + 1])).tolist() == [1, 1, 2]


def test_greedy_partition_matches_hand_example():
    owner, per_rank = M.greedy_partition([10, 20, 20, 5], 2)
    assert owner.tolist() == [0, 0, 1, 1] and per_rank.tolist() == [30, 25]
    sizes = [p.numel() for p in Z.make_model().parameters()]
    owner, per_rank = M.greedy_partition(sizes, 4)
    assert per_rank.sum() == sum(sizes) == 15242
    assert per_rank.tolist() == [4096, 4096, 4096, 2954]


def test_activations_flash_attention_drops_the_quadratic_term():
    s, b, h, a = 2048, 1, 4096, 32
    sbh = s * b * h
    flash = M.activation_bytes_per_layer(s, b, h, a, flash_attention=True)
    assert flash == sbh * (34 + 4 * a / h)  # one fp32 logsumexp per query row and head
    assert flash - sbh * 34 == 4 * a * s * b  # bytes of the softmax statistics
    stored = M.activation_bytes_per_layer(s, b, h, a)
    assert stored - sbh * 34 == 5 * a * s * s * b  # softmax out 2 + mask 1 + dropout out 2
    # selective and full recomputation do not depend on how attention is computed
    for mode in ("selective", "full"):
        assert M.activation_bytes_per_layer(s, b, h, a, mode, flash_attention=True) == (
            M.activation_bytes_per_layer(s, b, h, a, mode)
        )
    t = 8
    got = M.activation_bytes_per_layer(s, b, h, a, tp=t, sequence_parallel=True,
                                       flash_attention=True)  # fmt: skip
    assert got == pytest.approx(sbh * (34 / t + 4 * a / (h * t)))
    # linear in s with FlashAttention
    seqs = np.array([1024, 2048, 4096])
    lin = M.activation_bytes_per_layer(seqs, b, h, a, flash_attention=True)
    np.testing.assert_allclose(lin[1:] / lin[:-1], 2.0)
    assert M.activation_bytes(36, s, b, h, a, flash_attention=True) == 36 * flash
    with pytest.raises(ValueError, match="flash_attention"):
        M.activation_bytes_per_layer(s, b, h, a, flash_attention=1)


def test_exposed_comm_seconds():
    # one piece: nothing overlaps; many: overlap hides at most min(C, K)
    assert M.exposed_comm_seconds(0.9, 0.25) == 0.9
    assert M.exposed_comm_seconds(0.9, 0.25, pieces=10**6) == pytest.approx(0.65)
    assert M.exposed_comm_seconds(0.2, 1.0, pieces=10) == pytest.approx(0.02)  # first gather
    # two-stage flow shop with n equal parts, simulated
    for c_total, k_total, n in ((0.9, 0.25, 72), (0.2, 1.0, 5), (1.0, 1.0, 3)):
        c, k = c_total / n, k_total / n
        comm_end = compute_end = 0.0
        for _ in range(n):
            comm_end += c
            compute_end = max(compute_end, comm_end) + k
        got = M.exposed_comm_seconds(c_total, k_total, n)
        assert got == pytest.approx(compute_end - k_total)
    np.testing.assert_allclose(M.exposed_comm_seconds([0.9, 0.1], 0.5, 2), [0.65, 0.05])


@settings(max_examples=200, deadline=None)
@given(c=st.floats(0, 1e4), k=st.floats(0, 1e4), n=st.integers(1, 10**6))
def test_exposed_comm_seconds_properties(c, k, n):
    e = M.exposed_comm_seconds(c, k, n)
    assert max(c - k, 0.0) - 1e-9 * (c + k) <= e <= c + 1e-9 * (c + k)
    assert M.exposed_comm_seconds(c, k, n + 1) <= e + 1e-12 * (c + k + 1)


def test_zero3_peak_holds_two_layers_with_prefetch():
    psi, layers, dp = 7.5e9, 36, 64
    states = M.model_state_bytes(psi, 3, dp).total
    layer = psi / layers
    assert M.zero3_peak_bytes(psi, layers, dp) == pytest.approx(states + layer * (2 * 2 + 2))
    assert M.zero3_peak_bytes(psi, layers, dp, prefetch=0) == pytest.approx(states + 4 * layer)
    # never more than every layer gathered at once
    assert M.zero3_peak_bytes(psi, 2, dp, prefetch=5) == pytest.approx(states + psi * 2 + psi)
    bf16 = M.zero3_peak_bytes(psi, layers, dp, precision="megatron-bf16")
    assert bf16 == pytest.approx(M.model_state_bytes(psi, 3, dp, precision="megatron-bf16").total
                                 + layer * (2 * 2 + 4))  # fmt: skip
    frames = M.zero3_step(4, 4, prefetch=1)
    assert max(sum(f.gathered) for f in frames) == 2  # the layer computing and the next one


def test_zero3_step_prefetch_frames():
    frames = M.zero3_step(4, 4, prefetch=1)
    assert len(frames) == 3 * 4 + 4
    gathers = [f for f in frames if f.op == "all-gather"]
    assert [f.layer for f in gathers] == [0, 3]  # only the first gather of each pass stands alone
    computes = [f for f in frames if f.op == "compute"]
    assert [f.gathered for f in computes[:2]] == [(True, True, False, False),
                                                  (False, True, True, False)]  # fmt: skip
    assert computes[4].gathered == (False, False, True, True)  # backward of 3, gathering 2
    assert frames[-1].op == "update" and frames[-2].grad == ("shard",) * 4
    assert max(sum(f.gathered) for f in M.zero3_step(6, 2, prefetch=2)) == 3


def test_zero3_step_frames():
    frames = M.zero3_step(4, 4)
    assert len(frames) == 2 + 5 * 4
    assert all(sum(f.gathered) <= 1 for f in frames)  # at most one full layer at a time
    gathers = [f for f in frames if f.op == "all-gather"]
    assert len(gathers) == 2 * 4  # each layer twice: forward and backward
    assert sum(f.op == "reduce-scatter" for f in frames) == 4
    assert frames[-1].op == "update" and all(frames[-1].updated)
    assert frames[-2].grad == ("shard",) * 4 and not any(frames[-2].updated)
    assert [f.layer for f in gathers] == [0, 1, 2, 3, 3, 2, 1, 0]


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: M.model_state_bytes(0, 1, 4), "params"),
        (lambda: M.model_state_bytes(-5, 1, 4), "params"),
        (lambda: M.model_state_bytes(float("nan"), 1, 4), "params"),
        (lambda: M.model_state_bytes(1e9, 4, 4), "stage"),
        (lambda: M.model_state_bytes(1e9, True, 4), "stage"),
        (lambda: M.model_state_bytes(1e9, 1, 0), "dp"),
        (lambda: M.model_state_bytes(1e9, 1, 2.5), "dp"),
        (lambda: M.model_state_bytes(1e9, 1, 4, optimizer="lamb"), "optimizer"),
        (lambda: M.model_state_bytes(1e9, 1, 4, precision="fp8"), "precision"),
        (lambda: M.model_state_bytes(1e9, 1, 4, k=-1), "k"),
        (lambda: M.comm_volume(1e9, 5), "stage"),
        (lambda: M.comm_volume(0, 1), "params"),
        (lambda: M.activation_bytes_per_layer(0, 1, 4096, 32), "seq"),
        (lambda: M.activation_bytes_per_layer(2048, 1, 4096, 32, "half"), "recompute"),
        (lambda: M.activation_bytes_per_layer(2048, 1, 4096, 32, tp=0), "tp"),
        (lambda: M.activation_bytes(0, 2048, 1, 4096, 32), "layers"),
        (lambda: M.gpus_to_hold(1e12, 80e9, 1.5), "usable_fraction"),
        (lambda: M.gpus_to_hold(-1, 80e9), "total_bytes"),
        (lambda: M.min_dp_to_fit(1e9, 1, 0), "gpu_bytes"),
        (lambda: M.min_dp_to_fit(1e9, 1, 80e9, activation_bytes=-1), "activation_bytes"),
        (lambda: M.greedy_partition([], 4), "numels"),
        (lambda: M.greedy_partition([3, 4], 0), "dp"),
        (lambda: M.zero3_step(0, 4), "layers"),
        (lambda: M.transformer_params(0, 4096), "layers"),
        # issue 21: sizes without bounds, and types the library does not convert
        (lambda: M.zero3_step(10**4, 2), "layers"),
        (lambda: M.zero3_step(4, 2, prefetch=-1), "prefetch"),
        (lambda: M.greedy_partition([1, 2, 3], 10**10), "dp"),
        (lambda: M.greedy_partition(range(2**21), 4), "numels"),
        (lambda: M.greedy_partition([2**62, 2**62], 4), "numels"),
        (lambda: M.greedy_partition([1.5, 2], 4), "numels"),
        (lambda: M.model_state_bytes(1e9, 1, 4.0), "dp"),
        (lambda: M.model_state_bytes("4", 1, 4), "params"),
        (lambda: M.model_state_bytes(1e9, 1, 4, precision=["mixed"]), "precision"),
        (lambda: M.model_state_bytes(1e308, 0, 1), "overflows"),
        (lambda: M.activation_bytes_per_layer(2048, 1, 4096, 32, sequence_parallel=1), "sequence"),
        (lambda: M.min_dp_to_fit(1e9, 1, 80e9, activation_bytes=float("nan")), "activation"),
        (lambda: M.exposed_comm_seconds(-1, 1), "comm_seconds"),
        (lambda: M.exposed_comm_seconds(1, 1, 0), "pieces"),
        (lambda: M.zero3_peak_bytes(1e9, 0, 4), "layers"),
        (lambda: M.State("x", "activations", 2), "kind"),
        (lambda: M.Transformer("x", 0, 4096, 32), "layers"),
        (lambda: M.Zero3Frame("t", "compute", 5, (False,), ("none",), (False,)), "layer"),
        (lambda: M.ModelStates(1.0, 1, 4, {"a": -1.0}, 1.0, 1.0, 1.0), "breakdown"),
    ],
)
def test_bad_inputs_raise_value_error_naming_the_argument(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_greedy_partition_heap_matches_the_argmin_rule():
    rng = np.random.default_rng(0)
    for _ in range(50):
        sizes = rng.integers(0, 50, size=int(rng.integers(1, 40))).tolist()
        dp = int(rng.integers(1, 9))
        owner, per_rank = M.greedy_partition(sizes, dp)
        ref_owner, ref_rank = [0] * len(sizes), [0] * dp
        for i in sorted(range(len(sizes)), key=lambda j: -sizes[j]):
            r = int(np.argmin(ref_rank))
            ref_owner[i], ref_rank[r] = r, ref_rank[r] + sizes[i]
        assert owner.tolist() == ref_owner and per_rank.tolist() == ref_rank


@settings(max_examples=150, deadline=None)
@given(
    psi=st.floats(1e3, 1e13),
    dp=st.integers(1, 65536),
    precision=st.sampled_from(M.PRECISIONS),
    optimizer=st.sampled_from(M.OPTIMIZERS),
    act=st.floats(0, 1e12),
)
def test_memory_never_negative_and_monotone_in_stage(psi, dp, precision, optimizer, act):
    got = [M.device_bytes(psi, s, dp, act, optimizer, precision=precision) for s in M.STAGES]
    assert all(np.isfinite(g) and g >= act >= 0 for g in got)
    assert all(a >= b * (1 - 1e-12) for a, b in zip(got, got[1:], strict=False))
    assert M.min_dp_to_fit(psi, 3, 80e9, act, optimizer, precision=precision) in (None,) or (
        M.device_bytes(psi, 3, M.min_dp_to_fit(psi, 3, 80e9, act, optimizer,
                                               precision=precision), act, optimizer,
                       precision=precision) <= 80e9 * (1 + 1e-12)
    )  # fmt: skip


@settings(max_examples=150, deadline=None)
@given(
    seq=st.integers(1, 2**17),
    batch=st.integers(1, 64),
    heads=st.sampled_from([8, 32, 128]),
    tp=st.sampled_from([1, 2, 8]),
    sp=st.booleans(),
)
def test_activations_positive_and_ordered(seq, batch, heads, tp, sp):
    hidden = 128 * heads
    get = {(m, f): M.activation_bytes_per_layer(seq, batch, hidden, heads, m, tp, sp, f)
           for m in M.RECOMPUTE for f in (False, True)}  # fmt: skip
    assert all(np.isfinite(v) and v > 0 for v in get.values())
    assert get["none", False] >= get["none", True] >= get["selective", False] >= get["full", True]
    longer = M.activation_bytes_per_layer(seq + 1, batch, hidden, heads, "none", tp, sp)
    assert longer > get["none", False]


# --- figures -------------------------------------------------------------------------------


def test_figures_build_from_library_data():
    from scaleout import viz
    from scaleout.viz import memory as VM

    fig = VM.memory_vs_dp(7.5e9, [1, 4, 16, 64], 0.0, 80e9, "7.5B", start=16)
    assert [f.name for f in fig.frames] == ["1", "4", "16", "64"]
    assert fig.layout.sliders[0].active == 2 and fig.data[0].y == fig.frames[2].data[0].y
    bars = fig.frames[3].data[:3]  # parameters, gradients, optimizer states at N_d = 64
    totals = [sum(b.y[i] for b in bars) for i in range(4)]
    assert totals == pytest.approx([120, 31.40625, 16.640625, 1.875])
    assert fig.layout.yaxis.title.text and fig.layout.xaxis.title.text
    anim = VM.zero3_animation(4, 4)
    assert len(anim.frames) == 22 <= viz.MAX_FRAMES
    assert VM.stage_layout(4).layout.xaxis.title.text
    one = VM.memory_by_stage(1e12, 1024, 13e9, 80e9)
    assert len(one.data) == 6
    cfg = M.TRANSFORMERS["7.5B"]
    curves = VM.activation_curves(cfg, [1024, 2048]).data
    assert [c.name for c in curves] == [c[2] for c in VM.CURVES] and len(curves) == 4
    flash = M.activation_bytes_per_layer(np.array([1024, 2048]), 1, 4096, 32, flash_attention=True)
    np.testing.assert_allclose(curves[1].y, flash / 1e9)
    anim = VM.zero3_animation(4, 4, prefetch=1)
    assert len(anim.frames) == 16
    acc = VM.accountings(8)
    totals = acc.data[-1]
    assert list(totals.x) == pytest.approx([16, 4 + 12 / 8, 18, 6 + 12 / 8, 20, 4 + 16 / 8])
    shaded = [[True, False], [False, True]]
    table = VM.table_figure(["a", "b"], ["1", "2"], [["x", "y"], ["z", ""]], shaded, "t",
                            bold=[[True, False]] * 2)  # fmt: skip
    assert table.data[0].text[0][0] == "<b>x</b>" and list(table.data[0].z[1]) == [0, 1]
    for bad in (lambda: VM.zero3_animation(9, 4), lambda: VM.stage_layout(17),
                lambda: VM.table_figure(["a"], ["1"], [["x", "y"]], [[True]], "t"),
                lambda: VM.memory_vs_dp(1e9, [1, 4], start=8),
                lambda: VM.accountings(8, ["mixed", "mixed"]),
                lambda: VM.activation_curves("7.5B", [1024])):  # fmt: skip
        with pytest.raises(ValueError, match=" must "):
            bad()
    assert VM.gb_text(16128.4) == "16,128 GB" and VM.gb_text(1.875) == "1.88 GB"


# --- real ZeRO on 4 CPU processes ------------------------------------------------------------


def test_demo_rejects_bad_steps_before_starting():
    with pytest.raises(SystemExit) as info:
        Z.main(["--steps", "0"])
    assert info.value.code == 2


def test_max_error_flags_mismatch():
    a = [torch.zeros(3)]
    assert Z.max_error(a, [torch.zeros(3)]) == 0.0
    assert math.isinf(Z.max_error(a, [torch.ones(3)]))
    assert math.isinf(Z.max_error(a, [torch.zeros(4)]))


def test_full_recompute_peak_holds_one_layer_in_full():
    # Regression (review 3, chapter 6 item 4): the full-recompute peak missed the layer being
    # recomputed. With FlashAttention that layer keeps s b h (34 + 4 a / h).
    s, b, h, a = 2048, 1, 4096, 32
    sbh = s * b * h
    for flash, working in ((False, sbh * (34 + 5 * a * s / h)), (True, sbh * (34 + 4 * a / h))):
        got = M.activation_bytes(36, s, b, h, a, "full", flash_attention=flash)
        assert got == pytest.approx(36 * 2 * sbh + working)
        assert got - M.activation_bytes(35, s, b, h, a, "full", flash_attention=flash) == 2 * sbh
    # one layer: its checkpoint and its own full activations
    one = M.activation_bytes(1, s, b, h, a, "full")
    assert one == 2 * sbh + M.activation_bytes_per_layer(s, b, h, a)
    # tensor parallelism divides the recomputed layer like the others
    t = M.activation_bytes(36, s, b, h, a, "full", tp=8, sequence_parallel=True)
    assert t == pytest.approx(36 * 2 * sbh + sbh * (34 / 8 + 5 * a * s / (h * 8)))


def test_zero3_exposed_seconds_is_two_passes_of_layers_pieces():
    # Regression (review 3, chapter 6 item 2): the exposure is per pass, L pieces each; the
    # sum over the passes equals one formula with n = L (both passes have the ratio C/K).
    for c, k in ((0.93, 0.23), (0.116, 0.23), (1.0, 1.0), (0.0, 0.5), (0.5, 0.0)):
        got = M.zero3_exposed_seconds(c, k, 36)
        f = M.ZERO3_FORWARD_SHARE
        by_pass = M.exposed_comm_seconds(f * c, f * k, 36) + M.exposed_comm_seconds(
            (1 - f) * c, (1 - f) * k, 36
        )
        assert got == pytest.approx(by_pass) == pytest.approx(M.exposed_comm_seconds(c, k, 36))
        assert got >= c - k - 1e-15 and got <= c + 1e-15
    # compute-bound: the first all-gather of each pass, C/L in all
    assert M.zero3_exposed_seconds(0.116, 0.23, 36) == pytest.approx(0.116 / 36)
    # not the 2L-piece formula the prose used to state
    assert M.zero3_exposed_seconds(0.116, 0.23, 36) > M.exposed_comm_seconds(0.116, 0.23, 72)
    np.testing.assert_allclose(M.zero3_exposed_seconds(np.array([0.93, 0.116]), 0.23, 36),
                               [0.93 - 0.23 + 0.23 / 36, 0.116 / 36])  # fmt: skip
    for bad in (0, 1.5, True, "36", 2**21):
        with pytest.raises(ValueError, match="layers"):
            M.zero3_exposed_seconds(0.9, 0.2, bad)
    with pytest.raises(ValueError, match="comm_seconds"):
        M.zero3_exposed_seconds(float("nan"), 0.2, 4)


@settings(max_examples=150, deadline=None)
@given(c=st.floats(0, 1e4), k=st.floats(0, 1e4), layers=st.integers(1, 2**20))
def test_zero3_exposed_seconds_properties(c, k, layers):
    e = M.zero3_exposed_seconds(c, k, layers)
    assert np.isfinite(e) and max(c - k, 0.0) - 1e-9 * (c + k) <= e <= c + 1e-9 * (c + k)
    assert e == pytest.approx(M.exposed_comm_seconds(c, k, layers), rel=1e-9, abs=1e-12)


@settings(max_examples=150, deadline=None)
@given(
    layers=st.integers(1, 512),
    seq=st.integers(1, 2**17),
    batch=st.integers(1, 64),
    heads=st.sampled_from([8, 32, 128]),
    flash=st.booleans(),
)
def test_full_recompute_peak_between_checkpoints_and_no_recompute(layers, seq, batch, heads,
                                                                  flash):  # fmt: skip
    hidden = 128 * heads
    full = M.activation_bytes(layers, seq, batch, hidden, heads, "full", flash_attention=flash)
    none = M.activation_bytes(layers, seq, batch, hidden, heads, "none", flash_attention=flash)
    checkpoints = layers * 2.0 * seq * batch * hidden
    assert np.isfinite(full) and checkpoints < full
    # never above keeping everything, plus the one layer's input checkpoint it keeps too
    assert full <= none + checkpoints


def test_zero_table1_figure_bolds_the_papers_entries():
    from scaleout.viz import memory as VM

    psis = {"7.5B": 7.5e9, "128B": 128e9, "1T": 1e12}
    dps = list(ZP.TABLE1_DPS)
    fig = VM.zero_table1(psis, dps, 32e9)
    heat = fig.data[0]
    keys = [(psi, s) for psi in psis.values() for s in (1, 2, 3)]
    bold = {(*keys[i], dps[j]) for i, row in enumerate(heat.text)
            for j, t in enumerate(row) if t.startswith("<b>")}  # fmt: skip
    assert bold == set(PAPER_BOLD)  # the five bold cells of the paper (arXiv HTML v3)
    assert sum(map(sum, heat.z)) == 16  # every cell that fits 32 GB is shaded
    assert heat.y[0] == "7.5B ZeRO-1, N_d ≥ 45" and heat.y[4].endswith("never")
    need = {("1T", "full"): [None, None, None, 249]}
    fig = VM.min_dp_table(need, {("1T", "full"): 15.2e9}, 80e9)
    assert list(fig.data[0].text[0]) == ["—", "—", "—", "249"]
    with pytest.raises(ValueError, match="activations"):
        VM.min_dp_table(need, {}, 80e9)
