from fuzz import call

from scaleout import planner as PL

TINY = PL.Model("tiny", 4, 64, 4, seq=32, vocab=128)
TWO = PL.Cluster("2 A100", 2)
BASELINES = {
    "NonGemm": call(1e6, 2e6, 3e5, 4e7),
    "non_gemm_bytes": call(TINY, 2, 2, True, "megatron-fp16", 1e5, 5e4),
    "non_gemm_seconds": call(TINY, TWO, 2, 2, False, "megatron-bf16", 1e5, 1e5),
}
