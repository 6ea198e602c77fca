from fuzz import call

BASELINES = {
    "tile_efficiency": call(128, 128),
    "utilization": call(4096, 4096, 4096, 108, batch=1),
    "Ceiling": call(270e12, 0.87, "calibrated"),
    "ceiling": call("A100-80GB", "bf16"),
    "GemmTime": call(1e-3, 1e12, 1e8, 1e-3, 1e-4, (256, 128), 512, 5, 312e12),
    "gemm_time": call(4096, 4096, 4096, "H100-SXM", "bf16", batch=2),
    "gemm_seconds": call(4096, 4096, 4096, "A100-80GB", "bf16", batch=1),
    "gemm_efficiency": call(2048, 8192, 1024, "B200", "fp8", batch=1),
}
SKIP = {}
NONFINITE_OK = {}
