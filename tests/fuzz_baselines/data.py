from fuzz import call

BASELINES = {
    "Value": call(
        989.5,
        "TFLOP/s",
        "nvidiah100datasheet",
        "H100 SXM column",
        "stated",
        None,
        "half the with-sparsity figure",
        (("gpu", "H100-SXM"), ("field", "bf16")),
    ),
    "load": call("gpus"),
    "gpu_fields": call("H100-SXM"),
    "gpu_sources": call("A100-80GB"),
}
