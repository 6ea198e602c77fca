from fuzz import call

BASELINES = {
    "RingBenchmark": call("A100", "forward", "zigzag", 373.4, 38.2, scheme="ring", api="batch"),
    "LlamaSetup": call(16384, 8, 16, 16, 131072, 380.0, 4, 16),
    "UspBenchmark": call(4, "zigzag", False, 21.464),
    "StripedSpeedup": call(16, 786432, 1.65, accelerator="TPUv4"),
}
