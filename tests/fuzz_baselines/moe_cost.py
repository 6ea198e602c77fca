import numpy as np
from fuzz import call

from scaleout import moe, nccl

_PLAN = moe.expected_plan(64, 2, 4, token_bytes=2.0)
_NET = moe.network("nvlink4-h100", "nic-400g", gpus_per_node=2)
_R = moe.route(np.random.default_rng(0).normal(size=(16, 8)), 2, groups=4, max_groups=2)

BASELINES = {
    "Network": call(8, 450.0, 50.0, 1e-6, 3e-6, "a test"),
    "nccl_network": call(nccl.topology("dgx-h100", nodes=2)),
    "as_network": call("dgx-h100"),
    "network": call("nvlink4-h100", "nic-400g", gpus_per_node=8),
    "AllToAllTime": call(1e-3, np.ones(2), np.ones(2), np.ones(2), "NVLink"),
    "alltoall_seconds": call(np.full((4, 4), 1e6), machine=_NET),
    "two_hop_bytes": call(_R, 4, 2, token_bytes=8.0),
    "two_hop_seconds": call(_R, 4, token_bytes=8.0, machine=_NET),
    "two_hop_time": call(
        np.array([[0, 1], [2, -1], [3, 0], [1, 2]]), 4, token_bytes=8.0, machine=_NET
    ),
    "LayerAllToAll": call(1e-3, 1e-3, 1e-3, 1e-3, 1e6),
    "layer_alltoall": call(_PLAN, combine_token_bytes=4.0, machine=_NET),
    "expert_flops": call([10.0, 20.0], 64, 128, matmuls=3),
    "expert_gemm_seconds": call(_PLAN, 64, 128, gpu="H100-SXM", dtype="bf16", matmuls=3),
    "ExpertCompute": call(np.ones(2), 1.0, 2.0),
    "expert_compute_seconds": call(_PLAN, 64, 128, matmuls=3, peak_flops=1e15, efficiency=0.5),
}
