"""scaleout.demos.nccl under torchrun, and NCCL's LL and Simple protocols between CPU processes
(scaleout.nccl.shm). The library tests are in tests/unit/test_nccl.py."""

from __future__ import annotations

import re

import pytest

from scaleout.nccl import shm


def test_nccl_demo_under_torchrun(torchrun):
    out = torchrun("scaleout.demos.nccl", "--max-bytes", "16384", nproc=2)
    lines = re.findall(r"^allreduce world_size=2 bytes=(\d+) .* ok$", out, re.M)
    assert lines == ["1024", "4096", "16384"], out


@pytest.mark.parametrize("protocol", ["ll", "simple"])
@pytest.mark.parametrize("nbytes", [4, 4096, 2**20])
def test_shared_memory_protocols_deliver_intact_data_without_torn_reads(protocol, nbytes):
    r = shm.pingpong(protocol, nbytes, iters=20, timeout=60)
    assert r.intact and r.torn == 0 and r.seconds > 0
