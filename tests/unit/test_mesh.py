"""scaleout.mesh: Megatron-Core's rank layout, checked against hand-written examples."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from scaleout import mesh
from scaleout.mesh import Mesh
from scaleout.planner import comm


def test_megatron_docstring_example():
    # megatron/core/parallel_state.py, initialize_model_parallel's docstring: 16 GPUs,
    # tensor 2, pipeline 4, so data 2.
    m = Mesh(tp=2, pp=4, dp=2)
    assert m.size == 16
    assert m.groups("tp") == [[0, 1], [2, 3], [4, 5], [6, 7], [8, 9], [10, 11], [12, 13],
                              [14, 15]]  # fmt: skip
    assert m.groups("dp") == [[0, 2], [1, 3], [4, 6], [5, 7], [8, 10], [9, 11], [12, 14],
                              [13, 15]]  # fmt: skip
    assert m.groups("pp") == [[0, 4, 8, 12], [1, 5, 9, 13], [2, 6, 10, 14], [3, 7, 11, 15]]
    assert m.coords(13) == {"tp": 1, "cp": 0, "ep": 0, "dp": 0, "pp": 3, "edp": 0}


def test_context_parallel_sits_between_tensor_and_data():
    # order tp-cp-ep-dp-pp: rank = tp + 2 cp + 4 dp for t = c = d = 2
    m = Mesh(tp=2, cp=2, dp=2)
    assert m.groups("cp") == [[0, 2], [1, 3], [4, 6], [5, 7]]
    assert m.groups("dp") == [[0, 4], [1, 5], [2, 6], [3, 7]]
    assert m.rank(tp=1, cp=0, dp=1) == 5


def test_expert_parallel_folds_out_of_data_parallel():
    # Megatron's expert generator: tp, ep, edp = world / (tp ep pp), pp; ep right after tp
    m = Mesh(dp=8, ep=4)
    assert m.size == 8 and m.edp == 2
    assert m.groups("ep") == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert m.groups("edp") == [[0, 4], [1, 5], [2, 6], [3, 7]]
    assert m.groups("dp") == [list(range(8))]
    # with context parallelism the expert mesh folds cp and dp together (cp = 1 there)
    m = Mesh(tp=2, cp=2, dp=2, ep=4)
    assert m.groups("ep") == [[0, 2, 4, 6], [1, 3, 5, 7]]
    assert m.groups("edp") == [[r] for r in range(8)]


def test_tp_pp_dp_order():
    # Megatron's --use-tp-pp-dp-mapping order: pipeline varies before data
    m = Mesh(tp=2, pp=2, dp=2, order="tp-cp-ep-pp-dp")
    assert m.groups("pp") == [[0, 2], [1, 3], [4, 6], [5, 7]]
    assert m.groups("dp") == [[0, 4], [1, 5], [2, 6], [3, 7]]


def test_picotron_grid_is_the_tp_pp_dp_order():
    # picotron's torch.arange(world).view(dp, pp, tp): tp fastest, then pp, then dp
    dp, pp, tp = 2, 3, 2
    m = Mesh(tp=tp, pp=pp, dp=dp, order="tp-cp-ep-pp-dp")
    grid = [[[tp * (pp * d + p) + t for t in range(tp)] for p in range(pp)] for d in range(dp)]
    assert m.groups("tp") == [grid[d][p] for d in range(dp) for p in range(pp)]
    assert sorted(m.groups("dp")) == sorted(
        [[grid[d][p][t] for d in range(dp)] for p in range(pp) for t in range(tp)]
    )


@pytest.mark.parametrize(("t", "d"), list(itertools.product([1, 2, 4, 8, 16], range(1, 17))))
def test_group_shape_agrees_with_the_planners_placement(t, d):
    g = 8
    m = Mesh(tp=t, dp=d)
    assert m.group_shape("dp", g) == comm._group(t, d, g)
    if t <= g or t % g == 0:
        assert m.group_shape("tp", g) == ((t, 1) if t <= g else (g, t // g))


def test_group_shape_of_a_straddling_group():
    # t = 3 on servers of 8: the group [6, 7, 8] spans two servers, two GPUs on the first
    assert Mesh(tp=3, dp=4).group_shape("tp", 8) == (2, 2)
    assert Mesh(tp=2, dp=2, pp=4).group_shape("pp", 8) == (2, 2)


sizes = st.integers(1, 4)


@given(sizes, sizes, sizes, sizes, st.permutations(mesh.AXES), st.integers(0, 3))
def test_groups_partition_the_ranks_and_match_coords(tp, cp, dp, pp, order, ep_pick):
    divisors = [e for e in range(1, cp * dp + 1) if cp * dp % e == 0]
    ep = divisors[ep_pick % len(divisors)]
    try:
        m = Mesh(tp=tp, cp=cp, ep=ep, dp=dp, pp=pp, order="-".join(order))
    except ValueError as e:  # an order whose expert mesh moves tp or pp groups (Megatron too)
        assert "expert mesh keeps" in str(e)
        assume(False)
    coords = [m.coords(r) for r in range(m.size)]
    for axis in mesh.GROUP_AXES:
        size = m.edp if axis == "edp" else getattr(m, axis)
        expert = axis in ("ep", "edp")
        others = ("tp", "ep", "edp", "pp") if expert else ("tp", "cp", "dp", "pp")
        groups = m.groups(axis)
        assert sorted(r for grp in groups for r in grp) == list(range(m.size))
        for grp in groups:
            assert [coords[r][axis] for r in grp] == list(range(size))
            for other in others:
                if other != axis:
                    assert len({coords[r][other] for r in grp}) == 1
    for r in range(m.size):
        c = coords[r]
        assert m.rank(tp=c["tp"], cp=c["cp"], dp=c["dp"], pp=c["pp"]) == r


def test_dense_and_expert_meshes_share_pipeline_groups():
    # Megatron asserts decoder and expert generators give the same pp groups (order ends in pp)
    m = Mesh(tp=2, cp=2, dp=4, ep=8, pp=2)
    sizes, order = m._layout("ep")
    expert_pp = mesh._mixed_radix_groups(sizes, order, "pp")
    assert expert_pp == m.groups("pp")


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"tp": 0}, "tp must be"),
        ({"dp": 2, "ep": 4}, "ep must be a divisor of cp \\* dp"),
        ({"order": "tp-dp-pp"}, "order must be"),
        ({"order": "tp-tp-ep-dp-pp"}, "order must be"),
        ({"tp": 256, "dp": 256, "pp": 2}, "at most 65536"),
    ],
)
def test_bad_meshes_raise(kwargs, match):
    with pytest.raises(ValueError, match=match):
        Mesh(**kwargs)


def test_orders_megatron_refuses_raise():
    with pytest.raises(ValueError, match="expert mesh keeps the pp groups"):
        Mesh(cp=2, pp=2, order="tp-cp-ep-pp-dp")
    Mesh(cp=2, ep=2, pp=2, order="tp-cp-ep-pp-dp")  # edp = dp: allowed, as in Megatron


def test_bad_queries_raise():
    m = Mesh(tp=2, dp=2)
    with pytest.raises(ValueError, match="axis must be"):
        m.groups("sp")
    with pytest.raises(ValueError, match="rank must be"):
        m.coords(4)
    with pytest.raises(ValueError, match="gpus_per_server must be"):
        m.group_shape("tp", 0)
    with pytest.raises(ValueError, match="dp must be"):
        m.rank(dp=2)


@pytest.mark.parametrize("t", [1, 2, 4, 8, 16, 32])
def test_tensor_parallels_group_shape_is_the_meshs(t):
    from scaleout.tensor_parallel import network

    assert network.group_shape(t, 8) == Mesh(tp=t).group_shape("tp", 8)


@pytest.mark.parametrize(("cp", "stride"), list(itertools.product([1, 2, 4, 8, 16], [1, 2, 4, 8])))
def test_context_parallels_placement_is_the_meshs(cp, stride):
    # a cp group of Megatron's order takes every tp-th GPU: stride = tp
    from scaleout.context_parallel import network

    per_server, servers = Mesh(tp=stride, cp=cp).group_shape("cp", 8)
    assert network.ranks_per_node(cp, stride, machine="dgx-h100") == per_server
    assert per_server * servers == cp


@pytest.mark.parametrize(("tp", "ep", "edp"), list(itertools.product([1, 2], [1, 2, 4], [1, 2, 3])))
def test_moe_mesh_is_this_layout(tp, ep, edp):
    from scaleout import moe

    m = moe.mesh(tp * ep * edp, ep, tp)
    grid = m.grid  # grid[d, e, t]: chapter 7's picture of the same order
    for r in range(m.world):
        c = m.coords(r)
        assert grid[c["expert_dp"], c["ep"], c["tp"]] == r
    for kind in ("tp", "ep", "expert_dp", "dp"):
        mine = Mesh(tp=tp, ep=ep, dp=ep * edp).groups("edp" if kind == "expert_dp" else kind)
        assert m.groups(kind) == sorted(sorted(g) for g in mine)
