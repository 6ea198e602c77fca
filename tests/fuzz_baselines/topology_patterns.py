from fuzz import call

from scaleout import topology as T

C = T.Cluster(servers=2, gpus_per_server=4)

BASELINES = {
    "ring_allreduce": call(C, [[0, 1, 2, 3], [4, 5, 6, 7]], 1e6),
    "tp_allreduce": call(C, 1e6, tp=2),
    "pp_send": call(C, 1e6, scatter_gather=True),
    "dp_groups": call(C),
    "dp_allreduce": call(C, 1e6, "tree"),
    "hierarchical_allreduce": call(C, 1e6),
    "flat_ring_allreduce": call(C, 1e6, channels=2),
}
