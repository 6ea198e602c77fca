"""scaleout.pipeline (schedules, bubbles, memory), its figures. The pipeline demo on real
processes (scaleout.dist.run and torchrun): tests/integration."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scaleout import compute as C
from scaleout import pipeline as P
from scaleout import pipeline_published as PP
from scaleout import viz
from scaleout.viz import pipeline as VP

SETTINGS = settings(max_examples=60, deadline=None)


@st.composite
def configs(draw, names=P.SCHEDULES):
    """(name, p, m, v) with p in 1..16, m in 1..64; interleaved: v in 2..4 and p | m."""
    name = draw(st.sampled_from(names))
    p = draw(st.integers(1, 16))
    if name == "interleaved":
        return name, p, p * draw(st.integers(1, 64 // p)), draw(st.integers(2, 4))
    return name, p, draw(st.integers(1, 64)), 1


@st.composite
def grouped(draw):
    """(p, m, v, group) for Megatron-Core's grouped interleaving: p <= group <= m and the
    last group full or at least p long."""
    p = draw(st.integers(1, 8))
    m = draw(st.integers(p, 48))
    groups = [g for g in range(p, m + 1) if not 0 < m % g < p]
    return p, m, draw(st.integers(2, 4)), draw(st.sampled_from(groups))


def producer(s, i):
    """The operation whose output operation i consumes, found from the definitions (not
    from the library's ``dep``): (phase, virtual stage, micro-batch) or None."""
    vs = int(s.chunk[i]) * s.p + int(s.stage[i])
    ph, j, last = s.phase[i], int(s.microbatch[i]), s.p * s.v - 1
    if ph == "F":
        return ("F", vs - 1, j) if vs > 0 else None
    if ph == "B":
        return ("F", vs, j) if vs == last else ("B", vs + 1, j)
    return ("B", vs, j)


# ------------------------------------------------------------------ schedule invariants


def check_valid_timeline(s, name, p, m, v):
    """Every op once, one op at a time per stage, inputs before use, no needless wait."""
    vs = s.chunk * p + s.stage
    key = {
        (str(ph), int(a), int(j)): k
        for k, (ph, a, j) in enumerate(zip(s.phase, vs, s.microbatch, strict=True))
    }
    phases = ("F", "B", "W") if name == "zb-h1" else ("F", "B")
    # every (phase, virtual stage, micro-batch) exactly once
    assert len(key) == len(s.phase) == len(phases) * p * v * m
    assert set(key) == {(ph, a, j) for ph in phases for a in range(p * v) for j in range(m)}
    # no stage runs two operations at once
    for r in range(p):
        sel = np.flatnonzero(s.stage == r)
        order = sel[np.argsort(s.start[sel])]
        assert np.all(s.start[order][1:] >= s.end[order][:-1] - 1e-9)
    # no operation starts before the operation it needs has ended
    for i in range(len(s.phase)):
        need = producer(s, i)
        if need is not None:
            assert s.end[key[need]] <= s.start[i] + 1e-9
    # and nothing waits needlessly: each op starts when its stage and its input are ready
    for r in range(p):
        free = 0.0
        for i in np.flatnonzero(s.stage == r)[np.argsort(s.start[s.stage == r])]:
            need = producer(s, i)
            ready = max(free, s.end[key[need]] if need is not None else 0.0)
            assert s.start[i] == pytest.approx(ready, abs=1e-9)
            free = s.end[i]


@given(configs(), st.floats(0.1, 5), st.floats(0.1, 5))
@SETTINGS
def test_schedule_is_a_valid_timeline(cfg, t_f, t_b):
    name, p, m, v = cfg
    check_valid_timeline(P.schedule(name, p, m, v, t_f=t_f, t_b=t_b), name, p, m, v)


@given(grouped())
@SETTINGS
def test_grouped_interleaving_is_a_valid_timeline_with_the_interleaved_bubble(cfg):
    # Megatron-Core's microbatch_group_size_per_vp_stage lifts "p divides m"
    p, m, v, group = cfg
    s = P.schedule("interleaved", p, m, v, group=group)
    check_valid_timeline(s, "interleaved", p, m, v)
    assert s.group == group and P.bubble_fraction(s) >= 0
    if group == p and m % p == 0:
        assert P.bubble_fraction(s) == pytest.approx((p - 1) / (v * m), abs=1e-12)


def test_grouped_interleaving_examples():
    # Megatron-Core's docstring: PP = 2, VP = 2, group 3, m = 5: rank 0 runs the
    # micro-batches 0 1 2 0 1 2 3 4 3 4 (chunk 0 then chunk 1 within each group)
    fwd = [(j, c) for ph, j, c in P.stage_order("interleaved", 2, 5, 2, group=3)[0] if ph == "F"]
    assert [j for j, _ in fwd] == [0, 1, 2, 0, 1, 2, 3, 4, 3, 4]
    assert [c for _, c in fwd] == [0, 0, 0, 1, 1, 1, 0, 0, 1, 1]
    s = P.schedule("interleaved", 4, 10, 2, group=5)  # m = 10 is no multiple of p = 4
    assert P.bubble_fraction(s) == pytest.approx(3 / 20)
    with pytest.raises(ValueError, match="group must be such that m % group is 0 or >= p"):
        P.schedule("interleaved", 4, 10, 2, group=8)  # last group of 2 < p
    with pytest.raises(ValueError, match=r"group must be an integer in \[4, 10\], got 3"):
        P.schedule("interleaved", 4, 10, 2, group=3)
    with pytest.raises(ValueError, match="m must be a multiple of p = 4"):
        P.schedule("interleaved", 4, 10, 2)
    with pytest.raises(ValueError, match="group must be None for '1f1b'"):
        P.schedule("1f1b", 4, 8, group=4)


@given(configs(("gpipe", "1f1b")), st.floats(0.1, 5), st.floats(0.1, 5))
@SETTINGS
def test_gpipe_and_1f1b_bubble_is_p_minus_1_over_m(cfg, t_f, t_b):
    name, p, m, _ = cfg
    s = P.schedule(name, p, m, t_f=t_f, t_b=t_b)
    assert P.bubble_fraction(s) == pytest.approx((p - 1) / m, rel=1e-9, abs=1e-12)
    assert P.bubble_closed_form(name, p, m) == pytest.approx((p - 1) / m)
    assert s.makespan == pytest.approx((m + p - 1) * (t_f + t_b), rel=1e-9)
    # GPipe's own definition: bubble over total time (K-1)/(M+K-1)
    assert P.bubble_fraction(s, of="total") == pytest.approx((p - 1) / (m + p - 1), abs=1e-12)
    assert P.bubble_closed_form(name, p, m, of="total") == pytest.approx((p - 1) / (m + p - 1))


@given(configs(("interleaved",)))
@SETTINGS
def test_interleaved_bubble_is_p_minus_1_over_v_m(cfg):
    _, p, m, v = cfg
    s = P.schedule("interleaved", p, m, v)
    assert P.bubble_fraction(s) == pytest.approx((p - 1) / (v * m), abs=1e-12)
    assert P.bubble_closed_form("interleaved", p, m, v) == pytest.approx((p - 1) / (v * m))


@given(st.integers(1, 16), st.integers(0, 48))
@SETTINGS
def test_zb_h1_bubble_is_a_third_of_1f1b(p, extra):
    m = p + extra  # the closed form holds once there is a steady state (m >= p)
    s = P.schedule("zb-h1", p, m)  # t_f = 1, t_b = 2, t_w = 1: T_F = T_B = T_W
    assert P.bubble_fraction(s) == pytest.approx((p - 1) / (3 * m), abs=1e-12)
    assert P.bubble_fraction(s) * 3 == pytest.approx(P.bubble_fraction(P.schedule("1f1b", p, m)))
    assert list(P.peak_in_flight(s)) == [min(p, m)] * p  # the peak of 1F1B's stage 0


@given(st.integers(1, 16), st.integers(1, 64))
@SETTINGS
def test_naive_uses_one_stage_at_a_time(p, m):
    s = P.schedule("naive", p, m)
    assert s.utilization() == pytest.approx(1 / p)
    assert P.bubble_fraction(s) == pytest.approx(p - 1) == P.bubble_closed_form("naive", p, m)
    starts, ends = np.sort(s.start), np.sort(s.end)
    assert np.all(starts[1:] >= ends[:-1] - 1e-9)  # never two operations at the same time


@given(st.integers(1, 16), st.integers(1, 64))
@SETTINGS
def test_in_flight_1f1b_min_p_minus_r_m_and_gpipe_m(p, m):
    s = P.schedule("1f1b", p, m)
    assert list(P.peak_in_flight(s)) == [min(p - r, m) for r in range(p)]
    assert list(P.peak_in_flight(P.schedule("gpipe", p, m))) == [m] * p
    for r in range(p):  # stage r warms up with p - r - 1 forwards, then F B F B ...
        ops = s.ops(r)
        warm = min(p - r - 1, m)
        assert [ph for ph, _, _ in ops[:warm]] == ["F"] * warm
        if m > warm:
            assert [ph for ph, _, _ in ops[warm : warm + 2]] == ["F", "B"]


@given(configs(("interleaved",)))
@SETTINGS
def test_interleaved_in_flight_and_traffic(cfg):
    _, p, m, v = cfg
    s = P.schedule("interleaved", p, m, v)
    want = [min(p + (p - 2 * r - 1) / v, m) for r in range(p)]  # warm-up 2(p-r-1) + (v-1)p
    np.testing.assert_allclose(P.peak_in_flight(s), want)
    msgs = P.p2p_messages(s)
    assert msgs.sum() == (0 if p == 1 else 2 * m * (p * v - 1))  # m per boundary and way
    if p > 2:  # every device sends v times the traffic of the plain pipeline's middle stage
        assert msgs[1].sum() == 2 * m * v


@given(configs(("gpipe", "1f1b", "zb-h1", "naive")))
@SETTINGS
def test_p2p_messages_per_step(cfg):
    name, p, m, _ = cfg
    msgs = P.p2p_messages(P.schedule(name, p, m))
    expected = np.zeros((p, p), dtype=int)
    for r in range(p - 1):
        expected[r, r + 1] = expected[r + 1, r] = m  # activations forward, gradients back
    np.testing.assert_array_equal(msgs, expected)


def test_stage_order_examples():
    # 1F1B on 4 stages, 4 micro-batches: Narayanan et al. 2021, figure 4 (top)
    o = P.stage_order("1f1b", 4, 4)
    assert [f"{ph}{j}" for ph, j, _ in o[0]] == "F0 F1 F2 F3 B0 B1 B2 B3".split()
    assert [f"{ph}{j}" for ph, j, _ in o[3]] == "F0 B0 F1 B1 F2 B2 F3 B3".split()
    assert [f"{ph}{j}" for ph, j, _ in o[1]] == "F0 F1 F2 B0 F3 B1 B2 B3".split()
    # interleaved, device 0 of p = 4, v = 2, m = 8: 2 (p - 1) + (v - 1) p = 10 warm-up
    # forwards, then one more forward before its first backward (of chunk 1)
    inter = P.stage_order("interleaved", 4, 8, 2)[0]
    assert sum(1 for ph, _, _ in inter[: inter.index(("B", 0, 1))] if ph == "F") == 11
    # zb-h1: stage r defers its first W until after B r
    z = P.stage_order("zb-h1", 4, 6)[2]
    first_w = next(k for k, op in enumerate(z) if op[0] == "W")
    assert z[first_w - 1] == ("B", 2, 0) and z[first_w] == ("W", 0, 0)


def test_ops_of_the_simulation_follow_stage_order():
    for name, v in (("gpipe", 1), ("1f1b", 1), ("interleaved", 2), ("zb-h1", 1)):
        s = P.schedule(name, 4, 8, v)
        assert [s.ops(r) for r in range(4)] == P.stage_order(name, 4, 8, v)


def test_published_example_values():
    # Narayanan et al.: p = 8, m = 32 (their "m >> p" advice); interleaving v = 2 halves it
    assert P.bubble_fraction(P.schedule("1f1b", 8, 32)) == pytest.approx(7 / 32)
    assert P.bubble_fraction(P.schedule("interleaved", 8, 32, 2)) == pytest.approx(7 / 64)
    # GPipe (Huang et al.): overhead negligible when M >= 4K; K = 4, M = 16: 3/19 of time
    assert P.bubble_fraction(P.schedule("gpipe", 4, 16), of="total") == pytest.approx(3 / 19)


def test_zb_h1_respects_t_w():
    s = P.schedule("zb-h1", 4, 8, t_f=1.0, t_b=2.0, t_w=0.5)
    assert set(np.round(s.end - s.start, 9)) == {1.0, 1.5, 0.5}
    assert P.peak_in_flight(s).max() <= 4


def test_idle_intervals_and_utilization_add_up():
    s = P.schedule("1f1b", 4, 6)
    st_, a, b = P.idle_intervals(s)
    idle = np.bincount(st_, weights=b - a, minlength=4)
    np.testing.assert_allclose(idle + s.busy(), s.makespan)
    assert s.utilization() == pytest.approx(1 / (1 + P.bubble_fraction(s)))


def test_timeline_from_records():
    rec = [(1, "F", 0, 10.5, 11.0), (0, "F", 0, 10.0, 10.5), (1, "B", 0, 11.0, 12.0)]
    tl = P.timeline_from_records(rec, p=2)
    assert tl.ops(1) == [("F", 0, 0), ("B", 0, 0)]
    assert tl.start.min() == 0 and tl.makespan == pytest.approx(2.0)
    with pytest.raises(ValueError, match="record stage must be an integer in"):
        P.timeline_from_records([(2, "F", 0, 0.0, 1.0)], p=2)


# ---------------------------------------------------------------------------- bad inputs


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(name="pipedream", p=4, m=8), "name must be one of"),
        (dict(name="1f1b", p=0, m=8), r"p must be an integer in \[1, 1024\], got 0"),
        (dict(name="1f1b", p=4, m=0), r"m must be an integer in \[1, 65536\], got 0"),
        (dict(name="1f1b", p=True, m=8), "p must be an integer"),
        (dict(name="1f1b", p=4.0, m=8), "p must be an integer"),
        (dict(name="interleaved", p=4, m=8, v=1), "v .* must be >= 2"),
        (dict(name="interleaved", p=4, m=6, v=2), "m must be a multiple of p"),
        (dict(name="gpipe", p=4, m=8, v=2), "v must be 1"),
        (dict(name="1f1b", p=4, m=8, t_f=0), "t_f must be a finite number > 0"),
        (dict(name="1f1b", p=4, m=8, t_b=float("inf")), "t_b must be"),
        (dict(name="zb-h1", p=4, m=8, t_w=2.0), "t_w must be < t_b"),
        (dict(name="1f1b", p=4, m=8, t_w=1.0), "t_w must be None for '1f1b'"),
    ],
)
def test_bad_schedule_inputs_raise(kwargs, match):
    with pytest.raises(ValueError, match=match):
        P.schedule(**kwargs)


def test_other_bad_inputs_raise():
    s = P.schedule("1f1b", 2, 2)
    with pytest.raises(ValueError, match="of must be"):
        P.bubble_fraction(s, of="gpipe")
    with pytest.raises(ValueError, match="m must be >= p"):
        P.bubble_closed_form("zb-h1", 8, 4)
    with pytest.raises(ValueError, match="stage must be"):
        P.in_flight_timeline(s, 2)
    with pytest.raises(ValueError, match="params must be"):
        P.model_state_bytes(-1)
    with pytest.raises(ValueError, match="gpu_gb"):
        P.min_gpus(1e9, 16, 0)
    with pytest.raises(ValueError, match="p must be <= n_layers = 3"):
        P.layer_owners(3, 4)
    with pytest.raises(ValueError, match=r"bs must be divisors of batch = 100, got \[3\]"):
        PP.microbatch_throughput(PP.FIG16_LAYER, 32, 8, 100, [3], t=8)


# ------------------------------------------------------------------ memory and trade-offs


def test_model_state_memory():
    assert P.model_state_bytes(1e12, 16) == 16e12  # 16 TB for 1T parameters, not 24 TB
    assert P.model_state_bytes(7.5e9, 16) == 120e9  # ZeRO paper's baseline example
    assert P.min_gpus(1e12, 16, 80) == 200
    assert P.min_gpus(1e9, 16, 80) == 1 and P.min_gpus(5e9, 16, 80) == 1
    assert P.min_gpus(5.1e9, 16, 80) == 2
    np.testing.assert_array_equal(P.model_state_bytes([1e9, 2e9], 2), [2e9, 4e9])
    # three accountings of mixed-precision Adam, read from scaleout.memory (issue 13: not
    # "16 + 4 = 20" for bf16, where the fp32 gradient buffer replaces the bf16 gradient)
    assert P.BYTES_PER_PARAM["ZeRO paper: mixed-precision Adam"] == 2 + 2 + 12
    assert P.BYTES_PER_PARAM["Megatron bf16: fp32 gradients"] == 2 + 4 + 12
    assert P.BYTES_PER_PARAM["Megatron fp16: fp16 gradients + fp32 copy"] == 2 + 2 + 4 + 12
    assert P.model_state_bytes(1e12, P.BYTES_PER_PARAM["Megatron bf16: fp32 gradients"]) == 18e12


@given(st.integers(1, 200), st.integers(1, 64))
@SETTINGS
def test_layer_owners_are_contiguous_and_balanced(n, p):
    if p > n:
        return
    owners = P.layer_owners(n, p)
    assert np.all(np.diff(owners) >= 0) and set(owners) == set(range(p))
    counts = np.bincount(owners)
    assert counts.max() - counts.min() <= 1


def test_activation_message_bytes():
    # GPT-3-like: b = 1, s = 2048, h = 12288 in bf16: 50.3 MB per message
    assert P.activation_message_bytes(1, 2048, 12288) == 2048 * 12288 * 2
    with pytest.raises(ValueError, match="h must be"):
        P.activation_message_bytes(1, 2048, 0)


# -------------------------------------------------------------------------------- figures


def test_gantt_draws_every_operation_once():
    s = P.schedule("interleaved", 4, 8, 2)
    fig = VP.gantt(s, title="t")
    bars = [t for t in fig.data if t.name != "idle (bubble)"]
    assert sum(len(t.x) for t in bars) == len(s.phase)
    assert fig.layout.xaxis.title.text and fig.layout.yaxis.title.text
    assert viz.figure_spec(fig)  # serialisable
    fig = VP.gantt(s, color_by="stage")
    drawn = [t for t in fig.data if t.hovertemplate]  # not idle bars or legend swatches
    assert sum(len(t.x) for t in drawn) == len(s.phase)
    assert {c for t in drawn for c in t.marker.color} == {viz.rank_color(r) for r in range(4)}
    with pytest.raises(ValueError, match="color_by"):
        VP.gantt(s, color_by="rank")


def test_gantt_labels_bars_only_while_they_are_legible():
    """Micro-batch numbers inside the bars up to MAX_LABELLED_PER_STAGE operations a stage;
    beyond, none drawn (they shrank to specks and dominated the explorer's redraw), but the
    hover still names every bar's micro-batch."""
    few = VP.gantt(P.schedule("interleaved", 4, 8, 2))  # 32 operations a stage
    many = VP.gantt(P.schedule("interleaved", 8, 16, 4))  # 128 operations a stage
    for fig, where in ((few, "inside"), (many, "none")):
        bars = [t for t in fig.data if t.hovertemplate]
        assert {t.textposition for t in bars} == {where}
        assert all(len(t.text) == len(t.x) and "%{text}" in t.hovertemplate for t in bars)
    assert VP.MAX_LABELLED_PER_STAGE * 4 >= 32 * 4 and VP.MAX_LABELLED_PER_STAGE < 128


def test_schedules_animation_frames_only_move_the_veil():
    scheds = [P.schedule(n, 4, 8, 2 if n == "interleaved" else 1) for n in P.SCHEDULES[1:]]
    fig = VP.schedules_animation(scheds, frames=40)
    assert 2 <= len(fig.frames) <= viz.MAX_FRAMES
    assert all(len(f.data) == 2 * len(scheds) for f in fig.frames)
    assert all(t.type == "scatter" for t in fig.data[: 2 * len(scheds)])
    labels = [s.label for s in fig.layout.sliders[0].steps]
    assert labels[0] == "0" and float(labels[-1]) == pytest.approx(max(s.makespan for s in scheds))
    with pytest.raises(ValueError, match=r"scheds must be a list of 1\.\.8 schedules"):
        VP.schedules_animation([])


def test_other_figures_build():
    sc = {"GPipe": P.schedule("gpipe", 4, 8), "1F1B": P.schedule("1f1b", 4, 8)}
    for fig in (
        VP.bubble_vs_m(4, [1, 2, 4, 8, 16]),
        VP.in_flight_bars(sc),
        VP.in_flight_over_time(sc),
        VP.microbatch_sweep([1, 2, 4], {"B = 8": [1.0, 1.1, 0.9]}, {"B = 8": [1.0, 1.0, 0.8]}),
        VP.validation_scatter({"Qi et al.": PP.relative(PP.qi2024_rows(), "1F1B")}),
        VP.states_breakdown({"formula": {"a": 2.0, "b": 8.0}}, unit="bytes / (s b h)"),
        VP.memory_figure([1e9, 1e12], P.BYTES_PER_PARAM, P.GPU_MEMORY_GB),
        VP.memory_per_gpu(70e9),
        VP.cuts_figure(4, 4),
    ):
        spec = viz.figure_spec(fig)
        assert spec["layout"]["xaxis"]["title"]["text"]


# ------------------------------------------------------------- on real processes (gloo)


def test_pipeline_demo_rejects_bad_arguments():
    from scaleout.demos.pipeline import main

    with pytest.raises(SystemExit) as info:
        main(["--microbatches", "0"])
    assert info.value.code == 2


# ------------------------------------------- robustness (issue 21): limits, records, engines


def test_documented_maxima_raise_instead_of_exhausting_memory():
    # schedule("zb-h1", 1024, 65536) ran out of memory: 201M operations to simulate
    with pytest.raises(ValueError, match="at most 4194304 operations to simulate, got 201326592"):
        P.schedule("zb-h1", P.MAX_STAGES, P.MAX_MICROBATCHES)
    with pytest.raises(ValueError, match="at most 4194304 operations"):
        P.stage_order("1f1b", 1024, 4096)
    # the closed forms simulate nothing: the full ranges are fine
    assert P.bubble_closed_form("zb-h1", 1024, 65536) == pytest.approx(1023 / (3 * 65536))
    # at the limit the simulation still runs (one case, to keep the suite quick)
    s = P.schedule("zb-h1", 1024, P.MAX_OPERATIONS // (3 * 1024))
    assert len(s.phase) <= P.MAX_OPERATIONS and np.isfinite(s.makespan)


@pytest.mark.parametrize("bad", [1, None, "1f1b", {"p": 2}, np.zeros(3)])
def test_bubble_fraction_of_a_non_timeline_is_a_value_error(bad):
    with pytest.raises(ValueError, match="sched must be a Timeline"):  # was AttributeError
        P.bubble_fraction(bad)
    with pytest.raises(ValueError, match="must be a Schedule"):
        P.p2p_messages(bad)


def test_bubble_fraction_of_degenerate_timelines():
    # every operation takes no time: no makespan, no bubble to speak of (was NaN)
    zero = P.timeline_from_records([(0, "F", 0, 1.0, 1.0), (1, "F", 0, 1.0, 1.0)], 2)
    with pytest.raises(ValueError, match="makespan must be > 0"):
        P.bubble_fraction(zero)
    with pytest.raises(ValueError, match="makespan must be > 0"):
        zero.utilization()
    # stage 2 never works: no ideal-time bubble (was inf); over the total time it is 1
    idle = P.timeline_from_records([(0, "F", 0, 0.0, 1.0), (1, "F", 0, 1.0, 2.0)], 3)
    with pytest.raises(ValueError, match="busy time must be > 0"):
        P.bubble_fraction(idle)
    assert P.bubble_fraction(idle, of="total") == 1.0
    assert P.peak_in_flight(idle).tolist() == [1.0, 1.0, 0.0]
    assert P.idle_intervals(idle)[0].tolist() == [0, 1, 2]


def test_records_are_validated_and_read_only():
    s = P.schedule("1f1b", 2, 2)
    with pytest.raises(ValueError):
        s.start[0] = 5.0  # read-only: a schedule cannot drift from its simulation
    arrays = dict(stage=s.stage, microbatch=s.microbatch, chunk=s.chunk, phase=s.phase,
                  start=s.start, end=s.end)  # fmt: skip
    cases = [
        (dict(p=1), "stage must be integer values in"),
        (dict(stage=s.stage[:-1]), "phase must be an array of 7 strings"),
        (dict(start=s.start[:-1]), "start must be an array of 8 elements"),
        (dict(phase=[1] * 8), "phase must be an array of 8 strings"),
        (dict(phase=np.array(["X"] * 8)), r"phase must be 'F', 'B' or 'W' \(or 'BW', a full"),
        (dict(end=s.start - 1), "end must be >= start"),
        (dict(chunk=s.chunk + 1), "chunk must be integer values in"),
        (dict(start=s.start * np.nan), "start must be finite real values"),
    ]
    for change, match in cases:
        with pytest.raises(ValueError, match=match):
            P.Timeline(**{"p": 2, "v": 1, **arrays, **change})
    with pytest.raises(ValueError, match="dep must be integer values in"):
        P.Schedule(2, 1, *arrays.values(), name="1f1b", m=2, dep=s.dep + 10)
    with pytest.raises(ValueError, match="microbatch must be < m = 1"):
        P.Schedule(2, 1, *arrays.values(), name="1f1b", m=1, dep=s.dep)
    with pytest.raises(TypeError):
        P.Schedule(2, 1, *arrays.values())  # name, m and dep are required keywords
    with pytest.raises(ValueError, match="records must be a non-empty list"):
        P.timeline_from_records([], 2)
    with pytest.raises(ValueError, match="record end must be a finite number >= 2"):
        P.timeline_from_records([(0, "F", 0, 2.0, 1.0)], 2)
    with pytest.raises(ValueError, match="record phase must be one of"):
        P.timeline_from_records([(0, ["F"], 0, 0.0, 1.0)], 2)


@given(configs(), st.floats(0.0, 2.0))
@SETTINGS
def test_both_simulation_engines_agree(cfg, t_comm):
    name, p, m, v = cfg
    s = P.schedule(name, p, m, v, t_comm=t_comm)
    bounds = np.searchsorted(s.stage, np.arange(p + 1))
    duration = s.end - s.start
    delay = np.where((s.dep >= 0) & (s.stage[s.dep] != s.stage), t_comm, 0.0)
    a = P._simulate_events(bounds, s.dep, duration, delay)
    b = P._simulate_rounds(bounds, s.dep, duration, delay)
    np.testing.assert_allclose(a, b, rtol=0, atol=1e-9)
    np.testing.assert_allclose(b, (s.start, s.end), rtol=0, atol=1e-9)


@given(configs(), st.floats(0.05, 20), st.floats(0.05, 20), st.floats(0.0, 5))
@SETTINGS
def test_numeric_models_give_finite_nonnegative_times(cfg, t_f, t_b, t_comm):
    name, p, m, v = cfg
    s = P.schedule(name, p, m, v, t_f=t_f, t_b=t_b, t_comm=t_comm)
    assert np.all(np.isfinite(s.start)) and np.all(s.start >= 0) and np.all(s.end > s.start)
    assert np.isfinite(s.makespan) and s.makespan >= s.busy().max() > 0
    for of in ("ideal", "total"):
        bubble = P.bubble_fraction(s, of=of)
        assert np.isfinite(bubble) and bubble >= -1e-12
    peaks = P.peak_in_flight(s)
    assert np.all(np.isfinite(peaks)) and np.all(peaks >= 0) and peaks.max() <= m
    # a slower network never makes a step faster; GPipe pays 2 (p - 1) transfers exactly
    assert s.makespan >= P.schedule(name, p, m, v, t_f=t_f, t_b=t_b).makespan - 1e-9
    if name == "gpipe":
        base = (m + p - 1) * (t_f + t_b)
        assert s.makespan == pytest.approx(base + 2 * (p - 1) * t_comm, rel=1e-9)


@given(st.floats(1e-3, 1e3), st.integers(1, 1024))
@SETTINGS
def test_memory_models_are_finite_and_positive(b, p):
    assert P.model_state_bytes(b * 1e9, 16) >= 0 and P.min_gpus(b * 1e9, 16, 80) >= 1
    assert P.activation_message_bytes(p, 2048, 12288) > 0


@given(configs())
@SETTINGS
def test_messages_between_two_devices_arrive_in_the_order_they_are_sent(cfg):
    # so the demo would need no tags under NCCL, which ignores them: each (sender,
    # receiver) pair's messages are consumed in the order they are produced
    s = P.schedule(*cfg)
    has = np.flatnonzero(s.dep >= 0)
    src = s.dep[has]
    cross = s.stage[src] != s.stage[has]
    has, src = has[cross], src[cross]
    for a, b in {(int(x), int(y)) for x, y in zip(s.stage[src], s.stage[has], strict=True)}:
        sel = (s.stage[src] == a) & (s.stage[has] == b)
        sent = np.argsort(s.start[src[sel]], kind="stable")
        received = np.argsort(s.start[has[sel]], kind="stable")
        assert np.array_equal(sent, received), (a, b)


@given(configs(("interleaved",)))
@SETTINGS
def test_interleaving_multiplies_messages_by_v_in_the_middle_and_2v_minus_1_at_the_ends(cfg):
    _, p, m, v = cfg
    sent = P.p2p_messages(P.schedule("interleaved", p, m, v)).sum(axis=1)
    plain = P.p2p_messages(P.schedule("1f1b", p, m)).sum(axis=1)
    if p == 1:
        assert sent.tolist() == [0]
        return
    assert sent[0] == sent[-1] == (2 * v - 1) * m and plain[0] == plain[-1] == m
    assert np.all(sent[1:-1] == 2 * v * m) and np.all(plain[1:-1] == 2 * m)


def _torch_rank_ops(p, m, rank, zero_bubble):
    """PyTorch's order for one rank (``_get_1f1b_rank_ops``, the helper its runtime
    schedules use), as the library's (phase, microbatch, chunk) tuples."""
    from torch.distributed.pipelining.schedules import _ComputationType as C
    from torch.distributed.pipelining.schedules import _get_1f1b_rank_ops

    warm = min(p - rank - 1, m)
    ops = _get_1f1b_rank_ops(
        1, p, warm, m - warm, warm, rank, lambda step: rank, lambda step: rank,
        num_1f1b_microbatches=rank, enable_zero_bubble=zero_bubble,
    )  # fmt: skip
    phase = {C.FORWARD: "F", C.FULL_BACKWARD: "B", C.BACKWARD_INPUT: "B", C.BACKWARD_WEIGHT: "W"}
    return [(phase[a.computation_type], a.microbatch_index, 0) for a in ops if a is not None]


@pytest.mark.parametrize("p, m", [(1, 3), (2, 2), (4, 4), (4, 8), (5, 3), (8, 16)])
def test_1f1b_and_zb_h1_orders_equal_pytorch(p, m):
    for name, zero_bubble in (("1f1b", False), ("zb-h1", True)):
        ours = P.stage_order(name, p, m)
        assert ours == [_torch_rank_ops(p, m, r, zero_bubble) for r in range(p)], name


# ---------------------------------------------- published measurements (pipeline_published)


def test_qi2024_rows_follow_the_paper_tables():
    rows = PP.qi2024_rows()
    assert len(rows) == 4 * 3 * 4  # models x micro-batch counts x schedules (Table 4)
    one = {r.schedule: r for r in rows if r.setting == "1.5B, p = 8, m = 24"}
    assert one["1F1B"].measured == 11.8 and one["ZB-2p"].measured == 14.5
    # 1F1B fed with Table 9's profile: (m + p - 1)(T_F + T_B + T_W) plus exposed transfers
    t = 18.522 + 18.086 + 9.337
    assert one["1F1B"].predicted < 24 * 6 / ((24 + 7) * t / 1e3) / 8
    # ZB-2p is priced with no bubble: m (T_F + T_B + T_W)
    assert one["ZB-2p"].predicted == pytest.approx(24 * 6 / (24 * t / 1e3) / 8)
    assert all(r.predicted > 0 and np.isfinite(r.error) for r in rows)


def test_relative_rows_divide_by_the_baseline_of_the_same_setting():
    rows = PP.qi2024_rows()
    rel = PP.relative(rows, "1F1B")
    assert len(rel) == 36 and all(r.unit == "ratio" for r in rel)
    by = {(r.setting, r.schedule): r for r in rows}
    r = next(x for x in rel if x.schedule == "ZB-1p / 1F1B" and x.setting.startswith("28.3B"))
    base, zb = by[(r.setting, "1F1B")], by[(r.setting, "ZB-1p")]
    assert r.measured == zb.measured / base.measured
    assert r.predicted == pytest.approx(zb.predicted / base.predicted)
    with pytest.raises(ValueError, match="baseline must be a schedule that the rows hold"):
        PP.relative(rows, "ZB-V")


def test_sc21_and_gpipe_rows_leave_out_their_reference():
    fig12 = PP.sc21_interleaving_rows()
    assert len(fig12) == 9 and all(r.measured != 1.0 for r in fig12)
    inter = [r for r in fig12 if r.schedule == "interleaved"]
    # the simulator ranks interleaved above non-interleaved, as measured, at every B
    assert all(r.predicted > 1 for r in inter)
    gp = PP.gpipe_rows()
    assert len(gp) == 16
    k8 = next(r for r in gp if r.setting == "Transformer-48, K = 8, M = 32")
    assert k8.predicted == pytest.approx(8 * 32 / (32 + 8 - 1) / 1.0)  # K M / (M + K - 1)


def test_skill_counts_pairs_within_a_setting():
    rows = (
        PP.Row("s", "a", "x", 1.0, 2.0, "u"),
        PP.Row("s", "a", "y", 2.0, 1.0, "u"),  # the pair is ordered the wrong way
        PP.Row("s", "b", "x", 3.0, 3.0, "u"),
    )
    sk = PP.skill(rows)
    assert sk.n == 3 and sk.pairs_ordered == 0.0 and sk.max_abs_error == 1.0
    assert sk.median_abs_error == pytest.approx(0.5)
    with pytest.raises(ValueError, match="rows must be at least 2 rows"):
        PP.skill(rows[:1])
    with pytest.raises(ValueError, match="measured must be"):
        PP.Row("s", "a", "x", float("nan"), 1.0, "u")


def test_microbatch_sweep_prices_stage_times_with_the_compute_model():
    t_f, t_b = PP.stage_times(PP.FIG16_LAYER, 4, 2, "A100-80GB", t=8, recompute="full")
    lt = C.layer_time(PP.FIG16_LAYER, 2, "A100-80GB", t=8, recompute="full", flash=False,
                      dtype="fp16")  # fmt: skip
    assert t_f == pytest.approx(4 * lt.seconds("forward"))
    assert t_b == pytest.approx(4 * (lt.seconds("backward") + lt.seconds("recompute")))
    speed = PP.microbatch_throughput(PP.FIG16_LAYER, 32, 8, 128, [1, 2], t=8)
    steps = [P.schedule("1f1b", 8, 128 // b, t_f=f, t_b=bk).makespan for b, (f, bk) in
             ((b, PP.stage_times(PP.FIG16_LAYER, 4, b, "A100-80GB", t=8, recompute="full"))
              for b in (1, 2))]  # fmt: skip
    np.testing.assert_allclose(speed, [128 / x for x in steps])


def test_microbatch_rows_find_the_published_best_micro_batch():
    # SC21 Section 5.5: "the best microbatch size is 2 for this model", at B = 128 and 512
    rows = PP.sc21_microbatch_rows()
    for batch in (128, 512):
        mine = [r for r in rows if r.setting.endswith(f"B = {batch}")]
        best = max(mine, key=lambda r: r.predicted)
        assert best.schedule == "1F1B, b = 2" and best.predicted > 1.0
        assert max(mine, key=lambda r: r.measured).schedule == "1F1B, b = 2"


@given(st.sampled_from([1, 2, 4, 8, 16]), st.sampled_from([1, 2, 4, 8]),
       st.sampled_from(["none", "selective", "full"]))  # fmt: skip
@SETTINGS
def test_stage_times_are_finite_and_positive(b, t, recompute):
    t_f, t_b = PP.stage_times(PP.FIG16_LAYER, 4, b, "H100-SXM", t=t, recompute=recompute)
    assert np.isfinite(t_f) and np.isfinite(t_b) and 0 < t_f < t_b
    tflops = PP.single_gpu_tflops(PP.FIG7_LAYER, [b])
    assert np.all(np.isfinite(tflops)) and np.all(tflops > 0)
