"""Tests for scaleout.topology (paths, loads, times) and its figures (scaleout.viz.topology)."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scaleout import costmodel as M
from scaleout import hardware as H
from scaleout import nccl, trees
from scaleout import topology as T
from scaleout.nccl import published
from scaleout.viz import topology as VT

GB = 1e9


@st.composite
def clusters(draw, rail=None):
    g = draw(st.sampled_from([1, 2, 4, 8]))
    return T.Cluster(
        servers=draw(st.integers(1, 12)),
        gpus_per_server=g,
        nics_per_server=draw(st.sampled_from([d for d in (1, 2, 4, 8) if g % d == 0])),
        rail_optimized=draw(st.booleans()) if rail is None else rail,
        servers_per_leaf=draw(st.integers(1, 6)),
        oversubscription=draw(st.sampled_from([1.0, 2.0, 3.0])),
    )


@st.composite
def cluster_and_pair(draw, rail=None):
    c = draw(clusters(rail))
    return c, draw(st.integers(0, c.num_gpus - 1)), draw(st.integers(0, c.num_gpus - 1))


# --- paths -------------------------------------------------------------------------------
@given(cluster_and_pair())
def test_same_server_pairs_never_leave_the_server(args):
    c, a, b = args
    path = c.path(a, b)
    if c.server_of(a) == c.server_of(b):
        assert path.tier in ("local", "nvlink")
        assert all(link.kind.startswith("nvlink") for link in path.links)
        assert all(s.startswith("NVSwitch") for s in path.switches)
    else:
        assert path.tier in ("leaf", "spine") and path.links[0].kind == "nic-out"


@given(cluster_and_pair(rail=True))
def test_rail_optimized_same_rail_crosses_one_leaf_else_the_spine(args):
    c, a, b = args
    if c.server_of(a) == c.server_of(b):
        return
    path = c.path(a, b)
    same_group = c.server_of(a) // c.servers_per_leaf == c.server_of(b) // c.servers_per_leaf
    if c.rail_of(a) == c.rail_of(b) and same_group:
        assert path.tier == "leaf" and len(path.switches) == 1
        assert path.switches[0].startswith(f"rail {c.rail_of(a)} leaf")
        assert [link.kind for link in path.links] == ["nic-out", "nic-in"]
    else:
        assert path.tier == "spine" and path.switches[1] == "spine" and len(path.switches) == 3
        assert [link.kind for link in path.links] == ["nic-out", "leaf-up", "leaf-down", "nic-in"]


@given(cluster_and_pair(rail=False))
def test_top_of_rack_pairs_cross_one_leaf_only_under_the_same_tor(args):
    c, a, b = args
    if c.server_of(a) == c.server_of(b):
        return
    same_tor = c.server_of(a) // c.servers_per_leaf == c.server_of(b) // c.servers_per_leaf
    assert c.path(a, b).tier == ("leaf" if same_tor else "spine")


def test_paths_in_a_small_dgx_h100_cluster():
    c = T.Cluster(servers=8, gpus_per_server=8, servers_per_leaf=4)  # two rail groups
    assert c.path(3, 3) == T.Path(3, 3, "local", (), ())
    assert c.path(0, 7).switches == ("NVSwitch (domain 0)",)
    assert c.path(2, 10).switches == ("rail 2 leaf (group 0)",)  # GPU 2 of servers 0 and 1
    assert c.path(2, 34).switches == ("rail 2 leaf (group 0)", "spine", "rail 2 leaf (group 1)")
    assert c.path(2, 11).switches == ("rail 2 leaf (group 0)", "spine", "rail 3 leaf (group 0)")
    assert c.path_gb_per_s(0, 7) == 450 and c.path_gb_per_s(2, 10) == 50
    assert c.transfer_time(0, 7, 450e9) == pytest.approx(1 + 1e-6)
    assert c.transfer_time(2, 10, 50e9) == pytest.approx(1 + 3e-6)
    assert c.transfer_time(5, 5, 1e9) == 0.0


def test_an_nvlink_domain_can_span_servers():
    c = T.Cluster(servers=4, gpus_per_server=4, servers_per_nvlink_domain=2)  # like NVL72
    assert c.path(0, 7).tier == "nvlink" and c.domain_of(7) == 0
    assert c.path(0, 8).tier == "leaf" and c.domain_of(8) == 1


def test_shared_nics_and_leaf_uplinks():
    c = T.Cluster(servers=4, gpus_per_server=8, nics_per_server=2, servers_per_leaf=2)
    assert [c.rail_of(g) for g in range(8)] == [0, 0, 0, 0, 1, 1, 1, 1]
    assert c.num_leaves == 4 and c.nic_of(9) == 2
    assert c.leaf_uplink_gb_per_s(0) == 2 * 50  # two NICs on that rail leaf
    tor = T.Cluster(
        servers=4, gpus_per_server=8, rail_optimized=False, servers_per_leaf=2, oversubscription=4.0
    )
    assert tor.num_leaves == 2 and tor.leaf_uplink_gb_per_s(1) == 16 * 50 / 4
    assert tor.leaf_name(1) == "ToR leaf 1"


# --- loads: hand-computed small cases ----------------------------------------------------
def test_tp_allreduce_loads_only_nvlink():
    c = T.Cluster(servers=2, gpus_per_server=4)
    loads = T.link_loads(c, T.tp_allreduce(c, 1 * GB))
    # ring of 4: each GPU sends and receives 2 * 3/4 GB = 1.5 GB over its NVLink port
    assert loads == {T.Link(k, g): 1.5 * GB for k in ("nvlink-out", "nvlink-in") for g in range(8)}
    tp2 = T.link_loads(c, T.tp_allreduce(c, 1 * GB, tp=2))
    assert set(tp2.values()) == {1.0 * GB}  # 2 * 1/2 GB


def test_pp_send_scatter_gather_divides_cross_server_bytes_by_t():
    c = T.Cluster(servers=2, gpus_per_server=4)
    plain = T.link_loads(c, T.pp_send(c, 1 * GB, scatter_gather=False))
    assert plain == {T.Link(k, i): 1 * GB for i in range(4) for k in ("nic-out",)} | {
        T.Link("nic-in", 4 + i): 1 * GB for i in range(4)
    }
    sg = T.pp_send(c, 1 * GB)
    loads = T.link_loads(c, sg)
    assert all(loads[T.Link("nic-out", i)] == 0.25 * GB for i in range(4))
    # the receiving server all-gathers the four quarters: 3 x 0.25 GB per GPU over NVLink
    assert all(loads[T.Link("nvlink-out", 4 + i)] == 0.75 * GB for i in range(4))
    assert T.Link("nvlink-out", 0) not in loads
    t_plain, t_sg = T.tier_bytes(c, T.pp_send(c, 1 * GB, False)), T.tier_bytes(c, sg)
    assert t_plain["leaf"] / t_sg["leaf"] == 4  # cross-server traffic / t


def test_dp_ring_stays_on_the_rails_within_a_group():
    c = T.Cluster(servers=3, gpus_per_server=2)
    loads = T.link_loads(c, T.dp_allreduce(c, 1 * GB))
    assert {link.kind for link in loads} == {"nic-out", "nic-in"}
    assert all(v == pytest.approx(4 / 3 * GB) for v in loads.values())  # 2 (p-1)/p, p = 3


def test_dp_ring_on_top_of_rack_climbs_to_the_spine():
    c = T.Cluster(servers=4, gpus_per_server=2, rail_optimized=False, servers_per_leaf=2)
    loads = T.link_loads(c, T.dp_allreduce(c, 1 * GB))
    # hops 1 -> 2 and 3 -> 0 cross ToRs: 2 ranks x 1.5 GB each on each leaf's uplink
    assert loads[T.Link("leaf-up", 0)] == loads[T.Link("leaf-up", 1)] == 3 * GB
    assert loads[T.Link("leaf-down", 0)] == loads[T.Link("leaf-down", 1)] == 3 * GB
    assert T.tier_bytes(c, T.dp_allreduce(c, 1 * GB)) == {
        "local": 0.0,
        "nvlink": 0.0,
        "leaf": 6 * GB,
        "spine": 6 * GB,
    }


def test_dp_tree_loads_the_inner_nodes():
    c = T.Cluster(servers=3, gpus_per_server=1)  # root 0 with children 1 and 2
    loads = T.link_loads(c, T.dp_allreduce(c, 1 * GB, "tree"))
    assert loads[T.Link("nic-in", 0)] == loads[T.Link("nic-out", 0)] == 2 * GB
    assert loads[T.Link("nic-in", 1)] == loads[T.Link("nic-out", 2)] == 1 * GB
    c7 = T.Cluster(servers=7, gpus_per_server=1)
    assert max(T.link_loads(c7, T.dp_allreduce(c7, 1 * GB, "tree")).values()) == 3 * GB


def test_hierarchical_allreduce_phases():
    c = T.Cluster(servers=2, gpus_per_server=4)
    h = T.hierarchical_allreduce(c, 1 * GB)
    assert len(h.phases) == 3 and h.steps == (3, 2, 3)
    across = T.link_loads(c, h.phases[1])
    assert set(across.values()) == {0.25 * GB}  # 2 (2-1)/2 x 1/4 GB on each rail


@settings(max_examples=60, deadline=None)
@given(clusters(), st.sampled_from(["tp", "pp", "dp-ring", "dp-tree", "hier"]))
def test_loads_conserve_bytes(c, pattern):
    traffic = {
        "tp": lambda: T.tp_allreduce(c, GB),
        "pp": lambda: T.pp_send(c, GB),
        "dp-ring": lambda: T.dp_allreduce(c, GB),
        "dp-tree": lambda: T.dp_allreduce(c, GB, "tree"),
        "hier": lambda: T.hierarchical_allreduce(c, GB),
    }[pattern]()
    loads, tiers = T.link_loads(c, traffic), T.tier_bytes(c, traffic)

    def total(kind):
        return sum(v for link, v in loads.items() if link.kind == kind)

    assert total("nvlink-out") == pytest.approx(tiers["nvlink"])
    assert total("nvlink-out") == pytest.approx(total("nvlink-in"))
    assert total("nic-out") == pytest.approx(tiers["leaf"] + tiers["spine"])
    assert total("leaf-up") == pytest.approx(tiers["spine"]) == pytest.approx(total("leaf-down"))
    if pattern == "tp":
        assert tiers["leaf"] == tiers["spine"] == 0
    one_nic_per_gpu = c.nics_per_server == c.gpus_per_server
    one_rail_group = c.rail_optimized and c.servers <= c.servers_per_leaf
    if pattern in ("pp", "dp-ring", "dp-tree") and one_nic_per_gpu and one_rail_group:
        assert tiers["spine"] == 0  # same-rank traffic rides the rails


# --- times ---------------------------------------------------------------------------------
@pytest.mark.parametrize("g", [2, 4, 8])
def test_nvlink_ring_time_is_the_alpha_beta_ring(g):
    c = T.Cluster(servers=1, gpus_per_server=g)
    t = T.traffic_time(c, T.tp_allreduce(c, GB))
    expected = M.collective_time("allreduce", "ring", GB, g, 1e-6, 1 / 450e9)
    assert t.seconds == pytest.approx(expected) and t.bottleneck.kind.startswith("nvlink")


@pytest.mark.parametrize("over", [1.0, 2.0, 4.0])
def test_scenarios_against_the_ring_formula(over):
    s, g = 16, 8
    out = T.allreduce_scenarios(s, g, 450.0, 50.0, over, GB)
    assert (
        list(out)
        == list(T.SCENARIOS)
        == [
            "inside one server (NVLink)",
            "across servers, on the rails",
            "across servers, through the spine",
            "all GPUs, flat rings on all NICs",
            "all GPUs, hierarchical (Horovod)",
            "all GPUs, one ring (what if one NIC)",
        ]
    )
    ring = M.collective_time("allreduce", "ring", GB, s, 3e-6, 1 / 50e9)
    assert out["across servers, on the rails"].seconds == pytest.approx(ring)
    spine = M.collective_time("allreduce", "ring", GB, s, 3e-6, over / 50e9)
    assert out["across servers, through the spine"].seconds == pytest.approx(spine)
    inside = M.collective_time("allreduce", "ring", GB, g, 1e-6, 1 / 450e9)
    assert out["inside one server (NVLink)"].seconds == pytest.approx(inside)
    h = out["all GPUs, hierarchical (Horovod)"]
    assert h.bandwidth_s == pytest.approx(
        2 * (g - 1) / g * GB / 450e9 + 2 * (s - 1) / s * GB / g / 50e9
    )
    p = s * g  # flat rings over all 128 GPUs: one channel per NIC, each NIC 1/8 of a ring
    flat, one = out["all GPUs, flat rings on all NICs"], out["all GPUs, one ring (what if one NIC)"]
    assert flat.bandwidth_s == pytest.approx(2 * (p - 1) / p * GB / g / 50e9)
    assert one.bandwidth_s == pytest.approx(2 * (p - 1) / p * GB / 50e9)
    assert flat.latency_s == one.latency_s == pytest.approx(2 * (p - 1) * 3e-6)
    assert flat.bottleneck.kind == one.bottleneck.kind == "nic-out"


def test_the_time_of_a_pattern_is_its_busiest_link():
    c = T.Cluster(servers=4, gpus_per_server=4)
    kw = dict(servers=4, gpus_per_server=4, rail_optimized=False, servers_per_leaf=2)
    # one hop in two leaves each ToR: 4 ranks x 1.5 GB on an uplink of 8 NICs x 50 GB/s / o,
    # against 1.5 GB on each 50 GB/s NIC: the uplink is the bottleneck once o > 2
    for over, bottleneck in ((1.0, "nic-out"), (4.0, "leaf-up")):
        t = T.traffic_time(T.Cluster(oversubscription=over, **kw), T.dp_allreduce(c, GB))
        assert t.bottleneck.kind == bottleneck
    assert t.bandwidth_s == pytest.approx(4 * 1.5 * GB / (8 * 50e9 / 4))
    assert t.latency_s == pytest.approx(6 * 3e-6)
    empty = T.traffic_time(T.Cluster(servers=1), T.pp_send(T.Cluster(servers=1), GB))
    assert empty.seconds == 0.0 and empty.bottleneck is None


# --- bad inputs ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(servers=0), r"servers must be an integer in \[1, 65536\]"),
        (dict(gpus_per_server=-8), r"gpus_per_server must be an integer in \[1, 65536\]"),
        (dict(gpus_per_server=8, nics_per_server=3), "nics_per_server must divide"),
        (dict(gpus_per_server=8, nics_per_server=16), "nics_per_server must be an integer in"),
        (dict(servers_per_leaf=0), "servers_per_leaf must be an integer in"),
        (dict(servers=10**7), "servers must be an integer in"),  # issue 21: unbounded
        (dict(servers=8193, gpus_per_server=8), "servers \\* gpus_per_server must be at most"),
        (dict(nic_alpha_s=-1e-6), "nic_alpha_s must be a finite number in"),
        (dict(servers=4.0), "servers must be an integer"),
        (dict(oversubscription=0.5), "oversubscription must be a finite number >= 1"),
        (dict(nic_gb_per_s=0), "nic_gb_per_s must be a finite number > 0"),
        (dict(nvlink_gb_per_s=math.inf), "nvlink_gb_per_s must be a finite number > 0"),
        (dict(rail_optimized="yes"), "rail_optimized must be True or False"),
        (dict(servers=2.5), "servers must be an integer"),
    ],
)
def test_bad_clusters_raise(kwargs, message):
    with pytest.raises(ValueError, match=message):
        T.Cluster(**kwargs)


def test_bad_indices_and_patterns_raise():
    c = T.Cluster(servers=2, gpus_per_server=4)
    with pytest.raises(ValueError, match=r"dst must be an integer in \[0, 7\], got 8"):
        c.path(0, 8)
    with pytest.raises(ValueError, match="src must be an integer in"):
        c.path(-1, 0)
    with pytest.raises(ValueError, match="gpu must be an integer"):
        c.server_of(1.5)
    with pytest.raises(ValueError, match="dst must be an integer in"):
        T.link_loads(c, [(0, 99, 1.0)])
    with pytest.raises(ValueError, match="nbytes must be"):
        T.link_loads(c, [(0, 1, -1.0)])
    with pytest.raises(ValueError, match="tp must divide"):
        T.tp_allreduce(c, GB, tp=3)
    with pytest.raises(ValueError, match="algorithm must be"):
        T.dp_allreduce(c, GB, "butterfly")
    with pytest.raises(ValueError, match="leaf must be an integer in"):
        c.leaf_uplink_gb_per_s(99)
    with pytest.raises(ValueError, match="kind must be one of"):
        c.link_gb_per_s(T.Link("pcie", 0))
    with pytest.raises(ValueError, match=r"link index \(a NIC\) must be an integer in"):
        c.link_gb_per_s(T.Link("nic-out", 8))
    with pytest.raises(ValueError, match="tier must be one of"):
        c.alpha_s("rack")
    with pytest.raises(ValueError, match="scatter_gather must be"):
        T.pp_send(c, GB, scatter_gather=1)
    with pytest.raises(ValueError, match="groups must be"):
        T.ring_allreduce(c, [], GB)


# --- figures ---------------------------------------------------------------------------------
def test_figures_build_with_labelled_axes():
    for figs in (VT.nvlink_timeline_choices(), VT.nvswitch_domain_choices()):
        assert len(figs) == 4
        for label, fig in figs.items():
            direction = label.split(", ")[1]
            assert direction in H.DIRECTIONS and direction in fig.layout.yaxis.title.text
            assert "GB/s" in fig.layout.yaxis.title.text or "TB/s" in fig.layout.yaxis.title.text
    assert VT.nvlink_timeline("per link", "per direction").data[0].y == (20, 25, 25, 25, 50)
    fig = VT.traffic_figure(lambda c: T.dp_allreduce(c, GB), 8, 4)
    assert "spine 14 GB" in fig.layout.annotations[0].text  # rail: 2 of 8 hops
    assert "spine 28 GB" in fig.layout.annotations[1].text  # ToR: 4 of 8 hops
    bars = VT.allreduce_times(T.allreduce_scenarios(4, 8, 450.0, 50.0), "t")
    assert bars.layout.xaxis.title.text == "time (ms)"
    m = VT.measured_bandwidth([1e3, 1e6], [1e8, 1e9], 5e9, {2: 1e9, 4: 1e9})
    assert m.layout.xaxis.title.text == "message size (bytes)"
    with pytest.raises(ValueError, match="scope must be one of"):
        VT.nvlink_timeline("per port", "per direction")


# --- NCCL-style flat rings, the one-NIC case, the double binary tree -----------------------
def test_flat_rings_stripe_over_every_nic_of_two_dgx_h100():
    """16 GPUs in two DGX H100 servers, 256 MB: one channel per NIC puts 1/8 of the ring on
    each NIC; one ring ("what if one NIC") puts all of it through one NIC per server."""
    two, n = T.Cluster(2, 8), 256e6
    striped = T.flat_ring_allreduce(two, n)
    assert striped.name == "flat ring all-reduce, 8 channels" and striped.steps == (30,)
    loads = T.link_loads(two, striped)
    nic = {k: v for k, v in loads.items() if k.kind.startswith("nic")}
    assert len(nic) == 32
    assert all(v == pytest.approx(2 * 15 / 16 * n / 8) for v in nic.values())
    assert T.tier_bytes(two, striped)["spine"] == 0  # every hop stays on its rail
    nvlink = [v for k, v in loads.items() if k.kind.startswith("nvlink")]
    assert all(v == pytest.approx(7 * 2 * 15 / 16 * n / 8) for v in nvlink)  # exit in 1 of 8
    t8 = T.traffic_time(two, striped)
    t1 = T.traffic_time(two, T.flat_ring_allreduce(two, n, channels=1))
    assert t8.bandwidth_s == pytest.approx(1.2e-3) and t8.bottleneck.kind == "nic-out"
    assert t1.bandwidth_s == pytest.approx(9.6e-3) and t1.bottleneck.kind == "nic-out"
    # the one-channel flat ring is the plain ring of ring_allreduce, priced the same
    plain = T.traffic_time(two, T.ring_allreduce(two, [list(range(16))], n))
    assert plain.bandwidth_s == pytest.approx(t1.bandwidth_s)


@settings(max_examples=80, deadline=None)
@given(
    st.integers(1, 12),
    st.sampled_from([(1, 1), (2, 1), (2, 2), (4, 2), (4, 4), (8, 4), (8, 8)]),
    st.integers(1, 3),
)
def test_flat_rings_conserve_bytes_and_balance_the_nics(servers, shape, per_nic):
    g, nics = shape
    c = T.Cluster(servers, g, nics_per_server=nics, servers_per_leaf=servers)
    traffic = T.flat_ring_allreduce(c, GB, channels=per_nic * nics)
    p = c.num_gpus
    out = sum(v for k, v in T.link_loads(c, traffic).items() if k.kind in ("nvlink-out", "nic-out"))
    assert out == pytest.approx(2 * (p - 1) * GB)  # every GPU sends 2(p-1)/p n in all
    nic = [v for k, v in T.link_loads(c, traffic).items() if k.kind == "nic-out"]
    alternating = nics > 2 or servers <= 2 or servers % 2 == 0 or nics == 1
    if servers > 1 and alternating:
        assert len(nic) == servers * nics  # every NIC of every server is busy ...
        assert max(nic) == pytest.approx(min(nic))  # ... with the same share
        assert max(nic) == pytest.approx(2 * (p - 1) / p * GB / nics)
        assert T.tier_bytes(c, traffic)["spine"] == 0
    t = T.traffic_time(c, traffic)
    assert math.isfinite(t.seconds) and t.seconds >= t.bandwidth_s >= 0


@pytest.mark.parametrize("servers", [2, 3, 7, 8, 9, 16, 31])
def test_double_binary_tree_loads_no_nic_more_than_the_ring(servers):
    """Chapter 9's trees: for odd counts rank 0 is an inner node of both trees (with one
    child in each), and still no NIC carries more than 2 n per direction; one binary tree
    puts 3 n on its inner nodes."""
    c = T.Cluster(servers, 1)
    report = trees.check_double_tree(servers)
    if servers % 2:
        assert report.interior_in_both.tolist() == [0]
    else:
        assert report.interior_in_both.size == 0
    assert report.max_children <= 2
    double = T.link_loads(c, T.dp_allreduce(c, GB, "double-tree"))
    assert max(double.values()) <= 2 * GB + 1e-6
    single = T.link_loads(c, T.dp_allreduce(c, GB, "tree"))
    assert max(single.values()) == (3 * GB if servers >= 5 else 2 * GB if servers > 2 else GB)


# --- issue 21: bad input is a clear ValueError, and work stays bounded ------------------------
def test_negative_sizes_and_steps_are_refused():
    c = T.Cluster(servers=2, gpus_per_server=2)
    with pytest.raises(ValueError, match="nbytes must be a finite number >= 0"):
        T.Traffic("bad", (((0, 2, -1e9),),), (1,))
    with pytest.raises(ValueError, match="steps must be an integer in"):
        T.Traffic("bad", (((0, 2, 1e9),),), (-5,))
    with pytest.raises(ValueError, match="steps must be one count per phase"):
        T.Traffic("bad", (((0, 2, 1e9),), ()), (1,))
    with pytest.raises(ValueError, match="nbytes must be"):
        T.flat_ring_allreduce(c, -1.0)
    t = T.traffic_time(c, T.Traffic("ok", (((0, 2, 1e9),),), (1,)))
    assert t.latency_s > 0 and t.bandwidth_s > 0


def test_sizes_have_limits():
    with pytest.raises(ValueError, match="servers must be an integer in"):
        T.allreduce_scenarios(10**7, 8, 450.0, 50.0)
    with pytest.raises(ValueError, match="servers \\* gpus_per_server must be at most 65536"):
        T.allreduce_scenarios(16384, 8, 450.0, 50.0)
    c = T.Cluster(servers=2, gpus_per_server=4)
    with pytest.raises(ValueError, match="channels must be an integer in"):
        T.flat_ring_allreduce(c, GB, channels=10**6)
    with pytest.raises(ValueError, match="channels \\* GPUs must be at most"):
        T.flat_ring_allreduce(T.Cluster(8192, 8), GB, channels=64)


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda c: T.link_loads(1, []), "cluster must be a Cluster"),
        (lambda c: T.traffic_time(c, "ring"), "traffic must be a Traffic"),
        (lambda c: T.tier_bytes(c, None), "traffic must be a Traffic"),
        (lambda c: T.tp_allreduce(object(), GB), "cluster must be a Cluster"),
        (lambda c: T.link_loads(c, "4"), "flows must be an iterable"),
        (lambda c: T.link_loads(c, [[1.0], [1.0, 2.0]]), "flow must be a Flow or"),
        (lambda c: T.link_loads(c, [("a", 1, 1.0)]), "src must be an integer"),
        (lambda c: c.link_gb_per_s(("nic-out",)), "link must be a Link or"),
        (lambda c: c.alpha_s(["leaf"]), "tier must be one of"),
        (lambda c: T.dp_allreduce(c, GB, {}), "algorithm must be one of"),
        (lambda c: T.ring_allreduce(c, [[0, 0, 1]], GB), "groups must be"),
        (lambda c: T.ring_allreduce(c, "0123", GB), "groups must be"),
        (lambda c: T.Timing(-1.0, 0.0, 0.0), "seconds must be"),
        (lambda c: T.Timing(1.0, 0.0, 1.0, "nic"), "bottleneck must be a Link or None"),
        (lambda c: T.Path(0, 1, "moon", (), ()), "tier must be one of"),
        (lambda c: T.Flow(0, 1, float("nan")), "nbytes must be"),
        (lambda c: T.Link("nic-out", -1), "index must be an integer in"),
    ],
)
def test_objects_are_checked_not_duck_typed(call, message):
    with pytest.raises(ValueError, match=message):
        call(T.Cluster(servers=2, gpus_per_server=4))


def test_results_that_overflow_are_refused():
    c = T.Cluster(servers=2, gpus_per_server=2, nic_gb_per_s=1e-300)
    with pytest.raises(ValueError, match="must stay finite"):
        T.traffic_time(c, T.dp_allreduce(c, 1e300))


# --- properties of the fluid model ------------------------------------------------------------
PATTERNS = {
    "tp": lambda c, n: T.tp_allreduce(c, n),
    "pp": lambda c, n: T.pp_send(c, n),
    "dp-ring": lambda c, n: T.dp_allreduce(c, n),
    "dp-tree": lambda c, n: T.dp_allreduce(c, n, "tree"),
    "dp-double-tree": lambda c, n: T.dp_allreduce(c, n, "double-tree"),
    "hier": lambda c, n: T.hierarchical_allreduce(c, n),
    "flat": lambda c, n: T.flat_ring_allreduce(c, n),
    "flat-1": lambda c, n: T.flat_ring_allreduce(c, n, 1),
}


@settings(max_examples=80, deadline=None)
@given(clusters(), st.sampled_from(sorted(PATTERNS)), st.floats(1.0, 1e12))
def test_times_are_finite_nonnegative_and_grow_with_size(c, pattern, nbytes):
    small = T.traffic_time(c, PATTERNS[pattern](c, nbytes))
    large = T.traffic_time(c, PATTERNS[pattern](c, 2 * nbytes))
    for t in (small, large):
        assert all(math.isfinite(x) and x >= 0 for x in t[:3])
        assert t.seconds == pytest.approx(t.latency_s + t.bandwidth_s)
    assert large.latency_s == small.latency_s  # latency does not depend on size
    assert large.bandwidth_s == pytest.approx(2 * small.bandwidth_s)  # fluid: linear
    loads = T.link_loads(c, PATTERNS[pattern](c, nbytes))
    assert all(math.isfinite(v) and v >= 0 for v in loads.values())


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 64), st.sampled_from([4, 8]), st.sampled_from([1.0, 2.0, 4.0]))
def test_striped_rings_never_lose_to_one_ring(servers, g, over):
    out = T.allreduce_scenarios(servers, g, 450.0, 50.0, over, GB)
    flat = out["all GPUs, flat rings on all NICs"]
    one = out["all GPUs, one ring (what if one NIC)"]
    assert flat.bandwidth_s * g == pytest.approx(one.bandwidth_s)  # g NICs against one
    assert flat.seconds <= one.seconds
    assert all(math.isfinite(t.seconds) and t.seconds > 0 for t in out.values())


# --- NCCL's model beside the fluid bound ------------------------------------------------
def test_nccl_scenarios_are_nccls_predictions():
    m = T.nccl_machine(8, 4, 400)
    assert (
        m.with_(name="dgx-h100", source=nccl.PRESETS["dgx-h100"].source) == nccl.PRESETS["dgx-h100"]
    )
    out = T.nccl_allreduce_scenarios(32, GB, machine=m)
    assert tuple(out) == T.NCCL_SCENARIOS
    rails, everyone = out.values()
    cluster = nccl.topology("dgx-h100", nodes=32)
    assert rails.seconds == nccl.predict("allreduce", GB, machine=cluster.group(1, 32)).seconds
    assert everyone.seconds == nccl.predict("allreduce", GB, machine=cluster).seconds
    assert (rails.algorithm, everyone.algorithm) == ("ring", "nvls_tree")
    fluid = T.allreduce_scenarios(32, 8, 450.0, 50.0, 2.0, GB)
    # NCCL is never faster than the fluid bound on the rails (its channels run at 48 GB/s,
    # the GPU's PCIe link, below the NIC's 50), and within 10 % of it at 1 GB
    on_rails = fluid["across servers, on the rails"].seconds
    assert on_rails < rails.seconds < 1.1 * on_rails
    # all GPUs: NCCL near the striped rings' fluid time, far from "what if one NIC"
    striped = fluid["all GPUs, flat rings on all NICs"].seconds
    one_nic = fluid["all GPUs, one ring (what if one NIC)"].seconds
    assert 0.9 < everyone.seconds / striped < 1.1 and one_nic / everyone.seconds > 6
    fig = VT.allreduce_times(fluid, "t", out)
    assert len(fig.data) == 4 and "NCCL" in fig.data[2].name
    assert list(fig.data[2].customdata) == ["nvls_tree/simple", "ring/simple"]


@given(servers=st.sampled_from([2, 3, 8, 64, 512]), g=st.sampled_from([4, 8]),
       gen=st.sampled_from([2, 3, 4, 5]), gbit=st.sampled_from([100, 200, 400, 800]),
       nbytes=st.floats(1e3, 1e11))  # fmt: skip
@settings(max_examples=60, deadline=None)
def test_nccl_scenarios_respect_the_nic_bound(servers, g, gen, gbit, nbytes):
    # no all-reduce across servers (without in-network reduction) beats 2(S-1)/S of the
    # data over the NICs it may use: one per group on the rails, all g of a server at once
    out = T.nccl_allreduce_scenarios(servers, nbytes, machine=T.nccl_machine(g, gen, gbit))
    nic = gbit / 8 * 1e9
    bound = 2 * (servers - 1) / servers * nbytes / nic
    rails, everyone = out.values()
    assert math.isfinite(rails.seconds) and rails.seconds >= bound
    assert math.isfinite(everyone.seconds) and everyone.seconds >= bound / g


def test_nccl_scenarios_check_their_inputs():
    with pytest.raises(ValueError, match="nvlink_generation must be"):
        T.nccl_machine(8, 1, 400)  # NCCL's model has no P100
    with pytest.raises(ValueError, match="machine must be"):
        T.nccl_allreduce_scenarios(4, machine="dgx-z")
    with pytest.raises(ValueError, match="nbytes must be"):
        T.nccl_allreduce_scenarios(4, 0.0, machine="dgx-h100")
    with pytest.raises(ValueError, match="servers must be"):
        T.nccl_allreduce_scenarios(0, machine="dgx-h100")
    with pytest.raises(ValueError, match="at most 65536 GPUs"):
        T.nccl_allreduce_scenarios(65536, machine="dgx-h100")
    fluid = T.allreduce_scenarios(4, 8, 450.0, 50.0)
    with pytest.raises(ValueError, match="nccl_times value must be"):
        VT.allreduce_times(fluid, "t", {"x": 1.0})
    with pytest.raises(ValueError, match="nccl_times label must be"):
        VT.allreduce_times(
            fluid, "t", {T.SCENARIOS[0]: nccl.predict("allreduce", 1e6, machine="dgx-h100")}
        )


# --- what the fluid bound assumes: the GPUs reduce (review 3, chapter 11 item 1) ------------
def test_allreduce_bound_closed_forms():
    assert T.allreduce_bound(8, GB, 450.0) == pytest.approx(2 * 7 / 8 * GB / 450e9)
    assert T.allreduce_bound(8, GB, 450.0, in_network=True) == pytest.approx(GB / 450e9)
    assert T.allreduce_bound(1, GB, 450.0) == T.allreduce_bound(1, GB, 450.0, True) == 0.0
    assert T.allreduce_bound(2, GB, 50.0) == T.allreduce_bound(2, GB, 50.0, True)  # 2(1/2) = 1
    one = T.Cluster(servers=1, gpus_per_server=8)
    ring = T.traffic_time(one, T.tp_allreduce(one, GB))
    assert ring.bandwidth_s == pytest.approx(T.allreduce_bound(8, GB, 450.0))  # ring meets it
    with pytest.raises(ValueError, match="gpus must be"):
        T.allreduce_bound(0, GB, 450.0)
    with pytest.raises(ValueError, match="in_network must be"):
        T.allreduce_bound(8, GB, 450.0, in_network=1)
    with pytest.raises(ValueError, match="gb_per_s must be"):
        T.allreduce_bound(8, GB, 0.0)
    with pytest.raises(ValueError, match="allreduce_bound"):
        T.allreduce_bound(8, 1e308, 1e-300)


def test_nvls_measurements_beat_the_gpu_reduction_bound_not_the_in_network_one():
    # a floor that a real system beats is not a floor: NVLS's published 480 GB/s bus
    # bandwidth on 8 H200s (450 GB/s NVLink per direction) is above what any algorithm in
    # which the GPUs reduce can reach, and below the in-network bound
    rows = {r["label"]: r for r in published.rows()}
    nvls, ring = rows["8xH200 1 node, NVLS"], rows["8xH200 1 node, NVLS off"]
    n, p = nvls["nbytes"], nvls["ranks"]
    cap = M.busbw("allreduce", n, T.allreduce_bound(p, n, 450.0), p) / 1e9
    cap_in = M.busbw("allreduce", n, T.allreduce_bound(p, n, 450.0, True), p) / 1e9
    assert cap == pytest.approx(450.0) and cap_in == pytest.approx(787.5)
    assert nvls["algorithm"] == "nvls" and cap < nvls["measured"] < cap_in
    assert ring["algorithm"] == "ring" and ring["measured"] < cap


@settings(max_examples=60, deadline=None)
@given(p=st.integers(2, 8), nbytes=st.floats(1e3, 1e11))
def test_nccl_respects_the_bound_of_its_algorithm(p, nbytes):
    topo = nccl.topology("dgx-h100").group(p, 1)
    best = nccl.predict("allreduce", nbytes, machine=topo)
    ring = nccl.predict("allreduce", nbytes, algorithm="ring", machine=topo)
    assert best.seconds >= T.allreduce_bound(p, nbytes, 450.0, in_network=True)
    assert ring.seconds >= T.allreduce_bound(p, nbytes, 450.0)


def test_titles_say_what_the_figure_shows():  # review 3, chapter 11 item 4
    def ring(c):
        return T.dp_allreduce(c, GB)

    fig = VT.traffic_figure(ring, 8, 4, headline="Only hops that leave a group climb")
    title = fig.layout.title.text
    assert title.startswith("Only hops that leave a group climb<br><sup>DP ring all-reduce, ")
    assert "8 servers × 4 GPUs, 1 GB per GPU" in title and "orange width" not in title
    assert VT.traffic_figure(ring, 2, 4).layout.title.text.startswith("DP ring all-reduce<br>")
    with pytest.raises(ValueError, match="headline must be"):
        VT.traffic_figure(ring, 2, 4, headline="")
    bars = VT.allreduce_times(T.allreduce_scenarios(4, 8, 450.0, 50.0), "t")
    assert all("GPUs reduce" in trace.name for trace in bars.data[:2])
    timeline = VT.nvlink_timeline("per GPU", "bidirectional")
    assert "third-party copies" in timeline.layout.title.text
