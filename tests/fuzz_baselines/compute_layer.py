from fuzz import call

from scaleout import compute as C

_L = C.Layer(4096, 32, 2048, kv_heads=8, ffn=14336, swiglu=True)

BASELINES = {
    "Layer": call(4096, 32, 2048, kv_heads=8, ffn=14336, swiglu=True),
    "LayerTime": call((C.Part("x", "forward", "gemm", 1e-3, 1e12, 1e8),), 1e12, 312e12),
    "layer_time": call(
        _L, 2, "H100-SXM", t=2, sp=True, recompute="selective", flash=False, dtype="bf16"
    ),
    "mfu": call(1e15, 2.0, 989e12),
    "optimizer_step_seconds": call(1e9, "H100-SXM", bytes_per_param=30),
    "roofline_points": call(C.layer_time(_L, 1, "A100-80GB"), phase="forward"),
}

# Subnormal seconds x peak (issue 31).
EXTREMES = {"mfu": [call(1.0, 5e-324, 5e-324), call(5e-324, 5e-324, 1e21)]}
