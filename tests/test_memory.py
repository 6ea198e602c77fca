"""Tests for scaleout.memory (ZeRO model states, activations, GPU counts), its figures, and
the real ZeRO runs of scaleout.demos.zero against single-process Adam."""

import math
import re

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from scaleout import memory as M
from scaleout.demos import zero as Z
from scaleout.dist import run

GB = 1e9

# ZeRO (Rajbhandari et al., SC20, arXiv 1910.02054), Table 1: per-device memory in GB of
# P_os, P_os+g, P_os+g+p for 7.5B, 128B and 1T parameters (K = 12), transcribed as printed.
# The paper rounds some entries and truncates others (4187.5 is printed 4187), so a computed
# value must lie within one unit of the last printed digit.
PAPER_TABLE1 = {
    7.5e9: {
        1: ("120", "120", "120"),
        4: ("52.5", "41.3", "30"),
        16: ("35.6", "21.6", "7.5"),
        64: ("31.4", "16.6", "1.88"),
        256: ("30.4", "15.4", "0.47"),
        1024: ("30.1", "15.1", "0.12"),
    },
    128e9: {
        1: ("2048", "2048", "2048"),
        4: ("896", "704", "512"),
        16: ("608", "368", "128"),
        64: ("536", "284", "32"),
        256: ("518", "263", "8"),
        1024: ("513", "257", "2"),
    },
    1e12: {
        1: ("16000", "16000", "16000"),
        4: ("7000", "5500", "4000"),
        16: ("4750", "2875", "1000"),
        64: ("4187", "2218", "250"),
        256: ("4046", "2054", "62.5"),
        1024: ("4011", "2013", "15.6"),
    },
}
# Bold in Table 1: the combinations that fit a cluster of 32 GB V100s.
PAPER_BOLD = [(7.5e9, 1, 64), (7.5e9, 2, 16), (7.5e9, 3, 4), (128e9, 3, 64), (1e12, 3, 1024)]


def _unit(printed: str) -> float:
    return 10.0 ** -(len(printed.split(".")[1]) if "." in printed else 0)


@pytest.mark.parametrize("psi", sorted(PAPER_TABLE1))
def test_paper_table1(psi):
    for nd, row in PAPER_TABLE1[psi].items():
        for stage, printed in zip((1, 2, 3), row, strict=True):
            got = M.model_state_bytes(psi, stage, nd).total / GB
            assert abs(got - float(printed)) < _unit(printed), (psi, nd, stage, got, printed)


def test_paper_worked_example():
    """Section 5 and Figure 1: psi = 7.5B, N_d = 64 -> 120, 31.4, 16.6, 1.9 GB."""
    totals = [M.model_state_bytes(7.5e9, s, 64).total / GB for s in M.STAGES]
    assert totals == [120.0, 31.40625, 16.640625, 1.875]
    assert [round(t, 1) for t in totals] == [120.0, 31.4, 16.6, 1.9]


def test_bold_cells_are_where_32gb_v100s_first_fit():
    dps = sorted(PAPER_TABLE1[7.5e9])
    for psi, stage, nd in PAPER_BOLD:
        need = M.min_dp_to_fit(psi, stage, gpu_bytes=32e9)
        assert need is not None and need <= nd
        smaller = dps[dps.index(nd) - 1]  # the previous column of the table does not fit
        assert need > smaller
        assert M.model_state_bytes(psi, stage, nd).total <= 32e9
        assert M.model_state_bytes(psi, stage, smaller).total > 32e9
    assert M.min_dp_to_fit(7.5e9, 0, gpu_bytes=32e9) is None  # plain DP never fits
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
    assert M.activation_bytes(36, s, b, h, a, "full") == 36 * 2 * sbh
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
    ],
)
def test_bad_inputs_raise_value_error_naming_the_argument(call, message):
    with pytest.raises(ValueError, match=message):
        call()


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
    assert len(VM.activation_curves(cfg, [1024, 2048]).data) == 3
    assert VM.gb_text(16128.4) == "16,128 GB" and VM.gb_text(1.875) == "1.88 GB"


# --- real ZeRO on 4 CPU processes ------------------------------------------------------------


@pytest.fixture(scope="module")
def reference():
    return Z.reference_adam(4, steps=5)


@pytest.mark.timeout(120)
def test_zero1_matches_plain_dp_and_single_process_adam(reference):
    out = run(Z.train_zero1, 4, kwargs={"steps": 5}, timeout=100)
    for rank_out in out:
        params = zip(rank_out["params"], rank_out["ddp_params"], reference, strict=True)
        for got, ddp, want in params:
            torch.testing.assert_close(got, want)
            torch.testing.assert_close(got, ddp)
    measured = [r["state_bytes"] for r in out]
    assert measured == Z.predicted_zero1_bytes(4) == [32772, 32772, 32772, 23660]
    psi = sum(p.numel() for p in Z.make_model().parameters())
    ntensors = len(list(Z.make_model().parameters()))
    assert sum(measured) == out[0]["ddp_state_bytes"] == 8 * psi + 4 * ntensors
    ideal = M.model_state_bytes(psi, 1, 4, precision="fp32").optimizer_states
    assert ideal == 8 * psi / 4
    assert max(measured) / ideal == pytest.approx(32772 / 30484)


@pytest.mark.timeout(120)
def test_hand_written_zero3_matches_single_process_adam(reference):
    out = run(Z.train_zero3, 4, kwargs={"steps": 5}, timeout=100)
    for rank_out in out:
        for got, want in zip(rank_out["params"], reference, strict=True):
            torch.testing.assert_close(got, want)
    padded = out[0]["padded_params"]
    model = M.model_state_bytes(padded, 3, 4, precision="fp32")
    layers = 5
    for r in out:
        held = r["state_bytes"]
        assert held["parameters"] == model.parameters and held["gradients"] == model.gradients
        assert held["optimizer states"] == model.optimizer_states + 4 * layers  # + Adam steps


@pytest.mark.slow
@pytest.mark.timeout(150)
def test_fsdp2_matches_single_process_adam(reference):
    out = run(Z.train_fsdp, 4, kwargs={"steps": 5}, timeout=130)
    for rank_out in out:
        for got, want in zip(rank_out["params"], reference, strict=True):
            torch.testing.assert_close(got, want)
    psi = sum(p.numel() for p in Z.make_model().parameters())
    held = [r["state_bytes"]["parameters"] for r in out]
    assert sum(held) == 4 * psi  # every element on exactly one rank
    assert held == [15372, 15372, 15372, 14852]  # dim-0 shards: 10 rows split 3, 3, 3, 1


@pytest.mark.slow
@pytest.mark.timeout(200)
def test_zero_demo_under_torchrun(torchrun):
    out = torchrun("scaleout.demos.zero")
    for name in ("zero1", "ddp", "zero3", "fsdp"):
        assert re.search(rf"^{name}\s+world_size=4 steps=5 .* ok$", out, re.M), out
    for r, nbytes in enumerate(Z.predicted_zero1_bytes(4)):
        assert f"zero1 rank {r}: optimizer-state bytes {nbytes} (predicted {nbytes}) ok" in out


def test_demo_rejects_bad_steps_before_starting():
    with pytest.raises(SystemExit) as info:
        Z.main(["--steps", "0"])
    assert info.value.code == 2


def test_max_error_flags_mismatch():
    a = [torch.zeros(3)]
    assert Z.max_error(a, [torch.zeros(3)]) == 0.0
    assert math.isinf(Z.max_error(a, [torch.ones(3)]))
    assert math.isinf(Z.max_error(a, [torch.zeros(4)]))
