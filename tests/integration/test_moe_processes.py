"""The expert-parallel layer of scaleout.demos.moe on gloo processes and under torchrun. The
library tests are in tests/unit/test_moe.py."""

from __future__ import annotations

import re

import pytest

from scaleout.demos import moe as demo
from scaleout.dist import run


@pytest.mark.parametrize("world, ep", [(4, 4), (8, 4)])
def test_gloo_layer_equals_reference(world, ep):
    results = run(demo.expert_parallel_layer, world, kwargs={"ep": ep}, timeout=120)
    errors = demo.compare(results, ep)
    assert all(v != float("inf") for v in errors.values()), errors
    assert sum(r["dropped"] for r in results) > 0  # the check covers dropped tokens
    assert any(len(set(r["send"])) > 1 for r in results)  # uneven splits


@pytest.mark.slow
@pytest.mark.timeout(200)
def test_moe_demo_under_torchrun(torchrun):
    out = torchrun("scaleout.demos.moe")
    mesh = torchrun("scaleout.demos.moe", "--ep", "4", nproc=8)  # EP x DP
    for name in ("output", "grad_x", "grad_router", "grad_w1", "grad_w2", "splits"):
        assert re.search(rf"^{name}\s+world_size=4 ep=4 dropped=\d+ .* ok$", out, re.M), out
        assert re.search(rf"^{name}\s+world_size=8 ep=4 dropped=\d+ .* ok$", mesh, re.M), mesh


def test_compare_flags_a_mismatch():
    results = [
        {**r, "output": r["output"] + 1e-6} if g == 0 else r
        for g, r in enumerate(run(demo.expert_parallel_layer, 4, show_output=False))
    ]
    assert demo.compare(results, 4)["output"] == float("inf")
