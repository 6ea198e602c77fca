from fuzz import call

BASELINES = {
    "AttentionShape": call("m", 32, 8, 128, 4096, 14336, 32),
    "AttentionTime": call("ring", 1.0, 2.0, 2.5, 0.5, 0.5, 1e6, 2e6),
    "model": call("llama3-70b"),
    "attention_flops": call(8192, "llama3-8b", batch=1, tp=1, causal=True),
    "layer_gemm_flops": call(8192, "llama3-8b", batch=1, tp=1),
    "traffic_bytes": call(
        "hybrid", 65536, 8, "llama3-8b", tp=1, batch=1, dtype_bytes=2, ulysses=2
    ),  # fmt: skip
    "attention_seconds": call(
        "ring",
        65536,
        8,
        "llama3-8b",
        tp=1,
        batch=1,
        layout="zigzag",
        ulysses=1,
        dtype_bytes=2,
        flops_per_s=4e14,
        backward_flops_per_s=3e14,
        documents=None,
        machine="dgx-h100",
    ),  # fmt: skip
    "overlap_threshold_tokens": call(
        "llama3-8b",
        tp=1,
        cross_node=True,
        batch=1,
        dtype_bytes=2,
        causal=True,
        flops_per_s=4e14,
        machine="dgx-h100",
    ),  # fmt: skip
    "ulysses_degree": call(16, "llama3-8b", 1, machine="dgx-h100"),
    "ideal_seconds": call(
        131072, 16, "llama3-70b", tp=8, batch=1, flops_per_s=6e14, backward_flops_per_s=5e14
    ),  # fmt: skip
    "layer_gemm_seconds": call(8192, "llama3-405b", tp=8, batch=1, gpu="H100-SXM"),
    "activation_bytes_per_rank": call(
        131072, 8, "llama3-8b", batch=1, tp=1, flash_attention=True
    ),  # fmt: skip
}
