from fuzz import call

from scaleout.rdma_sim import SimConfig

BASELINES = {"simulate_reference": call(SimConfig(4096 * 20, loss=0.01, seed=1))}
