"""Real DDP and hand-written gradient averaging on 4 CPU processes and under torchrun
(scaleout.demos.data_parallel). The library tests are in tests/unit/test_data_parallel.py."""

import re

import pytest

from scaleout.demos import data_parallel as demo
from scaleout.dist import run


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_ddp_and_handwritten_all_reduce_match_one_process_on_4_cpu_ranks():
    reports = run(
        demo.check_data_parallel,
        4,
        kwargs={"steps": 3, "batch": 64, "k": 4},
        timeout=150,
        show_output=False,
    )
    for report in reports:  # assert_close already passed inside each rank
        for key in ("handwritten", "ddp", "no_sync", "sync_every_micro_step"):
            assert report[key] < 1e-5
        assert report["buckets"] == [
            ["6.bias", "6.weight", "4.bias", "4.weight"],
            ["2.bias", "2.weight"],
            ["0.bias", "0.weight"],
        ]
        # 3 steps: 1 + 2 * 3 bucket all-reduces; 12 synchronised micro-steps: 1 + 11 * 3.
        assert report["allreduces_ddp"] == (7, 7, True)
        assert report["allreduces_no_sync"] == (7, 7, True)
        assert report["allreduces_sync_every_micro_step"] == (34, 34, True)
        # Under autocast: fp32 buckets, bytes held as gradient_memory predicts (2x without
        # gradient_as_bucket_view), rebuilt in the observed arrival order.
        assert report["memory"] == {
            "bucket_view=False": (True, True, True),
            "bucket_view=True": (True, True, True),
        }


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_ddp_default_caps_make_one_bucket_for_the_small_model():
    def buckets(rank, world_size):
        _, log = demo.train_ddp(rank, world_size, steps=2, batch=8)
        return log

    logs = run(buckets, 4, timeout=120, show_output=False)
    assert demo.expected_buckets(None) == [
        ["6.bias", "6.weight", "4.bias", "4.weight", "2.bias", "2.weight", "0.bias", "0.weight"]
    ]
    assert all(log == demo.expected_log(None, 2) for log in logs)


@pytest.mark.slow
@pytest.mark.timeout(200)
def test_data_parallel_demo_under_torchrun(torchrun):
    out = torchrun("scaleout.demos.data_parallel", "--steps", "3", "--accumulation", "4")
    for key in ("handwritten", "ddp", "no_sync", "sync_every_micro_step"):
        assert re.search(rf"^{key}\s+world_size=4 .* ok$", out, re.M), out
    assert "bucket all-reduces=34 (expected 34" in out
    assert len(re.findall(r"^autocast, bucket_view=(True|False) .* ok$", out, re.M)) == 2, out
