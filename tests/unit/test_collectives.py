"""Property tests for scaleout.collectives: every algorithm against the arithmetic definition."""

import inspect

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scaleout import collectives as C

SETTINGS = settings(max_examples=60, deadline=None)
ALLREDUCES = [
    C.ring_allreduce,
    C.recursive_doubling_allreduce,
    C.rabenseifner_allreduce,
    C.parameter_server_allreduce,
]
SCHEDULES = [
    C.ring_reduce_scatter_schedule,
    C.ring_allgather_schedule,
    C.ring_allreduce_schedule,
    C.recursive_doubling_allreduce_schedule,
    C.rabenseifner_allreduce_schedule,
    C.binomial_broadcast_schedule,
    C.binomial_reduce_schedule,
    C.parameter_server_allreduce_schedule,
]


@st.composite
def buffers(draw, max_p=64, max_n=200):
    """Integer-valued float64 (p, n) buffers, so every summation order gives the same sum."""
    p = draw(st.integers(1, max_p))
    n = draw(st.integers(1, max_n))
    seed = draw(st.integers(0, 2**32 - 1))
    return np.random.default_rng(seed).integers(-1000, 1000, size=(p, n)).astype(np.float64)


@st.composite
def buffers_and_root(draw):
    x = draw(buffers())
    return x, draw(st.integers(0, x.shape[0] - 1))


def lg(p):
    return (p - 1).bit_length()


# ------------------------------------------------------------------------ chunk_bounds


@given(n=st.integers(0, 300), p=st.integers(1, 64))
@SETTINGS
def test_chunk_bounds_follows_array_split(n, p):
    b = C.chunk_bounds(n, p)
    sizes = [len(a) for a in np.array_split(np.arange(n), p)]
    assert b.shape == (p + 1,) and b[0] == 0 and b[-1] == n
    np.testing.assert_array_equal(np.diff(b), sizes)


# ---------------------------------------------------------------- results vs reference


@pytest.mark.parametrize("algorithm", ALLREDUCES, ids=lambda f: f.__name__)
@given(x=buffers())
@SETTINGS
def test_allreduce_algorithms_match_reference(algorithm, x):
    run = algorithm(x)
    expected = C.reference("allreduce", x)
    assert run.buffers.dtype == np.float64 and run.buffers.shape == x.shape
    for r in range(x.shape[0]):
        np.testing.assert_array_equal(run.buffers[r], expected[r])


@given(x=buffers())
@SETTINGS
def test_ring_reduce_scatter_leaves_chunk_r_on_rank_r(x):
    p, n = x.shape
    b = C.chunk_bounds(n, p)
    run = C.ring_reduce_scatter(x)
    assert len(run.steps) == p - 1
    for r, expected in enumerate(C.reference("reducescatter", x)):
        np.testing.assert_array_equal(run.buffers[r, b[r] : b[r + 1]], expected)


@given(x=buffers())
@SETTINGS
def test_ring_allgather_gives_every_rank_every_chunk(x):
    p, n = x.shape
    b = C.chunk_bounds(n, p)
    run = C.ring_allgather(x)
    assert len(run.steps) == p - 1
    gathered = C.reference("allgather", x)  # concatenation of all rows, length p*n
    for r in range(p):
        for c in range(p):  # rank c's contribution is its own chunk c
            own = gathered[r][c * n + b[c] : c * n + b[c + 1]]
            np.testing.assert_array_equal(run.buffers[r, b[c] : b[c + 1]], own)


@given(xr=buffers_and_root())
@SETTINGS
def test_binomial_broadcast_and_reduce_match_reference(xr):
    x, root = xr
    p = x.shape[0]
    bcast = C.binomial_broadcast(x, root=root)
    np.testing.assert_array_equal(bcast.buffers, np.stack(C.reference("broadcast", x, root)))
    reduced = C.binomial_reduce(x, root=root)
    np.testing.assert_array_equal(reduced.buffers[root], C.reference("reduce", x, root)[root])
    assert len(bcast.steps) == len(reduced.steps) == lg(p)
    sent = C.bytes_sent_per_rank(reduced.steps, p)
    assert sent[root] == 0 and np.all(np.delete(sent, root) == x.shape[1])  # each sends once


@given(xr=buffers_and_root())
@SETTINGS
def test_parameter_server_traffic_concentrates_on_server(xr):
    x, server = xr
    p, n = x.shape
    run = C.parameter_server_allreduce(x, server=server)
    assert [s.phase for s in run.steps] == ([] if p == 1 else ["gather", "broadcast"])
    sent = C.bytes_sent_per_rank(run.steps, p)
    assert sent[server] == (p - 1) * n and np.all(np.delete(sent, server) == n)
    received = sum(t.count for s in run.steps for t in s.transfers if t.dst == server)
    assert received + sent[server] == 2 * (p - 1) * n  # the server link carries 2(p-1)n


# ------------------------------------------------------------------ steps and traffic


@given(p=st.integers(1, 48), k=st.integers(1, 6), itemsize=st.sampled_from([1, 2, 4]))
@SETTINGS
def test_ring_allreduce_steps_and_bytes_when_p_divides_n(p, k, itemsize):
    steps = C.ring_allreduce_schedule(p, p * k)
    assert len(steps) == 2 * (p - 1)
    assert [s.phase for s in steps] == ["reduce-scatter"] * (p - 1) + ["all-gather"] * (p - 1)
    sent = C.bytes_sent_per_rank(steps, p, itemsize=itemsize)
    assert np.all(sent == 2 * (p - 1) * k * itemsize)  # 2 (p-1)/p * n elements


@given(lgp=st.integers(0, 6), k=st.integers(1, 4))
@SETTINGS
def test_power_of_two_traffic(lgp, k):
    p = 2**lgp
    n = p * k
    rab = C.rabenseifner_allreduce_schedule(p, n)
    assert len(rab) == 2 * lgp
    assert np.all(C.bytes_sent_per_rank(rab, p) == 2 * (p - 1) * k)  # bandwidth-optimal
    rd = C.recursive_doubling_allreduce_schedule(p, n)
    assert len(rd) == lgp and np.all(C.bytes_sent_per_rank(rd, p) == n * lgp)


@given(p=st.integers(1, 64), n=st.integers(1, 50))
@SETTINGS
def test_fold_and_unfold_for_non_powers_of_two(p, n):
    pof2 = 1 << (p.bit_length() - 1)
    extra = 0 if p == pof2 else 2
    for schedule, depth in [
        (C.recursive_doubling_allreduce_schedule, lg(pof2)),
        (C.rabenseifner_allreduce_schedule, 2 * lg(pof2)),
    ]:
        steps = schedule(p, n)
        assert len(steps) == depth + extra
        if extra:
            fold, unfold = steps[0], steps[-1]
            assert fold.phase == "fold" and unfold.phase == "unfold"
            assert [(t.src, t.dst) for t in fold.transfers] == [
                (2 * i, 2 * i + 1) for i in range(p - pof2)
            ]
            assert all(t.reduce for t in fold.transfers)
            assert not any(t.reduce for t in unfold.transfers)


@given(lgp=st.integers(0, 6), n=st.integers(1, 100), seed=st.integers(0, 1000))
@SETTINGS
def test_rabenseifner_halving_leaves_chunk_r_on_rank_r(lgp, n, seed):
    p = 2**lgp
    x = np.random.default_rng(seed).integers(-9, 9, size=(p, n)).astype(float)
    steps = C.rabenseifner_allreduce_schedule(p, n)
    halfway = C.replay(x, [s for s in steps if s.phase == "reduce-scatter"])
    b = C.chunk_bounds(n, p)
    for r, expected in enumerate(C.reference("reducescatter", x)):
        np.testing.assert_array_equal(halfway[r, b[r] : b[r + 1]], expected)


@pytest.mark.parametrize(
    "schedule",
    [C.ring_reduce_scatter_schedule, C.ring_allgather_schedule, C.ring_allreduce_schedule],
)
@given(p=st.integers(1, 40), extra=st.integers(0, 60))
@SETTINGS
def test_ring_steps_send_once_and_receive_once_per_rank(schedule, p, extra):
    for step in schedule(p, p + extra):  # n >= p: no empty chunks
        srcs = sorted(t.src for t in step.transfers)
        assert srcs == sorted(t.dst for t in step.transfers) == list(range(p))
        assert all(t.dst == (t.src + 1) % p for t in step.transfers)
        assert all(t.chunk >= 0 for t in step.transfers)  # ring moves exactly one chunk


@pytest.mark.parametrize("schedule", SCHEDULES, ids=lambda f: f.__name__)
@given(p=st.integers(1, 64), n=st.integers(1, 200), data=st.data())
@settings(max_examples=40, deadline=None)
def test_every_transfer_is_well_formed(schedule, p, n, data):
    takes_root = len(inspect.signature(schedule).parameters) == 3  # root or server
    args = (data.draw(st.integers(0, p - 1)),) if takes_root else ()
    b = C.chunk_bounds(n, p)
    for step in schedule(p, n, *args):
        assert isinstance(step, C.Step) and isinstance(step.transfers, tuple)
        for t in step.transfers:
            assert 0 <= t.src < p and 0 <= t.dst < p and t.src != t.dst
            assert t.count > 0 and 0 <= t.offset and t.offset + t.count <= n
            exact = [c for c in range(p) if b[c] == t.offset and b[c + 1] == t.offset + t.count]
            assert t.chunk == (exact[0] if exact else -1)


# ------------------------------------------------------------------------ replay


@given(x=buffers(max_p=24, max_n=40))
@SETTINGS
def test_trajectory_ends_at_the_returned_buffers(x):
    for run in (C.ring_allreduce(x), C.rabenseifner_allreduce(x), C.binomial_broadcast(x)):
        traj = C.replay(x, run.steps, trajectory=True)
        assert traj.shape == (len(run.steps) + 1, *x.shape)
        np.testing.assert_array_equal(traj[0], x)
        np.testing.assert_array_equal(traj[-1], run.buffers)


def test_results_do_not_alias_input_and_ints_become_float64():
    x = np.arange(12, dtype=np.int32).reshape(3, 4)
    original = x.copy()
    for run in (C.ring_allreduce(x), C.binomial_reduce(x.tolist(), root=2)):
        assert run.buffers.dtype == np.float64
        assert not np.shares_memory(run.buffers, x)
    np.testing.assert_array_equal(x, original)
    y = np.ones((2, 3))
    out = C.replay(y, [])
    out[0, 0] = 5.0
    assert y[0, 0] == 1.0
    assert all(not np.shares_memory(o, y) for o in C.reference("broadcast", y))


def test_simultaneous_semantics_swap_in_one_step():
    swap = C.Step("swap", (C.Transfer(0, 1, -1, 0, 2, False), C.Transfer(1, 0, -1, 0, 2, False)))
    np.testing.assert_array_equal(C.replay([[1, 2], [3, 4]], [swap]), [[3, 4], [1, 2]])
    add = C.Step("add", (C.Transfer(0, 1, 0, 0, 1, True), C.Transfer(1, 0, 1, 1, 1, True)))
    np.testing.assert_array_equal(C.replay([[1, 2], [3, 4]], [add]), [[1, 6], [4, 4]])


# ---------------------------------------------------------------------- reference


def test_reference_small_cases_by_hand():
    x = np.array([[1.0, 2, 3, 4], [10, 20, 30, 40]])
    ref = C.reference
    assert [r.tolist() for r in ref("allreduce", x)] == [[11, 22, 33, 44]] * 2
    assert [r.tolist() for r in ref("reduce", x, 1)] == [[1, 2, 3, 4], [11, 22, 33, 44]]
    assert [r.tolist() for r in ref("broadcast", x, 1)] == [[10, 20, 30, 40]] * 2
    assert [r.tolist() for r in ref("reducescatter", x)] == [[11, 22], [33, 44]]
    assert [r.tolist() for r in ref("allgather", x)] == [[1, 2, 3, 4, 10, 20, 30, 40]] * 2
    assert [r.tolist() for r in ref("alltoall", x)] == [[1, 2, 10, 20], [3, 4, 30, 40]]
    assert [r.tolist() for r in ref("scatter", x, 1)] == [[10, 20], [30, 40]]
    assert [r.tolist() for r in ref("gather", x, 0)] == [[1, 2, 3, 4, 10, 20, 30, 40], []]


@given(x=buffers(max_p=16, max_n=16))
@SETTINGS
def test_alltoall_twice_is_identity(x):
    p, n = x.shape
    if n % p:
        with pytest.raises(ValueError, match="divisible"):
            C.reference("alltoall", x)
        return
    once = np.stack(C.reference("alltoall", x))
    np.testing.assert_array_equal(np.stack(C.reference("alltoall", once)), x)


# ------------------------------------------------------------------------ bad inputs

BAD_BUFFERS = [
    (np.zeros((0, 3)), "non-empty 2-D real array"),
    (np.zeros((3, 0)), "non-empty 2-D real array"),
    (np.zeros(3), r"2-D real array, got an array of shape \(3,\)"),
    (np.zeros((2, 2, 2)), "2-D real array, got an array of shape"),
    ([[1, 2], [3]], "2-D real array"),
    ([["a", "b"]], "2-D real array"),
    ([[True, False]], "2-D real array"),
    ([[1.0, np.nan]], "finite real values"),
    ([[np.inf, 1.0]], "finite real values"),
]


@pytest.mark.parametrize("bad, message", BAD_BUFFERS)
@pytest.mark.parametrize("func", ALLREDUCES + [C.ring_reduce_scatter, C.ring_allgather])
def test_bad_buffers_raise(func, bad, message):
    with pytest.raises(ValueError, match="buffers must be .*" + message):
        func(bad)


@pytest.mark.parametrize("root", [-1, 3, 1.0, True, "0", None])
def test_bad_root_raises(root):
    x = np.ones((3, 2))
    for func in (C.binomial_broadcast, C.binomial_reduce):
        with pytest.raises(ValueError, match=r"root must be an integer in \[0, 2\]"):
            func(x, root=root)
    with pytest.raises(ValueError, match=r"root must be an integer in \[0, 2\]"):
        C.reference("scatter", x, root=root)
    with pytest.raises(ValueError, match=r"server must be an integer in \[0, 2\]"):
        C.parameter_server_allreduce(x, server=root)


@pytest.mark.parametrize("schedule", SCHEDULES, ids=lambda f: f.__name__)
@pytest.mark.parametrize("p, n, name", [(0, 4, "p"), (-2, 4, "p"), (2, 0, "n"), (2.0, 4, "p"),
                                        ("4", 4, "p"), (2, True, "n")])  # fmt: skip
def test_bad_schedule_sizes_raise(schedule, p, n, name):
    with pytest.raises(ValueError, match=rf"{name} must be an integer in \[1, "):
        schedule(p, n)


def test_other_bad_arguments_raise():
    with pytest.raises(ValueError, match=r"collective must be one of .*allreduce"):
        C.reference("all_reduce", np.ones((2, 2)))
    with pytest.raises(ValueError, match=r"collective must be one of .*allreduce"):
        C.reference(["allreduce"], np.ones((2, 2)))  # unhashable: a ValueError, no TypeError
    with pytest.raises(ValueError, match=r"n must be an integer in \[0, "):
        C.chunk_bounds(-1, 2)
    with pytest.raises(ValueError, match=r"p must be an integer in \[1, "):
        C.chunk_bounds(4, 0)
    with pytest.raises(ValueError, match=r"itemsize must be an integer in \[1, "):
        C.bytes_sent_per_rank([], 2, itemsize=0)
    with pytest.raises(ValueError, match=r"steps must be transfers from ranks in \[0, 3\)"):
        C.bytes_sent_per_rank(C.ring_allreduce_schedule(4, 4), 3)
    with pytest.raises(ValueError, match="dst must be a rank other than src = 0"):
        C.Transfer(0, 0, -1, 0, 1, True)
    with pytest.raises(ValueError, match="reduce must be True or False"):
        C.Transfer(0, 1, -1, 0, 1, 1)
    with pytest.raises(ValueError, match="transfers must be a tuple of Transfer records"):
        C.Step("bad", ("not a transfer",))
    with pytest.raises(ValueError, match="phase must be a non-empty string"):
        C.Step("", ())
    x = np.ones((2, 3))
    bad_steps = {
        r"steps\[0\] must be transfers between ranks in \[0, 2\)": C.Transfer(0, 2, -1, 0, 1, True),
        r"steps\[0\] must be transfers with offset \+ count in \[0, 3\]": C.Transfer(
            0, 1, -1, 2, 2, True
        ),
    }
    for message, t in bad_steps.items():
        with pytest.raises(ValueError, match=message):
            C.replay(x, [C.Step("bad", (t,))])
    with pytest.raises(ValueError, match=r"steps\[0\] must be a Step"):
        C.replay(x, ["not a step"])
    with pytest.raises(ValueError, match="steps must be a list of Step records"):
        C.replay(x, C.Step("s", ()))
    with pytest.raises(ValueError, match="trajectory must be True or False"):
        C.replay(x, [], trajectory=1)
    with pytest.raises(ValueError, match="buffers must be"):
        C.CollectiveRun(np.array([[np.nan]]), [])


# ------------------------------------------------ regressions: limits and overflow (#21)


def test_schedule_sizes_are_bounded():
    # 10**5 ranks used to build O(p^2) Transfer objects until memory ran out.
    for schedule in (C.ring_allreduce_schedule, C.ring_reduce_scatter_schedule,
                     C.ring_allgather_schedule):  # fmt: skip
        with pytest.raises(ValueError, match=r"p must be an integer in \[1, 1024\] for a ring"):
            schedule(10**5, 1)
        with pytest.raises(ValueError, match=r"p must be an integer in \[1, 1024\] for a ring"):
            schedule(C.MAX_RING_RANKS + 1, 1)
    for schedule in SCHEDULES[3:]:  # the others: MAX_RANKS
        with pytest.raises(ValueError, match=r"p must be an integer in \[1, 65536\]"):
            schedule(C.MAX_RANKS + 1, 1)
    assert 2 * C.MAX_RING_RANKS * (C.MAX_RING_RANKS - 1) <= C.MAX_TRANSFERS
    assert 2 * (C.MAX_RING_RANKS + 1) * C.MAX_RING_RANKS > C.MAX_TRANSFERS
    # the largest Rabenseifner schedule fits the transfer limit exactly
    assert 2 * 16 * C.MAX_RANKS == C.MAX_TRANSFERS
    steps = C.recursive_doubling_allreduce_schedule(C.MAX_RANKS, 4)
    assert len(steps) == 16 and sum(len(s.transfers) for s in steps) == 16 * C.MAX_RANKS


def test_chunk_bounds_never_overflow():
    with pytest.raises(ValueError, match=r"n must be an integer in \[0, 9007199254740992\]"):
        C.chunk_bounds(2**63, 4)  # used to return a negative bound
    b = C.chunk_bounds(C.MAX_COUNT, 3)
    assert b[-1] == C.MAX_COUNT and np.all(np.diff(b) >= 0)


def test_bytes_sent_never_wraps_around():
    steps = C.ring_allreduce_schedule(4, 4)
    with pytest.raises(ValueError, match=r"itemsize must be an integer in \[1, 1073741824\]"):
        C.bytes_sent_per_rank(steps, 4, itemsize=2**62)  # used to return zeros
    big = [C.Step("big", (C.Transfer(0, 1, -1, 0, C.MAX_COUNT, False),))] * 4
    with pytest.raises(ValueError, match="bytes_sent_per_rank must stay below 2\\*\\*63"):
        C.bytes_sent_per_rank(big, 2, itemsize=C.MAX_ITEMSIZE)
    assert C.bytes_sent_per_rank(big, 2, itemsize=8).tolist() == [4 * 8 * C.MAX_COUNT, 0]


def test_sums_that_overflow_raise():
    for run in (C.ring_allreduce, C.recursive_doubling_allreduce, C.rabenseifner_allreduce,
                C.parameter_server_allreduce, C.binomial_reduce):  # fmt: skip
        with pytest.raises(ValueError, match="must stay finite"):
            run([[1e308], [1e308]])  # used to return inf
    with pytest.raises(ValueError, match="the sum over ranks must stay finite"):
        C.reference("allreduce", [[1e308], [1e308]])
    assert C.ring_allreduce([[1e308], [-1e308]]).buffers.tolist() == [[0.0], [0.0]]


def test_replay_trajectory_and_reference_outputs_are_bounded():
    x = np.ones((2, 2**13))
    steps = [C.Step("s", (C.Transfer(0, 1, -1, 0, 1, False),))] * 2**13
    with pytest.raises(ValueError, match="short enough for a trajectory"):
        C.replay(x, steps, trajectory=True)
    assert C.replay(x, steps).shape == x.shape  # without the trajectory it is fine
    with pytest.raises(ValueError, match="p copies of all of them"):
        C.reference("allgather", np.ones((2**10, 2**16)))
