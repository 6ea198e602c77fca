from fuzz import call

from scaleout import nccl

BASELINES = {
    "machine": call(8, "nvlink3-a100", "nic-200g"),
    "check_machine": call(nccl.PRESETS["dgx-a100"]),
    "group_shape": call(16, 8),
    "GpuServer": call("B200", "nvlink5-b200", 2.25e15),
    "gpu_server": call("V100-32GB"),
}
