"""The book's gloo benchmark under scaleout.dist.run: every collective it times, printed in
nccl-tests' layout and read back by the parser."""

from __future__ import annotations

import pytest

from scaleout import calibrate as CAL
from scaleout.dist import run


@pytest.mark.parametrize("collective", ["allreduce", "allgather", "broadcast"])
def test_gloo_benchmark_round_trips(collective):
    sizes = [1024, 16384]
    times = run(CAL.time_collective, nprocs=2, args=(collective, sizes, 1), timeout=120)
    assert times[0] == times[1]  # every rank reports the slowest rank's time
    log = CAL.gloo_log(collective, sizes, times[0], ranks=2)
    back = CAL.parse_nccl_tests(CAL.format_nccl_tests(log))
    assert back.collective == collective and back.ranks == 2
    assert [r.nbytes for r in back.rows] == sizes
    assert all(r.out_of_place.time_us > 0 and r.in_place is None for r in back.rows)


def test_bad_collective_fails_before_any_process_starts():
    with pytest.raises(ValueError, match="collective"):
        CAL.gloo_log("alltoall", [1024], [1e-3], ranks=2)
