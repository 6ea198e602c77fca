from fuzz import call

from scaleout import planner as PL
from scaleout.planner import published as P

RUN = PL.runs()[0]
ROW = PL.validation()[0]
LLAMA = next(r for r in PL.runs() if r.alternatives)
ERR = P.errors_of([ROW])
BASELINES = {
    "Run": call(
        LLAMA.key,
        LLAMA.model,
        LLAMA.cluster,
        LLAMA.batch,
        LLAMA.plan,
        LLAMA.measured,
        LLAMA.convention,
        LLAMA.split,
        LLAMA.sweep,
        LLAMA.source,
        LLAMA.assumed,
        None,
        LLAMA.alternatives,
        0.5,
    ),
    "runs": call(),
    "calibration": call("A100"),
    "Row": call(RUN, 1.0, 1.1, 0.1, ROW.prediction, (0.1, 0.2)),
    "validation": call(),
    "flops_per_gpu": call(RUN, 3.5),
    "executed_flops": call(RUN),
    "baseline_seconds": call(RUN, 1.5e14, True),
    "summary": call(),
    "Errors": call(3, 0.03, 0.2, (0.02, 0.04), (0.1, 0.3)),
    "errors_of": call([ROW]),
    "Summary": call({"all": ERR}, 0.01, {"a": 0.8}, {"A100": 1.5}),
    "Baseline": call("rate", {"A100": 1.5e14}, ERR, {"a": 0.5}, {"all": ERR}),
    "baselines": call(),
    "rank_by_params": call("Narayanan Table 1"),
    "SweepResult": call("Fig. 13", 5, 0.9, 0.3, "a", "b", 0.01),
    "figure_sweeps": call(),
    "fig_plan": call(13, 8),
    "BestPlan": call(RUN, ROW.prediction, ROW.prediction, 0.0),
    "SizeErrors": call(ERR, ERR, -0.05, 0.02, 0.9, 0.95),
    "errors_by_size": call(),
}
NONFINITE_OK = {
    "baselines": "NaN rank where a baseline predicts a tie (a constant rate ranks nothing)",
    "rank_by_params": "NaN when every run of the sweep has the same parameter count",
    "SweepResult": "NaN rho_bubble where the baseline predicts a tie (it ranks nothing)",
    "figure_sweeps": "NaN rho_bubble in Figure 15 (p = 1: the bubble baseline predicts a tie)",
}
SKIP = {
    "table1_best": "ten searches of Table 1 settings (minutes under fuzz); its one "
    "argument is checked by checks.boolean, tested in test_planner"
}
