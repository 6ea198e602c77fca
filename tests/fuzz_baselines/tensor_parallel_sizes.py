from fuzz import call

BASELINES = {
    "t_size": call(8, 64),
    "layer_sizes": call(1, 2048, 12288, 8, 2),
    "divides": call(8, 12288, "h"),
}
