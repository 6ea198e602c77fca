from fuzz import call

from scaleout import data_parallel as D

SIZES = [4096.0, 1024.0, 4096.0, 1024.0]
BUCKETS = D.assign_buckets(SIZES, 5000.0, 1024.0)

BASELINES = {
    "bucket_caps": call(25),
    "Buckets": call(BUCKETS.params, BUCKETS.nbytes, BUCKETS.caps),
    "assign_buckets": call(SIZES, 5000.0, 1024.0),
    "ddp_buckets": call(
        SIZES, 0.004, rebuilt=True, find_unused_parameters=False, arrival_order=[3, 1, 2, 0]
    ),
    "GradientMemory": call(1e6, 1e6),
    "gradient_memory": call(1e6, gradient_as_bucket_view=False),
    "allreduce_itemsize": call("float32", comm_hook="bf16_compress"),
}
