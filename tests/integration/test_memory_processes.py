"""The real ZeRO runs of scaleout.demos.zero (ZeRO-1, a hand-written ZeRO-3, FSDP2) on 4 CPU
processes and under torchrun, against single-process Adam. The library tests are in
tests/unit/test_memory.py."""

import re

import pytest
import torch

from scaleout import memory as M
from scaleout.demos import zero as Z
from scaleout.dist import run


@pytest.fixture(scope="module")
def reference():
    return Z.reference_adam(4, steps=5)


@pytest.mark.timeout(120)
def test_zero1_matches_plain_dp_and_single_process_adam(reference):
    out = run(Z.train_zero1, 4, kwargs={"steps": 5}, timeout=100)
    for rank_out in out:
        params = zip(rank_out["params"], rank_out["ddp_params"], reference, strict=True)
        for got, ddp, want in params:
            torch.testing.assert_close(got, want)
            torch.testing.assert_close(got, ddp)
    measured = [r["state_bytes"] for r in out]
    assert measured == Z.predicted_zero1_bytes(4) == [32772, 32772, 32772, 23660]
    psi = sum(p.numel() for p in Z.make_model().parameters())
    ntensors = len(list(Z.make_model().parameters()))
    assert sum(measured) == out[0]["ddp_state_bytes"] == 8 * psi + 4 * ntensors
    ideal = M.model_state_bytes(psi, 1, 4, precision="fp32").optimizer_states
    assert ideal == 8 * psi / 4
    assert max(measured) / ideal == pytest.approx(32772 / 30484)


@pytest.mark.timeout(120)
def test_hand_written_zero3_matches_single_process_adam(reference):
    out = run(Z.train_zero3, 4, kwargs={"steps": 5}, timeout=100)
    for rank_out in out:
        for got, want in zip(rank_out["params"], reference, strict=True):
            torch.testing.assert_close(got, want)
    padded = out[0]["padded_params"]
    model = M.model_state_bytes(padded, 3, 4, precision="fp32")
    layers = 5
    for r in out:
        held = r["state_bytes"]
        assert held["parameters"] == model.parameters and held["gradients"] == model.gradients
        assert held["optimizer states"] == model.optimizer_states + 4 * layers  # + Adam steps


@pytest.mark.slow
@pytest.mark.timeout(150)
def test_fsdp2_matches_single_process_adam(reference):
    out = run(Z.train_fsdp, 4, kwargs={"steps": 5}, timeout=130)
    for rank_out in out:
        for got, want in zip(rank_out["params"], reference, strict=True):
            torch.testing.assert_close(got, want)
    psi = sum(p.numel() for p in Z.make_model().parameters())
    held = [r["state_bytes"]["parameters"] for r in out]
    assert sum(held) == 4 * psi  # every element on exactly one rank
    assert held == [15372, 15372, 15372, 14852]  # dim-0 shards: 10 rows split 3, 3, 3, 1


@pytest.mark.slow
@pytest.mark.timeout(200)
def test_zero_demo_under_torchrun(torchrun):
    out = torchrun("scaleout.demos.zero")
    for name in ("zero1", "ddp", "zero3", "fsdp"):
        assert re.search(rf"^{name}\s+world_size=4 steps=5 .* ok$", out, re.M), out
    for r, nbytes in enumerate(Z.predicted_zero1_bytes(4)):
        assert f"zero1 rank {r}: optimizer-state bytes {nbytes} (predicted {nbytes}) ok" in out
