from fuzz import call

BASELINES = {
    "attention_pairs": call(8192, causal=True),
    "attention_flops": call(8192, 32, 128, batch=2, causal=True),
    "FlashRates": call(616e12, 561e12, "measured"),
    "flash_rates": call("A100-80GB"),
    "FlashTime": call(1e-3, 2e-3, 1e12, 2.5e12, 1e8, 2e8),
    "flash_attention_time": call(
        8192,
        32,
        128,
        "H100-SXM",
        batch=2,
        causal=True,
        kv_heads=8,
        dtype="bf16",
        forward_flops_per_s=600e12,
        backward_flops_per_s=500e12,
    ),
}
SKIP = {}
NONFINITE_OK = {}
