import numpy as np
from fuzz import call

from scaleout import moe

_X = np.random.default_rng(1).normal(size=(8, 4))
_W = np.random.default_rng(2).normal(size=(4, 4))
_E = moe.random_experts(4, 4, 6, seed=3)
_R = moe.route(_X @ _W, 2, 1.0, blocks=2)

BASELINES = {
    "DispatchPlan": call(np.ones((2, 4)), 2, token_bytes=2.0, padded=False),
    "dispatch_plan": call(_R, 2, token_bytes=8.0, pad=True),
    "expected_plan": call(64, 2, 4, token_bytes=2.0, experts=8),
    "Experts": call(_E.w1, _E.w2),
    "random_experts": call(4, 4, 6, seed=3),
    "layer_reference": call(_X, _W, _E, 2, capacity_factor=1.0),
    "layer_forward": call(_X, _W, _E, 2, capacity_factor=1.0),
    "layer_backward": call(_X, _W, _E, 2, np.ones((8, 4)), capacity_factor=1.0),
}

# Counts whose sums overflow; a layer whose products overflow (issue 31).
EXTREMES = {
    "DispatchPlan": [
        call(np.full((2, 4), 1e308), 2),
        call(np.full((2, 4), 1e303), 2, token_bytes=2.0**22),
    ],
    "layer_reference": [call(_X * 1e200, _W * 1e200, _E, 2)],
    "layer_backward": [call(_X, _W, _E, 2, np.full(np.shape(_X), 1e308))],
}
