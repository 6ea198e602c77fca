import numpy as np
from fuzz import call

RNG = np.random.default_rng(0)
X = RNG.standard_normal((2, 3, 8))  # (b, s, h)
W_HH = RNG.standard_normal((8, 8))
W1, B1 = RNG.standard_normal((8, 16)), RNG.standard_normal(16)
W2, B2 = RNG.standard_normal((16, 8)), RNG.standard_normal(8)
M, K = RNG.standard_normal((3, 8)), RNG.standard_normal((8, 4))
ALL, HALF = slice(None), slice(0, 4)

BASELINES = {
    "shard_slice": call(8, 2, 1),
    "Shard": call(0, (ALL, ALL), (ALL, HALF), (ALL, HALF)),
    "matmul_shards": call("column", 4, 8, 8, 2),
    "SplitResult": call(np.ones((2, 3, 4)), np.ones((3, 8)), "allgather"),
    "column_parallel_matmul": call(M, K, 2),
    "row_parallel_matmul": call(M, K, 2),
    "gelu": call([0.5, -1.0, 2.0]),
    "mlp": call(X, W1, B1, W2, B2),
    "megatron_mlp": call(X, W1, B1, W2, B2, 2),
    "attention": call(X, W_HH, W_HH, W_HH, W_HH, 2, causal=True),
    "tensor_parallel_attention": call(X, W_HH, W_HH, W_HH, W_HH, 2, 2, causal=False),
    "valid_tensor_parallel_sizes": call(12288, 96, limit=64, kv_heads=8),
}
