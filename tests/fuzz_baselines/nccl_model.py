import numpy as np
from fuzz import call

from scaleout import nccl

H100 = nccl.topology("dgx-h100", nodes=2)
T = nccl.tune("allreduce", machine=H100)
BASELINES = {
    "table": call(machine=H100),
    "Tuning": call("allreduce", H100, T.latency_us, T.algbw_gb_per_s, 16, T.graphs),
    "tune": call("allreduce", machine=H100),
    "tuning_text": call(machine="dgx-a100"),
    "Prediction": call("allreduce", 8.0, "ring", "ll", 1e-5, 0.1, 0.2),
    "predict": call("allreduce", [8, 2**20], algorithm="ring", protocol=None, machine=H100),
    "collective_seconds": call("allgather", np.array([1e6, 1e9]), 4, 2, machine="dgx-h100"),
}
