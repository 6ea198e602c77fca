"""Max-min fair sharing of links by flows: progressive filling (water-filling).

Every flow's rate rises at the same pace; when a link fills, the flows crossing it freeze
at their current rate; the others keep rising (Bertsekas and Gallager, *Data Networks*,
2nd ed., sec. 6.5.2). A flow may cross a link with a weight (a fraction of its bytes, when
a flow is split over paths, or 2 when a ring crosses it twice): the constraint of link l
is sum_f w[f, l] * rate[f] <= capacity[l].

:func:`max_min_rates` is vectorised over links: each round freezes at least one flow, so it
takes at most as many rounds as flows. Its first level is the rate of the slowest flow:
1 / max_l (sum_f w[f, l] / capacity[l]), the fluid bound of the busiest link.
"""

from __future__ import annotations

import numpy as np

from .. import checks

MAX_FLOWS = 1024
MAX_LINKS = 1 << 16
MAX_ENTRIES = 1 << 20


def max_min_rates(weights, capacity) -> np.ndarray:
    """Max-min fair rates of flows (rows of ``weights``, shape (flows, links), entries >= 0)
    on links of ``capacity`` (shape (links,), > 0, any unit): one rate per flow, same unit.

    A flow that crosses no link (an all-zero row) is unconstrained: its rate is ``inf``.
    At most 1024 flows and 2**20 entries (the loop runs at most once per flow)."""
    w = checks.array("weights", weights, ndim=2, low=0.0, max_size=MAX_ENTRIES)
    cap = checks.array("capacity", capacity, ndim=1, low=0.0, low_open=True)
    f, links = w.shape
    if f > MAX_FLOWS or links > MAX_LINKS:
        raise checks.fail("weights", f"at most {MAX_FLOWS} flows and {MAX_LINKS} links", w.shape)
    if cap.shape[0] != links:
        raise checks.fail("capacity", f"one capacity per link ({links})", cap.shape[0])
    rate = np.zeros(f)
    active = w.sum(axis=1) > 0
    rate[~active] = np.inf
    left = cap.copy()
    for _ in range(f + 1):
        if not active.any():
            break
        demand = w[active].sum(axis=0)  # rate-weight of the still-rising flows, per link
        used = demand > 0
        step = np.min(left[used] / demand[used])
        rate[active] += step
        left = np.maximum(left - step * demand, 0.0)
        full = used & (left <= 1e-12 * cap)
        frozen = active & (w[:, full].sum(axis=1) > 0)
        active &= ~frozen
    return rate


def jain_index(rates) -> float:
    """Jain's fairness index (sum x)^2 / (n sum x^2) of non-negative rates: 1 when all are
    equal, 1/n when one takes everything (Jain, Chiu and Hawe, DEC-TR-301, 1984). All zero:
    1.0 (all equal)."""
    x = checks.array("rates", rates, ndim=1, low=0.0)
    square = float(np.sum(x * x))
    if square == 0.0:
        return 1.0
    return float(np.sum(x)) ** 2 / (len(x) * square)
