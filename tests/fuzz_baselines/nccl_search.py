from fuzz import call

from scaleout import nccl

H100 = nccl.topology("dgx-h100", nodes=2)
BASELINES = {
    "Graph": call("ring", 8, 48.0, 48.0, "NVL", "PIX"),
    "speeds": call(H100),
    "max_bw": call(H100),
    "total_bw": call(H100),
    "capacity": call(H100, "ring", 48.0, 48.0, 32),
    "compute": call(H100, "ring", 1, 32),
}

# Subnormal link speeds (issue 31).
EXTREMES = {
    "capacity": [call(H100, "ring", 5e-324, 5e-324, 64), call(H100, "tree", 5e-324, 5e-324, 64)]
}
