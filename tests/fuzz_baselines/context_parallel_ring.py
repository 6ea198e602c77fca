import numpy as np
from fuzz import call

from scaleout.context_parallel import ring

RNG = np.random.default_rng(0)
Q, K, V = RNG.standard_normal((3, 2, 8, 4))  # (heads, s, head_dim)

BASELINES = {
    "chunks_per_rank": call("zigzag"),
    "shard_positions": call(16, 4, "zigzag"),
    "ring_work": call(4096, 8, "contiguous", causal=True, documents=[1024, 3072]),
    "balance": call(ring.ring_work(64, 4, "contiguous")),
    "ring_attention": call(Q, K, V, 2, causal=True, layout="zigzag"),
}

# Arguments at their documented maxima together (issue 31): each legal alone.
_LONG = np.ones((1, 2048, 1))
EXTREMES = {
    "ring_attention": [call(_LONG, _LONG, _LONG, 1024, causal=False)],
    "ring_work": [
        call(ring.MAX_SEQ, ring.MAX_CP, "zigzag"),
        call(4096 * 256, ring.MAX_CP, "contiguous", documents=[256] * ring.MAX_DOCUMENTS),
    ],
    "balance": [call(np.full((4, 4), 2**62, dtype=np.int64))],
}
