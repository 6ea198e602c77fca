from fuzz import call

BASELINES = {
    "max_min_rates": call([[1.0, 1.0], [1.0, 0.0], [0.0, 1.0]], [1.0, 2.0]),
    "jain_index": call([1.0, 2.0, 3.0]),
}
NONFINITE_OK = {
    "max_min_rates": "a flow that crosses no link is unconstrained: rate inf, documented",
}
