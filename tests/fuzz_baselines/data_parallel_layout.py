from fuzz import call

BASELINES = {
    "ParallelLayout": call(1024, 8, 8, 1536, micro_batch=2),
    "data_parallel_groups": call(16, 2, 4),
}
