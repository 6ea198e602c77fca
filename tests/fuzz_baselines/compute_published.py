from fuzz import call

BASELINES = {
    "Measurement": call(
        "NVIDIA H100", "fp16", 4096, 4096, 10944, 398.38, "source", batch=4, note="a note"
    ),
    "mamf": call("NVIDIA A100 SXM", "bf16"),
    "LayerMeasurement": call("selective recompute", False, "selective", 7.7, 13.2, source="s"),
}
