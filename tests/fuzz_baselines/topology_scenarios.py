from fuzz import call

from scaleout import topology as T

BASELINES = {
    "allreduce_scenarios": call(4, 8, 450.0, 50.0, 2.0, 1e9),
    "allreduce_bound": call(8, 1e9, 450.0, in_network=True),
    "nccl_machine": call(8, 4, 400.0),
    "nccl_allreduce_scenarios": call(4, 1e9, machine=T.nccl_machine(8, 4, 400.0)),
}
