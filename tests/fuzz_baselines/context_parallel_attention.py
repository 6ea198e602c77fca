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

# Arguments at their documented maxima together, and scores that overflow (issue 31).
_ONE = np.ones((1, 1, 1))
_KEYS = np.broadcast_to(1.0, (1, 2**20, 1))  # views: no memory in the parent
_BIG = np.full((1, 2, 1), 1e200)
EXTREMES = {
    "blockwise_attention": [call(_ONE, _KEYS, _KEYS, 1, causal=False)],
    "block_attention": [
        call(_BIG, _BIG, _BIG),
        call(*[np.broadcast_to(1.0, (1, 2**13, 256))] * 3),
    ],
    "attention_reference": [call(_BIG, _BIG, _BIG, causal=True)],
}
