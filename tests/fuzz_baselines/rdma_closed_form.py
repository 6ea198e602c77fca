from fuzz import call

from scaleout.rdma import SimConfig

BASELINES = {
    "ideal_completion_s": call(SimConfig(4096 * 20)),
    "gbn_goodput_fraction": call([0.001, 0.01], 8e-6, 8.192e-8, 1.31e-4),
}
