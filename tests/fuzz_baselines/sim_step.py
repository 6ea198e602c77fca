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
        tp_ops="layer",
    ),  # fmt: skip
}
# Tensor parallelism expanded into operations (the most pieces per layer: SP, TE's pipelined
# overlap, full recomputation, t = 8), with a straggler.
EXTREMES = {
    "simulate": [
        call(SMALL, PL.a100_cluster(64), 32,
             PL.Plan(t=8, p=4, d=2, b=1, sp=True, overlap="pipelined", recompute="full"),
             stragglers={3: 1.1}, steps=2, schedule="zb-h1", tp_ops="op"),
    ],
}  # fmt: skip
