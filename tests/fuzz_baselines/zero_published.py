from fuzz import call

from scaleout import zero_published as Z

BASELINES = {
    "Zero3Run": call(
        "174.6B, 384 GPUs", 96, 12288, 96, gpus=384, batch=1536, microbatch=4, tflops=144
    ),
    "eq3_flops": call(Z.SC21_ZERO3[0], 4),
    "Zero3Prediction": call(81.5, 5.45, 0.057, 81.6, 144.0),
    "comm_seconds": call(Z.SC21_ZERO3[0]),
    "predict": call(Z.SC21_ZERO3[0], 144e12, comm_slowdown=2.0),
    "fit_rate": call(Z.SC21_ZERO3[0]),
    "fit_comm_slowdown": call(Z.SC21_ZERO3[2], 144e12),
    "PrintedMemory": call("Table 1", "1T", 1e12, 64, 1, 4187.0, 0),
    "printed_rule": call(Z.TABLE1[0], 120.0),
}

# A measured rate so small the fitted compute rate would underflow to 0 (issue 31).
import dataclasses  # noqa: E402

EXTREMES = {"fit_rate": [call(dataclasses.replace(Z.SC21_ZERO3[0], tflops=5e-324))]}
