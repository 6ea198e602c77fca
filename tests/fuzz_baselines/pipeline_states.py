from fuzz import call

BASELINES = {
    "model_state_bytes": call(7e9, 16),
    "min_gpus": call(7e9, 16, 80.0),
    "layer_owners": call(30, 4),
}
