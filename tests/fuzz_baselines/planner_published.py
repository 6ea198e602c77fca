from fuzz import call

from scaleout import planner as PL

RUN = PL.runs()[0]
ROW = PL.validation()[0]
BASELINES = {
    "Run": call(
        RUN.key,
        RUN.model,
        RUN.cluster,
        RUN.batch,
        RUN.plan,
        RUN.measured,
        RUN.convention,
        RUN.split,
        RUN.sweep,
        RUN.source,
        RUN.assumed,
        None,
    ),
    "runs": call(),
    "calibration": call("A100"),
    "Row": call(RUN, 1.0, 1.1, 0.1, ROW.prediction),
    "validation": call(),
    "flops_per_gpu": call(RUN, 3.5),
    "summary": call(),
    "Summary": call(27, 0.03, 0.2, 0.01, {"a": 0.8}, {"A100": 1.5}),
    "BestPlan": call(RUN, ROW.prediction, ROW.prediction, 0.0),
}
SKIP = {
    "table1_best": "ten searches of Table 1 settings (minutes under fuzz); its one "
    "argument is checked by checks.boolean, tested in test_planner"
}
