from fuzz import call

from scaleout.calibrate import Result

_R = Result(10.0, 1.0, 1.75, 0.0)

BASELINES = {
    "Result": call(10.0, 1.0, 1.75, 0.0, flagged=False),
    "Row": call(1024, 256, "float", "sum", -1, _R, _R),
    "Log": call("allreduce", 8, ("Rank 0 ...",), 12.5, (), layout="size", info=(), skipped=()),
    "finite_or_none": call(1.5),
}
SKIP = {}
