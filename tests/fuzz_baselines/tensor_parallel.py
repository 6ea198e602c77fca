import numpy as np
from fuzz import call

RNG = np.random.default_rng(0)
X = RNG.standard_normal((2, 3, 8))  # (b, s, h)
W_HH = RNG.standard_normal((8, 8))
W1, B1 = RNG.standard_normal((8, 16)), RNG.standard_normal(16)
W2, B2 = RNG.standard_normal((16, 8)), RNG.standard_normal(8)
M, K = RNG.standard_normal((3, 8)), RNG.standard_normal((8, 4))

BASELINES = {
    "shard_slice": call(8, 2, 1),
    "Shard": call(0, (slice(None), slice(None)), (slice(None), slice(0, 4)), (slice(None), slice(0, 4))),
    "matmul_shards": call("column", 4, 8, 8, 2),
    "SplitResult": call(np.ones((2, 3, 4)), np.ones((3, 8)), "allgather"),
    "column_parallel_matmul": call(M, K, 2),
    "row_parallel_matmul": call(M, K, 2),
    "gelu": call([0.5, -1.0, 2.0]),
    "mlp": call(X, W1, B1, W2, B2),
    "megatron_mlp": call(X, W1, B1, W2, B2, 2),
    "attention": call(X, W_HH, W_HH, W_HH, W_HH, 2),
    "tensor_parallel_attention": call(X, W_HH, W_HH, W_HH, W_HH, 2, 2),
    "valid_tensor_parallel_sizes": call(12288, 96, limit=64),
    "LayerTraffic": call(8, 5e7, {"allreduce": 2}, {"allreduce": 2}, 3.5e8),
    "layer_traffic": call(1, 2048, 12288, 8, dtype_bytes=2),
    "collective_seconds": call("allreduce", 5e7, 16, topology="two-level"),
    "LayerSeconds": call(1e-3, 2e-3),
    "layer_comm_seconds": call(1, 2048, 12288, 8),
    "layer_flops": call(1, 2048, 12288),
    "layer_compute_seconds": call(1, 2048, 12288, 8),
    "LinkRatio": call(450.0, 50.0),
    "link_ratio": call("nvlink4-h100", "nic-400g"),
    "StageTransfer": call(8, 5e7, 5e7, 6.25e6, 4.4e7),
    "stage_transfer": call(1, 2048, 12288, 8),
    "stage_transfer_seconds": call(1, 2048, 12288, 8),
    "stage_transfer_schedule": call(4, 8, True),
}
