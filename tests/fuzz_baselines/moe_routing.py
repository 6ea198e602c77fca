import numpy as np
from fuzz import call

from scaleout import moe

_LOGITS = np.random.default_rng(0).normal(size=(8, 4))
_R = moe.route(_LOGITS, 2, 1.0)

BASELINES = {
    "gate_scores": call(_LOGITS, "softmax", temperature=0.5),
    "capacity": call(16, 8, 2, 1.25),
    "claim_order": call(8, 2, blocks=2),
    "route": call(
        _LOGITS,
        2,
        1.0,
        gating="sigmoid",
        normalize=True,
        temperature=1.0,
        scale=2.5,
        order="probs",
        blocks=2,
        groups=2,
        max_groups=1,
        bias=[0.0, 0.1, 0.0, -0.1],
        group_top=1,
    ),
    "Routing": call(
        _R.experts,
        _R.weights,
        _R.dropped,
        _R.scores,
        _R.routed,
        _R.counts,
        _R.capacity,
        blocks=1,
        gating="softmax",
    ),
    "nodes_per_token": call(_R, 2),
}

# Finite inputs at the extremes of what each argument accepts (issue 31).
EXTREMES = {
    "gate_scores": [
        call(np.array([[1e306, -1e306]]), "softmax", temperature=1e-3),
        call(np.array([[1e306, -1e306]]), "sigmoid", temperature=1e-3),
    ],
    "route": [
        call(np.array([[-1e4, -1e4], [1.0, 2.0]]), 1, gating="sigmoid"),
        call(np.broadcast_to(np.float32(0), (2**20, 17)), 2),
    ],
}
