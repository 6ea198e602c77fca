from fuzz import call

BASELINES = {
    "RingBenchmark": call("A100", "forward", "zigzag", 373.4, 38.2),
    "LlamaSetup": call(16384, 8, 16, 16, 131072, 380.0),
}
