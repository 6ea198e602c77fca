"""The pipeline schedules of scaleout.demos.pipeline on CPU processes (scaleout.dist.run and
torchrun) against the single-process model. The library tests are in
tests/unit/test_pipeline.py."""

from __future__ import annotations

import re

import pytest

from scaleout import pipeline as P


@pytest.mark.slow
@pytest.mark.timeout(300)
@pytest.mark.parametrize(
    "name, p, m", [("naive", 4, 2), ("gpipe", 4, 6), ("1f1b", 4, 8), ("1f1b", 3, 2),
                   ("interleaved", 2, 4), ("zb-h1", 4, 5)],
)  # fmt: skip
def test_pipeline_demo_matches_single_process_and_simulation(name, p, m):
    from scaleout.demos.pipeline import check_pipeline
    from scaleout.dist import run

    results = run(check_pipeline, p, kwargs={"name": name, "m": m}, timeout=120)
    sched = P.schedule(name, p, m, 2 if name == "interleaved" else 1)
    for rank, res in enumerate(results):
        assert res["grad_err"] < 1e-12 and res["output_err"] < 1e-12
        assert res["order_ok"] and res["log"] == sched.ops(rank)
        assert res["peak_ok"] and res["peak"] == pytest.approx(P.peak_in_flight(sched)[rank])
    assert results[-1 if name != "interleaved" else p - 1]["log"]


@pytest.mark.slow
@pytest.mark.timeout(200)
def test_pipeline_demo_under_torchrun(torchrun):
    out = torchrun("scaleout.demos.pipeline", "--microbatches", "8")
    for name in P.SCHEDULES:
        assert re.search(rf"^{name}\s+p=4 m=8 .* ok$", out, re.M), out
