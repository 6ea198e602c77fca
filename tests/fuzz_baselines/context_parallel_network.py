from fuzz import call

BASELINES = {
    "cluster": call("dgx-h100"),
    "ranks_per_node": call(16, "dgx-h100", stride=2),
    "transfer_seconds": call("alltoall", 1e8, 16, "dgx-h100", stride=1),
}
