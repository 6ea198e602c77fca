from fuzz import call

BASELINES = {
    "cluster": call("dgx-h100"),
    "ranks_per_node": call(16, stride=2, machine="dgx-h100"),
    "transfer_seconds": call("alltoall", 1e8, 16, stride=1, machine="dgx-h100"),
}
