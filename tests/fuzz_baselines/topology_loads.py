from fuzz import call

from scaleout import topology as T

C = T.Cluster(servers=2, gpus_per_server=4)
TRAFFIC = T.ring_allreduce(C, [[0, 1, 2, 3, 4, 5, 6, 7]], 1e6)

BASELINES = {
    "link_loads": call(C, [(0, 5, 1e6), (1, 2, 2e6)]),
    "tier_bytes": call(C, TRAFFIC),
    "traffic_time": call(C, TRAFFIC),
}
