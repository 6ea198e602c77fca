from fuzz import call

BASELINES = {
    "State": call("fp16 parameters", "parameters", 2),
    "states_per_param": call("adam", "mixed"),
    "ModelStates": call(1.0, 1, 4, {"fp16 parameters": 2.0}, 2.0, 2.0, 3.0),
    "model_state_bytes": call(7.5e9, 1, 64),
    "device_bytes": call(7.5e9, 3, 64, activation_bytes=1e9),
    "comm_volume": call(7.5e9, 3, dp=64),
    "comm_bytes": call(7.5e9, 3, param_dtype="bf16", grad_dtype="fp32", dp=64),
    "activation_bytes_per_layer": call(2048, 1, 4096, 32),
    "activation_bytes": call(36, 2048, 1, 4096, 32),
    "Transformer": call("7.5B", 36, 4096, 32),
    "transformer_params": call(36, 4096),
    "gpus_to_hold": call(16e12, 80e9),
    "min_dp_to_fit": call(7.5e9, 3, 32e9),
    "greedy_partition": call([1000, 1000, 1000, 10, 10], 4),
    "Zero3Frame": call("start", "", -1, (False, False), ("none", "none"), (False, False)),
    "zero3_step": call(4, 4, prefetch=1),
    "bytes_per_param": call("adam", "megatron-bf16"),
    "zero3_peak_bytes": call(7.5e9, 36, 64, prefetch=1),
    "exposed_comm_seconds": call(0.89, 0.23, pieces=72),
    "zero3_exposed_seconds": call(0.93, 0.23, 36),
}
