from fuzz import call

BASELINES = {
    "split_matmul_animation": call("row", 2),
    "megatron_block_figure": call("mlp", "forward", 2),
    "comm_time_figure": call(1, 2048, 12288, ts=(2, 8, 16)),
    "stage_transfer_animation": call(2, True, 1, 64, 256),
}
