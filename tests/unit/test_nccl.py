"""scaleout.nccl: NCCL v2.27.7-1's cost model against its source, its own printed numbers,
published measurements and the properties any such model must have."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from repo_paths import FIXTURES

from scaleout import costmodel, data, nccl
from scaleout.demos.nccl import main as demo_main
from scaleout.nccl import constants as C
from scaleout.nccl import p2p, published, search, tuning, wire

GIB = 2**30
# The lines of NCCL's source that the constants cite, committed (tools/nccl_cited_lines.py
# writes them from a clone of NVIDIA/nccl): the check needs no NCCL checkout.
CITED = json.loads((FIXTURES / "nccl_cited_lines.json").read_text())
# A clone of NVIDIA/nccl, if there is one, to check the committed lines against.
NCCL_SRC = Path(os.environ.get("NCCL_SOURCE", "/nonexistent"))


# --- the constants are the release's ------------------------------------------------------


def _release_lines(source: C.Source) -> str:
    """Lines ``source.first``..``source.last`` of ``source.file`` in the pinned release, from
    the committed fixture; fails, naming the tool to run, where the fixture lacks them."""
    lines = CITED["files"].get(source.file, {})
    wanted = [str(k) for k in range(source.first, source.last + 1)]
    missing = [k for k in wanted if k not in lines]
    assert not missing, (
        f"{source.label} is not in tests/fixtures/nccl_cited_lines.json: run "
        "tools/nccl_cited_lines.py on a clone of NVIDIA/nccl"
    )
    return "\n".join(lines[k] for k in wanted)


def _numbers_in(text: str) -> set[float]:
    """Every number written in ``text``, and every product or quotient of two of them
    (``2*141.0``, ``5.0/6.0``)."""
    num = r"(?<![\w.])(\d+\.?\d*|\.\d+)f?(?![\w.])"
    found = {float(x) for x in re.findall(num, text)}
    for a, op, b in re.findall(rf"{num}\s*([*/])\s*{num}", text):
        found.add(float(a) * float(b) if op == "*" else float(a) / float(b))
    return found


def test_the_fixture_is_of_the_pinned_release_and_holds_only_cited_lines():
    assert CITED["release"] == C.RELEASE and CITED["repository"] == C.REPOSITORY
    assert re.fullmatch(r"[0-9a-f]{40}", CITED["commit"])
    from scaleout.congestion import qps

    sources = [c.source for c in C.CONSTANTS.values()] + [s for _, s, _ in qps.SOURCES.values()]
    cited = {(s.file, k) for s in sources for k in range(s.first, s.last + 1)}
    held = {(f, int(k)) for f, lines in CITED["files"].items() for k in lines}
    assert held == cited, "rerun tools/nccl_cited_lines.py: the fixture and the citations differ"


@pytest.mark.parametrize("name", list(C.CONSTANTS))
def test_every_constant_is_written_at_its_cited_lines(name):
    const = C.CONSTANTS[name]
    written = _numbers_in(_release_lines(const.source))
    for x in const.numbers():
        assert any(np.isclose(x, w, rtol=1e-9, atol=0) for w in written) or x == 0, (
            f"{name} = {x} is not written at {const.source.label} of {C.RELEASE}"
        )


def _positions(value, index=()):
    """(index tuple, number) of every number of a number or nested tuple, in order."""
    if isinstance(value, tuple):
        for n, x in enumerate(value):
            yield from _positions(x, (*index, n))
    else:
        yield index, value


def test_the_constants_are_the_rows_of_nccl_constants_csv():
    """Issue 24: every number of CONSTANTS is one row of data/nccl_constants.csv, in file
    order: its name, its position (i, j, k), its value and type (int where NCCL's literal has
    no decimal point), the Source its locator."""
    rows = data.load("nccl_constants")
    mine = [(name, index, x, c.source.label)
            for name, c in C.CONSTANTS.items() for index, x in _positions(c.value)]  # fmt: skip
    assert len(rows) == len(mine) == 360  # the cost model's 353 and 7 InfiniBand defaults
    for v, (name, index, x, label) in zip(rows, mine, strict=True):
        assert (v.get("name"), tuple(int(v.get(c)) for c in "ijk" if v.get(c))) == (name, index)
        assert v.value == x and type(x) is (float if "." in v.get("literal") else int)
        assert (v.locator, v.source, v.kind) == (label, "nccl2277", "stated")
    # rows of different lengths come back as they are in the file
    assert [len(r) for r in C.CONSTANTS["speed_intra"].value] == [13, 11, 11]
    assert [len(r) for r in C.CONSTANTS["speed_inter"].value] == [19, 17, 18]


def test_the_constants_follow_the_file():
    """A changed, dropped or misplaced row changes the constants or is refused."""
    rows = data.load("nccl_constants")

    def at(v, name, *index):
        return v.get("name") == name and tuple(v.get(c) for c in "ijk") == tuple(
            [str(i) for i in index] + [""] * (3 - len(index))
        )

    changed = C._build(tuple(dataclasses.replace(v, value=2 * v.value)
                             if at(v, "hw_latency_us", 0, 4, 2) else v for v in rows))  # fmt: skip
    assert changed["hw_latency_us"].value[0][4] == (0, 0, 50)
    assert changed["hw_latency_us"].value[0][5] == (0, 0, 25)
    shorter = C._build(tuple(v for v in rows if not at(v, "speed_intra", 1, 10)))
    assert [len(r) for r in shorter["speed_intra"].value] == [13, 10, 11]
    lines = "src/graph/tuning.cc:350-351"
    moved = C._build(tuple(dataclasses.replace(v, locator=lines)
                           if at(v, "simple_net_overhead_factor") else v
                           for v in rows))  # fmt: skip
    assert moved["simple_net_overhead_factor"].source == C.Source("src/graph/tuning.cc", 350, 351)
    with pytest.raises(ValueError, match="speed_intra"):  # a hole in the indices
        C._build(tuple(v for v in rows if not at(v, "speed_intra", 1, 5)))
    with pytest.raises(ValueError, match="rows"):  # a constant without rows
        C._build(tuple(v for v in rows if v.get("name") != "pci_bw"))


def test_every_literal_is_written_at_its_cited_lines():
    """The CSV's ``literal`` is NCCL's text: written at the cited lines, and its arithmetic
    is the row's value; an entry NCCL leaves unlisted (C sets it to 0) has none."""
    steps = C.CONSTANTS["steps_per_buffer"].value
    for v in data.load("nccl_constants"):
        literal = v.get("literal")
        if not literal:
            assert v.value == 0 and "not listed" in v.note, v
            continue
        assert literal in _release_lines(C.CONSTANTS[v.get("name")].source), v
        number = re.fullmatch(r"([\d.]+)(?:([*/])([\d.]+))?", literal)
        if number is None:
            expected = steps // int(re.fullmatch(r"NCCL_STEPS/(\d+)", literal)[1])
        elif number[2] is None:
            expected = float(number[1])
        else:
            a, b = float(number[1]), float(number[3])
            expected = a * b if number[2] == "*" else a / b
        assert v.value == expected, v


@pytest.mark.skipif(not (NCCL_SRC / "HEAD").exists() and not (NCCL_SRC / ".git").exists(),
                    reason="no NVIDIA/nccl clone (set NCCL_SOURCE to one)")  # fmt: skip
def test_the_fixture_equals_the_release_in_a_clone_of_nccl():
    out = subprocess.run(["git", "-C", str(NCCL_SRC), "rev-parse", f"{C.RELEASE}^{{commit}}"],
                         capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
    assert out == CITED["commit"]
    for file, lines in CITED["files"].items():
        text = subprocess.run(["git", "-C", str(NCCL_SRC), "show", f"{C.RELEASE}:{file}"],
                              capture_output=True, text=True, check=True).stdout  # fmt: skip
        source = text.splitlines()
        assert {k: source[int(k) - 1] for k in lines} == lines, file


def test_tuning_table_entries_follow_from_the_cited_constants():
    """DGX A100 and DGX H100 (one node): entries recomputed by hand from the constants."""
    base, hw = C.value("base_latency_us"), C.value("hw_latency_us")
    a100 = nccl.tune("allreduce", machine="dgx-a100")
    # Ring/Simple: baseLat + 2(p-1) NVLink steps; 12 channels x 20 GB/s x p / 2(p-1)
    assert a100.entry("ring", "simple") == pytest.approx(
        (base[1, 2] + 14 * hw[0, 1, 2], 12 * 20.0 * 8 / 14)
    )
    # Ring/LL: half the bus bandwidth, capped by llMaxBws[Ampere][1 node] = 87.7
    assert a100.entry("ring", "ll")[1] == pytest.approx(min(87.7, 0.5 * 240) * 8 / 14)
    # Tree/Simple on one node: 0.92 x 240 (under 12 x 24.0), halved to algorithm bandwidth
    assert a100.entry("tree", "simple") == pytest.approx(
        (base[0, 2] + 2 * 7 * hw[0, 0, 2], 0.5 * min(0.92 * 240, 12 * 24.0))
    )
    h100 = nccl.tune("allreduce", machine="dgx-h100")
    # NVLS: 8 heads at 40 GB/s ((8 + 1) x 40 <= 18 x 20.6), x 5/6; latency hwLat NVLS = 25
    assert h100.entry("nvls", "simple") == pytest.approx((25.0, 8 * 40 * 5 / 6))
    assert h100.entry("ring", "simple")[1] == pytest.approx(12 * 30 * 8 / 14)
    text = nccl.tuning_text(machine="dgx-a100")
    assert "    AllReduce |    15.2/  29.1 |    31.5/  85.9 |    64.4/ 110.4 |" in text
    assert text.count("Algorithm") == 3 and "Max NThreads" in text


def test_the_replica_reproduces_times_nccl_printed_for_itself():
    ref = published.NCCL_PRINTED
    sizes = np.array([s for s, *_ in ref["points"]], dtype=float)
    p = nccl.predict(ref["collective"], sizes, machine=ref["topo"])
    assert list(p.algorithm) == [a for _, a, _, _ in ref["points"]]
    assert list(p.protocol) == [q for _, _, q, _ in ref["points"]]
    assert [a for _, a, _, _ in ref["points"]].count("nvls_tree") == 3
    np.testing.assert_allclose(p.seconds * 1e6, [t for *_, t in ref["points"]], rtol=2e-7)
    # The NVLSTree points depend on the NIC speed: on 400 Gb/s NICs they miss by 5-17 %.
    fast = nccl.predict(ref["collective"], sizes[4:], machine=ref["topo"].with_(nic_gbps=400))
    miss = fast.seconds * 1e6 / np.array([t for *_, t in ref["points"][4:]]) - 1
    assert np.all((miss < -0.05) & (miss > -0.17))


# --- the search -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name,nodes,ring,tree_pattern",
    [("dgx-a100", 1, (12, 20.0, 20.0), "balanced_tree"),
     ("dgx-a100", 4, (8, 24.0, 24.0), "balanced_tree"),
     ("dgx-h100", 1, (12, 30.0, 30.0), "balanced_tree"),
     ("dgx-h100", 4, (8, 48.0, 48.0), "tree"),
     ("hgx-h100-4nic", 5, (8, 24.0, 24.0), "tree"),
     ("pcie", 1, (2, 12.0, 12.0), "balanced_tree")],
)  # fmt: skip
def test_search_finds_the_channels_nccl_logs(name, nodes, ring, tree_pattern):
    comm = tuning.build_comm(nccl.topology(name, nodes=nodes))
    g = comm.graphs[C.RING]
    assert (g.channels, g.bw_intra, g.bw_inter) == ring
    assert comm.graphs[C.TREE].pattern == tree_pattern
    assert comm.nchannels == 2 * ring[0]  # connect.cc:452 doubles them


def test_link_bandwidths_are_nccls():
    a100, h100 = nccl.PRESETS["dgx-a100"], nccl.PRESETS["dgx-h100"]
    assert (a100.nvlink_bw, a100.pcie_bw, a100.nic_bw) == (240.0, 24.0, 25.0)
    assert (round(h100.nvlink_bw, 6), h100.pcie_bw, h100.nic_bw) == (370.8, 48.0, 50.0)
    assert search.max_bw(nccl.topology("dgx-h100", nodes=2)) == 48.0


# --- choices NCCL is known to make ---------------------------------------------------------


def test_nvls_from_five_gpus_and_ring_at_four():
    for g, algo in ((4, "ring"), (5, "nvls"), (6, "nvls"), (7, "nvls"), (8, "nvls")):
        assert (
            nccl.predict(
                "allreduce", 8 * GIB, machine=nccl.PRESETS["dgx-h100"].group(g, 1)
            ).algorithm
            == algo
        )


def test_ring_ll_up_to_1_mib_then_nvls_on_one_h100_node():
    p = nccl.predict("allreduce", [2**20, 2**21], machine="dgx-h100")
    assert list(p.algorithm) == ["ring", "nvls"] and list(p.protocol) == ["ll", "simple"]


def test_two_nodes_prefer_a_tree_and_many_nodes_a_ring_at_large_sizes():
    assert (
        nccl.predict("allreduce", GIB, machine=nccl.topology("dgx-h100", nodes=2)).algorithm
        == "nvls_tree"
    )
    assert (
        nccl.predict("allreduce", 16 * GIB, machine=nccl.topology("dgx-h100", nodes=8)).algorithm
        == "ring"
    )


def test_pat_only_with_one_gpu_per_node():
    one = nccl.topology("dgx-h100", nodes=16, gpus_per_node=1, nics_per_node=1, nvls=False)
    assert nccl.predict("allgather", 4096, machine=one).algorithm == "pat"
    with pytest.raises(ValueError, match="no algorithm"):
        nccl.predict("allgather", 4096, algorithm="pat", machine="dgx-h100")


def test_published_choices_are_reproduced():
    rows = [r for r in published.rows() if r["chosen"]]
    assert len(rows) >= 8 and all(r["algorithm"] == r["chosen"] for r in rows)


def test_the_one_nic_flat_ring_overstates_cross_server_time():
    """The regression behind issue 15: a ring at one NIC's speed against NCCL's model."""
    topo = nccl.topology("dgx-h100", nodes=8)
    model = nccl.predict("allreduce", GIB, algorithm="ring", machine=topo).seconds
    flat = costmodel.collective_time("allreduce", "ring", GIB, 64, 0.0, 1 / 50e9)
    assert 6 < flat / model < 9


# --- properties --------------------------------------------------------------------------

PRESET = st.sampled_from(sorted(nccl.PRESETS))
SIZE = st.floats(1.0, 2.0**40)


def _topo(name, nodes):
    t = nccl.PRESETS[name]
    return t.with_(nodes=nodes, nics_per_node=max(t.nics_per_node, 1))


@settings(max_examples=60, deadline=None)
@given(PRESET, st.integers(1, 64), st.sampled_from(nccl.COLLECTIVES), SIZE, SIZE)
def test_time_grows_with_size_and_stays_finite(name, nodes, coll, a, b):
    t = _topo(name, nodes)
    small, big = sorted((a, b))
    p = nccl.predict(coll, [small, big], machine=t)
    assert np.all(np.isfinite(p.seconds)) and np.all(p.seconds > 0)
    assert p.seconds[0] <= p.seconds[1] * (1 + 1e-12)
    assert np.all(np.isfinite(p.busbw_gb_per_s)) and np.all(p.busbw_gb_per_s >= 0)


@settings(max_examples=40, deadline=None)
@given(PRESET, st.integers(1, 64), st.sampled_from(["ring", "tree"]))
def test_ll_wins_tiny_messages_and_simple_huge_ones(name, nodes, algo):
    """Huge: 1 TiB. (At 720 GPUs the ring's 1,438 steps make LL128's lower latency worth
    more than Simple's 8 % more bandwidth even at 16 GiB: NCCL's model says so too.)"""
    t = _topo(name, nodes)
    p = nccl.predict("allreduce", [8.0, 1024.0 * GIB], algorithm=algo, machine=t)
    assert list(p.protocol) == ["ll", "simple"]


@settings(max_examples=40, deadline=None)
@given(PRESET, st.integers(2, 63), st.sampled_from(nccl.COLLECTIVES), SIZE)
def test_more_nodes_are_never_faster_per_byte_for_a_ring(name, nodes, coll, size):
    """From two servers on (the first server boundary: see the test below)."""
    t = _topo(name, nodes)
    now = nccl.predict(coll, size, algorithm="ring", machine=t).seconds
    more = nccl.predict(coll, size, algorithm="ring", machine=t.with_(nodes=nodes + 1)).seconds
    assert more >= now * (1 - 1e-12)


def test_the_first_server_boundary_can_speed_up_a_broadcast():
    """Where NCCL's model is not monotone in servers: one DGX H100's NVLink ring runs at
    NCCL's intra-node speed (about 360 GB/s), a ring across servers at about 380 (its
    channels through eight NICs: chapter 10 and 11 compare both with measurements), so a
    huge broadcast or reduce (bus bandwidth = algorithm bandwidth) is predicted faster on two
    servers than on one; all-reduce and all-gather are not (their (p-1)/p factors grow)."""
    one, two = _topo("dgx-h100", 1), _topo("dgx-h100", 2)
    for coll in ("broadcast", "reduce"):
        a = nccl.predict(coll, 1e10, algorithm="ring", machine=one)
        b = nccl.predict(coll, 1e10, algorithm="ring", machine=two)
        assert b.seconds < a.seconds and 1.05 < a.seconds / b.seconds < 1.07
        assert 355 < a.busbw_gb_per_s < 365 and 375 < b.busbw_gb_per_s < 385
        assert (
            nccl.predict(coll, 1e6, algorithm="ring", machine=two).seconds
            > nccl.predict(coll, 1e6, algorithm="ring", machine=one).seconds
        )  # small messages pay the network's latency
    for coll in ("allreduce", "allgather", "reducescatter"):
        a = nccl.predict(coll, 1e10, algorithm="ring", machine=one).seconds
        assert nccl.predict(coll, 1e10, algorithm="ring", machine=two).seconds > a


@settings(max_examples=30, deadline=None)
@given(PRESET, st.integers(1, 32), SIZE)
def test_alltoall_is_finite_and_bounded_by_the_rails(name, nodes, size):
    t = _topo(name, nodes)
    p = nccl.predict("alltoall", size, machine=t)
    assert np.isfinite(p.seconds) and p.seconds > 0
    if nodes > 1:  # inter-node bytes cannot beat the GPU's share of its rails
        per_gpu = p2p.network_gb_per_s(machine=t)
        assert p.busbw_gb_per_s <= per_gpu * (t.ranks - 1) / (t.ranks - t.gpus_per_node) + 1e-9


# --- topologies, groups, errors ------------------------------------------------------------


def test_topology_overrides_and_groups():
    t = nccl.topology("dgx-a100", nodes=3, nics_per_node=4, nic_gbps=200)
    assert (t.nodes, t.nics_per_node, t.nic_bw, t.ranks) == (3, 4, 25.0, 24)
    g = nccl.PRESETS["hgx-h100-4nic"].with_(nodes=8).group(2, 4)
    assert (g.gpus_per_node, g.nodes, g.nics_per_node) == (2, 4, 1)
    s = nccl.collective_seconds("allreduce", [1e6, 1e9], 8, 4, machine="dgx-h100")
    assert s.shape == (2,) and np.all(np.diff(s) > 0)


@pytest.mark.parametrize(
    "call",
    [lambda: nccl.topology("dgx-z100"), lambda: nccl.topology("dgx-a100", nodes=0),
     lambda: nccl.topology("dgx-a100", nics_per_node=3),
     lambda: nccl.topology("dgx-a100", nvls=True),
     lambda: nccl.topology("pcie", nodes=2, nics_per_node=0),
     lambda: nccl.topology("dgx-a100", colour="red"),
     lambda: nccl.predict("allreduce", -1, machine="dgx-a100"),
     lambda: nccl.predict("allreduce", float("nan"), machine="dgx-a100"),
     lambda: nccl.predict("alltoall", 8, algorithm="ring", machine="dgx-a100"),
     lambda: nccl.predict("allreduce", 8, algorithm="nvls", machine="dgx-a100"),
     lambda: nccl.predict("allreduce", 8, protocol=["ll", "fast"], machine="dgx-a100"),
     lambda: nccl.tune("alltoall", machine="dgx-a100"),
     lambda: nccl.collective_seconds("allreduce", 8, 16, 1, machine="dgx-a100")],
)  # fmt: skip
def test_bad_input_is_a_clear_value_error(call):
    with pytest.raises(ValueError, match="must|no algorithm"):
        call()


def test_protocol_pictures():
    assert [wire.efficiency(p) for p in ("LL", "LL128", "Simple")] == [0.5, 120 / 128, 1.0]
    for p in ("LL", "LL128", "Simple"):
        frames = wire.protocol_frames(p, 512)
        assert 3 <= len(frames) <= 24 and np.all(frames[-1].cells != wire.DATA)
    chans = wire.ring_paths(8, 8)
    assert sorted(c.entry_nic for c in chans) == sorted(c.exit_nic for c in chans) == list(range(8))
    assert all(sorted(c.order) == list(range(8)) for c in chans)


def test_validation_rows_cover_six_setups_and_rank_them():
    rows = published.rows()
    setups = {(r["ranks"], r["label"].split(",")[0]) for r in rows}
    assert len(setups) >= 6
    busbw = [r for r in rows if r["kind"] == "busbw"]
    assert published.spearman([r["measured"] for r in busbw], [r["predicted"] for r in busbw]) > 0.7


def test_validation_rows_split_on_and_off_design():
    """Issue 29: rows on the machines NCCL's constants were tuned for (Ring or NVLS, large
    sizes, DGX A100/H100/H200) reported apart from the rest, each with error and Spearman."""
    rows = published.rows()
    split = published.split_summary(rows)
    on = [r for r in rows if r["on_design"]]
    assert split["on design"]["rows"] == len(on) >= 10
    assert all(r["kind"] == "busbw" and r["algorithm"] in ("ring", "nvls") for r in on)
    forced_tree = [r for r in rows if r["forced"] in ("tree", "nvls_tree")]
    assert forced_tree and not any(r["on_design"] for r in forced_tree)
    assert not any(r["on_design"] for r in rows if "B200" in r["label"] or "GB200" in r["label"])
    assert split["on design"]["median_abs"] < split["off design"]["median_abs"]
    assert split["on design"]["spearman"] > 0.8 and split["off design"]["spearman"] > 0.8
    # every GTC bar is read from the slide that shows it, and the forced NVLSTree scan is
    # compared with NVLS-Tree, not with NCCL's default choice
    for r in rows:
        if "GTC" in r["note"]:
            assert r["source"] in (published.GTC25_AR, published.GTC24_NVLSTREE), r["label"]
        if r["source"] == published.GTC24_NVLSTREE:
            assert r["forced"] == r["algorithm"] == "nvls_tree"
    by = {r["label"]: r for r in rows}
    assert by["DGX H100 multi-node"]["measured"] == 370.0  # the 2025 slide, 32 GPUs
    with pytest.raises(ValueError, match="rows must be"):
        published.split_summary([{"kind": "busbw"}])
    with pytest.raises(ValueError, match="at least one on design"):
        published.split_summary([r for r in rows if not r["on_design"]])


def test_alltoall_rows_cover_single_and_multi_node_and_rank_them():
    rows = published.alltoall_rows()
    assert len(rows) >= 4 and all(r["algorithm"] == "p2p" and r["kind"] == "busbw" for r in rows)
    by = {r["label"]: r for r in rows}
    single = [m for m in published.ALLTOALL if m.topo.nodes == 1 and m.topo.nics_per_node]
    multi = [m for m in published.ALLTOALL if m.topo.nodes > 1]
    assert len(single) >= 3 and len(multi) >= 2
    assert published.spearman([r["measured"] for r in rows], [r["predicted"] for r in rows]) > 0.9
    # Nothing fitted: on four DGX H100 the model is the maintainers' formula, the per-GPU
    # network bandwidth times (n - 1) / (n - g) (NVIDIA/nccl-tests issue 130), 48 x 31/24.
    assert round(by["4x DGX H100 (8x400G)"]["predicted"], 1) == round(48 * 31 / 24, 1)
    # Inside a node it is what NCCL's ring search grants one GPU: 240 GB/s on an A100.
    assert abs(by["8x A100, one node"]["predicted"] - 240) < 1
    for r in rows:  # the book's model is an upper bound: every published row is at or below
        assert r["error"] > 0


def test_published_records_are_built_from_nccl_csv(monkeypatch):
    """Issue 24: every number of MEASUREMENTS, ALLTOALL and NCCL_PRINTED is a row of
    data/nccl.csv (one record per table and label, in file order)."""
    rows = data.load("nccl")
    # every row is read: three tables, and each record's quantities are ones the module reads
    assert {v.get("table") for v in rows} == {"measurements", "alltoall", "nccl printed", "quoted"}
    quoted = [v for v in rows if v.get("table") == "quoted"]  # the prose's quoted numbers
    assert published.QUOTED == {v.key: v.value for v in quoted} and len(published.QUOTED) == 3
    assert {v.get("quantity") for v in quoted} == {"busbw"} and {v.unit for v in quoted} == {"GB/s"}
    known = {"busbw", "time", "message size", "nodes", "GPUs per node", "NICs per node",
             "NIC speed"}  # fmt: skip
    assert {v.get("quantity") for v in rows} == known
    for table, records in (("measurements", published.MEASUREMENTS),
                           ("alltoall", published.ALLTOALL)):  # fmt: skip
        mine = [v for v in rows if v.get("table") == table]
        assert [m.label for m in records] == list(dict.fromkeys(v.get("label") for v in mine))
        for m in records:
            q = {v.get("quantity"): v for v in mine if v.get("label") == m.label}
            assert m.measured == q[m.kind].value and type(m.measured) is float
            assert q[m.kind].unit == {"busbw": "GB/s", "time": "us"}[m.kind]
            assert m.nbytes == q["message size"].value and type(m.nbytes) is int
            assert (m.topo.nodes, m.topo.gpus_per_node) == (
                q["nodes"].value,
                q["GPUs per node"].value,
            )
            assert m.note == q[m.kind].note and m.release == q[m.kind].get("release")
            assert m.topo.nvls == (q[m.kind].get("nvls") == "on")
            # the address shown is the bib entry's (a GTC talk: the slide's image)
            key = q[m.kind].source
            issue = re.fullmatch(r"(nccl|nccltests)issue(\d+)", key)
            assert m.source == {
                "bekman2024mlengineering": published.ML_ENG,
                "gtc2024s62129": published.GTC24_NVLSTREE,
                "gtc2025s72583": published.GTC25_A2A if table == "alltoall" else published.GTC25_AR,
            }.get(key) or m.source.endswith(
                f"/{'nccl-tests' if issue[1] == 'nccltests' else 'nccl'}/issues/{issue[2]}"
            )
    printed = [v for v in rows if v.get("table") == "nccl printed" and v.get("quantity") == "time"]
    assert [t for *_, t in published.NCCL_PRINTED["points"]] == [v.value for v in printed]
    assert published.NCCL_PRINTED["topo"].nic_gbps == 200.0
    # the records follow the file: a changed row changes the record
    changed = tuple(
        dataclasses.replace(v, value=2 * v.value) if v.key == "8xa100-1-node" else v for v in rows
    )
    monkeypatch.setattr(published.data, "load", lambda name: changed)
    assert published._measurements("measurements")[0].measured == 2 * 234.89


def test_the_validation_rows_have_one_check():
    """split_summary and the validation figure and table share published._check_rows."""
    from scaleout.viz import nccl as VN

    rows = published.rows()
    for call in (published.split_summary, VN.validation_table, VN.validation_figure):
        for bad in ([], [{"kind": "busbw"}], rows * 300, "rows"):
            with pytest.raises(ValueError, match="rows must be a non-empty list of at most"):
                call(bad)
        bad = dict(rows[0], measured=-1.0)
        with pytest.raises(ValueError, match="measured must be"):
            call([bad])


def test_demo_rejects_bad_arguments_before_starting():
    with pytest.raises(SystemExit) as info:
        demo_main(["--min-bytes", "0"])
    assert info.value.code == 2


def test_collective_seconds_counts_the_groups_gpus_not_the_servers():
    # Regression: a group of one GPU on each of 16,384 DGX H100 servers (16,384 ranks) was
    # refused, because the servers were placed first (131,072 GPUs > the 65,536 limit).
    one_each = nccl.collective_seconds("allreduce", 1e9, 1, 16384, machine="dgx-h100")
    group = nccl.PRESETS["dgx-h100"].group(1, 1).with_(nodes=16384)
    assert one_each == nccl.predict("allreduce", 1e9, machine=group).seconds
    full = nccl.collective_seconds("allreduce", 1e9, 8, 4, machine="dgx-h100")
    assert (
        full == nccl.predict("allreduce", 1e9, machine=nccl.topology("dgx-h100", nodes=4)).seconds
    )
