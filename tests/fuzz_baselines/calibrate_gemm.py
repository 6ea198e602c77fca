import numpy as np
from fuzz import call

from scaleout.calibrate import Sweep

_M = np.array([1024, 2048, 4096])
_SW = Sweep(_M, _M, _M, np.array([300.0, 500.0, 600.0]), "bf16", "H100")
_MAMF = (
    "** Dtype: torch.bfloat16\n"
    "     1 |  300.0(mean)  300.0(median)  300.0(max) @ 1024x1024x1024 | best\r"
    "     2 |  500.0(mean)  500.0(median)  500.0(max) @ 2048x2048x2048 | best\r"
)
_CSV = "m,n,k,dtype,tflops\n64,64,64,fp32,0.1\n128,128,128,fp32,0.2\n"

BASELINES = {
    "Sweep": call(_M, _M, _M, np.array([300.0, 500.0, 600.0]), "bf16", device="H100"),
    "read_mamf": call(_MAMF),
    "read_gemm_csv": call(_CSV),
    "calibrate_ceiling": call(_SW, gpu="H100-SXM", holdout="alternate"),
    "CeilingFit": call(
        1e14,
        0.9,
        0.0,
        np.array([1e9, 1e10]),
        np.array([True, False]),
        np.array([0.0, 0.1]),
        "plain",
    ),
}
SKIP = {
    "sweep": "imports torch and times matmuls: the baseline alone takes seconds in a fresh "
    "worker; its checks come first and are unit-tested",
}
