from fuzz import call

BASELINES = {
    "activation_bytes_per_layer": call(2048, 1, 4096, 32),
    "activation_bytes": call(36, 2048, 1, 4096, 32),
    "Transformer": call("7.5B", 36, 4096, 32),
    "transformer_params": call(36, 4096),
}
