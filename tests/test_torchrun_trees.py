"""The two-tree all-reduce demo under real torchrun (gloo, 4 CPU processes)."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from scaleout.demos.trees import CHECKS, main

TORCHRUN = Path(sys.executable).with_name("torchrun")


@pytest.mark.slow
@pytest.mark.timeout(150)
@pytest.mark.skipif(not TORCHRUN.exists(), reason="torchrun not installed next to python")
def test_trees_demo_under_torchrun():
    cmd = [str(TORCHRUN), "--standalone", "--nproc-per-node", "4", "-m", "scaleout.demos.trees"]
    cmd += ["--backend", "gloo", "--numel", "1001", "--chunks", "3"]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for name in CHECKS:  # rank 0 prints one line per all-reduce
        pattern = rf"^{name}\s+world_size=4 numel=1001 chunks=3 max\|err\|=0 ok$"
        assert re.search(pattern, proc.stdout, re.M), proc.stdout
    assert "MISMATCH" not in proc.stdout


@pytest.mark.parametrize("argv", [["--numel", "0"], ["--chunks", "0"], ["--backend", "mpi"]])
def test_demo_rejects_bad_arguments_before_starting(argv):
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
