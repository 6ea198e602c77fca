"""The collectives demo under real torchrun (gloo, 4 CPU processes)."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from scaleout.demos.collectives import CHECKS, main
from scaleout.demos.common import init_from_env

TORCHRUN = Path(sys.executable).with_name("torchrun")


@pytest.mark.slow
@pytest.mark.timeout(150)
@pytest.mark.skipif(not TORCHRUN.exists(), reason="torchrun not installed next to python")
def test_collectives_demo_under_torchrun():
    cmd = [str(TORCHRUN), "--standalone", "--nproc-per-node", "4"]
    cmd += ["-m", "scaleout.demos.collectives", "--backend", "gloo", "--numel", "1001"]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for name in CHECKS:  # rank 0 prints one line per check
        assert re.search(rf"^{name}\s.*world_size=4 numel=1001 .* ok$", proc.stdout, re.M), (
            proc.stdout
        )
    assert "MISMATCH" not in proc.stdout


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
