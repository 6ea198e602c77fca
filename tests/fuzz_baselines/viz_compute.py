from fuzz import call

from scaleout.compute import validation as V

_POINTS = [("QKV", "gemm", 1000.0, 600e12), ("norm", "memory", 0.25, 0.8e12)]

BASELINES = {
    "roofline": call({"A100-80GB": _POINTS, "H100-SXM": _POINTS}, dtype="bf16", title="t"),
    "curves": call(
        [1, 2, 4],
        {"A100": [0.5, 0.6, 0.7]},
        "b",
        "MFU",
        title="t",
        log_x=True,
        hlines={"ceiling": 0.87},
        mode="lines",
    ),
    "validation": call(V.rows()[:3]),
    "layer_validation": call(list(V.layer_rows()), title="t"),
    "measured_cpu": call(["512", "1024"], [20.0, 40.0], [40.0, 80.0], 50.0, 10.0),
    "breakdown": call(
        {"b=1": {"gemm": 1.0, "memory": 0.2}, "b=2": {"gemm": 2.0, "memory": 0.4}}, title="t"
    ),
}
