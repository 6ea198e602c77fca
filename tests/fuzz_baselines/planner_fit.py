from fuzz import call

from scaleout import planner as PL
from scaleout.planner import fit as F

RUN = PL.runs()[0]
ROW = PL.validation()[0]
ERR = F.errors_of([ROW])
BASELINES = {
    "calibration": call("A100"),
    "Row": call(RUN, 1.0, 1.1, 0.1, ROW.prediction, (0.1, 0.2)),
    "validation": call(),
    "flops_per_gpu": call(RUN, 3.5),
    "executed_flops": call(RUN),
    "summary": call(),
    "Errors": call(3, 0.03, 0.2, (0.02, 0.04), (0.1, 0.3)),
    "errors_of": call([ROW]),
    "Summary": call({"all": ERR}, 0.01, {"a": 0.8}, {"A100": 1.5}),
    "SizeErrors": call(ERR, ERR, -0.05, 0.02, 0.9, 0.95),
    "errors_by_size": call(),
}
