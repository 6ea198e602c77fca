import numpy as np
from fuzz import call

from scaleout import nccl
from scaleout.nccl import tuning

H100 = nccl.topology("dgx-h100", nodes=2)
COMM = tuning.build_comm(H100)
TABLE = tuning.tune_model(H100)
BASELINES = {
    "Comm": call(H100, COMM.graphs, 16, 16, True, False, False),
    "build_comm": call(H100),
    "pat_enabled": call(H100),
    "Table": call(COMM, TABLE.latency_us, TABLE.algbw_gb_per_s, TABLE.max_threads),
    "tune_model": call(H100),
    "algo_time_us": call(TABLE, 4, 1, 2, np.array([8.0, 2.0**20])),
    "fastest": call(TABLE, 4, np.array([8.0, 2.0**20]), (0, 1), (0, 1, 2)),
}

# Many sizes at once; an endless or huge list of algorithms (issue 31).
EXTREMES = {
    "algo_time_us": [call(TABLE, 4, 1, 2, np.broadcast_to(2.0**50, (2**20,)))],
    "fastest": [
        call(TABLE, 4, np.array([8.0]), range(10**9), (0, 1, 2)),
        call(TABLE, 4, np.broadcast_to(1e6, (2**20,)), tuple(range(7)), (0, 1, 2)),
    ],
}
