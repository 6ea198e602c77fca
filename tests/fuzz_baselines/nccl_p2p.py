import numpy as np
from fuzz import call

from scaleout import nccl

H100 = nccl.topology("dgx-h100", nodes=2)
BASELINES = {
    "nvlink_gb_per_s": call(H100),
    "network_gb_per_s": call(H100, concurrent=True),
    "sendrecv_us": call(H100, np.array([8.0, 1e6]), True),
    "alltoall_us": call(H100, np.array([8.0, 1e6])),
}
