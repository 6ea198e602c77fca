from fuzz import call

BASELINES = {
    "comm_volume": call(7.5e9, 3, dp=64),
    "comm_bytes": call(7.5e9, 3, param_dtype="bf16", grad_dtype="fp32", dp=64),
    "exposed_comm_seconds": call(0.89, 0.23, pieces=72),
    "zero3_exposed_seconds": call(0.93, 0.23, 36),
}
