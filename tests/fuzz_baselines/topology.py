from fuzz import call

from scaleout import topology as T

C = T.Cluster(servers=2, gpus_per_server=4)
TRAFFIC = T.ring_allreduce(C, [[0, 1, 2, 3, 4, 5, 6, 7]], 1e6)

BASELINES = {
    "Cluster": call(servers=2, gpus_per_server=4, nics_per_server=2, servers_per_leaf=1),
    "Link": call("nic-out", 0),
    "Flow": call(0, 5, 1e6),
    "Path": call(0, 5, "leaf", (T.Link("nic-out", 0), T.Link("nic-in", 1)), ("rail 0 leaf",)),
    "Timing": call(1e-3, 1e-5, 9.9e-4, T.Link("nic-out", 0)),
    "Traffic": call("a pattern", ((T.Flow(0, 5, 1e6),),), (1,)),
    "link_loads": call(C, [(0, 5, 1e6), (1, 2, 2e6)]),
    "tier_bytes": call(C, TRAFFIC),
    "traffic_time": call(C, TRAFFIC),
    "ring_allreduce": call(C, [[0, 1, 2, 3], [4, 5, 6, 7]], 1e6),
    "tp_allreduce": call(C, 1e6, tp=2),
    "pp_send": call(C, 1e6, scatter_gather=True),
    "dp_groups": call(C),
    "dp_allreduce": call(C, 1e6, "tree"),
    "hierarchical_allreduce": call(C, 1e6),
    "flat_ring_allreduce": call(C, 1e6, channels=2),
    "allreduce_scenarios": call(4, 8, 450.0, 50.0, 2.0, 1e9),
    "allreduce_bound": call(8, 1e9, 450.0, in_network=True),
    "nccl_machine": call(8, 4, 400.0),
    "nccl_allreduce_scenarios": call(4, T.nccl_machine(8, 4, 400.0), 1e9),
}
