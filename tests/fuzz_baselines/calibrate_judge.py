import numpy as np
from fuzz import call

from scaleout import nccl
from scaleout.calibrate import Log, Result, Row

_ROWS = tuple(
    Row(2**k, 2**k // 4, "float", "sum", -1, Result(20.0 + 2**k / 1e4, 0.0, 0.0, 0.0), None)
    for k in range(10, 30, 4)
)
_LOG = Log("allreduce", 16, (), None, _ROWS, info=("h:1:1 [0] NCCL INFO Using network Socket",))
_T = nccl.topology("dgx-a100", nodes=2)

BASELINES = {
    "compare": call(_LOG, 2, collective="allreduce", ranks=16, machine="dgx-a100"),
    "evidence": call(_LOG),
    "machine_topology": call("dgx-h100", 16, 2, nics_per_node=8),
    "Comparison": call(
        "allreduce",
        _T,
        np.array([1e3, 1e6]),
        np.array([1.0, 50.0]),
        np.array([2.0, 100.0]),
        ("tree", "ring"),
        ("ll", "simple"),
        ("latency", "bandwidth"),
        (),
    ),
}
SKIP = {}
