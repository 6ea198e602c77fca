"""scaleout.failures: intervals, goodput against the Monte Carlo, sizes, published data."""

from __future__ import annotations

import math
import tomllib
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scaleout import failures as F
from scaleout import memory
from scaleout.failures import published as P

ROOT = Path(__file__).resolve().parents[2]
seconds = st.floats(1.0, 1e6, allow_nan=False)


def test_young_is_sqrt_2cm():
    assert F.young(40.0, 3600.0) == pytest.approx(math.sqrt(2 * 40 * 3600), rel=1e-15)
    assert np.allclose(F.young([1.0, 4.0], 2.0), [2.0, 4.0], rtol=1e-15)


def test_daly_is_his_eq_37_and_m_beyond_its_regime():
    c, m = 40.0, 3600.0
    r = c / (2 * m)
    want = math.sqrt(2 * c * m) * (1 + math.sqrt(r) / 3 + r / 9) - c
    assert F.daly(c, m) == pytest.approx(want, rel=1e-14)
    assert F.daly(2 * m, m) == m and F.daly(5 * m, m) == m  # C >= 2M: once per MTBF
    assert F.daly(1.999 * m, m) < m * 1.1


def test_daly_tracks_the_exact_optimum_where_young_does_not():
    c, m = 600.0, 3600.0
    exact = F.optimal_interval(c, m)
    assert abs(F.daly(c, m) - exact) / exact < 0.002
    assert (F.young(c, m) - exact) / exact > 0.2


@pytest.mark.parametrize("c, m", [(1e-6, 1.0), (0.01, 1.0), (1.0, 1.0), (40.0, 1e6), (3.0, 1.0)])
def test_optimal_interval_solves_the_stationarity_equation_and_beats_a_grid(c, m):
    tau = F.optimal_interval(c, m)
    assert math.exp((tau + c) / m) * (1 - tau / m) == pytest.approx(1.0, abs=1e-9)
    grid = np.geomspace(tau / 3, tau * 3, 2001)
    assert F.goodput(m, c, 0.0, tau) >= F.goodput(m, c, 0.0, grid).max() - 1e-12


@settings(deadline=None)
@given(st.floats(-1 / math.e, 0.0))
def test_lambert_w0_inverts_w_exp_w(z):
    w = F.lambert_w0(z)
    assert -1.0 <= w <= 0.0 and w * math.exp(w) == pytest.approx(z, abs=1e-12)


def test_goodput_is_the_derived_closed_form():
    m, c, r, tau = 3600.0, 60.0, 300.0, 600.0
    want = tau / (m * math.exp(r / m) * (math.exp((tau + c) / m) - 1))
    assert F.goodput(m, c, r, tau) == pytest.approx(want, rel=1e-13)
    # first order for small C, R and tau against M: 1 - tau/2M - C/tau - R/M
    m, c = 1e7, 6.0
    approx = 1 - tau / (2 * m) - c / tau - r / m
    assert F.goodput(m, c, r, tau) == pytest.approx(approx, abs=1e-3)


GRID = [  # (M, C, R, tau, W): synchronous and asynchronous, mild to harsh
    (3600.0, 60.0, 300.0, 600.0, 0.0),
    (3600.0, 60.0, 300.0, 1200.0, 0.0),
    (1000.0, 100.0, 200.0, 500.0, 0.0),
    (11135.0, 30.0, 600.0, 900.0, 0.0),
    (36000.0, 40.0, 600.0, 3000.0, 0.0),
    (500.0, 20.0, 50.0, 100.0, 0.0),
    (3600.0, 1.0, 300.0, 600.0, 300.0),
    (10000.0, 0.5, 600.0, 1200.0, 1200.0),
    (500.0, 5.0, 100.0, 200.0, 100.0),
    (20000.0, 2.0, 900.0, 2000.0, 60.0),
]


@pytest.mark.parametrize("m, c, r, tau, w", GRID)
def test_goodput_matches_the_monte_carlo_within_one_point(m, c, r, tau, w):
    sim = F.simulate_job(m, c, r, tau, background_s=w, segments=150, jobs=800, seed=7)
    closed = F.goodput(m, c, r, tau, background_s=w)
    assert abs(sim.goodput - closed) < 0.01, (sim.goodput, closed, sim.stderr)
    assert sim.stderr < 0.003


def test_monte_carlo_is_seeded_and_counts_failures():
    a = F.simulate_job(1000.0, 10.0, 50.0, 200.0, segments=20, jobs=10, seed=3)
    b = F.simulate_job(1000.0, 10.0, 50.0, 200.0, segments=20, jobs=10, seed=3)
    assert np.array_equal(a.wall_s, b.wall_s) and a.failures.sum() > 0
    assert np.all(a.wall_s >= 20 * 210.0)  # never faster than no failures at all
    free = F.simulate_job(3e9, 10.0, 50.0, 200.0, segments=20, jobs=10)
    assert np.allclose(free.wall_s, 20 * 210.0) and free.failures.sum() == 0


def test_monte_carlo_bounds_its_work():
    with pytest.raises(ValueError, match="jobs x expected events"):
        F.simulate_job(10.0, 10.0, 10.0, 100.0, segments=1000, jobs=1000)
    with pytest.raises(ValueError, match="small enough that a segment ever completes"):
        F.expected_events(1.0, 500.0, 500.0, 1.0, 10)


@settings(deadline=None)
@given(seconds, seconds, seconds, seconds, st.floats(1.01, 10.0))
def test_more_failures_longer_restarts_slower_checkpoints_never_raise_goodput(m, c, r, tau, k):
    g = F.goodput(m, c, r, tau)
    assert F.goodput(m / k, c, r, tau) <= g + 1e-15  # failures more often
    assert F.goodput(m, c, r * k, tau) <= g + 1e-15  # longer restarts
    assert F.goodput(m, c * k, r, tau) <= g + 1e-15  # slower checkpoints
    w = tau / k  # a later durable point never helps either
    assert F.goodput(m, c, r, tau, background_s=w) <= g + 1e-15
    assert 0.0 <= g <= tau / (tau + c) + 1e-15


@settings(deadline=None)
@given(seconds, seconds)
def test_the_optimum_beats_young_and_daly(c, m):
    best = F.goodput(m, c, 0.0, F.optimal_interval(c, m))
    assert best >= F.goodput(m, c, 0.0, F.young(c, m)) - 1e-12
    assert best >= F.goodput(m, c, 0.0, F.daly(c, m)) - 1e-12


def test_bad_inputs_name_the_argument():
    with pytest.raises(ValueError, match="mtbf_s"):
        F.goodput(0.0, 1.0, 1.0, 1.0)
    with pytest.raises(ValueError, match="background_s"):
        F.goodput(100.0, 1.0, 1.0, 10.0, background_s=11.0)
    with pytest.raises(ValueError, match="checkpoint_s"):
        F.young(float("nan"), 1.0)
    with pytest.raises(ValueError, match="gpus"):
        F.job_mtbf_s(1.5, 1e-5)
    with pytest.raises(ValueError, match="rates_per_gpu_hour"):
        F.job_mtbf_s(8, {"GPU": 0.0})


def test_job_mtbf_falls_as_one_over_the_gpu_count():
    rate = 1 / (5 * 365.25 * 24)
    m = F.job_mtbf_s([1024, 2048, 16384], rate)
    assert np.allclose(m * [1024, 2048, 16384], 3600 / rate)
    parts = F.job_mtbf_s(16384, {"GPU": rate / 2, "host": rate / 2})
    assert parts == pytest.approx(m[-1], rel=1e-15)


def test_checkpoint_size_is_the_zero_accounting_without_gradients():
    psi = 176_247_271_424
    size = F.checkpoint_size(psi, 384, model_parallel=48, stage=1)
    states = memory.model_state_bytes(psi, 0, 1, precision="megatron-bf16")
    assert size.total == pytest.approx(states.parameters + states.optimizer_states)
    assert size.total == pytest.approx(14 * psi) and size.per_gpu == pytest.approx(size.total / 384)
    # held by one GPU: its 1/48 of the parameters, and 1/(48 x 8) of the optimizer states
    assert size.held_per_gpu == pytest.approx(2 * psi / 48 + 12 * psi / 384)
    weights = F.checkpoint_size(psi, 384, optimizer_states=False)
    assert weights.total == pytest.approx(2 * psi) and weights.optimizer_states == 0.0
    with pytest.raises(ValueError, match="model_parallel"):
        F.checkpoint_size(psi, 384, model_parallel=7)


def test_strategies_trade_stall_for_a_later_durable_point():
    s = F.strategies(5.67e12, 16384, storage_gb_per_s=2000.0, host_gb_per_s=25.0,
                     peer_gb_per_s=25.0, restart_s=600.0)  # fmt: skip
    sync, asy, mem = s["synchronous"], s["asynchronous"], s["in-memory"]
    assert sync.stall_s == pytest.approx(5.67e12 / 2e12) and sync.background_s == 0.0
    assert asy.stall_s == pytest.approx(5.67e12 / 16384 / 25e9)
    assert asy.background_s == pytest.approx(sync.stall_s) and mem.restart_s < sync.restart_s
    m = 3 * 3600.0
    assert F.best(m, mem)[1] >= F.best(m, asy)[1] - 1e-9
    assert F.best(m, asy)[1] > F.best(m, sync)[1]


def test_published_rows_are_sourced_and_add_up():
    rows = P.rows()
    assert all(r.kind == "assumed" or r.source for r in rows)
    keys = (ROOT / "references.bib").read_text()
    for source in {r.source for r in rows if r.source}:
        assert "{" + source + "," in keys, source
    causes = P.llama3_causes()
    assert len(causes) == 18 and sum(n for _, n, _ in causes.values()) == 419
    assert P.value("llama3-405b", "planned interruptions") + 419 == P.value(
        "llama3-405b", "interruptions"
    )
    # every printed share is the count over 419 except Faulty GPU's (148 of 419 is 35.3%)
    off = [k for k, (_, n, pct) in causes.items() if abs(100 * n / 419 - pct) > 0.06]
    assert off == ["Faulty GPU"]
    gpu_share = sum(pct for c, _, pct in causes.values() if c == "GPU")
    assert round(gpu_share, 1) == P.value("llama3-405b", "GPU share of unexpected interruptions")
    obs = P.observed("llama3-405b", "all")
    assert round(obs.job_mtbf_s) == 10012 and obs.gpus == 16384
    assert round(P.observed("opt-175b").job_mtbf_s / 3600, 1) == 13.7


def test_the_csv_is_installed_as_package_data():
    cfg = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "data/*.csv" in cfg["tool"]["setuptools"]["package-data"]["scaleout"]


def test_restart_budget_is_where_goodput_meets_the_target():
    m, c = 10012.0, 10.0
    r = F.max_restart_s(m, c, 0.9)
    assert F.goodput(m, c, r, F.optimal_interval(c, m)) == pytest.approx(0.9, abs=1e-12)
    assert F.max_restart_s(m, 60.0, 0.9) < 0  # no restart is fast enough
    assert np.all(np.diff(F.max_restart_s(m, [1.0, 10.0, 30.0], 0.9)) < 0)


def test_assumptions_carry_ranges_and_table_5_gives_back_the_job_mtbf():
    for quantity in ("restart time", "storage bandwidth", "device-to-host bandwidth per GPU",
                     "peer bandwidth per GPU"):  # fmt: skip
        low, high = P.assumed_range(quantity)
        assert low < P.value("assumed", quantity) < high
    rates = P.per_component_rates()
    assert F.job_mtbf_s(16384, rates) == pytest.approx(P.observed("llama3-405b").job_mtbf_s)
