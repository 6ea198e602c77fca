from fuzz import call

BASELINES = {"head_time": call(2, 2048, 12288, 51200, "A100-80GB", t=8, dtype="bf16")}
