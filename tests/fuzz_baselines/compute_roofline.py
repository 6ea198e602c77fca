from fuzz import call

BASELINES = {
    "arithmetic_intensity": call(2e12, 1e9),
    "ridge_intensity": call(312e12, 2.039e12),
    "attainable_flops": call([1.0, 100.0, 1000.0], 312e12, 2.039e12),
    "roofline_seconds": call(2e12, 1e9, 312e12, 2.039e12),
}
