from fuzz import call

from scaleout import data_parallel as D

SIZES = [4096.0, 1024.0, 4096.0, 1024.0]
BACKWARD = [1e-3, 1e-4, 1e-3, 1e-4]
TL = D.step_timeline(
    SIZES, BACKWARD, 4, 3e-6, 2e-11, bucket_cap_bytes=5000.0, first_bucket_cap_bytes=1024.0
)

BASELINES = {
    "StepTimeline": call(
        TL.grad_ready_s,
        TL.compute_s,
        TL.backward_s,
        TL.buckets,
        TL.ready_s,
        TL.start_s,
        TL.end_s,
        TL.forward_s,
    ),
    "step_timeline": call(
        SIZES,
        BACKWARD,
        4,
        3e-6,
        2e-11,
        bucket_cap_bytes=5000.0,
        first_bucket_cap_bytes=1024.0,
        forward_s=1e-3,
        gamma_s_per_byte=0.0,
    ),
    "naive_timeline": call(SIZES, BACKWARD, 4, 3e-6, 2e-11, forward_s=1e-3, gamma_s_per_byte=0.0),
    "Accumulation": call(4, 1e-2, 8, 1e-3, 1e-4),
    "accumulation": call(TL, 4, no_sync=True),
    "uniform_layers": call(1e6, 8),
    "backward_seconds": call([1e5, 1e5], 1024, 1e12),
    "dp_network": call(16, 8, machine="dgx-h100", nic_gbps=200.0),
    "uniform_model_timelines": call(
        1e8,
        24,
        16,
        machine=D.dp_network(16, 8),
        bucket_cap_mb=None,
        tokens=4096,
        flops_per_s=1e14,
        bytes_per_param=2.0,
    ),
}
