from fuzz import call

from scaleout import planner as PL

RUN = PL.runs()[0]
ROW = PL.validation()[0]
ERR = PL.errors_of([ROW])
BASELINES = {
    "baseline_seconds": call(RUN, 1.5e14, True),
    "Baseline": call("rate", {"A100": 1.5e14}, ERR, {"a": 0.5}, {"all": ERR}),
    "baselines": call(),
    "rank_by_params": call("Narayanan Table 1"),
    "SweepResult": call("Fig. 13", 5, 0.9, 0.3, "a", "b", 0.01),
    "figure_sweeps": call(),
    "BestPlan": call(RUN, ROW.prediction, ROW.prediction, 0.0),
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
