"""scaleout.trees: NCCL's double binary tree, its properties, the pipelined all-reduce and
its costs; the chapter's figures. The gloo two-tree all-reduce of scaleout.demos.trees:
tests/integration."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scaleout import collectives as C
from scaleout import costmodel as M
from scaleout import trees as T
from scaleout.viz import trees as VT

OLD = (2, 4, 0)  # any release before 2.8.3


# --------------------------------------------------------------- NCCL's rule, by hand


def nccl_btree_by_hand(n: int, rank: int, new_rule: bool = True):
    """(parent, down0, down1) from the rule of ncclGetBtree written as a plain loop, one rank
    at a time: find the lowest set bit; parent = clear it and set the next bit, or just
    clear it if that leaves the range; children = rank - bit/2 and the largest rank + bit/2,
    rank + bit/4, ... inside the range."""
    bit = 1
    while bit < n and not bit & rank:
        bit *= 2
    if rank == 0:
        child = bit // 2 if n > 1 else -1
        return (-1, -1, child) if new_rule else (-1, child, -1)
    parent = (rank ^ bit) | (bit * 2)
    if parent >= n:
        parent = rank ^ bit
    half = bit // 2
    if half == 0:
        return parent, -1, -1
    down1, step = -1, half
    while step > 0:
        if rank + step < n:
            down1 = rank + step
            break
        step //= 2
    return parent, rank - half, down1


def second_tree_by_hand(n: int, rank: int, new_rule: bool = True):
    """ncclGetDtree's second tree for one rank: shift (odd n from 2.8.3, even n before) or
    mirror."""
    shift = (n % 2 == 1) == new_rule
    if shift:
        links = nccl_btree_by_hand(n, (rank - 1) % n, new_rule)
        return tuple(-1 if x < 0 else (x + 1) % n for x in links)
    links = nccl_btree_by_hand(n, n - 1 - rank, new_rule)
    return tuple(-1 if x < 0 else n - 1 - x for x in links)


def links(tree: T.BinaryTree):
    return [(int(p), int(a), int(b)) for p, (a, b) in zip(tree.parent, tree.children, strict=True)]


@pytest.mark.parametrize("new_rule", [True, False])
def test_trees_match_the_rule_written_out_by_hand_for_n_up_to_200(new_rule):
    version = T.RULE_CHANGED if new_rule else OLD
    for n in range(1, 201):
        first, second = T.double_binary_tree(n, version)
        assert links(first) == [nccl_btree_by_hand(n, r, new_rule) for r in range(n)], n
        assert links(second) == [second_tree_by_hand(n, r, new_rule) for r in range(n)], n


def test_tree_14_is_the_drawing_in_nccl_trees_cc():
    # The illustration above ncclGetBtree: 0-8, 8-{4,12}, 4-{2,6}, 12-{10,13}, ...
    t = T.binary_tree(14)
    assert t.children[0].tolist() == [-1, 8]
    assert t.children[8].tolist() == [4, 12] and t.children[12].tolist() == [10, 13]
    assert t.children[4].tolist() == [2, 6] and t.children[10].tolist() == [9, 11]
    assert t.parent[13] == 12  # 13 -> 14 is out of range, so 13 hangs from 12
    assert [r for r in range(14) if t.is_leaf[r]] == list(range(1, 14, 2))


def test_second_trees_are_the_drawings_in_nccl_trees_cc():
    # Mirror for n = 12: root 11, then 3, {1, 7}, {5, 9}, ...
    _, mirror = T.double_binary_tree(12)
    assert mirror.root == 11 and mirror.children[11].tolist() == [-1, 3]
    assert mirror.children[3].tolist() == [7, 1]  # NCCL keeps the mirrored slots
    assert sorted(mirror.children[7].tolist()) == [5, 9] and mirror.parent[10] == 9
    # Shift for n = 13: root 1, then 9, {5, 0}, 0 -> 11, 11 -> {10, 12}
    _, shift = T.double_binary_tree(13)
    assert shift.root == 1 and shift.children[1].tolist() == [-1, 9]
    assert shift.children[9].tolist() == [5, 0]
    assert shift.children[0].tolist() == [11, -1] and shift.children[11].tolist() == [10, 12]


def test_small_cases_by_hand():
    one = T.binary_tree(1)
    assert links(one) == [(-1, -1, -1)]
    first, second = T.double_binary_tree(2)
    assert links(first) == [(-1, -1, 1), (0, -1, -1)]
    assert links(second) == [(1, -1, -1), (-1, -1, 0)]  # mirror: root 1, child 0
    first, second = T.double_binary_tree(3)
    assert first.parent.tolist() == [-1, 2, 0]  # a chain 0 - 2 - 1
    assert second.parent.tolist() == [1, -1, 0]  # shifted: 1 - 0 - 2
    assert T.binary_tree(3, OLD).children[0].tolist() == [2, -1]  # before 2.8.3: slot 0


# ------------------------------------------------------------------ properties, all n


@pytest.mark.parametrize("block", range(8))
def test_properties_for_every_n_up_to_1024(block):
    for n in range(1 + 128 * block, 129 + 128 * block):
        report = T.check_double_tree(n)
        pair = T.double_binary_tree(n)
        for tree, tree_report in zip(pair, report.trees, strict=True):
            assert tree_report.spanning and tree_report.consistent, n
            assert tree_report.max_children <= 2, n
            assert tree_report.depth == math.ceil(math.log2(n)) == tree.depth, n
            assert tree.n == n and int(np.sum(tree.parent < 0)) == 1
            slot = tree.child_type[tree.parent >= 0]  # NCCL's parentChildType = the slot
            kids = np.flatnonzero(tree.parent >= 0)
            assert np.array_equal(tree.children[tree.parent[kids], slot], kids), n
        assert (pair[0].root, pair[1].root) == T.dtree_roots(n), n
        assert report.max_parents <= min(2, n - 1) and report.max_children <= 2, n
        assert np.array_equal(np.flatnonzero(pair[0].is_leaf), np.arange(1, n, 2)) or n == 1
        if n == 1:  # degenerate: root and leaf of both trees
            assert not report.ok and report.leaf_in_both.tolist() == [0]
            continue
        assert report.ok and report.leaf_in_both.size == 0, n
        if n % 2 == 0:  # every rank a leaf in exactly one tree, interior in the other
            assert report.complementary and report.notes == (), n
        else:  # 2 * (n - 1) / 2 = n - 1 leaf places: rank 0 is interior in both
            assert report.interior_in_both.tolist() == [0] and not report.complementary, n
            assert "interior in both" in report.notes[0]


def test_rule_before_2_8_3_fails_for_odd_n_because_leaves_coincide():
    for n in range(2, 200):
        report = T.check_double_tree(n, OLD)
        if n % 2 == 0:
            assert report.ok and report.complementary, n
        else:  # mirroring maps odd ranks to odd ranks: tree 1's leaves are tree 2's too
            assert report.leaf_in_both.tolist() == list(range(1, n, 2)), n
            assert not report.ok and "replaced in 2.8.3" in report.notes[0]


def test_check_tree_finds_broken_trees():
    good = T.binary_tree(8)
    assert T.check_tree(good).ok
    cycle = T.BinaryTree(np.array([-1, 2, 1, 2]), np.array([[-1, -1], [2, -1], [1, 3], [-1, -1]]),
                         np.array([-1, 0, 0, 1]))  # fmt: skip
    report = T.check_tree(cycle)
    assert not report.spanning and not report.ok and report.depth == -1
    lying = T.BinaryTree(good.parent, good.children.copy(), good.child_type)
    lying.children[4, 0] = 3  # 4 claims 3, whose parent is 2
    assert not T.check_tree(lying).consistent
    two_roots = T.BinaryTree(np.r_[-1, -1, good.parent[2:]], good.children, good.child_type)
    assert not T.check_tree(two_roots).spanning
    with pytest.raises(ValueError, match="not a tree"):
        cycle.depths()


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: T.binary_tree(0), r"n must be an integer in \[1, 1048576\]"),
        (lambda: T.double_binary_tree(2.5), "n must be an integer"),
        (lambda: T.double_binary_tree(True), "n must be an integer"),
        (lambda: T.double_binary_tree("4"), "n must be an integer"),
        (lambda: T.binary_tree(4, (2, 3, 9)), r"nccl_version must be a release >= \(2, 4, 0\)"),
        (lambda: T.binary_tree(4, "new"), "nccl_version must be a tuple of 1 to 3 integers"),
        (lambda: T.binary_tree(4, (2, 8, 3.0)), "nccl_version must be a tuple of 1 to 3 integers"),
        (lambda: T.check_double_tree(-3), r"n must be an integer in \[1, "),
        (lambda: T.check_tree("tree"), "tree must be a BinaryTree"),
        (lambda: T.BinaryTree([-1, 0], [[1, -1]], [-1, 0]), r"children must be an \(n, 2\) array"),
        (lambda: T.BinaryTree([-1, 5], [[1, -1], [-1, -1]], [-1, 0]),
         r"parent must be ranks in \[-1, 1\]"),
        (lambda: T.BinaryTree([-1, 0], [[1, -1], [-1, -1]], [-1, 2]), "child_type must be"),
        (lambda: T.BinaryTree([], [], []), "parent must be a 1-D integer array"),
        (lambda: T.tree_allreduce_schedule(0, 4), r"p must be an integer in \[1, "),
        (lambda: T.tree_allreduce_schedule(4, 0), r"numel must be an integer in \[1, "),
        (lambda: T.tree_allreduce_schedule(4, 4, chunks=0), r"chunks must be an integer in \[1, "),
        (lambda: T.tree_allreduce_schedule(4, 4, trees=3), r"trees must be one of \(1, 2\)"),
        (lambda: T.tree_allreduce_schedule(4, 4, trees=[2]), r"trees must be one of \(1, 2\)"),
        (lambda: T.tree_allreduce(np.ones((4, 4)), chunks=0), "chunks must be"),
        (lambda: T.tree_allreduce_time(1e6, 8, 1e-6, 1e-9, chunks=0), "chunks must be"),
        (lambda: T.tree_allreduce_time(1e6, 0, 1e-6, 1e-9), "p must be finite real values in"),
        (lambda: T.tree_allreduce_time(-1, 8, 1e-6, 1e-9), "nbytes must be finite real values"),
        (lambda: T.optimal_chunks(1e6, 8, 0.0, 1e-9), "alpha must be finite real values > 0"),
        (lambda: T.port_load(8, trees=0), r"trees must be one of \(1, 2\)"),
        (lambda: T.crossover_vs_ring(8, 1e-6, 0.0), "beta must be finite real values > 0"),
        (lambda: T.flows_per_step([C.Step("x", (C.Transfer(0, 9, -1, 0, 1, True),))], 4),
         r"steps\[0\] must be transfers between ranks in \[0, 4\)"),
        (lambda: T.flows_per_step("steps", 4), "steps must be a list of Step records"),
        (lambda: T.schedule_time([], 4, 0, 1e-6, 1e-9), r"itemsize must be an integer in \[1, "),
        (lambda: T.port_messages(None), "tree must be a BinaryTree"),
        (lambda: T.TreeReport(4, 1, True, 2, 2, 2), "spanning must be True or False"),
        (lambda: T.DoubleTreeReport(4, (), 2, 2, [], [], ()), "trees must be a pair of"),
    ],
)  # fmt: skip
def test_bad_inputs_raise_value_error(call, match):
    with pytest.raises(ValueError, match=match):
        call()


# ------------------------------------------------ regressions: limits and overflow (#21)


def test_schedule_chunks_are_bounded():
    # chunks=10**6 used to build 2 * 2 * 7 * 10**6 messages without limit
    with pytest.raises(ValueError, match=r"chunks must be an integer in \[1, 65536\] for p = 8"):
        T.tree_allreduce_schedule(8, 16, chunks=10**6)
    sched = T.tree_allreduce_schedule(8, 16, chunks=T.MAX_CHUNKS)  # the limit itself works
    assert sched.nsteps == T.MAX_CHUNKS + 5  # 8 elements per tree: 8 non-empty chunks each
    assert sched.step.size == 2 * 2 * 7 * 8
    most = T.MAX_MESSAGES // (2 * 2 * 1023)  # the message limit binds for many ranks
    assert most == 512 and T.tree_allreduce_schedule(1024, 1024, most).nsteps == most + 19
    with pytest.raises(ValueError, match=r"chunks must be an integer in \[1, 512\] for p = 1024"):
        T.tree_allreduce_schedule(1024, 1024, most + 1)
    # the book's own sizes: 1024 ranks x 16 chunks, and trees over 65,536 ranks
    assert T.tree_allreduce_schedule(1024, 4096, 16, 2).step.size == 2 * 2 * 16 * 1023
    assert T.check_double_tree(65536).ok and T.check_double_tree(65535).ok
    with pytest.raises(ValueError, match=r"n must be an integer in \[1, 1048576\]"):
        T.binary_tree(T.MAX_RANKS + 1)


def test_schedule_records_validate_their_fields():
    good = T.tree_allreduce_schedule(4, 8, 2, 2)
    fields = {f: getattr(good, f) for f in good.__dataclass_fields__}
    assert T.TreeAllreduceSchedule(**fields).step.tolist() == good.step.tolist()
    for change, message in (
        ({"src": good.src[:-1]}, "src must be an array of"),
        ({"dst": good.dst + 4}, r"dst must be finite|dst must be integer values in \[0, 3\]"),
        ({"up": good.up.astype(int)}, "up must be a 1-D bool array"),
        ({"step": good.step[::-1].copy()}, "sorted by step"),
        ({"ntrees": 3}, r"trees must be one of \(1, 2\)"),
    ):
        with pytest.raises(ValueError, match=message):
            T.TreeAllreduceSchedule(**{**fields, **change})


def test_cost_models_raise_on_overflow_and_bad_options():
    with pytest.raises(ValueError, match="tree_allreduce_time must stay finite"):
        T.tree_allreduce_time(1e300, 8, 1e-6, 1e10)
    with pytest.raises(ValueError, match="optimal_chunks must stay finite"):
        T.optimal_chunks(1e300, 8, 1e-300, 1e10)
    for call in (lambda: T.port_load(8, trees=[2]), lambda: T.best_tree_time(1, 8, 1, 1, {})):
        with pytest.raises(ValueError, match=r"trees must be one of \(1, 2\)"):
            call()


@settings(max_examples=200, deadline=None)
@given(
    nbytes=st.floats(0, 1e13),
    p=st.integers(1, 2**20),
    alpha=st.one_of(st.just(0.0), st.floats(1e-9, 1e-2)),  # seconds per step
    beta=st.floats(0, 1e-6),  # seconds per byte: down to 1 MB/s
    chunks=st.floats(1, 1e4),
    trees=st.sampled_from([1, 2]),
)
def test_tree_times_are_finite_and_non_negative(nbytes, p, alpha, beta, chunks, trees):
    t = T.tree_allreduce_time(nbytes, p, alpha, beta, chunks, trees)
    assert np.isfinite(t) and t >= 0
    if alpha > 0:
        best = T.best_tree_time(nbytes, p, alpha, beta, trees)
        assert np.isfinite(best) and 0 <= best <= T.tree_allreduce_time(nbytes, p, alpha, beta,
                                                                         1, trees)  # fmt: skip


@settings(max_examples=60, deadline=None)
@given(p=st.integers(2, 2**20), alpha=st.floats(1e-7, 1e-3), gbps=st.floats(1, 2000),
       trees=st.sampled_from([1, 2]))  # fmt: skip
def test_crossover_is_nan_below_four_ranks_else_positive_and_finite(p, alpha, gbps, trees):
    x = T.crossover_vs_ring(p, alpha, 1 / (gbps * 1e9), trees)
    assert np.isnan(x) if p < 4 else (np.isfinite(x) and x > 0)


# ------------------------------------------------------------------ the all-reduce


@settings(max_examples=80, deadline=None)
@given(
    p=st.integers(1, 40),
    numel=st.integers(1, 60),
    chunks=st.integers(1, 7),
    trees=st.sampled_from([1, 2]),
    seed=st.integers(0, 2**32 - 1),
)
def test_pipelined_tree_allreduce_sums_random_data(p, numel, chunks, trees, seed):
    x = np.random.default_rng(seed).standard_normal((p, numel))
    final, steps = T.tree_allreduce(x, chunks, trees)
    np.testing.assert_allclose(final, np.broadcast_to(x.sum(axis=0), x.shape), atol=1e-9)
    sched = T.tree_allreduce_schedule(p, numel, chunks, trees)
    assert len(steps) == sched.nsteps == (chunks + 2 * math.ceil(math.log2(p)) - 1 if p > 1 else 0)
    # per tree and step: at most one message up per rank, one down per (parent, child)
    key_up = sched.step * 4 * p + sched.tree * 2 * p + sched.src
    assert np.unique(key_up[sched.up]).size == int(sched.up.sum())
    key_down = (sched.step * 2 + sched.tree) * p * p + sched.src * p + sched.dst
    assert np.unique(key_down[~sched.up]).size == int((~sched.up).sum())
    # every element is summed over the whole tree: each non-root sends each piece up once
    sent = C.bytes_sent_per_rank(steps, p)
    assert sent.sum() == sum(2 * (p - 1) * int(c) for c in np.diff(C.chunk_bounds(numel, trees)))


def test_each_tree_carries_half_and_two_trees_send_about_the_data_once_each_way():
    p, numel, chunks = 16, 1600, 8
    for trees, busiest in ((1, 3 * numel), (2, 2 * numel)):
        steps = T.tree_allreduce_schedule(p, numel, chunks, trees).steps()
        sent = C.bytes_sent_per_rank(steps, p)
        assert sent.max() == busiest  # interior: up + two children down (per tree)
    sched = T.tree_allreduce_schedule(p, numel, chunks, 2)
    assert set(sched.count[sched.tree == 0]) == {numel // 2 // chunks}


def test_port_load_matches_the_trees_for_every_p_up_to_1024():
    for p in range(1, 1025):
        first, second = T.double_binary_tree(p)
        assert T.port_load(p, 1) == T.port_messages(first).max(), p
        both = T.port_messages(first) + T.port_messages(second)
        assert T.port_load(p, 2) == both.max() / 2, p


@pytest.mark.parametrize("p", [2, 3, 4, 5, 8, 13, 16])
@pytest.mark.parametrize("trees", [1, 2])
def test_closed_form_time_bounds_the_schedule_and_is_tight_for_long_pipelines(p, trees):
    a, b = 3e-6, 1 / 50e9
    for chunks in (1, 3, 8):
        numel = 2 * chunks * 50
        steps = T.tree_allreduce_schedule(p, numel, chunks, trees).steps()
        exact = T.schedule_time(steps, p, 4, a, b)
        bound = T.tree_allreduce_time(4 * numel, p, a, b, chunks, trees)
        assert exact <= bound * (1 + 1e-12)
    numel = 2 * 256 * 4
    steps = T.tree_allreduce_schedule(p, numel, 256, trees).steps()
    exact = T.schedule_time(steps, p, 4, a, b)
    assert exact == pytest.approx(T.tree_allreduce_time(4 * numel, p, a, b, 256, trees), rel=0.02)


def test_schedule_time_of_the_ring_is_the_costmodel_ring():
    a, b = 2e-6, 1e-10
    for p in (2, 3, 6, 8):
        steps = C.ring_allreduce_schedule(p, 10 * p)
        assert T.schedule_time(steps, p, 8, a, b) == pytest.approx(
            M.collective_time("allreduce", "ring", 80 * p, p, a, b)
        )


@settings(max_examples=40, deadline=None)
@given(
    nbytes=st.floats(1, 1e10),
    p=st.integers(2, 4096),
    alpha=st.floats(1e-7, 1e-4),
    gbps=st.floats(1, 1000),
    trees=st.sampled_from([1, 2]),
)
def test_optimal_chunks_is_the_best_integer(nbytes, p, alpha, gbps, trees):
    beta = 1 / (gbps * 1e9)
    k = T.optimal_chunks(nbytes, p, alpha, beta, trees)
    assert k >= 1 and k == int(k)
    best = T.tree_allreduce_time(nbytes, p, alpha, beta, k, trees)
    around = np.arange(max(1, k - 50), k + 51)
    nearby = T.tree_allreduce_time(nbytes, p, alpha, beta, around, trees)
    assert best <= np.min(nearby) * (1 + 1e-12)
    assert T.best_tree_time(nbytes, p, alpha, beta, trees) == best


def test_crossover_separates_where_trees_and_ring_win():
    a, b = 3e-6, 1 / 50e9
    ps = np.array([4, 5, 8, 64, 1000, 1024, 65536])
    for trees in (1, 2):
        cross = T.crossover_vs_ring(ps, a, b, trees)
        assert np.all(np.isfinite(cross)) and np.all(np.diff(cross[ps >= 8]) > 0)
        for p, x in zip(ps, cross, strict=True):
            for factor, trees_win in ((0.99, True), (1.01, False)):
                ring = M.collective_time("allreduce", "ring", x * factor, p, a, b)
                tree = T.best_tree_time(x * factor, p, a, b, trees)
                assert (tree < ring) == trees_win, (p, trees, factor)
    assert np.isnan(T.crossover_vs_ring(2, a, b)) and np.isnan(T.crossover_vs_ring(3, a, b))


def test_latency_and_bandwidth_terms():
    a, b, p = 3e-6, 1 / 50e9, 1024
    assert T.tree_allreduce_time(0.0, p, a, b, 1, 2) == pytest.approx(2 * 10 * a)
    assert M.collective_time("allreduce", "ring", 0.0, p, a, b) == pytest.approx(2 * 1023 * a)
    big = 1e12  # many chunks: bandwidth terms 2 n beta (two trees), 3 n beta (one tree)
    for trees, factor in ((2, 2.0), (1, 3.0)):
        assert T.best_tree_time(big, p, a, b, trees) / (big * b) == pytest.approx(factor, rel=0.01)
    assert T.tree_allreduce_time(1e6, 1, a, b, 4) == 0.0


def test_flows_two_trees_fan_in_and_out_against_ring_one_to_one():
    p = 8
    ring_in, ring_out = T.flows_per_step(C.ring_allreduce_schedule(p, p), p)
    assert np.all(ring_in == 1) and np.all(ring_out == 1)
    fin, fout = T.flows_per_step(T.tree_allreduce_schedule(p, 32, 16, 2).steps(), p)
    assert fin.max() == fout.max() == 4 and fin.sum() == fout.sum()
    fin1, _ = T.flows_per_step(T.tree_allreduce_schedule(p, 32, 16, 1).steps(), p)
    assert fin1.max() == 3  # two children up, the parent down


# ------------------------------------------------------------------ figures


def test_figures_are_built_from_the_library():
    for n in (2, 3, 5, 8, 64):
        fig = VT.trees_figure(n)
        texts = [t for tr in fig.data if tr.text is not None for t in tr.text]
        assert sorted(map(int, texts)) == sorted(list(range(n)) * 2)  # every rank in each tree
    anim = VT.allreduce_animation(8, 4)
    assert len(anim.frames) == T.tree_allreduce_schedule(8, 8, 4).nsteps + 1 <= 60
    assert VT.allreduce_animation(16, 8).frames and len(VT.allreduce_animation(16, 8).frames) <= 60
    heat = anim.frames[-1].data[-1]
    assert np.all(np.asarray(heat.z) == 8)  # after the last step every chunk holds all 8
    for fig in (
        VT.cost_vs_ranks(3e-6, 2e-11),
        VT.time_vs_size(64, 3e-6, 2e-11),
        VT.traffic_figure(8, 8),
        VT.measured_figure([64, 1024], {"ring": [1, 2]}, 8),
    ):
        assert all(ax.title.text for ax in fig.select_xaxes())  # fmt: skip
        assert all(ax.title.text for ax in fig.select_yaxes())
    with pytest.raises(ValueError, match=r"n must be an integer in \[2, 64\]"):
        VT.trees_figure(65)


# --------------------------------------------------- published measurements (Summit)


def test_summit_rows_match_the_blog():
    """Review 09.1: the blog's figure 3 (8-byte all-reduce, 96 to 24,576 GPUs) and its
    text, "up to 180x improvement at 24k GPUs"."""
    rows = np.array(T.SUMMIT_ALLREDUCE_8B)
    assert rows[:, 0].tolist() == [96 * 2**k for k in range(9)]
    assert np.all(np.diff(rows[:, 1]) > 0) and np.all(np.diff(rows[:, 2]) > 0)
    assert 170 <= rows[-1, 2] / rows[-1, 1] <= 190  # "up to 180x"
    assert "figure 3" in T.SUMMIT_SOURCE and T.SUMMIT_GPUS_PER_NODE == 6
    assert rows[-1, 2] / rows[-1, 1] >= T.SUMMIT_STATED_SPEEDUP == 180


def test_summit_constants_are_the_rows_of_trees_csv():
    """Issue 24: Summit's GPUs and NICs per node and the blog's stated speedup are rows."""
    from scaleout import data

    rows = {v.get("quantity"): v for v in data.load("trees") if v.get("system") == "Summit"}
    assert T.SUMMIT_GPUS_PER_NODE == rows["gpus_per_node"].value
    assert T.SUMMIT_NIC_PORTS_PER_NODE == rows["nic_ports_per_node"].value == 2
    assert type(T.SUMMIT_NIC_PORTS_PER_NODE) is int
    assert T.SUMMIT_NIC_GBIT_PER_S == rows["nic_port_speed"].value == 100
    assert rows["nic_port_speed"].unit == "Gb/s"
    assert T.SUMMIT_STATED_SPEEDUP == rows["allreduce_8B_speedup"].value
    assert rows["allreduce_8B_speedup"].source == "ncclblog2019"


def test_summit_comparison_is_the_chapter_model_and_nccl_step_counts():
    a, b = 3e-6, 1 / 50e9
    c = T.summit_comparison(a, b)
    p = c.gpus
    np.testing.assert_allclose(
        c.model_ring_us, 2 * (p - 1) * a * 1e6 + 2 * (p - 1) / p * 8 * b * 1e6
    )
    np.testing.assert_allclose(c.model_tree_us, T.best_tree_time(8.0, p, a, b) * 1e6)
    assert c.ring_steps.tolist() == (2 * (p - 1)).tolist()
    assert c.tree_steps.tolist() == [2 * (5 + k) for k in range(4, 13)]  # 16 .. 4096 nodes
    assert c.same_winner.all()  # the model ranks the two right at every size
    assert np.all(c.ring_err > 2) and np.all(c.tree_err < -0.6)  # and misses both
    tree_step, ring_step = c.us_per_step
    assert (
        np.ptp(tree_step) / tree_step.mean() < 0.1 and np.ptp(ring_step) / ring_step.mean() < 0.12
    )
    np.testing.assert_allclose(c.model_ratio, c.model_ring_us / c.model_tree_us)


def test_summit_comparison_checks_its_inputs():
    with pytest.raises(ValueError, match="alpha must be > 0"):
        T.summit_comparison(0.0, 1e-11)
    with pytest.raises(ValueError, match="beta must be"):
        T.summit_comparison(3e-6, -1.0)
    with pytest.raises(ValueError, match="nbytes must be"):
        T.summit_comparison(3e-6, 1e-11, nbytes=float("nan"))
    c = T.summit_comparison(3e-6, 1e-11)
    with pytest.raises(ValueError, match="one value per row"):
        T.PublishedComparison(c.gpus, c.nodes[:3], c.measured_tree_us, c.measured_ring_us,
                              c.model_tree_us, c.model_ring_us, c.tree_steps, c.ring_steps,
                              c.source)  # fmt: skip


@given(a=st.floats(1e-8, 1e-3), b=st.floats(1e-13, 1e-8), n=st.floats(1.0, 1e9))
@settings(max_examples=50, deadline=None)
def test_summit_comparison_is_finite_and_positive(a, b, n):
    c = T.summit_comparison(a, b, nbytes=n)
    for x in (c.model_tree_us, c.model_ring_us, c.tree_err, c.ring_err, c.model_ratio):
        assert np.all(np.isfinite(x))
    assert np.all(c.model_tree_us > 0) and np.all(c.model_ring_us > 0)
