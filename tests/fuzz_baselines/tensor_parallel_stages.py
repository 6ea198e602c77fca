from fuzz import call

BASELINES = {
    "StageTransfer": call(8, 5e7, 5e7, 6.25e6, 4.4e7),
    "stage_transfer": call(1, 2048, 12288, 8, 2, gpus_per_server=8),
    "stage_transfer_seconds": call(
        1, 2048, 12288, 8, 2, intra="nvlink4-h100", inter="nic-400g", model="nccl"
    ),
    "stage_transfer_schedule": call(4, 8, True),
}
