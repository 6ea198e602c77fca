"""scaleout.demos.context_parallel on real gloo processes (forked and under torchrun) against
the dense single-process modules. The library tests of context parallelism are in
tests/unit/test_context_parallel.py."""

import re

import pytest

from scaleout.demos import context_parallel as demo
from scaleout.dist import run


@pytest.mark.slow
@pytest.mark.timeout(120)
@pytest.mark.parametrize("world_size", [2, 4])
def test_demo_on_forked_processes_matches_dense_modules(world_size):
    out = run(demo.check_context_parallel, world_size, timeout=90)
    for r in out:
        assert all(err < demo.TOLERANCE for err in r["errors"].values()), r["errors"]
        assert r["calls"]["all-to-all"] == 8  # 3 + 1 forward, 1 + 3 backward
        assert r["calls"]["ring messages sent"] == 3 * (world_size - 1) + 5 * (world_size - 1) + 2
    assert len(out[0]["errors"]) == 6


@pytest.mark.slow
@pytest.mark.timeout(150)
def test_context_parallel_demo_under_torchrun(torchrun):
    out = torchrun("scaleout.demos.context_parallel", "--backend", "gloo")
    for name in ("sequence parallel output", "sequence parallel grads", "ring attention output",
                 "ring attention grads", "ulysses output", "ulysses grads"):  # fmt: skip
        assert re.search(rf"^{name}\s+world_size=4 max\|err\|=\S+ ok$", out, re.M), out
