"""The collectives demo under real torchrun (gloo, 4 CPU processes)."""

import re

import pytest

from scaleout.demos.collectives import CHECKS, main
from scaleout.demos.common import init_from_env


@pytest.mark.slow
@pytest.mark.timeout(150)
def test_collectives_demo_under_torchrun(torchrun):
    out = torchrun("scaleout.demos.collectives", "--backend", "gloo", "--numel", "1001")
    for name in CHECKS:  # rank 0 prints one line per check
        assert re.search(rf"^{name}\s.*world_size=4 numel=1001 .* ok$", out, re.M), out


def test_demo_rejects_bad_numel_before_starting():
    with pytest.raises(SystemExit) as info:
        main(["--numel", "0"])
    assert info.value.code == 2


def test_init_from_env_outside_torchrun_says_how_to_start(monkeypatch):
    for name in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(RuntimeError, match="torchrun --standalone"):
        init_from_env("gloo")
    with pytest.raises(ValueError, match="backend"):
        init_from_env("mpi")
