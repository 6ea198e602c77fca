from fuzz import call

from scaleout import planner
from scaleout.calibrate import Log, Result, Row, compare, fit_corrections

_ROWS = tuple(
    Row(2**k, 2**k // 4, "float", "sum", -1, Result(20.0 + 2**k / 1e4, 0.0, 0.0, 0.0), None)
    for k in range(10, 34, 4)
)
_CORR = fit_corrections(compare(Log("allreduce", 16, (), None, _ROWS), "dgx-a100", 2))
_M = planner.Model("small", 8, 1024, 16, seq=1024)

BASELINES = {
    "calibrated_cluster": call(planner.a100_cluster(16), _CORR),
}
SKIP = {
    "rerank": "two planner searches per case (seconds each): its arguments are checked by "
    "planner.search, fuzzed in planner_search; tested in the chapter",
    "Rerank": "a record of planner predictions, built by rerank (checked in __post_init__)",
}
