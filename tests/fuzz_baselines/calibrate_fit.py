import numpy as np
from fuzz import call

_N = np.array([1e3, 1e4, 1e5, 1e6, 1e7])
_T = 1e-5 + _N / 1e10

BASELINES = {
    "fit_latency_bandwidth": call(np.stack([_N, _T], axis=1), holdout="alternate"),
    "fit_mask": call(5, "alternate"),
    "robust_line": call(_N, _T, delta=0.1),
    "Fit": call(
        1e-5, 1e10, _N, _T, np.array([True, False, True, False, True]), np.zeros(5), "alternate"
    ),
}
SKIP = {}
