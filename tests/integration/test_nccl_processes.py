"""scaleout.demos.nccl under torchrun. The library tests are in tests/unit/test_nccl.py."""

from __future__ import annotations

import re


def test_nccl_demo_under_torchrun(torchrun):
    out = torchrun("scaleout.demos.nccl", "--max-bytes", "16384", nproc=2)
    lines = re.findall(r"^allreduce world_size=2 bytes=(\d+) .* ok$", out, re.M)
    assert lines == ["1024", "4096", "16384"], out
