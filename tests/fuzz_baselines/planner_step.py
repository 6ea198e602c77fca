from fuzz import call

from scaleout import planner as PL

TINY = PL.Model("tiny", 4, 64, 4, seq=32, vocab=128)
TWO = PL.Cluster("2 A100", 2)
PLAN = PL.Plan(2, 1, 1, 2, recompute="selective", sp=True, overlap="megatron")
BASELINES = {
    "Plan": call(
        2,
        2,
        2,
        1,
        v=2,
        zero=1,
        recompute="selective",
        sp=True,
        overlap="pipelined",
        dp_overlap=True,
        precision="megatron-bf16",
        flash=True,
        scatter_gather=True,
        regather=True,
    ),
    "Prediction": call(PLAN, 4, 1.0, {"compute": 1.0}, {"tp": 0.1}, 1e9, True, 1e3, 1e12, 0.3),
    "check_plan": call(TINY, TWO, 8, PLAN),
    "stage_layers": call(TINY, 2),
    "stage_params": call(TINY, 2, 2),
    "activation_bytes": call(TINY, 2, 2, "none", True, False),
    "memory_bytes": call(TINY, PLAN, 4),
    "memory_many": call(TINY, [PLAN], [4]),
    "predict": call(TINY, TWO, 8, PLAN, calibration=1.5, usable_fraction=0.9),
}
