from fuzz import call

from scaleout import planner as PL

SMALL = PL.Model("small", layers=8, hidden=1024, heads=16, seq=1024)

BASELINES = {
    "simulate": call(
        SMALL,
        PL.a100_cluster(16),
        32,
        PL.Plan(t=2, p=4, d=2, b=1),
        calibration=1.0,
        stragglers={3: 1.1},
        steps=2,
        seed=0,
        schedule="1f1b",
    ),  # fmt: skip
}
