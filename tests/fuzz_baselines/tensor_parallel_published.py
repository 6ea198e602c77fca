from fuzz import call

from scaleout.tensor_parallel import published as P

IT = P.iteration(8, 32)

BASELINES = {
    "Iteration": call(8, 8, 32, "nccl", IT.compute_s, IT.comm_s, IT.seconds, IT.tflops_per_gpu),
    "iteration": call(8, 32, topology="nccl"),
    "figure13": call("flat-ring"),
    "stated_pairs": call(),
    "pair_agreement": call(lambda batch, t: -abs(t - 8)),
    "table4_layer": call("selective", True),
    "async_tp_rows": call(),
}
