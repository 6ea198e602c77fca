from fuzz import call

BASELINES = {
    "Transformer": call(
        4,
        256,
        8,
        kv_heads=2,
        ffn=512,
        swiglu=True,
        seq=1024,
        vocab=1000,
        tied=False,
        positions=False,
        experts=4,
        top_k=2,
        name="tiny",
    ),
    "activation_bytes": call(2048, 1, 12288, 96, "none", 8, True, False),
    "gpt_params": call(96, 12288, 2048, 51200),
    "stated_params": call("GPT-3 175B"),
    "model": call("GPT-3 175B"),
}
SKIP = {"Shape": "a mixin of derived properties: takes no arguments, holds no state"}
