"""The 3D (data x pipeline x tensor) demo of scaleout.demos.planner on 8 CPU processes and
under torchrun, against one process. The library tests are in tests/unit/test_planner.py."""

import pytest

from scaleout.demos.planner import TOLERANCE, train_3d
from scaleout.dist import run


@pytest.mark.timeout(120)
def test_3d_mesh_equals_one_process():
    out = run(train_3d, 8, timeout=100, show_output=False)
    # Megatron's order (scaleout.mesh): rank = t + 2 d + 4 p, so (d, p, t) by rank is
    assert [o["coords"] for o in out] == [(i, j, k) for j in range(2) for i in range(2)
                                          for k in range(2)]  # fmt: skip
    for o in out:
        assert o["weight_error"] < TOLERANCE and o["loss_error"] < TOLERANCE
    losses = out[-1]["losses"]
    assert losses == pytest.approx(out[-1]["reference_losses"], abs=TOLERANCE)
    assert losses[-1] < losses[0]  # it trains


@pytest.mark.slow
@pytest.mark.timeout(150)
def test_3d_demo_under_torchrun(torchrun):
    assert "3D run equals one process" in torchrun("scaleout.demos.planner", nproc=8, timeout=140)
