import numpy as np
from fuzz import call

from scaleout import nccl

H100 = nccl.topology("dgx-h100", nodes=2)
BASELINES = {
    "nvlink_gb_per_s": call(machine=H100),
    "network_gb_per_s": call(concurrent=True, machine=H100),
    "sendrecv_us": call(np.array([8.0, 1e6]), True, machine=H100),
    "alltoall_us": call(np.array([8.0, 1e6]), machine=H100),
}
