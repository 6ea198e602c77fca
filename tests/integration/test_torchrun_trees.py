"""The two-tree all-reduce demo under real torchrun (gloo, 4 CPU processes)."""

import re

import pytest

from scaleout.demos.trees import CHECKS, main


@pytest.mark.slow
@pytest.mark.timeout(150)
def test_trees_demo_under_torchrun(torchrun):
    out = torchrun("scaleout.demos.trees", "--backend", "gloo", "--numel", "1001", "--chunks", "3")
    for name in CHECKS:  # rank 0 prints one line per all-reduce
        pattern = rf"^{name}\s+world_size=4 numel=1001 chunks=3 max\|err\|=0 ok$"
        assert re.search(pattern, out, re.M), out


@pytest.mark.parametrize("argv", [["--numel", "0"], ["--chunks", "0"], ["--backend", "mpi"]])
def test_demo_rejects_bad_arguments_before_starting(argv):
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
