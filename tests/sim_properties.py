"""The properties every simulated trace has (shared by the simulator's property tests)."""

import numpy as np
import pytest

from scaleout import sim


def draw_schedule(draw, st, p: int, max_k: int):
    """A schedule valid on p stages and its micro-batch count m, drawn with hypothesis's
    ``draw`` and strategies ``st``: m is a multiple of p (of 2p from p = 2), up to max_k of
    them; the V schedules only on 2 or 4 stages, DualPipe-V with m >= 2p."""
    m = draw(st.integers(1, max_k)) * p * (2 if p > 1 else 1)
    names = ["1f1b", "gpipe", "zb-h1"] + (["zb-v", "dualpipe-v"] if p in (2, 4) else [])
    name = draw(st.sampled_from(names))
    if name == "dualpipe-v":
        m = max(m, 2 * p)
    return name, m


def check_trace(tr) -> None:
    """No two events overlap on one stream of one unit; every dependency is done (to its
    fraction) before its operation starts; the last event ends at the step time; the breakdown
    adds up to it; the critical path is a chain that ends there."""
    a = tr._arrays
    key = a["unit"] * len(sim.STREAMS) + a["stream"]
    order = np.lexsort((a["start"], key))
    same = key[order][1:] == key[order][:-1]
    assert np.all(a["start"][order][1:][same] >= a["end"][order][:-1][same] - 1e-12)
    for i, deps in enumerate(a["deps"]):
        for j, frac in deps or ():
            ready = a["start"][j] + frac * (a["end"][j] - a["start"][j])
            assert ready <= a["start"][i] + 1e-12
    assert max(e.end_s for e in tr.events) == pytest.approx(tr.step_s, rel=1e-12)
    assert sum(tr.breakdown.values()) == pytest.approx(tr.step_s, rel=1e-9)
    path = tr.critical_path()
    assert path[-1].end_s == pytest.approx(tr.step_s)
    for x, y in zip(path, path[1:], strict=False):
        assert x.start_s <= y.start_s + 1e-12
