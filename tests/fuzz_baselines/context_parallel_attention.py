import numpy as np
from fuzz import call

from scaleout.context_parallel import attention as A

RNG = np.random.default_rng(0)
Q, K, V = RNG.standard_normal((3, 2, 6, 4))  # (heads, s, head_dim)
PART = A.block_attention(Q, K, V)
MASK = np.tril(np.ones((6, 6), dtype=bool))

BASELINES = {
    "Partial": call(PART.out, PART.lse),
    "block_attention": call(Q, K, V, MASK),
    "merge": call(PART, PART),
    "causal_mask": call([0, 1, 2], [0, 3]),
    "attention_reference": call(Q, K, V, causal=True),
    "blockwise_attention": call(Q, K, V, 4, causal=True),
}
