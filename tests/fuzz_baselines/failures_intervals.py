from fuzz import call

BASELINES = {
    "young": call(40.0, 3600.0),
    "daly": call(40.0, 3600.0),
    "lambert_w0": call([-0.3, -0.1]),
    "optimal_interval": call(40.0, 3600.0),
}
