import numpy as np
from fuzz import call

from scaleout import nccl
from scaleout.calibrate import Log, Result, Row, compare

_ROWS = tuple(
    Row(2**k, 2**k // 4, "float", "sum", -1, Result(20.0 + 2**k / 1e4, 0.0, 0.0, 0.0), None)
    for k in range(10, 30, 4)
)
_C = compare(Log("allreduce", 16, (), None, _ROWS), 2, machine="dgx-a100")

BASELINES = {
    "fit_corrections": call(_C, holdout="alternate"),
    "Correction": call(
        "allreduce",
        nccl.topology("dgx-a100", nodes=2),
        {"bandwidth": 0.8},
        np.array([0.1]),
        np.array([0.01]),
        "alternate",
    ),
}
SKIP = {}
