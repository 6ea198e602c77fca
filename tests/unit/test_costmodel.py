"""Tests for scaleout.costmodel: closed forms at hand-checked points, busbw, fits, crossovers."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scaleout import costmodel as cm

A, B, G = 1e-6, 1e-9, 1e-10  # alpha s/message, beta s/byte, gamma s/byte
N, P = 8e6, 8  # bytes per rank, ranks: lg p = 3, (p-1)/p = 7/8

# Each value written out from the facts.md table with p = 8, n = 8e6 bytes.
HAND = {
    ("allreduce", "ring"): 14 * A + 14e6 * B + 7e6 * G,
    ("allreduce", "recursive_doubling"): 3 * A + 24e6 * B + 24e6 * G,
    ("allreduce", "rabenseifner"): 6 * A + 14e6 * B + 7e6 * G,
    ("allreduce", "tree"): 6 * A + 48e6 * B + 24e6 * G,
    ("allreduce", "parameter_server"): 2 * A + 112e6 * B + 56e6 * G,
    ("allgather", "ring"): 7 * A + 7e6 * B,
    ("allgather", "recursive_doubling"): 3 * A + 7e6 * B,
    ("reducescatter", "ring"): 7 * A + 7e6 * (B + G),
    ("reducescatter", "recursive_halving"): 3 * A + 7e6 * (B + G),
    ("broadcast", "binomial"): 3 * A + 24e6 * B,
    ("broadcast", "scatter_allgather"): 10 * A + 14e6 * B,
    ("reduce", "binomial"): 3 * A + 24e6 * (B + G),
    ("alltoall", "pairwise"): 7 * A + 7e6 * B,
}


def test_table_covers_every_algorithm():
    assert set(HAND) == set(cm.ALGORITHMS)
    for (collective, _), row in cm.ALGORITHMS.items():
        assert collective in cm.COLLECTIVES
        assert row.formula and row.source


@pytest.mark.parametrize("key", sorted(HAND))
def test_closed_forms_at_hand_checked_point(key):
    t = cm.collective_time(*key, N, P, A, B, G)
    assert isinstance(t, float)
    assert t == pytest.approx(HAND[key], rel=1e-12)


@pytest.mark.parametrize("key", sorted(HAND))
def test_one_rank_costs_nothing(key):
    assert cm.collective_time(*key, 1e9, 1, A, B, G) == 0.0


def test_lg_is_ceil_log2_for_non_powers_of_two():
    np.testing.assert_array_equal(cm.ceil_log2([1, 2, 3, 4, 5, 8, 9, 1024, 1025]),
                                  [0, 1, 2, 2, 3, 3, 4, 10, 11])  # fmt: skip
    # Binomial trees take ceil(lg p) rounds at any p: p = 5 costs what p = 8 does.
    t = cm.collective_time("broadcast", "binomial", 1e6, 5, A, B)
    assert t == pytest.approx(3 * A + 3e6 * B)


def test_non_powers_of_two_fold_as_mpich_does():
    """Regression (review 01.4): p = 6, 12, 24 used to cost ceil(lg p) = 3, 4, 5 messages
    for recursive doubling, while the schedule (MPICH's fold) takes floor(lg p) + 2."""
    msgs = [cm.collective_time("allreduce", "recursive_doubling", 0.0, p, 1.0, 0.0)
            for p in (6, 12, 24)]  # fmt: skip
    assert msgs == [4.0, 5.0, 6.0]
    # p = 5 (p' = 4, L = 2): fold (n, reduced), 2 exchanges of n, unfold (n, copied).
    t = cm.collective_time("allreduce", "recursive_doubling", 1e6, 5, A, B, G)
    assert t == pytest.approx(4 * A + 4e6 * B + 3e6 * G)
    # Rabenseifner, p = 6 (p' = 4): MPICH's comment, (2L+2) a + (2(p'-1)/p' + 2) n b + ...
    t = cm.collective_time("allreduce", "rabenseifner", 1e6, 6, A, B, G)
    assert t == pytest.approx(6 * A + (1.5 + 2) * 1e6 * B + (0.75 + 1) * 1e6 * G)
    # Recursive halving, p = 6: fold + 2 halvings + the folded partner's block back.
    t = cm.collective_time("reducescatter", "recursive_halving", 6e6, 6, A, B, G)
    assert t == pytest.approx(4 * A + (1 + 0.75 + 1 / 6) * 6e6 * B + 1.75 * 6e6 * G)
    # Powers of two are unchanged (the HAND table) and p = 1 costs nothing.
    for key in [("allreduce", "recursive_doubling"), ("allreduce", "rabenseifner"),
                ("reducescatter", "recursive_halving")]:  # fmt: skip
        assert cm.collective_time(*key, 1e6, 1, A, B, G) == 0.0


@pytest.mark.parametrize("p", range(1, 70))
def test_allreduce_formulas_equal_the_schedules_exactly(p):
    """The costs of recursive doubling and Rabenseifner are the one-port time of the
    library's own schedules (scaleout.collectives), for every p, power of two or not."""
    from scaleout import collectives as C
    from scaleout import trees as T

    n = 128 * p  # elements, divisible by p and by p' (equal chunks and blocks)
    for alg, schedule in (("recursive_doubling", C.recursive_doubling_allreduce_schedule),
                          ("rabenseifner", C.rabenseifner_allreduce_schedule)):  # fmt: skip
        steps = schedule(p, n)
        exact = T.schedule_time(steps, p, 4, A, B)
        model = cm.collective_time("allreduce", alg, 4 * n, p, A, B)
        assert model == pytest.approx(exact, rel=1e-12, abs=1e-300)
        assert cm.collective_time("allreduce", alg, 0.0, p, 1.0, 0.0) == len(steps)


def test_vectorised_broadcasting():
    n = np.array([0.0, 1e3, 1e6, 1e9])
    p = np.array([[2], [8], [64]])
    t = cm.collective_time("allreduce", "ring", n, p, A, B, G)
    assert t.shape == (3, 4)
    for i, pi in enumerate([2, 8, 64]):
        for j, nj in enumerate(n):
            expected = cm.collective_time("allreduce", "ring", float(nj), pi, A, B, G)
            assert t[i, j] == pytest.approx(expected, rel=1e-12)
    assert np.all(t[:, 0] == 2 * (p[:, 0] - 1) * A)  # zero bytes: latency only


@given(p=st.integers(2, 4096), n=st.floats(0, 1e10))
@settings(max_examples=80, deadline=None)
def test_ring_meets_bandwidth_bound_and_rabenseifner_matches_it(p, n):
    ring = cm.collective_time("allreduce", "ring", n, p, 0.0, B)
    assert ring == pytest.approx(2 * (p - 1) / p * n * B, rel=1e-12, abs=1e-300)
    if p & (p - 1) == 0:  # powers of two: same bandwidth term, fewer messages
        rab = cm.collective_time("allreduce", "rabenseifner", n, p, A, B)
        assert rab <= cm.collective_time("allreduce", "ring", n, p, A, B)


# -------------------------------------------------------------------- bus bandwidth


def test_busbw_factors_follow_nccl_tests():
    assert cm.busbw_factor("allreduce", 8) == pytest.approx(2 * 7 / 8)
    for name in ("reducescatter", "allgather", "alltoall"):
        assert cm.busbw_factor(name, 8) == pytest.approx(7 / 8)
    for name in ("broadcast", "reduce"):
        assert cm.busbw_factor(name, 8) == 1.0
    assert cm.busbw_factor("allreduce", 1) == 0.0


def test_algbw_and_busbw():
    assert cm.algbw(1e9, 0.5) == 2e9
    assert cm.busbw("allreduce", 1e9, 1.0, 8) == pytest.approx(1.75e9)
    np.testing.assert_allclose(cm.algbw([1e6, 2e6], [1e-3, 1e-3]), [1e9, 2e9])
    # The ring all-reduce moves at the link rate: busbw = 1 / beta when alpha = 0.
    t = cm.collective_time("allreduce", "ring", 1e9, 16, 0.0, B)
    assert cm.busbw("allreduce", 1e9, t, 16) == pytest.approx(1 / B)


# -------------------------------------------------------------------------- fitting


@pytest.mark.parametrize(
    "collective, algorithm, gamma",
    [("allreduce", "ring", 0.0), ("allreduce", "tree", G), ("allgather", "recursive_doubling", 0)],
)
def test_fit_recovers_alpha_beta_from_noiseless_data(collective, algorithm, gamma):
    n = np.logspace(2, 9, 15)
    p = np.resize([4, 8, 16], n.shape)
    t = cm.collective_time(collective, algorithm, n, p, 5e-6, 2e-10, gamma)
    fit = cm.fit_alpha_beta(n, t, p, collective, algorithm, gamma=gamma)
    assert fit.alpha == pytest.approx(5e-6, rel=1e-9)
    assert fit.beta == pytest.approx(2e-10, rel=1e-9)
    assert np.max(np.abs(fit.rel_err)) < 1e-9


@pytest.mark.parametrize("seed", range(5))
def test_fit_within_a_few_percent_under_5_percent_noise(seed):
    rng = np.random.default_rng(seed)
    n = np.logspace(2, 9, 60)
    t = cm.collective_time("allreduce", "ring", n, 16, 5e-6, 2e-10)
    noisy = t * (1 + 0.05 * rng.standard_normal(n.shape))
    fit = cm.fit_alpha_beta(n, noisy, 16)
    assert fit.alpha == pytest.approx(5e-6, rel=0.05)
    assert fit.beta == pytest.approx(2e-10, rel=0.05)
    model = cm.collective_time("allreduce", "ring", n, 16, fit.alpha, fit.beta)
    np.testing.assert_allclose(fit.rel_err, (model - noisy) / noisy, rtol=1e-12)


def test_fit_is_non_negative_at_the_boundaries():
    n = np.array([1e3, 1e4, 1e5, 1e6])
    falling = cm.fit_alpha_beta(n, np.array([4e-3, 3e-3, 2e-3, 1e-3]), 8)  # slope < 0
    assert falling.beta == 0.0 and falling.alpha > 0
    negative_intercept = cm.fit_alpha_beta(n, n * 1e-9 - 5e-7, 8)  # intercept < 0
    assert negative_intercept.alpha == 0.0 and negative_intercept.beta > 0


def test_fit_on_alternate_rows_reports_held_out_error():
    """Regression (review, cross-cutting): the chapter printed the error on the rows it
    fitted. With fit_rows="alternate" the fit sees rows 0, 2, 4, ... only, and
    held_out_err is the error on rows 1, 3, ..., computed from the same alpha and beta."""
    n = np.array([2.0**k for k in range(10, 27, 2)])  # the chapter's nine sizes
    exact = cm.collective_time("allreduce", "ring", n, 4, 1.4e-3, 1 / 0.65e9)
    wobble = 1 + 0.2 * np.array([1, -1, 1, -1, 1, -1, 1, -1, 1])  # +20 % on fitted rows
    fit = cm.fit_alpha_beta(n, exact * wobble, 4, fit_rows="alternate")
    assert fit.fitted.tolist() == [True, False] * 4 + [True]
    assert fit.held_out_err.size == 4 and fit.in_sample_err.size == 5
    model = cm.collective_time("allreduce", "ring", n, 4, fit.alpha, fit.beta)
    np.testing.assert_allclose(fit.held_out_err, (model / (exact * wobble) - 1)[1::2])
    # The fit saw only the +20 % rows: it lands on them, and misses the -20 % rows by
    # 1.2 / 0.8 - 1 = +50 %, which an in-sample error would never show.
    np.testing.assert_allclose(fit.in_sample_err, 0.0, atol=1e-9)
    np.testing.assert_allclose(fit.held_out_err, 0.5, rtol=1e-9)
    # A mask picks any rows; every row by default, and then nothing is held out.
    mask = np.zeros(9, bool)
    mask[[0, 8]] = True
    two = cm.fit_alpha_beta(n, exact, 4, fit_rows=mask)
    assert two.fitted.sum() == 2 and two.held_out_err.size == 7
    np.testing.assert_allclose(two.rel_err, 0.0, atol=1e-9)
    assert cm.fit_alpha_beta(n, exact, 4).held_out_err.size == 0


@pytest.mark.parametrize("rows, message", [
    ("odd", "fit_rows must be one of"),
    ([True, False], "fit_rows must be None"),
    ([1, 0, 1], "fit_rows must be None"),
    ([True, False, False], "at least two points"),
])  # fmt: skip
def test_bad_fit_rows_raise(rows, message):
    with pytest.raises(ValueError, match=message):
        cm.fit_alpha_beta([1e3, 1e5, 1e7], [1e-4, 2e-4, 5e-3], 4, fit_rows=rows)


@given(seed=st.integers(0, 10_000), m=st.integers(2, 12))
@settings(max_examples=80, deadline=None)
def test_two_variable_nnls_satisfies_kkt(seed, m):
    rng = np.random.default_rng(seed)
    a = rng.uniform(0, 1, (m, 2))
    y = rng.normal(size=m)
    x = cm._nnls2(a, y)
    grad = a.T @ (a @ x - y)
    scale = 1e-9 * (1 + np.abs(a.T @ y).max())
    assert np.all(x >= 0)
    assert np.all(np.where(x > 0, np.abs(grad) <= scale, grad >= -scale))


# ------------------------------------------------------------------------ crossover


def test_crossover_makes_the_costs_equal():
    n = cm.crossover_bytes("allreduce", "recursive_doubling", "ring", 8, A, B)
    assert n == pytest.approx(11 * A / (1.25 * B))  # 3a + 3nb = 14a + 1.75nb
    t_rd = cm.collective_time("allreduce", "recursive_doubling", n, 8, A, B)
    assert t_rd == pytest.approx(cm.collective_time("allreduce", "ring", n, 8, A, B))
    assert cm.crossover_bytes("allreduce", "ring", "recursive_doubling", 8, A, B) == n


@given(p=st.integers(4, 1024), gamma=st.sampled_from([0.0, G]))
@settings(max_examples=60, deadline=None)
def test_crossover_property(p, gamma):
    n = cm.crossover_bytes("allreduce", "recursive_doubling", "rabenseifner", p, A, B, gamma)
    assert n > 0  # fewer messages vs fewer bytes: they always cross for p >= 4
    t_rd = cm.collective_time("allreduce", "recursive_doubling", n, p, A, B, gamma)
    t_rab = cm.collective_time("allreduce", "rabenseifner", n, p, A, B, gamma)
    assert t_rd == pytest.approx(t_rab, rel=1e-9)


def test_crossover_at_three_ranks_needs_the_reduction():
    # p = 3 folds to p' = 2: both algorithms send 3 n bytes on the critical path
    # (fold, one exchange of n or two halves, unfold), recursive doubling in fewer messages,
    # so it never loses on bytes alone; Rabenseifner reduces less (1.5 n against 2 n).
    assert np.isnan(cm.crossover_bytes("allreduce", "recursive_doubling", "rabenseifner",
                                       3, A, B))  # fmt: skip
    assert cm.crossover_bytes("allreduce", "recursive_doubling", "rabenseifner", 3, A, B, G) > 0


def test_crossover_nan_when_the_costs_never_cross():
    # Same bandwidth term, ring has more messages: recursive doubling always wins.
    assert np.isnan(cm.crossover_bytes("allgather", "ring", "recursive_doubling", 8, A, B))
    assert np.isnan(cm.crossover_bytes("allreduce", "ring", "rabenseifner", 1, A, B))
    out = cm.crossover_bytes("allreduce", "recursive_doubling", "ring", np.array([1, 2, 8]), A, B)
    assert np.isnan(out[0]) and np.isnan(out[1]) and out[2] > 0  # p = 2: identical costs


# ----------------------------------------------------------------------- bad inputs


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"collective": "allreduce", "algorithm": "butterfly"},
         r"algorithm must be one of \('ring', 'recursive_doubling'"),
        ({"collective": "scan", "algorithm": "ring"}, r"collective must be one of"),
        ({"collective": ["allreduce"]}, r"collective must be one of .*got \['allreduce'\]"),
        ({"algorithm": {"ring": 1}}, r"algorithm must be one of"),
        ({"nbytes": -1.0}, r"nbytes must be finite real values >= 0"),
        ({"p": 0}, r"p must be finite real values in \[1, 16777216\]"),
        ({"p": 2**25}, r"p must be finite real values in \[1, 16777216\]"),
        ({"p": 2.5}, r"p must be whole numbers of ranks"),
        ({"p": True}, r"p must be a real array"),
        ({"alpha": -1e-6}, r"alpha must be finite real values >= 0"),
        ({"beta": np.nan}, r"beta must be finite real values"),
        ({"gamma": -1.0}, r"gamma must be finite real values >= 0"),
        ({"nbytes": "big"}, r"nbytes must be a real array"),
        ({"nbytes": "4"}, r"nbytes must be a real array"),
    ],
)  # fmt: skip
def test_collective_time_rejects_bad_inputs(kwargs, message):
    args = dict(collective="allreduce", algorithm="ring", nbytes=1e6, p=8, alpha=A, beta=B)
    with pytest.raises(ValueError, match=message):
        cm.collective_time(**{**args, **kwargs})


def test_other_bad_inputs():
    with pytest.raises(ValueError, match=r"collective must be one of .*allreduce"):
        cm.busbw_factor("all-reduce", 8)
    with pytest.raises(ValueError, match=r"nranks must be an integer in \[1, "):
        cm.busbw_factor("allreduce", 0)
    with pytest.raises(ValueError, match="seconds must be finite real values > 0"):
        cm.algbw(1e6, 0.0)
    with pytest.raises(ValueError, match="equal length >= 2"):
        cm.fit_alpha_beta([1e3], [1e-3], 8)
    with pytest.raises(ValueError, match="equal length >= 2"):
        cm.fit_alpha_beta([1e3, 1e4], [1e-3, 2e-3, 3e-3], 8)
    with pytest.raises(ValueError, match="seconds must be finite real values > 0"):
        cm.fit_alpha_beta([1e3, 1e4], [1e-3, 0.0], 8)
    with pytest.raises(ValueError, match=r"algorithm must be one of \('ring'"):
        cm.crossover_bytes("allreduce", "ring", "nope", 8, A, B)
    with pytest.raises(ValueError, match="formula must be a non-empty string"):
        cm.CostFormula("", "src", len, len, len)
    with pytest.raises(ValueError, match="messages must be callable"):
        cm.CostFormula("f", "src", None, len, len)
    with pytest.raises(ValueError, match="alpha must be a finite number >= 0"):
        cm.AlphaBetaFit(float("nan"), 1e-9, [0.0])


# ------------------------------------------------ regressions and properties (#21)


def test_unhashable_options_are_value_errors():
    # collective_time(["allreduce"], ...) raised TypeError from the dict lookup
    for call in (
        lambda: cm.collective_time(["allreduce"], "ring", 1e6, 8, A, B),
        lambda: cm.collective_time("allreduce", ["ring"], 1e6, 8, A, B),
        lambda: cm.busbw_factor({}, 8),
        lambda: cm.busbw(["allreduce"], 1e6, 1e-3, 8),
        lambda: cm.crossover_bytes("allreduce", ["ring"], "tree", 8, A, B),
        lambda: cm.fit_alpha_beta([1e3, 1e4], [1e-3, 2e-3], 8, collective=["allreduce"]),
    ):
        with pytest.raises(ValueError, match="must be one of"):
            call()


def test_overflowing_results_raise_instead_of_returning_inf():
    with pytest.raises(ValueError, match="collective_time must stay finite"):
        cm.collective_time("allreduce", "ring", 1e300, 8, A, 1e10)
    with pytest.raises(ValueError, match="algbw must stay finite"):
        cm.algbw(1e300, 1e-300)
    with pytest.raises(ValueError, match="must be measurements whose model rows stay finite"):
        cm.fit_alpha_beta([1e300, 1e300], [1e-300, 2e-300], 8)


def test_fit_does_not_depend_on_units():
    n = np.logspace(3, 8, 12)
    t = cm.collective_time("allreduce", "ring", n, 16, 5e-6, 2e-10)
    fit = cm.fit_alpha_beta(n, t, 16)
    tiny = cm.fit_alpha_beta(n * 1e-6, t * 1e-6, 16)  # MB and Ms: alpha scales, beta does not
    assert fit.alpha == pytest.approx(5e-6, rel=1e-9) and tiny.alpha == pytest.approx(5e-12)
    assert tiny.beta == pytest.approx(2e-10, rel=1e-9)


finite_p = st.integers(1, cm.MAX_RANKS)
alphas = st.floats(0.0, 1.0)  # seconds per message: 0 .. 1 s
betas = st.floats(0.0, 1e-3)  # seconds per byte: down to 1 kB/s
sizes = st.floats(0.0, 1e15)  # bytes: up to a petabyte


@given(key=st.sampled_from(sorted(cm.ALGORITHMS)), n=sizes, p=finite_p, a=alphas, b=betas,
       g=betas)  # fmt: skip
@settings(max_examples=300, deadline=None)
def test_times_are_finite_and_non_negative_for_realistic_inputs(key, n, p, a, b, g):
    t = cm.collective_time(*key, n, p, a, b, g)
    assert isinstance(t, float) and np.isfinite(t) and t >= 0
    latency = cm.collective_time(*key, 0.0, p, a, b, g)
    assert 0 <= latency <= t  # more bytes never cost less


@given(p=finite_p, n=st.floats(1.0, 1e15), t=st.floats(1e-9, 1e6))
@settings(max_examples=200, deadline=None)
def test_bandwidths_are_finite_and_non_negative(p, n, t):
    for c in cm.COLLECTIVES:
        assert 0 <= cm.busbw(c, n, t, p) < np.inf
    assert 0 < cm.algbw(n, t) < np.inf


@given(
    p=st.integers(2, 4096),
    a=st.floats(1e-7, 1e-3),
    b=st.floats(1e-13, 1e-8),
    key=st.sampled_from(["recursive_doubling", "rabenseifner", "tree", "parameter_server"]),
)
@settings(max_examples=200, deadline=None)
def test_crossover_is_nan_or_a_positive_finite_size(p, a, b, key):
    x = cm.crossover_bytes("allreduce", "ring", key, p, a, b)
    assert np.isnan(x) or (np.isfinite(x) and x > 0)


@given(seed=st.integers(0, 2**32 - 1), m=st.integers(2, 30), p=st.integers(2, 1024))
@settings(max_examples=100, deadline=None)
def test_fit_is_finite_and_non_negative_on_positive_data(seed, m, p):
    rng = np.random.default_rng(seed)
    n = 10 ** rng.uniform(0, 10, m)
    t = 10 ** rng.uniform(-7, 1, m)
    for rows in (None, "alternate") if m >= 3 else (None,):
        fit = cm.fit_alpha_beta(n, t, p, fit_rows=rows)
        assert fit.alpha >= 0 and fit.beta >= 0 and np.isfinite([fit.alpha, fit.beta]).all()
        assert np.all(np.isfinite(fit.rel_err)) and np.all(fit.rel_err >= -1)
        assert fit.rel_err.size == m and fit.held_out_err.size == m - fit.fitted.sum()
