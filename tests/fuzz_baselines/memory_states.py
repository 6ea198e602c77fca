from fuzz import call

BASELINES = {
    "State": call("fp16 parameters", "parameters", 2),
    "states_per_param": call("adam", "mixed"),
    "ModelStates": call(1.0, 1, 4, {"fp16 parameters": 2.0}, 2.0, 2.0, 3.0),
    "model_state_bytes": call(7.5e9, 1, 64),
    "device_bytes": call(7.5e9, 3, 64, activation_bytes=1e9),
    "bytes_per_param": call("adam", "megatron-bf16"),
    "zero3_peak_bytes": call(7.5e9, 36, 64, prefetch=1),
}
