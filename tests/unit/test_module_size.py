"""Issue 24: no library module over 500 lines outside ``viz/`` and ``demos/`` (a reader finds a
chapter's algorithm in one small file)."""

from __future__ import annotations

from pathlib import Path

import scaleout

LIB = Path(scaleout.__file__).resolve().parent
MAX_LINES = 500


def _modules():
    for path in sorted(LIB.rglob("*.py")):
        rel = path.relative_to(LIB).as_posix()
        if not rel.startswith(("viz/", "demos/")):
            yield rel, len(path.read_text(encoding="utf-8").splitlines())


def test_no_module_over_500_lines_outside_viz_and_demos():
    long = {rel: n for rel, n in _modules() if n > MAX_LINES}
    assert not long, f"split these at their seams (at most {MAX_LINES} lines each): {long}"


def test_the_split_modules_are_packages_with_their_old_names():
    # chapters import these names; the packages re-export them (issue 24)
    from scaleout import data_parallel, dist, hardware, memory, topology

    for package in (data_parallel, dist, hardware, memory, topology):
        assert Path(package.__file__).name == "__init__.py"
    assert data_parallel.ddp_buckets.__module__ == "scaleout.data_parallel.buckets"
    assert topology.nccl_machine.__module__ == "scaleout.topology.scenarios"
    assert hardware.GPUS["H100-SXM"] is hardware.gpus.GPUS["H100-SXM"]
    assert dist.run.__module__ == "scaleout.dist.launcher"
    assert memory.zero3_step.__module__ == "scaleout.memory.sharding"
    for package in (data_parallel, dist, hardware, memory, topology):
        assert all(hasattr(package, name) for name in package.__all__), package.__name__
