"""Megatron's tensor-parallel MLP and attention (scaleout.demos.tensor_parallel) on gloo
processes and under torchrun, against the dense modules. The library tests are in
tests/unit/test_tensor_parallel.py."""

import re

import pytest
import torch

from scaleout.demos import tensor_parallel as demo
from scaleout.dist import RankError, run


@pytest.mark.timeout(120)
@pytest.mark.parametrize("world_size", [2, 4])
def test_tensor_parallel_mlp_and_attention_match_dense_modules(world_size):
    results = run(demo.check_tensor_parallel, world_size, show_output=False, timeout=90)
    for result in results:
        assert set(result["errors"]) == {
            "mlp output",
            "mlp grads",
            "attention output",
            "attention grads",
        }
        assert all(err < demo.TOLERANCE for err in result["errors"].values()), result
        # MLP + attention: g all-reduces once forward, f once backward, in each block
        assert result["allreduces"] == {"g forward": 2, "f backward": 2}


@pytest.mark.timeout(120)
def test_tensor_parallel_other_shapes_on_two_ranks():
    kwargs = dict(batch=1, seq=5, hidden=24, heads=6, seed=3)
    results = run(demo.check_tensor_parallel, 2, kwargs=kwargs, show_output=False, timeout=90)
    assert all(e < demo.TOLERANCE for r in results for e in r["errors"].values())


@pytest.mark.timeout(120)
def test_world_size_that_does_not_divide_the_heads_fails_clearly():
    with pytest.raises(RankError, match="must divide heads"):
        run(demo.check_tensor_parallel, 4, kwargs=dict(hidden=24, heads=6), show_output=False)


def test_operators_are_conjugate_in_single_process_autograd():
    # f and g on a one-rank group: both are the identity, and gradients flow through.
    results = run(_f_then_g, 1, show_output=False, timeout=30)
    assert results == [True]


def _f_then_g(rank, world_size):
    x = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)
    y = demo.ReduceFromTensorParallel.apply(demo.CopyToTensorParallel.apply(x) * 2.0)
    y.sum().backward()
    return bool(torch.equal(y, 2 * x) and torch.equal(x.grad, torch.full_like(x, 2.0)))


@pytest.mark.slow
@pytest.mark.timeout(150)
def test_tensor_parallel_demo_under_torchrun(torchrun):
    out = torchrun("scaleout.demos.tensor_parallel", "--backend", "gloo")
    for name in ("mlp output", "mlp grads", "attention output", "attention grads"):
        assert re.search(rf"^{name}\s+world_size=4 max\|err\|=\S+ ok$", out, re.M), out
    assert "f backward: 2, g forward: 2" in out
