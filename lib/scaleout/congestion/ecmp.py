"""ECMP collisions: n flows hashed uniformly onto k equal paths is balls into bins.

A switch running equal-cost multi-path routing (ECMP) sends every packet of a flow down the
path its hash of the 5-tuple picks. With few, large flows (a collective's elephants) the
hash decides the bandwidth: two flows on one path get half a link each while another path
idles. How much that costs is the expected occupancy of the busiest of ``k`` bins after
``n`` balls are thrown uniformly at random (the classic occupancy problem; Raab and Steger,
"Balls into bins — a simple and tight analysis", RANDOM 1998).

* :func:`ecmp_expected_max` computes E[max] = sum_c (1 - P(max <= c)) exactly (up to float
  rounding). P(max <= c) comes from Poissonization: independent Poisson(n/k) counts,
  conditioned on summing to n, are exactly the multinomial occupancy, so
  P(max <= c) = [y^n] (sum_{j<=c} pois(j) y^j)^k / P(Poisson(n) = n), a truncated
  polynomial power (O(n^2 log k) per c).
  Beyond ``EXACT_LIMIT`` flows or paths it uses the Poisson approximation
  P(max <= c) ~ P(Poisson(n/k) <= c)^k (each bin's count is nearly Poisson and nearly
  independent; the approximation is stated, and tested against sampling).
* :func:`enumerate_expected_max` is the reference: it enumerates every occupancy vector
  (multinomial probabilities), feasible only for small cases; the exact form is
  tested equal to it.
* :func:`ecmp_loads` samples hash outcomes, one seeded generator per seed.
"""

from __future__ import annotations

import math

import numpy as np

from .. import checks

MAX_FLOWS = 1 << 16
MAX_PATHS = 1 << 16
EXACT_LIMIT = 1024  # flows and paths up to which ecmp_expected_max is exact
MAX_SEEDS = 100_000
MAX_OCCUPANCIES = 200_000  # enumeration limit of the reference


def _n_k(n_flows, n_paths) -> tuple[int, int]:
    n = checks.integer("n_flows", n_flows, 0, MAX_FLOWS)
    k = checks.integer("n_paths", n_paths, 1, MAX_PATHS)
    return n, k


def _poisson_pmf(lam: float, upto: int) -> np.ndarray:
    """Poisson(lam) probabilities of 0..upto, in log space (no overflow)."""
    j = np.arange(upto + 1)
    logf = np.concatenate(([0.0], np.cumsum(np.log(np.arange(1, upto + 1)))))  # log j!
    return np.exp(-lam + j * math.log(lam) - logf) if lam > 0 else (j == 0).astype(float)


def _power_truncated(a: np.ndarray, k: int, degree: int) -> np.ndarray:
    """Coefficients 0..degree of the polynomial a(y)**k (binary exponentiation)."""
    result = np.zeros(degree + 1)
    result[0] = 1.0
    base = a[: degree + 1]
    while k:
        if k & 1:
            result = np.convolve(result, base)[: degree + 1]
        k >>= 1
        if k:
            base = np.convolve(base, base)[: degree + 1]
    return result


def _prob_all_at_most(n: int, k: int, c: int) -> float:
    """P(no bin holds more than c balls), n balls in k bins, exactly by Poissonization:
    with Poisson(n/k) counts per bin conditioned on their sum being n,
    P = [y^n] (sum_{j<=c} pois(j) y^j)^k / pois_n(n)."""
    if c >= n:
        return 1.0
    if k * c < n:
        return 0.0
    lam = n / k
    a = _poisson_pmf(lam, c)
    coef = _power_truncated(a, k, n)[n]
    log_total = -n + n * math.log(n) - math.lgamma(n + 1)  # Poisson(n) at n
    return min(1.0, float(coef / math.exp(log_total)))


def _expected_max_poisson(n: int, k: int) -> float:
    """E[max] with independent Poisson(n/k) bins: sum over c of 1 - CDF(c)^k, all c at once."""
    cdf = np.minimum(np.cumsum(_poisson_pmf(n / k, n - 1)), 1.0)
    with np.errstate(divide="ignore"):
        tail = -np.expm1(k * np.log(cdf))  # 1 - CDF^k without cancellation
    return max(float(np.sum(tail)), float(math.ceil(n / k)))


def ecmp_expected_max(n_flows: int, n_paths: int) -> float:
    """Expected number of flows on the busiest of ``n_paths`` paths when ``n_flows`` flows
    each hash to a path uniformly at random and independently.

    Exact (float rounding aside) when both are at most ``EXACT_LIMIT``; beyond, the Poisson
    approximation of the module docstring. 0 flows: 0. Limits: ``MAX_FLOWS``, ``MAX_PATHS``.
    """
    n, k = _n_k(n_flows, n_paths)
    if n == 0:
        return 0.0
    if k == 1:
        return float(n)
    if n > EXACT_LIMIT or k > EXACT_LIMIT:
        return _expected_max_poisson(n, k)
    c = math.ceil(n / k)  # the busiest path holds at least ceil(n / k) flows
    total = float(c)
    while c < n:
        tail = 1.0 - _prob_all_at_most(n, k, c)
        if tail < 1e-13:
            break
        total += tail
        c += 1
    return total


def _compositions(n: int, k: int):
    """Every occupancy vector (k non-negative counts summing to n)."""
    if k == 1:
        yield (n,)
        return
    for first in range(n + 1):
        for rest in _compositions(n - first, k - 1):
            yield (first, *rest)


def enumerate_expected_max(n_flows: int, n_paths: int) -> float:
    """E[max] by enumerating every occupancy vector with its multinomial probability: the
    reference :func:`ecmp_expected_max` is tested against. At most ``MAX_OCCUPANCIES``
    occupancy vectors (C(n + k - 1, k - 1)); beyond, ``ValueError``."""
    n, k = _n_k(n_flows, n_paths)
    count = math.comb(n + k - 1, k - 1)
    if count > MAX_OCCUPANCIES:
        raise checks.fail("n_flows, n_paths", f"at most {MAX_OCCUPANCIES} occupancy vectors", count)
    if n == 0:
        return 0.0
    log_norm = math.lgamma(n + 1) - n * math.log(k)
    total = 0.0
    for occ in _compositions(n, k):
        logp = log_norm - sum(math.lgamma(x + 1) for x in occ)
        total += max(occ) * math.exp(logp)
    return total


def ecmp_loads(n_flows: int, n_paths: int, seeds: int = 100) -> np.ndarray:
    """Sampled flow counts per path: an int array of shape (seeds, n_paths), row s drawn
    with ``numpy.random.default_rng(s)``. ``seeds * n_paths`` and ``seeds * n_flows`` at most
    2**26 (memory)."""
    n, k = _n_k(n_flows, n_paths)
    s = checks.integer("seeds", seeds, 1, MAX_SEEDS)
    if s * max(n, k) > checks.MAX_ELEMENTS:
        raise checks.fail("seeds * max(n_flows, n_paths)", f"at most {checks.MAX_ELEMENTS}",
                          s * max(n, k))  # fmt: skip
    out = np.zeros((s, k), dtype=np.int64)
    for seed in range(s):
        paths = np.random.default_rng(seed).integers(0, k, size=n)
        out[seed] = np.bincount(paths, minlength=k)
    return out


def busiest_path_slowdown(n_flows: int, n_paths: int) -> float:
    """E[max] / ceil(n / k): how much longer than the best placement the busiest path takes
    when every flow carries the same bytes (>= 1; 1.0 for no flows)."""
    n, k = _n_k(n_flows, n_paths)
    if n == 0:
        return 1.0
    return ecmp_expected_max(n, k) / math.ceil(n / k)
