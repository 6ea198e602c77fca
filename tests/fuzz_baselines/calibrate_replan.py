from fuzz import call

from scaleout import planner
from scaleout.calibrate import Log, Result, Row, compare, fit_corrections

_ROWS = tuple(
    Row(2**k, 2**k // 4, "float", "sum", -1, Result(20.0 + 2**k / 1e4, 0.0, 0.0, 0.0), None)
    for k in range(10, 34, 4)
)
_CORR = fit_corrections(compare(Log("allreduce", 16, (), None, _ROWS), 2, machine="dgx-a100"))
_M = planner.Model("small", 8, 1024, 16, seq=1024)

_CLUSTER = planner.a100_cluster(16)
_PRED = planner.search(_M, _CLUSTER, 64)[:1]

BASELINES = {
    "calibrated_cluster": call(_CLUSTER, _CORR),
    "simulated": call(_M, _CLUSTER, 64, list(_PRED), calibration=1.0),
}
SKIP = {
    "rerank": "two planner searches per case (seconds each): its arguments are checked by "
    "planner.search, fuzzed in planner_search; tested in the chapter",
    "Rerank": "a record of planner predictions, built by rerank (checked in __post_init__)",
    "Simulated": "a record built by simulated from a planner prediction and a simulated time",
}
