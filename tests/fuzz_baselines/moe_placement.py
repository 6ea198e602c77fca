from fuzz import call

from scaleout import moe

BASELINES = {
    "Mesh": call(1, 4, 2),
    "mesh": call(8, 4, tp=1),
    "MoEModel": call(
        "tiny",
        4,
        64,
        8,
        2,
        128,
        1000,
        100,
        dense_layers=1,
        dense_ffn=256,
        shared_experts=1,
        matmuls=3,
        tied=True,
        norms=2,
        source="a test",
    ),
    "ParameterCount": call(10.0, 2.0, 8.0),
    "moe_parameters": call(moe.MIXTRAL_8X7B),
    "StateBytes": call(1e9, 2e9),
    "moe_state_bytes": call(
        moe.DEEPSEEK_V3, 64, 2, tp=1, pp=16, weight_bytes=2, grad_bytes=4, optimizer_bytes=12
    ),
}
