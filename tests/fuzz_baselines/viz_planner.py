from fuzz import call

from scaleout import planner as PL

TINY = PL.Model("tiny", 4, 64, 4, seq=32, vocab=128)
CL = PL.Cluster("4 GPUs", 4, gpus_per_server=2, gpu_bytes=1e9)
PLANS = PL.candidates(TINY, CL, 8, 0.5)
BASELINES = {
    "plan_label": call(PLANS, 0),
    "heatmap_traces": call(PLANS),
    "heatmap_figure": call(PLANS, "t", "s"),
    "breakdown_figure": call(PLANS, k=3, title="t"),
    "validation_figure": call(["a"], [1.0], [1.0], [1.0]),
    "explorer_figure": call("GPT-3 175B, 1,024 A100", 64, 128, 0.5),
    "batch_animation": call([PLANS], [8], "tiny"),
    "mesh_figure": call(2, 2, 2),
}
