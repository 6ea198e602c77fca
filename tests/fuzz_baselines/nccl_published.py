from fuzz import call

from scaleout import nccl
from scaleout.nccl import published

_ROWS = published.rows()

BASELINES = {
    "Measurement": call(
        "x",
        nccl.topology("dgx-a100"),
        "allreduce",
        2.0**30,
        None,
        "busbw",
        200.0,
        None,
        "https://example.org",
        "2.27.7",
    ),
    "rows": call(),
    "alltoall_rows": call(),
    "on_design": call(published.MEASUREMENTS[0], "ring"),
    "split_summary": call(_ROWS),
}
