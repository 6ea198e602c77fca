from fuzz import call

BASELINES = {
    "dcqcn": call(2, 40.0, 0.002, start_s=None, min_rate_gbps=0.01),
}
SKIP = {
    "DCQCNResult": "a result record built by dcqcn, not an input",
}
