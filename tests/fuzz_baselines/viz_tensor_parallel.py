from fuzz import call

from scaleout import tensor_parallel as tp
from scaleout.tensor_parallel import published

RECORDS = {"megatron": tp.layer_overlap(1, 256, 1024, 8, "megatron")}

BASELINES = {
    "split_matmul_animation": call("row", 2),
    "megatron_block_figure": call("mlp", "forward", 2),
    "comm_time_figure": call(
        1,
        2048,
        12288,
        2,
        ts=(2, 8, 16),
        gpus_per_server=8,
        intra="nvlink4-h100",
        inter="nic-400g",
        peak_flops=989.5e12,
    ),
    # gpu= (which sets intra and peak_flops) is tested in tests/unit/test_tensor_parallel.py
    "stage_transfer_animation": call(2, True, 1, 64, 256, 2),
    "overlap_figure": call(RECORDS, title="a layer"),
    "figure13_figure": call(published.figure13()),
}
