from fuzz import call

from scaleout import planner as PL

TINY = PL.Model("tiny", 4, 64, 4, seq=32, vocab=128)
CL = PL.Cluster("4 GPUs", 4, gpus_per_server=2, gpu_bytes=1e9)
PLANS = PL.candidates(TINY, CL, 8, 0.5)
BASELINES = {
    "Model": call("tiny", 4, 64, 4, seq=32, vocab=128),
    "Cluster": call("4 GPUs", 4, gpus_per_server=2, gpu_bytes=1e9),
    "candidates": call(TINY, CL, 8, 0.5),
    "search": call(TINY, CL, 8, 0.5),
    "search_plans": call(PLANS),
    "best_per_tp": call(PLANS),
    "possible_per_tp": call(PLANS),
    "a100_cluster": call(64),
    "h100_cluster": call(64),
    "Published": call("1.7B", 1, 1, 32, 512, 137),
    "model_from_table": call("1.7B"),
    "training_days": call(450e9, 1e12, 3072, 163e12),
}
SKIP = {
    "Plans": "a record of columns built by candidates",
    "Validation": "a record built by validate",
    "validate": "searches all of Table 1 (slow); fuzzed through search",
}
