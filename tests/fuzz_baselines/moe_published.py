from fuzz import call

BASELINES = {
    "mla_parameters": call(7168, 128, 1536, 512, 128, 64, 128),
    "gqa_parameters": call(4096, 32, 8, 128),
    "PublishedCount": call("m", 10e9, 2e9, "a test"),
    "TrainingSetup": call("m", 2048, 8, 16, 64, 1, 4, "a test"),
    "AllToAllMeasurement": call(
        "normal",
        "dispatch",
        8,
        4096,
        7168,
        8,
        1,
        153.0,
        None,
        "two-hop",
        "NVLink",
        "dd758ca",
        "a test",
    ),
}
