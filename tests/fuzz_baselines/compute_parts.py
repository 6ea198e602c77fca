from fuzz import call

BASELINES = {"Part": call("MLP up", "forward", "gemm", 1e-3, 1e12, 1e8)}
