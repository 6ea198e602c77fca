from fuzz import call

from scaleout.tensor_parallel import LayerSeconds

BASELINES = {
    "LayerOverlap": call(
        "megatron", LayerSeconds(2e-3, 4e-3), LayerSeconds(1e-3, 1e-3), LayerSeconds(1e-3, 0.0)
    ),
    "layer_overlap": call(1, 2048, 12288, 16, "pipelined", True, 2, 989.5e12, machine="dgx-h100"),
}
