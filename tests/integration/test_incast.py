"""A real incast over a veth pair in a network namespace (scaleout.demos.incast), where the
machine allows it (Linux, root, iproute2); skipped with the reason elsewhere."""

from __future__ import annotations

import subprocess

import pytest

from scaleout.demos import incast

OK, WHY = incast.available()
pytestmark = [pytest.mark.slow, pytest.mark.skipif(not OK, reason=WHY or "available")]


def _namespaces() -> str:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, timeout=10)
    return out.stdout


def test_incast_queues_and_shares_the_bottleneck():
    r = incast.run_incast(3, 50.0, 2.0)
    total = sum(r.goodput_mbit)
    assert 0 < total <= 1.1 * r.rate_mbit
    assert all(g >= 0 for g in r.goodput_mbit)
    assert "soinc" not in _namespaces()  # the namespace (and its veth) removed
    if total < 0.8 * r.rate_mbit:
        pytest.skip(f"the senders filled only {total:.0f} of {r.rate_mbit:g} Mb/s (busy machine)")
    assert r.loaded_rtt_ms > r.idle_rtt_ms + 1.0  # the full bottleneck queue adds delay


def test_bad_input_is_refused_before_anything_is_created():
    with pytest.raises(ValueError, match="streams"):
        incast.run_incast(2, 10.0, 1.0, streams=(1, 2, 3))
