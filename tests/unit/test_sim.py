"""The step simulator: engine properties (hypothesis), agreement with the pipeline
simulation and the planner's closed form, stragglers, traces and bad input."""

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sim_properties import check_trace, draw_schedule

from scaleout import pipeline as PP
from scaleout import planner as PL
from scaleout import sim
from scaleout.sim import engine

SMALL = PL.Model("small", layers=8, hidden=1024, heads=16, seq=1024)


@st.composite
def configs(draw):
    """(model, cluster, batch, plan, schedule, extra) of 8 to 64 GPUs; extra: {} or
    {"moe": experts on a divisor of d} or {"cp": context parallelism over a divisor of d}."""
    t = draw(st.sampled_from([1, 2, 4, 8]))
    p = draw(st.sampled_from([1, 2, 4, 8]))
    d = draw(st.sampled_from([1, 2, 4]))
    b = draw(st.sampled_from([1, 2]))
    name, m = draw_schedule(draw, st, p, 4)
    plan = PL.Plan(t=t, p=p, d=d, b=b, dp_overlap=draw(st.booleans()))
    extra, which = {}, draw(st.sampled_from(["none", "moe", "cp"]))
    divisors = [e for e in (1, 2, 4) if d % e == 0]
    if which == "moe":
        extra["moe"] = sim.MoE(8, 2, draw(st.sampled_from(divisors)))
    elif which == "cp":
        extra["cp"] = sim.CP(draw(st.sampled_from(divisors)))
    return SMALL, PL.a100_cluster(t * p * d), m * d * b, plan, name, extra


def _all(tr):
    a = tr._arrays
    return a


@settings(max_examples=30, deadline=None)
@given(configs(), st.integers(0, 63), st.floats(1.0, 3.0))
def test_slowing_any_rank_never_shortens_the_step(cfg, rank, factor):
    model, cluster, batch, plan, name, extra = cfg
    rank %= cluster.gpus
    base = sim.simulate(model, cluster, batch, plan, schedule=name, **extra)
    slow = sim.simulate(model, cluster, batch, plan, schedule=name, stragglers={rank: factor},
                        **extra)  # fmt: skip
    assert slow.step_s >= base.step_s * (1 - 1e-12)
    worse = sim.simulate(model, cluster, batch, plan, schedule=name,
                         stragglers={rank: factor + 0.5}, **extra)  # fmt: skip
    assert worse.step_s >= slow.step_s * (1 - 1e-12)


@settings(max_examples=30, deadline=None)
@given(configs(), st.integers(0, 3))
def test_streams_dependencies_and_the_last_event(cfg, seed):
    model, cluster, batch, plan, name, extra = cfg
    tr = sim.simulate(model, cluster, batch, plan, schedule=name, seed=seed,
                      stragglers=sim.Lognormal(0.1), **extra)  # fmt: skip
    a = _all(tr)
    for key in extra:  # the all-to-alls on the ep stream, the ring's passes on the cp stream
        assert np.any(a["stream"] == sim.STREAMS.index("ep" if key == "moe" else "cp"))
    check_trace(tr)  # streams, dependencies, the last event, the breakdown, the critical path


def test_pipeline_only_equals_the_pipeline_simulation():
    """With no TP, no DP and free transfers, the compute streams run exactly
    pipeline.schedule's timeline (same orders, same dependencies)."""
    for name, v in (("1f1b", 1), ("gpipe", 1), ("zb-h1", 1), ("zb-v", 2), ("dualpipe-v", 2)):
        plan = PL.Plan(t=1, p=4, d=1, b=1, scatter_gather=False)
        tr = sim.simulate(SMALL, PL.a100_cluster(4), 8, plan, schedule=name)
        a = tr._arrays
        sel = a["kind"] <= 3
        f = float(a["comp"][sel][a["kind"][sel] == 0].max())  # one chunk's forward
        assert a["comp"][sel].min() > 0
        ref = PP.schedule(
            name, 4, 8, v, t_f=1.0, t_b=2.0, **({"t_w": 1.0} if v == 2 or name == "zb-h1" else {})
        )
        assert len(ref.start) == int(sel.sum())
        for r in range(4):
            cols = zip(a["kind"][sel], a["mb"][sel], a["chunk"][sel], a["unit"][sel], strict=True)
            mine = [(PP.PHASES[k], int(j), int(c)) for k, j, c, u in cols if u == r]
            assert mine == ref.ops(r)
        del f


def test_equals_the_planner_without_a_pipeline_or_data_parallelism():
    """One stage, one replica: the step is m micro-batches of compute and exposed TP, then
    the optimizer, exactly the planner's sum."""
    plan = PL.Plan(t=8, p=1, d=1, b=1, sp=True, recompute="selective")
    model, cluster = PL.GPT3, PL.a100_cluster(8)
    tr = sim.simulate(model, cluster, 16, plan)
    pr = PL.predict(model, cluster, 16, plan)
    assert tr.step_s == pytest.approx(pr.step_s, rel=1e-9)
    assert tr.breakdown["bubble"] == pytest.approx(0.0, abs=1e-12)


def test_close_to_the_planner_on_a_preset():
    model, cluster, batch = PL.PRESETS["GPT-3 175B, 1,024 A100"]
    plan = PL.Plan(t=8, p=16, d=8, b=1, sp=True, recompute="selective")
    tr = sim.simulate(model, cluster, batch, plan)
    pr = PL.predict(model, cluster, batch, plan)
    assert abs(tr.step_s / pr.step_s - 1) < 0.03


def test_a_straggler_is_named_and_symmetric_ranks_are_simulated_once():
    model, cluster, batch = PL.PRESETS["GPT-3 175B, 1,024 A100"]
    plan = PL.Plan(t=8, p=16, d=8, b=1, sp=True, recompute="selective")
    base = sim.simulate(model, cluster, batch, plan)
    assert len(base.units) == plan.p  # one replica stands for all d
    assert sum(base.units.values()) == cluster.gpus
    rank = 8 * 3 + 64 * 5 + 2  # tp 2, dp 3, pp 5
    slow = sim.simulate(model, cluster, batch, plan, stragglers={rank: 1.1})
    assert slow.step_s > base.step_s
    assert next(iter(slow.critical_seconds_by_rank())) == rank
    assert len(slow.units) == 2 * plan.p  # the slowed replica and the others
    assert slow.breakdown["straggler_wait"] + slow.breakdown["slowdown"] > 0


def test_lognormal_steps_and_seed():
    model, cluster, batch = SMALL, PL.a100_cluster(32), 64
    plan = PL.Plan(t=2, p=4, d=4, b=1)
    a = sim.simulate(model, cluster, batch, plan, stragglers=sim.Lognormal(0.05), steps=4, seed=1)
    b = sim.simulate(model, cluster, batch, plan, stragglers=sim.Lognormal(0.05), steps=4, seed=1)
    assert a.steps_s == b.steps_s and len(a.steps_s) == 4
    assert a.step_s == pytest.approx(np.mean(a.steps_s))
    clean = sim.simulate(model, cluster, batch, plan)
    assert min(a.steps_s) >= clean.step_s  # floor 1: jitter only slows


def test_chrome_trace_is_valid_json_with_metadata():
    tr = sim.simulate(SMALL, PL.a100_cluster(16), 32, PL.Plan(t=2, p=4, d=2, b=1))
    doc = json.loads(json.dumps(tr.to_chrome_trace()))
    xs = [e for e in doc["traceEvents"] if e["ph"] == "X"]
    assert len(xs) == len(tr.events)
    assert {e["name"] for e in doc["traceEvents"] if e["ph"] == "M"} >= {
        "process_name",
        "thread_name",
    }
    assert max(e["ts"] + e["dur"] for e in xs) == pytest.approx(tr.step_s * 1e6, rel=1e-6)


def test_memory_peak_matches_the_schedule():
    plan = PL.Plan(t=1, p=4, d=2, b=1)
    tr = sim.simulate(SMALL, PL.a100_cluster(8), 32, plan)
    mem = tr.memory_peak_bytes
    assert mem.shape == (8,)
    assert mem[0] > mem[2]  # 1F1B: stage 0 holds p micro-batches, stage 1 p - 1
    assert mem[0] == mem[1]  # the two replicas of stage 0 (ranks 0 and 1: dp fastest after tp)


def test_bad_input():
    plan = PL.Plan(t=1, p=4, d=2, b=1)
    cl = PL.a100_cluster(8)
    with pytest.raises(ValueError, match="stragglers"):
        sim.simulate(SMALL, cl, 32, plan, stragglers=[1.2])
    with pytest.raises(ValueError, match="a rank of stragglers"):
        sim.simulate(SMALL, cl, 32, plan, stragglers={8: 1.2})
    with pytest.raises(ValueError, match=r"stragglers\[3\]"):
        sim.simulate(SMALL, cl, 32, plan, stragglers={3: 0.5})
    with pytest.raises(ValueError, match="steps"):
        sim.simulate(SMALL, cl, 32, plan, steps=0)
    with pytest.raises(ValueError, match="plan.zero"):
        sim.simulate(SMALL, cl, 32, PL.Plan(t=1, p=4, d=2, b=1, zero=3))
    with pytest.raises(ValueError, match="schedule"):
        sim.simulate(SMALL, cl, 32, plan, schedule="interleaved")
    with pytest.raises(ValueError, match="operations"):
        g = engine.Graph()
        g.extend([0] * engine.MAX_OPS, [0.0] * engine.MAX_OPS, [None] * engine.MAX_OPS,
                 [-1] * engine.MAX_OPS, [0] * engine.MAX_OPS, [0] * engine.MAX_OPS,
                 [0] * engine.MAX_OPS)  # fmt: skip
        g.add(0, 1.0)


def test_engine_collective_waits_for_its_last_member():
    g = engine.Graph()
    a = g.add(0, 1.0)
    b = g.add(1, 3.0)
    ca = g.add(2, 0.5, ((a, 1.0),), group=0)
    cb = g.add(3, 0.5, ((b, 1.0),), group=0)
    after = g.add(0, 1.0, ((ca, 1.0),))
    start, end, crit, ready = engine.run(g, 4)
    assert start[ca] == start[cb] == 3.0 and ready[ca] == 1.0
    assert start[after] == 3.5 and crit[after] == ca and crit[ca] == b


def test_engine_reports_a_cycle():
    g = engine.Graph()
    g.add(0, 1.0, ((1, 1.0),))
    g.add(1, 1.0, ((0, 1.0),))
    with pytest.raises(RuntimeError, match="deadlocked"):
        engine.run(g, 2)


@pytest.mark.parametrize("name, v", [("1f1b", 1), ("gpipe", 1), ("zb-h1", 1), ("zb-v", 2),
                                     ("dualpipe-v", 2), ("interleaved", 2)])  # fmt: skip
def test_replay_equals_the_pipeline_simulation(name, v):
    from scaleout.sim import replay

    p, m = 4, 8
    ref = PP.schedule(name, p, m, v, t_f=1.0, t_b=2.0, t_comm=0.25,
                      **({"t_w": 0.5} if name in PP.SPLIT_BACKWARD else {}))  # fmt: skip
    durations = []
    for r in range(p):
        sel = np.flatnonzero(ref.stage == r)
        sel = sel[np.argsort(ref.start[sel], kind="stable")]
        durations.append((ref.end[sel] - ref.start[sel]).tolist())
    rp = replay.pipeline(name, p, m, durations, t_comm=0.25, v=v)
    assert rp.step_s == pytest.approx(ref.makespan, rel=1e-12)
    for r in range(p):
        assert rp.order[r] == [f"{k}{j}" + (f"c{c}" if c else "") for k, j, c in ref.ops(r)]


@pytest.mark.parametrize("name, v", [("1f1b", 1), ("zb-h1", 1), ("zb-v", 2), ("interleaved", 2)])
def test_observed_delays_recover_the_delays_a_replay_ran_with(name, v):
    """A replay's own timeline, read back as a run's operations, gives back the message and
    host delays it ran with, and replaying with them reproduces it (to float precision)."""
    from scaleout.sim import replay

    p, m, t_comm, t_host = 4, 8, 0.3, 0.05
    rng = np.random.default_rng(0)
    durations = [(1.0 + rng.random(len(o))).tolist() for o in PP.stage_order(name, p, m, v)]
    run = replay.pipeline(name, p, m, durations, t_comm=t_comm, v=v, t_host=t_host)
    ops = [list(zip(run.order[r], run.start[r], run.end[r], strict=True)) for r in range(p)]
    message, host = replay.observed_delays(name, p, m, ops, v=v)
    assert (message, host) == (pytest.approx(t_comm), pytest.approx(t_host))
    again = replay.pipeline(name, p, m, durations, t_comm=message, v=v, t_host=host)
    assert again.step_s == pytest.approx(run.step_s, rel=1e-9)
    # without the host's gaps the same operations finish sooner
    assert replay.pipeline(name, p, m, durations, t_comm=t_comm, v=v).step_s < run.step_s


def test_observed_delays_refuse_a_run_of_another_shape():
    from scaleout.sim import replay

    ops = [[("F0", 0.0, 1.0)]] * 2
    with pytest.raises(ValueError, match="ops"):
        replay.observed_delays("1f1b", 2, 2, ops)
    with pytest.raises(ValueError, match="ops must be"):
        replay.observed_delays("1f1b", 2, 2, "not a run")


def test_replay_collective_names_the_slow_rank():
    from scaleout.sim import replay

    rp = replay.collective([[1.0, 2.0], [1.0, 2.0], [1.0, 5.0], [1.0, 2.0]], 0.5, [0.1] * 4)
    assert rp.step_s == pytest.approx(6.6)
    assert next(iter(rp.critical)) == 2


def _moe_steps():
    model = PL.Model("moe", layers=16, hidden=4096, heads=32, seq=4096, ffn=8192, swiglu=True)
    cluster = PL.h100_cluster(256)
    plan = PL.Plan(t=1, p=4, d=64, b=1, recompute="none")
    spec = sim.MoE(64, 4, 32)
    return {s: sim.simulate(model, cluster, 64 * 8, plan, schedule=s, moe=spec)
            for s in ("1f1b", "dualpipe-v")}  # fmt: skip


def test_moe_all_to_alls_sit_between_attention_and_experts():
    tr = _moe_steps()["1f1b"]
    a = tr._arrays
    ep = sim.STREAMS.index("ep")
    disp = np.flatnonzero(a["kind"] == 7)
    assert len(disp) and np.all(a["stream"][disp] == ep)
    for i in disp[:50].tolist():
        ((j, _),) = a["deps"][i]  # after its layer's attention (compute, same micro-batch)
        assert a["stream"][j] == 0 and a["part"][j] == 1 and a["mb"][j] == a["mb"][i]
    nxt = [k for k in range(len(a["deps"])) if a["deps"][k] and a["deps"][k][0][0] in set(disp)]
    assert nxt and all(a["part"][k] == 2 for k in nxt)  # the experts wait for the dispatch
    # in 1F1B nearly every all-to-all of rank 0 is exposed (its chain waits for each; only
    # a forward's last combine can overlap the next operation, whose input came before)
    tot = sum(e.end_s - e.start_s for e in tr.events if e.stream == "ep" and e.rank == 0)
    assert 0.95 * tot < tr.exposed_s("ep", 0) <= tot * (1 + 1e-9)


def test_dualpipe_v_hides_all_to_all_that_1f1b_exposes():
    steps = _moe_steps()
    one, dual = steps["1f1b"], steps["dualpipe-v"]
    tot = {k: sum(e.end_s - e.start_s for e in tr.events if e.stream == "ep" and e.rank == 0)
           for k, tr in steps.items()}  # fmt: skip
    assert tot["1f1b"] == pytest.approx(tot["dualpipe-v"], rel=1e-9)  # the same all-to-alls
    assert dual.exposed_s("ep", 0) < 0.8 * one.exposed_s("ep", 0)
    with pytest.raises(ValueError, match="moe.ep"):
        sim.simulate(SMALL, PL.a100_cluster(8), 8, PL.Plan(t=1, p=1, d=8, b=1),
                     moe=sim.MoE(8, 2, 8).__class__(12, 2, 3))  # fmt: skip
    with pytest.raises(ValueError, match="ep"):
        sim.MoE(8, 2, 3)


def test_context_parallelism_over_one_gpu_changes_nothing():
    plan = PL.Plan(t=2, p=2, d=4, b=1)
    base = sim.simulate(SMALL, PL.a100_cluster(16), 16, plan)
    one = sim.simulate(SMALL, PL.a100_cluster(16), 16, plan, cp=sim.CP(1))
    assert one.step_s == pytest.approx(base.step_s, rel=1e-12)


def test_the_ring_hides_behind_long_attention_not_short():
    """Chapter 8: a ring step's KV pass hides behind its attention block when the sequence
    is long (attention grows with seq^2, the pass with seq), not when it is short."""
    cluster, plan = PL.h100_cluster(64), PL.Plan(t=8, p=1, d=8, b=1, sp=True)
    share = {}
    for seq in (8192, 131072):
        model = PL.Model("8B", layers=8, hidden=4096, heads=32, kv_heads=8, seq=seq,
                         ffn=14336, swiglu=True)  # fmt: skip
        tr = sim.simulate(model, cluster, 8, plan, cp=sim.CP(8))
        kv = [e for e in tr.events if e.stream == "cp" and e.rank == 0]
        assert {e.name.split(" mb")[0] for e in kv} == {"KV pass", "dKV pass"}
        share[seq] = tr.exposed_s("cp", 0) / sum(e.end_s - e.start_s for e in kv)
    assert share[131072] < 0.2 < 0.5 < share[8192]
    with pytest.raises(ValueError, match="cp"):
        sim.simulate(SMALL, PL.a100_cluster(8), 8, PL.Plan(t=1, p=1, d=8, b=1), cp=sim.CP(3))
    with pytest.raises(ValueError, match="cp"):
        sim.simulate(SMALL, PL.a100_cluster(8), 8, PL.Plan(t=1, p=1, d=8, b=1), cp=sim.CP(2),
                     moe=sim.MoE(8, 2, 2))  # fmt: skip
