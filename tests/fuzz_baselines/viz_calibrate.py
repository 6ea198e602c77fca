import numpy as np
from fuzz import call

from scaleout import nccl
from scaleout.calibrate import Comparison, fit_latency_bandwidth

_N = np.array([1e3, 1e4, 1e5, 1e6, 1e7])
_C = Comparison(
    "allreduce",
    nccl.topology("dgx-a100", nodes=2),
    np.array([1e3, 1e6]),
    np.array([1.0, 50.0]),
    np.array([2.0, 100.0]),
    ("tree", "ring"),
    ("ll", "simple"),
    ("latency", "bandwidth"),
    (),
)

BASELINES = {
    "log_beside_model": call(_C, "a log", corrected=np.array([1.5, 80.0])),
    "fit_line": call(fit_latency_bandwidth(np.stack([_N, 1e-5 + _N / 1e10], axis=1)), "fit"),
}
SKIP = {}
