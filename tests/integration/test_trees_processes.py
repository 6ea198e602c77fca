"""The two-tree all-reduce of scaleout.demos.trees on real gloo processes, against
dist.all_reduce. The library tests are in tests/unit/test_trees.py."""

from __future__ import annotations

import pytest

from scaleout.demos.trees import check_tree_allreduce
from scaleout.dist import run


@pytest.mark.timeout(120)
@pytest.mark.parametrize("world_size", [4, 5, 8])
def test_gloo_two_tree_allreduce_equals_dist_all_reduce(world_size):
    for numel, chunks in ((1, 1), (13, 3), (1001, 4)):
        results = run(check_tree_allreduce, world_size, kwargs=dict(numel=numel, chunks=chunks),
                      show_output=False, timeout=90)  # fmt: skip
        assert results == [{"two_trees": 0.0, "one_tree": 0.0}] * world_size
