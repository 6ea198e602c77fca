from fuzz import call

from scaleout import moe

_LL = next(m for m in moe.DEEPEP_MEASUREMENTS if m.kernel == "low-latency" and m.ep == 16)
_NORMAL = moe.AllToAllMeasurement(
    "normal", "combine", 16, 64, 7168, 8, 2, 43.0, None, "two-hop", "RDMA", "t", "a test"
)
_NET = moe.Network(8, 160.0, 50.0, 1e-6, 3e-6, "a test")
_GPU = moe.deepep_routing(16, 8, tokens_per_rank=4, seed=1)

BASELINES = {
    "counted_copy_bytes": call(_LL),
    "low_latency_copies": call(_LL),
    "rdma_only": call(_NET),
    "LowLatencyPrice": call(_LL, 1e6, moe.alltoall_seconds([[0.0, 1.0], [1.0, 0.0]], machine=_NET)),
    "price_low_latency": call(_LL, machine=_NET),
    "deepep_routing": call(16, gpus_per_node=8, tokens_per_rank=4, seed=1),
    "NormalPrice": call(_NORMAL, moe.two_hop_time(_GPU, 16, 100.0, machine=_NET), 1e6, 2e6),
    "price_normal": call(_NORMAL, gpu=_GPU, machine=_NET),
}
