from fuzz import call

from scaleout import planner as PL

CL = PL.a100_cluster(32)
SEC = {"allreduce": 1e-3, "allgather": 5e-4, "reducescatter": 5e-4}
BASELINES = {
    "tp_seconds": call(CL, 1, 2048, 4096, 8),
    "tp_exposed": call(SEC, (1e-3, 2e-3), (1e-3, 2e-3), 8, True, "megatron", regather=True),
    "pp_seconds": call(CL, 1, 2048, 4096, 8, 2, False, True),
    "dp_seconds": call(CL, 8, 4, 1, 4e9, 2e9),
    "buckets": call(1e9, 4),
    "dp_exposed": call(0.5, 0.3, 4, True),
}

# Seconds whose sums overflow (issue 31).
_HUGE = {"allreduce": 1e308, "allgather": 1e308, "reducescatter": 1e308}
EXTREMES = {"tp_exposed": [call(_HUGE, (1e308, 1e308), (1e308, 1e308), 8, True, "pipelined")]}
