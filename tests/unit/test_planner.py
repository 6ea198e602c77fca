"""scaleout.planner: a hand-computed step, the search's constraints, the published runs and
their numbers, robustness (issue 21); the figures. The 2 x 2 x 2 gloo mesh (forked and
under torchrun): tests/integration."""

import dataclasses
import math
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scaleout import compute, nccl
from scaleout import memory as MEM
from scaleout import planner as PL
from scaleout.nccl import p2p
from scaleout.planner.baselines import baseline_seconds
from scaleout.viz import planner as VP

TINY = PL.Model("tiny", 4, 64, 4, seq=32, vocab=128)
TWO = PL.Cluster("2 A100", 2)  # two GPUs of one DGX A100


def test_parameter_count_and_flops_follow_narayanan():
    m = PL.ONE_T
    nl, h, s, v = m.layers, m.hidden, m.seq, m.vocab
    assert m.params == pytest.approx(12 * nl * h**2 * (1 + 13 / (12 * h) + (v + s) / (12 * nl * h)))
    assert round(m.params / 1e9, 1) == 1008.0  # Table 1: 1008.0 B
    b = 3072
    eq3 = 96 * b * s * nl * h**2 * (1 + s / (6 * h) + v / (16 * nl * h))
    assert m.flops(b, "full") == pytest.approx(eq3)
    layers_forward = 24 * b * s * nl * h**2 * (1 + s / (6 * h))  # recomputed: logits are not
    assert m.flops(b, "full") - m.flops(b, "none") == pytest.approx(layers_forward)
    assert m.flops(b, "selective") - m.flops(b, "none") == pytest.approx(4 * b * s * s * h * nl)


def test_llama_2_70b_preset_has_its_real_shape():
    """Issue 13: the old "70B-class" preset had 64.7B parameters; GQA and the FFN fix it."""
    m = PL.LLAMA2_70B
    assert (m.g, m.f, m.swiglu) == (8, 28672, True)
    assert round(m.params / 1e9, 1) == 69.0  # Touvron et al. 2023: 70B (68.98B released)


def test_predict_reproduces_a_hand_computed_small_case():
    """t = 1, p = 2, d = 1, b = 2 on two GPUs: the step assembled by hand from the compute
    model's layer, head and optimizer times (chapter 14's, tested there), NCCL's p2p time,
    and the closed forms (bubble, memory)."""
    plan = PL.Plan(1, 2, 1, 2, recompute="none", precision="mixed", flash=True)
    r = PL.predict(TINY, TWO, 8, plan)
    layer = compute.layer_time(compute.Layer(64, 4, 32), 2, "A100-80GB", 1, False, "none", True)
    fwd_bwd = layer.seconds("forward") + layer.seconds("backward")
    logits = compute.head_time(2, 32, 64, 128, "A100-80GB", 1).total_s
    send = float(p2p.sendrecv_us(8192, True, machine=nccl.topology("dgx-a100", 1))) * 1e-6
    stage = 2 * fwd_bwd + 2 * send  # 2 layers, one send each way (v = 1)
    mean = stage + logits / 2  # the last stage also runs the output layer
    # stage parameters: 2 layers of 12 h^2 + 13 h = 49,984 and 10,240 of embeddings
    opt = compute.optimizer_step_seconds(110_208, "A100-80GB")
    assert r.m == 4
    assert r.parts["compute"] == pytest.approx(4 * (2 * fwd_bwd + logits))
    assert r.parts["pp"] == pytest.approx(4 * 2 * send)
    assert r.parts["bubble"] == pytest.approx(mean)  # (p - 1) / m of m mean stages
    assert r.parts["tp"] == 0 and r.parts["dp"] == 0
    assert r.parts["optimizer"] == pytest.approx(opt)
    assert r.step_s == pytest.approx(4 * (stage + logits) + mean + opt)
    # memory: 16 B/param states + 4 layer-activations of 4,096 x 34.25 bytes (first stage)
    assert r.memory_bytes == pytest.approx(16 * 110_208 + 4 * 4096 * 34.25)
    assert r.step_s == pytest.approx(sum(r.parts.values()))
    # planner.non_gemm on top: per micro-batch 2 layers' bias gradients and the stage's
    # gradient accumulation, the embedding on the first stage (in the bubble's mean stage),
    # the per-step gradient passes beside Adam
    from scaleout.planner import non_gemm as NG

    ng = NG.non_gemm_seconds(TINY, TWO, 2, 1, False, "mixed", 110_208, 110_208)
    on = PL.predict(TINY, TWO, 8, plan, non_gemm=True)
    per_mb = 2 * ng["bias_per_layer"] + ng["accumulation"]
    assert on.parts["compute"] == pytest.approx(r.parts["compute"] + 4 * per_mb)
    assert on.parts["bubble"] == pytest.approx(r.parts["bubble"] + per_mb + ng["embedding"] / 2)
    assert on.parts["optimizer"] == pytest.approx(r.parts["optimizer"] + ng["per_step"])


def test_activation_memory_is_the_memory_modules_for_a_gpt():
    for rec in MEM.RECOMPUTE:
        for sp in (False, True):
            for flash in (False, True):
                got = PL.activation_bytes(PL.GPT3, 2, 8, rec, sp, flash)
                want = MEM.activation_bytes_per_layer(2048, 2, 12288, 96, rec, 8, sp, flash)
                assert got == pytest.approx(want)


@settings(max_examples=20, deadline=None)
@given(
    gpus=st.sampled_from([8, 16, 32, 64]),
    batch=st.sampled_from([16, 32, 64, 96]),
    preset=st.sampled_from(["1.7B", "7.5B", "18.4B", "39.1B"]),
)
def test_every_searched_plan_fits_and_is_legal(gpus, batch, preset):
    model, cluster = PL.model_from_table(preset), PL.a100_cluster(gpus)
    try:
        results = PL.search(model, cluster, batch, PL.Space(vs=(1, 2)))
    except ValueError as e:
        assert "a plan must fit" in str(e) or "must allow a plan" in str(e)
        return
    steps = [r.step_s for r in results]
    assert steps == sorted(steps)
    for r in results:
        pl = r.plan
        assert pl.t * pl.p * pl.d == gpus and batch == pl.d * pl.b * r.m
        assert model.heads % pl.t == 0 and model.layers % (pl.p * pl.v) == 0
        assert (8 % pl.t == 0 or pl.t % 8 == 0) and (pl.v == 1 or r.m % pl.p == 0)
        assert r.fits and r.memory_bytes <= 0.95 * cluster.memory_bytes
        assert math.isclose(r.step_s, sum(r.parts.values()))
        assert 0 < r.mfu < 1 and all(math.isfinite(x) and x >= 0 for x in r.parts.values())


def test_overlap_only_hides_time():
    """TP overlap and bucketed DP overlap never lengthen a step, and hide what they say."""
    model, cluster, batch = PL.GPT3, PL.a100_cluster(1024), 1536
    base = dict(t=8, p=16, d=8, b=1, v=2, recompute="selective", sp=True)
    none = PL.predict(model, cluster, batch, PL.Plan(**base, overlap="none", dp_overlap=False))
    meg = PL.predict(model, cluster, batch, PL.Plan(**base, overlap="megatron"))
    pipe = PL.predict(model, cluster, batch, PL.Plan(**base, overlap="pipelined"))
    assert pipe.step_s <= meg.step_s <= none.step_s
    assert none.hidden["tp"] == 0 and none.hidden["dp"] == 0 and meg.hidden["tp"] > 0
    assert meg.parts["dp"] < none.parts["dp"]


def test_tensor_parallelism_across_servers_costs_more_and_nccl_prices_it():
    """Issue 15: t = 16 crosses the servers; NCCL stripes over the NICs, so it costs less
    than the old one-NIC pricing said, but it is still slower than t = 8."""
    model, cluster, batch = PL.ONE_T, PL.a100_cluster(3072), 3072
    eight = PL.predict(model, cluster, batch, PL.Plan(8, 64, 6, 1))
    sixteen = PL.predict(model, cluster, batch, PL.Plan(16, 32, 6, 1))
    assert sixteen.parts["tp"] > 3 * eight.parts["tp"]
    assert 1.0 < sixteen.step_s / eight.step_s < 1.8  # the old model's 1.80 overstated it


def test_validation_numbers():
    """The chapter's validation table: held-out error (with its range over the assumed
    plan fields) and skill, one constant per GPU generation."""
    s = PL.summary()
    rows = PL.validation()
    assert len(rows) == 75 and s.held_out["all"].n == 70
    assert sum(r.run.split == "fit" for r in rows) == 5  # 4 A100 rows, 1 H100 row
    assert round(s.calibrations["A100"], 2) == 1.25 and round(s.calibrations["H100"], 2) == 1.20
    every, tables = s.held_out["all"], s.held_out["tables"]
    assert round(every.median, 3) == 0.042 and every.median <= 0.10
    assert [round(x, 3) for x in every.median_range] == [0.040, 0.044]
    assert round(every.max, 3) == 0.422  # above the 25 % target: Figure 15 at B = 32
    assert round(tables.median, 3) == 0.041 and round(tables.max, 3) == 0.191
    assert [round(x, 3) for x in tables.max_range] == [0.118, 0.191]
    dep = s.held_out["assumption-dependent"]
    assert dep.n == 12 and [round(x, 3) for x in dep.median_range] == [0.022, 0.055]
    assert all(rho >= 0.6 for rho in s.rank.values())
    assert round(s.rank["Narayanan Table 1"], 2) == 0.70
    # with the non-GEMM work (planner.non_gemm, off by default) one sweep ranks below 0.6:
    # Figure 16's four micro-batches at B = 512 (predicted within 1 % of each other), 0.4
    with_ng = PL.summary(non_gemm=True)
    low = {k: rho for k, rho in with_ng.rank.items() if rho < 0.6}
    assert list(low) == ["Narayanan Fig. 16, B = 512"] and round(low[list(low)[0]], 2) == 0.4
    assert round(with_ng.rank["Narayanan Table 1"], 2) == 0.68
    assert round(with_ng.held_out["all"].median, 3) == 0.046
    worst = max(rows, key=lambda r: abs(r.error) if r.run.split == "held-out" else 0)
    assert worst.run.key == "F15 B=32 t=2 d=32"  # data parallelism at m = 1, too fast


def test_baselines_are_fitted_like_the_planner_and_do_worse():
    """Review of chapter 15: the planner's error and skill beside honest baselines."""
    s = PL.summary()
    rate, bubble = PL.baselines()
    assert (rate.name, bubble.name) == ("constant rate", "rate and bubble")
    assert round(rate.held_out.median, 3) == 0.142 and round(rate.held_out.max, 3) == 0.849
    assert round(bubble.held_out.median, 3) == 0.122
    # review of chapter 15: on the tables alone, one rate per generation gives 10.6 % / 23.7 %
    tables = rate.groups["tables"]
    assert tables.n == 27 and (round(tables.median, 3), round(tables.max, 3)) == (0.106, 0.237)
    assert rate.groups["all"] == rate.held_out and set(rate.groups) == set(s.held_out)
    for g, e in s.held_out.items():  # the planner beats both baselines in every group
        assert e.median < min(rate.groups[g].median, bubble.groups[g].median)
    assert rate.held_out.median > s.median_abs_error and bubble.held_out.max > s.max_abs_error
    assert all(math.isnan(x) for x in rate.rank.values())  # a constant ranks nothing
    # parameter count ranks Table 1 better than the planner does
    assert round(PL.rank_by_params(), 2) == 0.85 > s.rank["Narayanan Table 1"]
    # a rate and the bubble alone fail where compute and communication decide
    assert round(bubble.rank["Narayanan Fig. 13, B = 128"], 2) == -0.6
    assert math.isnan(bubble.rank["Narayanan Fig. 15, B = 512"])  # p = 1: no bubble
    r = next(x for x in PL.runs() if x.key == "F16 B=128 b=1")
    assert baseline_seconds(r, 1e14, False) < baseline_seconds(r, 1e14, True)


def test_figure_sweeps_come_from_the_scripts_and_the_planner_picks_the_measured_best():
    """Narayanan et al. Figs. 13-16: configurations of examples/sc21/run_figure_1x.sh."""
    runs = {r.key: r for r in PL.runs()}
    f13 = runs["F13 B=32 p=8 t=8"]
    assert (f13.model.layers, f13.model.hidden, f13.model.heads) == (32, 20480, 128)
    assert round(f13.model.params / 1e9, 1) == 162.2 and f13.cluster.gpus == 64
    assert round(runs["F14 B=32 p=2 d=32"].model.params / 1e9, 1) == 5.9
    assert round(runs["F16 B=512 b=2"].model.params / 1e9) == 91
    assert all(runs[k].plan.recompute == "full" and not runs[k].plan.dp_overlap
               for k in runs if k.startswith("F"))  # fmt: skip
    sweeps = PL.figure_sweeps()
    assert len(sweeps) == 9 and all(round(sw.rho, 2) >= 0.8 for sw in sweeps)
    assert [sw.sweep for sw in sweeps if not sw.match] == ["Narayanan Fig. 13, B = 128"]
    # with planner.non_gemm the measured best is the planner's best in all nine
    assert all(sw.match for sw in PL.figure_sweeps(non_gemm=True))
    assert all(sw.gap < 0.05 for sw in sweeps)  # the measured best within 5 % of ours
    with pytest.raises(ValueError, match="x must be one of"):
        PL.published.fig_plan(16, 3)


def test_assumed_fields_have_alternatives_and_a_range():
    """Review of chapter 15: Llama 3's and Nemotron-4's v are not in the sources."""
    rows = {r.run.key: r for r in PL.validation()}
    llama = rows["Llama 3 8192"]
    assert llama.run.group == "assumption-dependent" and len(llama.errors) == 3
    assert [a.v for a in llama.run.alternatives] == [2, 8]
    assert llama.run.plan.zero == 2  # FSDP shards optimizer states and gradients
    assert rows["T1 1T"].run.group == "sourced" and len(rows["T1 1T"].errors) == 1
    lo, hi = llama.abs_range
    assert lo <= abs(llama.error) <= hi
    # ZeRO-2 (sharded fp32 gradients): 97 GB, not the 111 GB of ZeRO-1; still over 80 GB
    assert round(llama.prediction.memory_bytes / 1e9) == 97


def test_korthikanti_rows_use_the_tp_schedule_of_chapter_14():
    """Table 5 (here) and Table 4 (compute.validation) are priced with one rule, 2022's
    Megatron-LM: backward collectives beside the gradient GEMMs, SP's input re-gathered."""
    from scaleout import overlap as OV
    from scaleout.compute import validation as CV

    assert PL.published.K5_TP is OV.MEGATRON_2022 and CV.TP_SCHEDULE is OV.MEGATRON_2022
    rows = [r for r in PL.runs() if r.key.startswith("K5")]
    assert len(rows) == 8 and all(r.plan.overlap == OV.MEGATRON_2022.overlap for r in rows)
    sel = [r for r in rows if r.plan.sp]
    assert sel and all(r.plan.regathers == OV.MEGATRON_2022.regather(True) for r in sel)
    assert all(not r.plan.regathers for r in rows if not r.plan.sp)
    # the rule matters: without the overlap the same rows expose more TP time
    r = sel[0]
    none = dataclasses.replace(r.plan, overlap="none", regather=True)
    exposed = PL.predict(r.model, r.cluster, r.batch, none).parts["tp"]
    assert PL.predict(r.model, r.cluster, r.batch, r.plan).parts["tp"] < exposed


def test_every_run_is_sourced_and_its_plan_is_legal():
    for r in PL.runs():
        assert r.source and r.sweep
        PL.check_plan(r.model, r.cluster, r.batch, r.plan)
        assert r.measured_step_s > 0


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: PL.Model("x", 0, 64, 4), "layers must be an integer"),
        (lambda: PL.Model("x", 2, 64, 5), "heads must be a divisor of hidden"),
        (lambda: PL.Model("x", 2, 64, 4, kv_heads=3), "kv_heads must be a divisor"),
        (lambda: PL.Cluster("x", 8, gpu_bytes=-1), "gpu_bytes must be"),
        (lambda: PL.Cluster("x", 8, topology="nvlink9"), "topology must be one of"),
        (lambda: PL.Cluster("x", 12), "gpus must be a multiple of 8"),
        # issue 21: infinite peak FLOP/s was accepted (every MFU 0)
        (lambda: PL.Cluster("x", 8, peak_flops_override=float("inf")), "peak_flops_override"),
        (lambda: PL.training_days(1e9, 1e9, 8, float("inf")), "flops_per_gpu must be"),
        (lambda: PL.ONE_T.flops(-32), "batch must be"),  # issue 21: negative FLOPs
        (lambda: PL.Plan(0, 1, 1, 1), "t must be an integer"),  # issue 21: t = 0 accepted
        (lambda: PL.a100_cluster(2**31), "gpus must be an integer"),  # issue 21: _divisors
        (lambda: PL.candidates(TINY, TWO, 10**9), "global_batch must be"),
        (lambda: PL.predict(TINY, TWO, 8, PL.Plan(1, 1, 1, 1)), "t p d = 2 GPUs"),
        (lambda: PL.predict(TINY, TWO, 8, PL.Plan(2, 1, 1, 3)), "a divisor of global_batch"),
        (lambda: PL.Plan(1, 1, 1, 1, overlap="pipelined"), "sequence parallelism"),
        (lambda: PL.search(PL.ONE_T, PL.a100_cluster(8), 64), "a plan must fit in .* more GPUs"),
        (lambda: PL.divisors(2**32 + 1), "n must be an integer"),
        (lambda: PL.Plan(2, 1, 1, 1, overlap="megatron", regather=True), "without sequence"),
        (lambda: PL.Plan(2, 1, 1, 1, sp=True, overlap="megatron", regather=False), "re-gather"),
    ],
)
def test_bad_inputs_raise_clear_errors(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_divisors_come_from_the_factorisation():
    assert PL.divisors(1) == [1] and PL.divisors(3072)[:6] == [1, 2, 3, 4, 6, 8]
    assert len(PL.divisors(10**9)) == 100
    start = time.perf_counter()
    assert PL.divisors(2**31 - 1) == [1, 2**31 - 1]  # a Mersenne prime, in bounded time
    assert time.perf_counter() - start < 10


def test_table1_best_plans():
    """Skill on choices: six of ten published Table 1 plans within 5 % of the best."""
    best = PL.table1_best()
    assert [b.run.key for b in best if b.gap <= 0.05] == [
        "T1 1.7B", "T1 3.6B", "T1 76.1B", "T1 310.1B", "T1 529.6B", "T1 1T",
    ]  # fmt: skip
    assert all(b.gap >= -1e-12 for b in best)  # the published plan is in the searched space


def test_search_of_1t_on_3072_gpus_returns_fitting_plans():
    results = PL.search(PL.ONE_T, PL.a100_cluster(3072), 3072)
    assert len(results) > 50 and results[0].plan.t == 8


def test_figures_are_built_from_the_predictions():
    model, cluster, batch = PL.PRESETS["Llama-2-70B, 256 H100"]
    g = PL.grid(model, cluster, batch)
    fig = VP.heatmap_figure(g, "t", "s")
    np.testing.assert_array_equal(np.asarray(fig.data[1].z, dtype=float), np.array(g.best))
    assert fig.layout.xaxis.title.text and fig.layout.yaxis.title.text
    bars = VP.breakdown_figure(list(g.results[:3]))
    solid = sum(tr.x[-1] for tr in bars.data[: len(VP.PART_NAMES)])
    assert math.isclose(solid, g.results[0].step_s)
    rows = list(PL.validation())
    val = VP.validation_figure(rows)
    assert sum(len(tr.x) for tr in val.data) == len(rows)
    assert sorted(y for tr in val.data for y in tr.y) == sorted(100 * r.error for r in rows)
    table = VP.validation_table(rows).data[0].cells.values
    i = [r.run.key for r in rows].index("Llama 3 8192")
    assert "+- 0.5 TFLOP/s per GPU (eq. 3)" in table[4][-1] and "v = 4" in table[8][i]
    for name in PL.EXPLORER_MODELS:  # every explorer state draws a heatmap, not an error
        fig = VP.explorer_figure(name, min(PL.EXPLORER_GPUS), max(PL.EXPLORER_BATCHES), "none")
        assert len(fig.data) == 2 and "best:" in fig.layout.title.text
    mesh = VP.mesh_figure(2, 2, 2)
    assert list(mesh.data[-1].text) == [str(r) for r in range(8)]


def test_zero3_exposure_is_chapter_6s_per_pass_pipeline():
    """ZeRO-3's per-micro-batch gathers are exposed as chapter 6 prices them
    (memory.zero3_exposed_seconds: each pass a pipeline of the stage's L layers), not as
    one pipeline of 2L pieces: max(C, K) - K + min(C, K) / L per micro-batch."""
    from scaleout.planner.step import logits_seconds, stage_layers

    model, cluster = PL.ONE_T, PL.Cluster("1T A100", 3072)
    for d, b in ((24, 1), (24, 8)):
        plan = PL.Plan(8, 16, d, b, zero=3)
        r = PL.predict(model, cluster, 3072, plan)
        comm = (r.parts["dp"] + r.hidden["dp"]) / r.m  # one micro-batch's gathers, scatters
        compute_mb = r.parts["compute"] / r.m - logits_seconds(model, cluster, b, 8)
        layers = stage_layers(model, 16)
        want = max(comm, compute_mb) - compute_mb + min(comm, compute_mb) / layers
        assert r.parts["dp"] / r.m == pytest.approx(want, rel=1e-9)
        two_l = max(comm, compute_mb) - compute_mb + min(comm, compute_mb) / (2 * layers)
        assert abs(r.parts["dp"] / r.m - two_l) > 1e-3 * want  # not the old 2L pieces


def test_non_gemm_bytes_count_each_sourced_pass():
    """planner.non_gemm: bias gradients, gradient accumulation, embedding, per-step passes,
    each bytes over HBM bandwidth; nothing fitted."""
    from scaleout.planner import non_gemm as NG

    gpt = PL.model_from_table("1.7B")  # h = 2304, a GPT (biases, learned positions)
    b, t, s, h = 4, 2, gpt.seq, gpt.hidden
    nb = NG.non_gemm_bytes(gpt, b, t, False, "megatron-fp16", 1e9, 1e9)
    # QKV 3h/t, MLP up 4h/t, and two row-parallel outputs of h: 2 bytes each, b s tokens
    assert nb.bias_per_layer == pytest.approx(2 * b * s * (3 * h / t + 4 * h / t + 2 * h))
    assert nb.accumulation == pytest.approx(1e9 * (2 + 2 * 2))  # fp16 buffer, unfused
    assert nb.per_step == pytest.approx(1e9 * (3 * 2 + 4 + 8))  # scale+zero, norm, unscale
    sp = NG.non_gemm_bytes(gpt, b, t, True, "megatron-fp16", 1e9, 1e9)
    assert sp.bias_per_layer < nb.bias_per_layer  # row-parallel biases on 1/t of the tokens
    fused = NG.non_gemm_bytes(gpt, b, t, False, "megatron-bf16", 1e9, 1e9)
    assert fused.accumulation == pytest.approx(gpt.vocab * h / t * (2 + 2 * 4))  # embedding
    llama = PL.LLAMA3_405B  # no biases
    assert NG.non_gemm_bytes(llama, 1, 8, True, "megatron-bf16", 1e9, 1e8).bias_per_layer == 0
    cl = PL.a100_cluster(8)
    sec = NG.non_gemm_seconds(gpt, cl, b, t, False, "megatron-fp16", 1e9, 1e9)
    assert sec["per_step"] == pytest.approx(nb.per_step / cl.gpu_row.hbm_bytes_per_s)
    with pytest.raises(ValueError, match="optimizer_params"):
        NG.non_gemm_bytes(gpt, b, t, False, "mixed", 1e9, 2e9)


def test_non_gemm_lengthens_the_step_and_is_reported_by_size():
    r = next(x for x in PL.runs() if x.key == "T1 3.6B")
    k = PL.calibration("A100")
    on = PL.predict(r.model, r.cluster, r.batch, r.plan, calibration=k, non_gemm=True)
    off = PL.predict(r.model, r.cluster, r.batch, r.plan, calibration=k)
    assert on.step_s > off.step_s and on.parts["optimizer"] > off.parts["optimizer"]
    before, after = PL.errors_by_size(False), PL.errors_by_size(True)
    assert before.small.n == after.small.n == 29 and before.large.n == after.large.n == 41
    # the small models are predicted too fast, less so with the non-GEMM work
    assert before.small_bias < after.small_bias < 0
    assert after.small.median < before.small.median
    # it is not what Figure 15 misses: its worst row stays far too fast
    worst = {r.run.key: r.error for r in PL.validation(True)}["F15 B=32 t=2 d=32"]
    assert worst < -0.35
    with pytest.raises(ValueError, match="non_gemm"):
        PL.validation("no")


def test_table1_plans_follow_run_table_1_sh():
    """Megatron-LM examples/sc21/run_table_1.sh: MBS and --num-layers-per-virtual-pipeline-stage
    (v = layers / p / that number); e.g. 145B: TP=8 PP=8 MBS=2, 80 layers, 5 per virtual
    stage, so b = 2 and v = 2 (not the b = 1 some chapters assume)."""
    script = {  # name: (MBS, layers, PP, layers per virtual stage or None)
        "1.7B": (16, 24, 1, None), "3.6B": (16, 30, 1, None), "7.5B": (16, 36, 1, None),
        "18.4B": (8, 40, 1, None), "39.1B": (4, 48, 2, None), "76.1B": (2, 60, 4, 5),
        "145.6B": (2, 80, 8, 5), "310.1B": (1, 96, 16, 3), "529.6B": (1, 105, 35, 1),
        "1T": (1, 128, 64, None),
    }  # fmt: skip
    runs = {r.key: r for r in PL.runs()}
    for name, (mbs, layers, pp, per_virtual) in script.items():
        r = runs[f"T1 {name}"]
        v = 1 if per_virtual is None else layers // pp // per_virtual
        assert (r.plan.b, r.plan.p, r.plan.v, r.model.layers) == (mbs, pp, v, layers), name
