"""scaleout.compute: the roofline, the GEMM model, a transformer layer, MFU and validation."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from repo_paths import ROOT

from scaleout import compute as C
from scaleout import hardware as H
from scaleout.compute import published as P
from scaleout.compute import validation as V

GPUS = ("A100-40GB", "A100-80GB", "H100-SXM", "H100-PCIe", "H200", "B200", "GB200")
dims = st.integers(1, 2**15)


# ----------------------------------------------------------------- roofline


def test_roofline_closed_forms():
    assert C.arithmetic_intensity(2e12, 1e9) == 2000
    assert C.ridge_intensity(312e12, 2e12) == 156
    assert C.attainable_flops(10.0, 312e12, 2e12) == 20e12
    assert C.attainable_flops(1e4, 312e12, 2e12) == 312e12
    assert C.roofline_seconds(312e12, 1.0, 312e12, 2e12) == 1.0
    assert C.roofline_seconds(1.0, 2e12, 312e12, 2e12) == 1.0
    np.testing.assert_allclose(C.attainable_flops([1, 100, 1000], 312e12, 2e12),
                               [2e12, 200e12, 312e12])  # fmt: skip


@settings(max_examples=200, deadline=None)
@given(m=dims, n=dims, k=dims, gpu=st.sampled_from(GPUS), dtype=st.sampled_from(["bf16", "fp16"]),
       batch=st.integers(1, 64))  # fmt: skip
def test_gemm_never_beats_the_roofline_and_efficiency_is_in_0_1(m, n, k, gpu, dtype, batch):
    g = C.gemm_time(m, n, k, gpu, dtype, batch)
    row = H.gpu(gpu)
    bound = C.roofline_seconds(g.flops, g.bytes, row.peak_flops(dtype), row.hbm_bytes_per_s)
    assert math.isfinite(g.seconds) and g.seconds >= bound * (1 - 1e-12)
    assert 0 < g.efficiency <= C.ceiling(gpu, dtype).fraction * (1 + 1e-12) <= 1 + 1e-12
    assert g.flops == 2.0 * m * n * k * batch
    assert g.seconds == max(g.compute_s, g.memory_s)


@settings(max_examples=100, deadline=None)
@given(m=dims, n=dims, k=dims, gpu=st.sampled_from(GPUS))
def test_doubling_a_gemm_never_more_than_doubles_its_time(m, n, k, gpu):
    t = C.gemm_seconds(m, n, k, gpu)
    for bigger in ((2 * m, n, k), (m, 2 * n, k), (m, n, 2 * k)):
        assert C.gemm_seconds(*bigger, gpu) <= 2 * t * (1 + 1e-12)


def test_wave_quantization_staircase_on_an_a100():
    # 108 tiles of 256 x 128 fill the A100's 108 SMs once; one more tile costs a second wave.
    one = C.gemm_time(256 * 12, 128 * 9, 8192, "A100-80GB")  # 12 x 9 = 108 tiles
    assert (one.tiles, one.waves, one.tile) == (108, 1, (256, 128))
    assert C.utilization(256 * 12, 128 * 9, 8192, 108) == pytest.approx(1.0)
    # 109 tiles: two waves unless a smaller tile does better; either way efficiency drops
    more = C.gemm_time(256 * 12 + 1, 128 * 9, 8192, "A100-80GB")
    assert more.efficiency < one.efficiency
    assert C.utilization(256 * 12 + 1, 128 * 9, 8192, 108) < 0.9
    assert C.tile_efficiency(256, 128) == 1 and C.tile_efficiency(64, 64) == pytest.approx(0.375)


def test_small_and_skinny_products_are_far_below_the_ceiling():
    big = C.gemm_efficiency(8192, 8192, 8192, "H100-SXM")
    assert big > 0.75
    assert C.gemm_efficiency(256, 256, 256, "H100-SXM") < 0.1
    assert C.gemm_efficiency(1, 8192, 8192, "H100-SXM") < 0.01


def _source_fraction(gpu, dtype):
    """The measured fraction of peak of the MAMF row a (gpu, dtype) ceiling rests on,
    following C.RELATED and the bf16 fallback by hand (independent of gemm._ceiling)."""
    key = "bf16" if dtype == "fp16" else dtype
    for name in (gpu, C.RELATED.get(gpu, gpu)):
        for k in (key, "bf16"):
            if (name, k) in C.CEILING_ROWS:
                row = P.mamf(C.CEILING_ROWS[(name, k)], k)
                return row.tflops * 1e12 / H.gpu(name).peak_flops(k)
    return _source_fraction("A100-80GB", "bf16")


def test_no_ceiling_exceeds_the_measured_fraction_of_its_mamf_row():
    # issue 29: every ceiling is the measured MAMF over the peak of that GPU and dtype (or
    # a named sibling's), never more; a row of its own is reproduced exactly.
    for gpu in H.GPUS:
        for dtype in H.gpu(gpu).dtypes:
            top = C.ceiling(gpu, dtype)
            assert top.fraction == pytest.approx(_source_fraction(gpu, dtype), rel=1e-12)
            assert top.flops == pytest.approx(top.fraction * H.gpu(gpu).peak_flops(dtype))
            own = (gpu, dtype if dtype != "fp16" else "bf16") in C.CEILING_ROWS
            assert top.basis.startswith("measured: " if own else "transferred: ")
    for (gpu, dtype), accelerator in C.CEILING_ROWS.items():
        row = P.mamf(accelerator, dtype)
        assert C.ceiling(gpu, dtype).flops == pytest.approx(row.tflops * 1e12, rel=1e-12)
        # at the row's own shape the model is at most the measurement (tiles and waves lose)
        g = C.gemm_time(row.m, row.n, row.k, gpu, dtype)
        assert g.achieved_flops / 1e12 <= row.tflops * (1 + 1e-12)
    assert C.ceiling("H100-SXM", "fp8").fraction == pytest.approx(1402.6 / 1979)
    assert C.ceiling("H200", "fp8").fraction == pytest.approx(1453.4 / 1979)
    assert C.ceiling("H100-PCIe").fraction == C.ceiling("H100-SXM").fraction
    assert "transferred" in C.ceiling("H100-PCIe").basis


@settings(max_examples=200, deadline=None)
@given(m=dims, n=dims, k=dims, gpu=st.sampled_from(GPUS), dtype=st.sampled_from(["bf16", "fp8"]))
def test_no_shape_runs_faster_than_the_best_measured_one(m, n, k, gpu, dtype):
    if dtype not in H.gpu(gpu).dtypes:
        return
    g = C.gemm_time(m, n, k, gpu, dtype)
    assert g.achieved_flops <= C.ceiling(gpu, dtype).flops * (1 + 1e-12)
    if (gpu, dtype) in C.CEILING_ROWS:
        best = P.mamf(C.CEILING_ROWS[(gpu, dtype)], dtype).tflops * 1e12
        assert g.achieved_flops <= best * (1 + 1e-12)


def test_mamf_rows_as_published():
    a100, h100 = P.mamf("NVIDIA A100 SXM"), P.mamf("NVIDIA H100 SXM")
    assert (a100.tflops, a100.shape) == (271.2, "1024x10240x5120")
    assert (h100.tflops, h100.shape) == (794.5, "2048x2048x13312")
    assert round(a100.tflops / 312, 3) == 0.869 and round(h100.tflops / 989, 3) == 0.803
    assert [m.k for m in P.SWIGLU_SWEEP][0] == 10922 and P.SWIGLU_SWEEP[0].batch == 4


# ----------------------------------------------------------------- the layer

GPT3 = C.Layer(12288, 96, 2048)
LLAMA70 = C.Layer(8192, 64, 4096, kv_heads=8, ffn=28672, swiglu=True)


def test_model_flops_match_narayanan_for_a_gpt_layer():
    b, s, h = 4, 2048, 12288
    assert GPT3.forward_flops(b) == 24 * b * s * h * h + 4 * b * s * s * h
    lt = C.layer_time(GPT3, b, "A100-80GB", t=8)
    assert lt.model_flops == 3 * GPT3.forward_flops(b) / 8


def test_hfu_counts_recomputation_and_mfu_does_not():
    none = C.layer_time(GPT3, 1, "A100-80GB", t=8, flash=False)
    full = C.layer_time(GPT3, 1, "A100-80GB", t=8, flash=False, recompute="full")
    sel = C.layer_time(GPT3, 1, "A100-80GB", t=8, flash=False, recompute="selective")
    assert none.mfu == pytest.approx(none.hfu)
    assert full.hfu == pytest.approx(4 / 3 * full.model_flops / full.total_s / 312e12)
    assert full.mfu < sel.mfu < none.mfu and full.hfu > full.mfu
    assert full.seconds("recompute") == pytest.approx(full.seconds("forward"))
    flash_sel = C.layer_time(GPT3, 1, "A100-80GB", t=8, recompute="selective")
    assert flash_sel.seconds("recompute") == 0  # FlashAttention recomputes in its backward


def test_flash_attention_removes_the_s_squared_memory_traffic():
    plain = C.layer_time(GPT3, 1, "H100-SXM", t=8, flash=False)
    flash = C.layer_time(GPT3, 1, "H100-SXM", t=8, flash=True)
    names = {p.name for p in plain.parts}
    assert {"softmax", "attention dropout"} <= names
    assert not {"softmax", "attention dropout"} & {p.name for p in flash.parts}
    assert flash.seconds(kind="memory") < plain.seconds(kind="memory")
    assert flash.total_s < plain.total_s


def test_sequence_parallelism_divides_the_replicated_memory_bound_work():
    off = C.layer_time(GPT3, 1, "A100-80GB", t=8)
    on = C.layer_time(GPT3, 1, "A100-80GB", t=8, sp=True)
    norms = {p.phase: p.bytes for p in off.parts if p.name == "norms (2)"}
    norms_sp = {p.phase: p.bytes for p in on.parts if p.name == "norms (2)"}
    assert norms_sp["forward"] == norms["forward"] / 8
    assert on.total_s < off.total_s


CONFIGS = st.tuples(st.sampled_from([GPT3, LLAMA70, C.Layer(2560, 32, 2048),
                                     C.Layer(1024, 16, 512), C.Layer(5120, 40, 1024)]),
                    st.sampled_from(GPUS), st.booleans(),
                    st.sampled_from(["none", "selective", "full"]), st.booleans())  # fmt: skip


@settings(max_examples=60, deadline=None)
@given(config=CONFIGS)
def test_efficiency_non_decreasing_in_micro_batch_and_non_increasing_in_t(config):
    layer, gpu, sp, recompute, flash = config
    ts = [t for t in (1, 2, 4, 8) if layer.heads % t == 0 and layer.g % t == 0]
    for t in ts:  # b -> 2b never lowers MFU
        mfus = [C.layer_time(layer, b, gpu, t, sp, recompute, flash).mfu for b in (1, 2, 4, 8)]
        assert all(0 < x <= 1 for x in mfus)
        assert all(b >= a * (1 - 1e-12) for a, b in zip(mfus, mfus[1:], strict=False)), mfus
    for b in (1, 4):  # t -> 2t never raises MFU
        mfus = [C.layer_time(layer, b, gpu, t, sp, recompute, flash).mfu for t in ts]
        assert all(b <= a * (1 + 1e-12) for a, b in zip(mfus, mfus[1:], strict=False)), mfus


@settings(max_examples=60, deadline=None)
@given(config=CONFIGS, b=st.integers(1, 16))
def test_layer_times_are_finite_and_positive(config, b):
    layer, gpu, sp, recompute, flash = config
    lt = C.layer_time(layer, b, gpu, 1, sp, recompute, flash)
    assert all(math.isfinite(p.seconds) and p.seconds >= 0 for p in lt.parts)
    assert lt.seconds("forward") > 0 and lt.seconds("backward") > lt.seconds("forward")
    assert 0 < lt.mfu <= 1 and 0 < lt.hfu <= 1
    if not flash:  # unfused attention runs the full s^2 the model FLOPs count, and more
        assert lt.mfu <= lt.hfu * (1 + 1e-12)
    else:  # the fused kernel: causal pairs, 1 + 2.5 passes, where model FLOPs count s^2, 1 + 2
        h, s = layer.heads * layer.head_dim, layer.seq
        model_attention = 3 * 4.0 * b * s * s * h
        run_attention = 3.5 * 4.0 * b * h * s * (s + 1) / 2
        redo = sum(p.flops for p in lt.parts if p.phase == "recompute" and p.kind != "memory")
        assert lt.hardware_flops == pytest.approx(
            lt.model_flops - model_attention + run_attention + redo, rel=1e-9
        )


def test_roofline_points_sit_under_the_roof():
    lt = C.layer_time(GPT3, 2, "A100-80GB", t=4, flash=False)
    row = H.gpu("A100-80GB")
    for name, kind, intensity, flops in C.roofline_points(lt):
        roof = C.attainable_flops(intensity, row.peak_flops(), row.hbm_bytes_per_s)
        assert flops <= roof * (1 + 1e-9), name
        if kind == "memory":
            assert flops == pytest.approx(roof) and intensity < row.ridge_intensity()


def test_optimizer_step_and_mfu_helpers():
    assert C.optimizer_step_seconds(1e9, "H100-SXM") == pytest.approx(30e9 / 3.35e12)
    assert C.mfu(1e15, 2.0, 1e15) == 0.5


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: C.gemm_seconds(0, 1, 1, "A100-80GB"), "m must be"),
        (lambda: C.gemm_seconds(1, 1, 2**25, "A100-80GB"), "k must be"),
        (lambda: C.gemm_seconds(8, 8, 8, "A100-80GB", "fp8"), "dtype"),
        (lambda: C.gemm_seconds(8, 8, 8, "TPU"), "name"),
        (lambda: C.Layer(4096, 30, 2048), "heads must be a divisor"),
        (lambda: C.Layer(4096, 32, 2048, kv_heads=5), "kv_heads"),
        (lambda: C.layer_time(GPT3, 1, "A100-80GB", t=5), "t must be a divisor"),
        (lambda: C.layer_time(GPT3, 1.0, "A100-80GB"), "b must be"),
        (lambda: C.layer_time(GPT3, 1, "A100-80GB", recompute="some"), "recompute"),
        (lambda: C.layer_time(GPT3, 1, "A100-80GB", sp=1), "sp must be"),
        (lambda: C.layer_time(GPT3, 4097, "A100-80GB"), "b must be"),
        (lambda: C.layer_time(C.Layer(1024, 16, 2**20), 32, "A100-80GB"), "b must be at most"),
        (lambda: C.mfu(1.0, 0.0, 1.0), "seconds"),
        (lambda: C.attention_pairs(0), "seq"),
        (lambda: C.flash_attention_time(1024, 8, 128, kv_heads=16), "kv_heads"),
        (
            lambda: C.flash_attention_time(1024, 8, 128, forward_flops_per_s=-1.0),
            "forward_flops_per_s",
        ),
    ],
)
def test_bad_input_is_a_clear_value_error(call, match):
    with pytest.raises(ValueError, match=match):
        call()


# ----------------------------------------------------------------- validation


def test_validation_rows_roles_and_numbers():
    rows = V.rows()
    assert [r.role for r in rows].count("fit") == 8
    assert [r.role for r in rows].count("transfer") == 5
    assert [r.role for r in rows].count("sweep") == 6
    assert [r.role for r in rows].count("shapes") == 27
    moved = V.summary("transfer")
    assert moved.count == 5 and moved.median_abs_error < 0.10 and moved.max_abs_error < 0.25
    fit = [r for r in rows if r.role == "fit"]
    assert all(r.error <= 1e-12 for r in fit)  # the ceiling is the measurement: never above
    sweep = [r for r in rows if r.role == "sweep"]
    assert math.isnan(V.summary("sweep").rank_correlation)  # the model predicts one value
    assert len({round(r.predicted_tflops, 6) for r in sweep}) == 1
    # the shape-resolved rows: one H100, 27 shapes; the model ranks them, roughly
    shapes = V.summary("shapes")
    assert shapes.count == 27 and 0.3 < shapes.rank_correlation < 1.0
    assert shapes.median_abs_error < 0.2 and shapes.max_abs_error < 1.0


def test_korthikanti_table4_held_out_rows():
    rows = V.layer_rows()
    assert [r.measurement.combined_ms for r in rows] == pytest.approx(
        [19.6, 19.0, 27.2, 20.9, 20.3]
    )
    by = {r.measurement.experiment: r for r in rows}
    base, full = by["baseline, no recompute"], by["baseline with full recompute"]
    # full recomputation runs the forward (and its collectives) again inside the backward
    assert full.compute_backward_ms == pytest.approx(
        base.compute_backward_ms + base.compute_forward_ms
    )
    assert full.comm_backward_ms == pytest.approx(base.comm_backward_ms + base.comm_forward_ms)
    # sequence parallelism shortens the forward, in the model as in the table
    sp = by["sequence parallelism"]
    assert (
        sp.forward_ms < base.forward_ms and sp.measurement.forward_ms < base.measurement.forward_ms
    )
    # priced with the one TP schedule of 2022's Megatron-LM (the planner's Table 5 too):
    # the backward all-reduce hides behind the weight-gradient GEMM
    assert V.TP_SCHEDULE.overlap == "megatron" and V.TP_SCHEDULE.regather(True)
    assert base.comm_backward_ms == 0.0 and base.comm_forward_ms > 0.0
    summary = V.layer_summary()
    assert summary.count == 5 and summary.rank_correlation == 1.0
    assert summary.overhead_rank_correlation == 1.0
    assert summary.median_abs_error["combined"] < 0.2  # held out: nothing was fitted to them
    with pytest.raises(ValueError, match="which must be one of"):
        base.error("total")


def test_spearman_and_ranks():
    np.testing.assert_array_equal(V.ranks([3.0, 1.0, 2.0, 2.0]), [4, 1, 2.5, 2.5])
    assert V.spearman([1, 2, 3], [10, 20, 30]) == 1.0
    assert V.spearman([1, 2, 3], [3, 2, 1]) == -1.0
    assert math.isnan(V.spearman([1, 1, 1], [1, 2, 3]))
    with pytest.raises(ValueError):
        V.spearman([1, 2], [1, 2, 3])


# ----------------------------------------------------------------- the chapter


def test_the_measured_cpu_sweep_prints_measured_values():
    nb = json.loads((ROOT / "chapters" / "14_compute.ipynb").read_text())
    cells = [c for c in nb["cells"] if c["cell_type"] == "code" and "torch.matmul" in
             "".join(c["source"])]  # fmt: skip
    assert cells, "the chapter has no measured matmul sweep"
    for cell in cells:
        text = "".join("".join(o.get("text", "")) for o in cell["outputs"])
        assert "measured: " in text and "GFLOP/s" in text


def test_logits_head_matches_narayanans_vocabulary_term():
    b, s, h, v, t, layers = 2, 2048, 12288, 51200, 8, 96
    head = C.head_time(b, s, h, v, "A100-80GB", t=t)
    assert head.model_flops == 6 * b * s * h * v / t
    layer = C.layer_time(GPT3, b, "A100-80GB", t=t)
    # 96 B s l h^2 V / (16 l h) = 6 B s h V: the head against the layers, without recompute
    narayanan = 96 * b * s * layers * h * h * (v / (16 * layers * h))
    assert head.model_flops * t == narayanan
    assert layer.model_flops * t == pytest.approx(72 * b * s * h * h * (1 + s / (6 * h)))
    assert 0 < head.mfu <= 1 and head.seconds("backward") > head.seconds("forward")
    with pytest.raises(ValueError, match="t must be a divisor of vocab"):
        C.head_time(1, 2048, 4096, 50257, "A100-80GB", t=8)


# ----------------------------------------------------------------- FlashAttention


@settings(max_examples=100, deadline=None)
@given(seq=st.integers(1, 2**17), heads=st.integers(1, 128), d=st.sampled_from([64, 128, 256]),
       gpu=st.sampled_from(GPUS))  # fmt: skip
def test_flash_attention_counts_causal_pairs_at_its_rates(seq, heads, d, gpu):
    assert C.attention_pairs(seq) == seq * (seq + 1) / 2
    assert C.attention_pairs(seq, causal=False) == seq**2
    fa = C.flash_attention_time(seq, heads, d, gpu)
    rates = C.flash_rates(gpu)
    assert fa.forward_flops == 4.0 * d * heads * seq * (seq + 1) / 2
    assert fa.backward_flops == 2.5 * fa.forward_flops
    assert fa.forward_s >= fa.forward_flops / rates.forward * (1 - 1e-12)
    assert fa.backward_s >= fa.backward_flops / rates.backward * (1 - 1e-12)
    full = C.flash_attention_time(seq, heads, d, gpu, causal=False)
    assert full.forward_s >= fa.forward_s and full.forward_flops >= fa.forward_flops


def test_flash_rates_are_fa3_measured_on_hopper_and_transferred_elsewhere():
    h100 = C.flash_rates("H100-SXM")
    assert (h100.forward, h100.backward) == (616e12, 561e12)
    assert (
        C.flash_rates("H200") == C.flash_rates("H200") and C.flash_rates("H200").forward == 616e12
    )
    a100 = C.flash_rates("A100-80GB")
    assert a100.forward == pytest.approx(616 / 989.5 * 312e12) and "transferred" in a100.basis
    # long causal attention: compute-bound, the rate decides (16K tokens, 32 heads of 128)
    fa = C.flash_attention_time(16384, 32, 128, "H100-SXM")
    assert fa.forward_s == pytest.approx(4 * 128 * 32 * 16384 * 16385 / 2 / 616e12)
