from fuzz import call

from scaleout.rdma import SimConfig

BASELINES = {"simulate_reference": call(SimConfig(4096 * 20, loss=0.01, seed=1), False)}
NONFINITE_OK = {"simulate_reference": "timeline=True: NaN marks times that do not exist"}
