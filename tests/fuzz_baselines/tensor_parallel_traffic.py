from fuzz import call

BASELINES = {
    "LayerTraffic": call(8, 5e7, {"allreduce": 2}, {"allreduce": 2}, 3.5e8),
    "layer_traffic": call(
        1, 2048, 12288, 8, dtype_bytes=2, sequence_parallel=True, heads=96, regather_input=True
    ),
    "collective_seconds": call(
        "allreduce",
        5e7,
        16,
        gpus_per_server=8,
        intra="nvlink4-h100",
        inter="nic-400g",
        topology="nccl",
    ),
    "LayerSeconds": call(1e-3, 2e-3),
    "layer_comm_seconds": call(1, 2048, 12288, 16, 2, True, True, machine="dgx-h100"),
    "layer_flops": call(1, 2048, 12288),
    "layer_compute_seconds": call(1, 2048, 12288, 8, peak_flops=989.5e12),
    "LinkRatio": call(450.0, 50.0),
    "link_ratio": call("nvlink4-h100", "nic-400g"),
}
