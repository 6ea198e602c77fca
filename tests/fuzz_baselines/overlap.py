from fuzz import call

_SEC = {"allreduce": 2e-4, "allgather": 1e-4, "reducescatter": 1e-4}

BASELINES = {
    "TPSchedule": call("Megatron-LM 2022", "megatron", True, "a source"),
    "bulk": call(2e-4, 1e-4),
    "pipelined": call(2e-4, 1e-4, 8),
    "exposed": call(2e-4, 1e-4, "pipelined", 8),
    "pieces": call(2e-4, 1e-4, 96),
    "tp_work": call(_SEC, (1e-4, 2e-4), (5e-5, 2e-4), True, "megatron", True),
    "tp_layer": call(_SEC, (1e-4, 2e-4), (5e-5, 2e-4), 8, True, "megatron", True),
}
