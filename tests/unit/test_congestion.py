"""scaleout.congestion: ECMP collisions, fair shares, routing, QPs, DCQCN, PFC, fabrics."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scaleout import congestion as C
from scaleout import nccl, topology
from scaleout.congestion import dcqcn as D
from scaleout.congestion import fabrics as F
from scaleout.congestion import pfc as P
from scaleout.congestion import published as PUB
from scaleout.congestion import qps as Q

ROOT = Path(__file__).resolve().parents[2]


# --- ECMP ------------------------------------------------------------------------------
@pytest.mark.parametrize("n,k", [(1, 1), (2, 2), (3, 2), (5, 3), (8, 8), (6, 4), (10, 5), (0, 3)])
def test_expected_max_equals_enumeration(n, k):
    assert C.ecmp_expected_max(n, k) == pytest.approx(C.enumerate_expected_max(n, k), abs=1e-9)


def test_expected_max_closed_forms():
    assert C.ecmp_expected_max(2, 2) == pytest.approx(1.5)  # both on one path half the time
    assert C.ecmp_expected_max(7, 1) == 7.0
    assert C.ecmp_expected_max(1, 9) == 1.0
    assert C.ecmp_expected_max(2, 8) == pytest.approx(1 + 1 / 8)


@given(st.integers(0, 9), st.integers(1, 6))
@settings(max_examples=40, deadline=None)
def test_expected_max_property_against_enumeration(n, k):
    exact = C.ecmp_expected_max(n, k)
    assert exact == pytest.approx(C.enumerate_expected_max(n, k), abs=1e-9)
    assert math.ceil(n / k) <= exact + 1e-12 and exact <= n + 1e-12


@pytest.mark.parametrize("n,k", [(64, 64), (256, 32), (600, 600), (3000, 1500)])
def test_expected_max_against_sampling(n, k):
    sampled = C.ecmp_loads(n, k, seeds=400).max(axis=1)
    stderr = sampled.std() / math.sqrt(len(sampled))
    tolerance = 4 * stderr + (0.02 * C.ecmp_expected_max(n, k) if n > C.ecmp.EXACT_LIMIT else 0)
    assert abs(C.ecmp_expected_max(n, k) - sampled.mean()) <= tolerance + 1e-9


def test_ecmp_loads_shape_and_sum():
    loads = C.ecmp_loads(13, 5, seeds=7)
    assert loads.shape == (7, 5) and np.all(loads.sum(axis=1) == 13)
    assert np.array_equal(loads, C.ecmp_loads(13, 5, seeds=7))  # seeded


def test_ecmp_bad_input():
    with pytest.raises(ValueError, match="n_paths"):
        C.ecmp_expected_max(4, 0)
    with pytest.raises(ValueError, match="occupancy"):
        C.enumerate_expected_max(60, 60)


# --- fair share ---------------------------------------------------------------------------
def test_max_min_textbook_example():
    # Two links of capacity 1; flow 0 crosses both, flows 1 and 2 one each: 1/2 each.
    w = [[1, 1], [1, 0], [0, 1]]
    assert np.allclose(C.max_min_rates(w, [1.0, 1.0]), [0.5, 0.5, 0.5])
    # Second link wider: flow 2 takes the rest of it.
    assert np.allclose(C.max_min_rates(w, [1.0, 3.0]), [0.5, 0.5, 2.5])


@given(st.integers(1, 6), st.integers(1, 5), st.integers(0, 10_000))
@settings(max_examples=40, deadline=None)
def test_max_min_feasible_and_slowest_is_busiest_link(flows, links, seed):
    rng = np.random.default_rng(seed)
    w = rng.integers(0, 3, size=(flows, links)).astype(float)
    w[:, 0] = np.maximum(w[:, 0], 1.0)  # every flow crosses link 0
    cap = rng.uniform(0.5, 2.0, size=links)
    rate = C.max_min_rates(w, cap)
    assert np.all(w.T @ rate <= cap * (1 + 1e-9))
    assert rate.min() == pytest.approx(1 / np.max(w.sum(axis=0) / cap))
    # Every flow is bottlenecked: it crosses a full link.
    full = w.T @ rate >= cap * (1 - 1e-9)
    assert np.all((w[:, full] > 0).any(axis=1))


def test_jain_index():
    assert C.jain_index([1, 1, 1]) == pytest.approx(1.0)
    assert C.jain_index([1, 0, 0, 0]) == pytest.approx(0.25)


# --- a ring under ECMP, spray, adaptive ---------------------------------------------------------
MACHINE = nccl.topology("dgx-h100", nodes=8)
TOR = C.Fabric("top-of-rack", servers_per_leaf=2)


def test_spray_balances_exactly_and_equals_chapter_11_bound():
    r = C.collective_under_ecmp(1e9, routing="spray", seeds=5, fabric=TOR, machine=MACHINE)
    assert np.all(r.busbw_gb_per_s == r.fluid_busbw_gb_per_s)
    cluster = C.cluster_of(MACHINE, TOR)
    t = topology.traffic_time(cluster, topology.flat_ring_allreduce(cluster, 1e9))
    p = cluster.num_gpus
    assert r.fluid_busbw_gb_per_s == pytest.approx(2 * (p - 1) / p / t.bandwidth_s)


@given(st.integers(1, 4), st.integers(1, 6), st.sampled_from([1, 2, 4]))
@settings(max_examples=15, deadline=None)
def test_adaptive_never_worse_than_ecmp_on_the_same_hashes(qps, flowlets, per_leaf):
    fabric = C.Fabric("top-of-rack", servers_per_leaf=per_leaf)
    m = nccl.topology("dgx-h100", nodes=4)
    kw = dict(qps_per_connection=qps, seeds=8, fabric=fabric)
    ecmp = C.collective_under_ecmp(1e8, machine=m, **kw)
    adaptive = C.collective_under_ecmp(1e8, routing="adaptive", flowlets=flowlets, machine=m, **kw)
    assert np.all(adaptive.busbw_gb_per_s >= ecmp.busbw_gb_per_s - 1e-9)
    assert np.all(adaptive.busbw_gb_per_s <= adaptive.fluid_busbw_gb_per_s + 1e-9)


def test_more_qps_never_lower_the_median():
    medians = [
        C.collective_under_ecmp(
            1e9, qps_per_connection=q, seeds=100, fabric=TOR, machine=MACHINE
        ).percentile(50)
        for q in (1, 2, 4, 8, 16)
    ]
    assert medians == sorted(medians) and medians[-1] > medians[0]


def test_rail_optimized_ring_never_crosses_the_spine():
    r = C.collective_under_ecmp(1e9, seeds=3, machine=MACHINE)  # chapter 11's default fabric
    assert r.spine_flows == 0 and np.all(r.busbw_gb_per_s == r.fluid_busbw_gb_per_s)


def test_collective_bad_input():
    with pytest.raises(ValueError, match="routing"):
        C.collective_under_ecmp(1e9, routing="hash", machine=MACHINE)
    with pytest.raises(ValueError, match="servers"):
        C.collective_under_ecmp(1e9, machine="dgx-h100")


# --- NCCL's QPs ----------------------------------------------------------------------------
def test_qp_bytes_round_robin_and_split():
    assert Q.qp_bytes(1 << 20, 4, messages=8).tolist() == [2 << 20] * 4
    assert Q.qp_bytes(1 << 20, 4, messages=3).tolist() == [1 << 20] * 3 + [0]
    split = Q.qp_bytes(1000, 4, split_data_on_qps=True)
    assert split.sum() == 1000 and np.all(split[:3] % Q.ALIGN_BYTES == 0)
    assert len(Q.qp_bytes(100, 2, local_nics=2)) == 4


def test_cited_nccl_lines_hold_the_cited_text():
    """Every line ``Q.SOURCES`` cites holds its text in the pinned release, from the committed
    lines of tests/fixtures/nccl_cited_lines.json (tools/nccl_cited_lines.py writes them)."""
    fixture = json.loads((Path(__file__).parents[1] / "fixtures" / "nccl_cited_lines.json")
                         .read_text())  # fmt: skip
    assert fixture["release"] == nccl.constants.RELEASE
    for name, (value, source, text) in Q.SOURCES.items():
        lines = fixture["files"][source.file]
        cited = " ".join(lines[str(k)] for k in range(source.first, source.last + 1))
        assert text in cited, name
        if isinstance(value, int):  # a number: the constant's, written in the cited text
            assert re.search(rf"(?<![\w.]){value}(?![\w.])", text), name


# --- DCQCN -------------------------------------------------------------------------------
@pytest.mark.parametrize("n", [2, 5, 16])
def test_dcqcn_converges_fair_and_below_line_rate(n):
    r = D.dcqcn(n, 40, 0.04)
    assert r.rates_gbps.max() <= 40 + 1e-9 and r.rates_gbps.min() >= 0
    assert C.jain_index(r.final_rates_gbps(5e-3)) >= 0.99
    assert r.final_rates_gbps(5e-3).sum() == pytest.approx(40, rel=0.05)


@given(st.integers(1, 6), st.floats(10, 400))
@settings(max_examples=8, deadline=None)
def test_dcqcn_rates_never_exceed_line_rate(n, line):
    r = D.dcqcn(n, line, 0.005)
    assert np.all(r.rates_gbps <= line * (1 + 1e-12)) and np.all(r.queue_bytes >= 0)
    assert np.all((r.marking >= 0) & (r.marking <= 1))


def test_dcqcn_defaults_are_the_published_rows():
    for name, v in D.DEFAULTS.items():
        row = [r for r in PUB.rows("DCQCN") if r.quantity == name]
        assert len(row) == 1 and row[0].value == pytest.approx(v)


def test_dcqcn_bad_params():
    with pytest.raises(ValueError, match="params"):
        D.dcqcn(2, 40, 0.001, Kmid=3)
    with pytest.raises(ValueError, match="Kmax_bytes"):
        D.dcqcn(2, 40, 0.001, Kmax_bytes=1e3)


# --- PFC -----------------------------------------------------------------------------------
def test_pfc_victim_falls_during_incast_and_recovers():
    r = P.pfc(4, 100, 300e-6, incast_start_s=50e-6, incast_stop_s=200e-6)
    before, during, after = (r.mean_victim_gbps(a, b) for a, b in
                             ((0, 50e-6), (80e-6, 190e-6), (230e-6, 300e-6)))  # fmt: skip
    assert before == pytest.approx(100, rel=0.02) and after == pytest.approx(100, rel=0.02)
    assert during < 0.5 * before
    assert r.paused_u.any() and r.paused_host.any()  # the pause propagated upstream
    assert r.port0_bytes.max() <= r.xoff_bytes + r.headroom_bytes  # headroom: no drop


@given(st.integers(2, 8), st.floats(1.0, 300.0))
@settings(max_examples=8, deadline=None)
def test_pfc_never_overflows_headroom(n, cable):
    r = P.pfc(n, 100, 150e-6, incast_start_s=20e-6, incast_stop_s=100e-6, cable_m=cable,
              dt_s=100e-9)  # fmt: skip
    assert r.port0_bytes.max() <= r.xoff_bytes + r.headroom_bytes + 1e-6


def test_headroom_formula():
    # 100 m at 100 Gb/s: 2 x 12.5 GB/s x 0.5 us + 12.5 KB response + 2 frames.
    assert P.headroom_bytes(100, 100, 4096, 1e-6) == pytest.approx(12_500 + 12_500 + 8192)


# --- fabrics and published data ---------------------------------------------------------------
def test_fat_tree_sizes():
    assert F.fat_tree_hosts(64, 2) == 2048 and F.fat_tree_hosts(64, 3) == 65536
    full2, full3 = F.fat_tree(2048, 64), F.fat_tree(65536, 64)
    assert (full2.tiers, full2.switches) == (2, 96) and (full3.tiers, full3.switches) == (3, 5120)
    assert F.fat_tree(64, 64).switches == 1


def test_rail_only_saves_a_tier_where_a_rail_fits_two():
    c = F.compare(8192, 64)
    assert c["rail-optimized"].tiers == 3 and c["rail-only"].tiers == 2
    assert F.saving(c["rail-optimized"], c["rail-only"])["switches"] > 0


def test_published_rows_are_sourced():
    bib = (ROOT / "references.bib").read_text()
    rows = PUB.rows()
    assert len({r.key for r in rows}) == len(rows)
    for r in rows:
        assert f"{{{r.source}," in bib, r.source
        assert r.kind in PUB.KINDS and r.locator and r.unit
