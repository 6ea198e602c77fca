from fuzz import call

from scaleout import transformer

BASELINES = {
    "Model": call("tiny", 4, 64, 4, seq=32, vocab=128, kv_heads=2, ffn=96, swiglu=True),
    "Cluster": call(
        "2 A100",
        2,
        gpu="A100-80GB",
        topology="dgx-a100",
        nics_per_node=4,
        nic_gbps=100.0,
        gpu_bytes=40e9,
        peak_flops_override=300e12,
        hbm_override=2e12,
    ),
    "a100_cluster": call(64),
    "h100_cluster": call(64),
    "model_from_table": call("1.7B"),
    "from_transformer": call(transformer.MODELS["Llama 3 8B"], "llama"),
    "training_days": call(450e9, 1e12, 3072, 163e12),
}
