import numpy as np
from fuzz import call

RNG = np.random.default_rng(0)
Q, K, V = RNG.standard_normal((3, 4, 8, 2))  # (heads, s, head_dim)
SHARDS = RNG.standard_normal((2, 4, 4, 2))  # (cp, heads, s/cp, head_dim)

BASELINES = {
    "sequence_to_heads": call(SHARDS),
    "heads_to_sequence": call(SHARDS),
    "ulysses_attention": call(Q, K, V, 2, causal=True),
    "allgather_attention": call(Q, K, V, 2, causal=True, layout="zigzag"),
}
