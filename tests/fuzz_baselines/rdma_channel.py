from fuzz import call

from scaleout.rdma import SimConfig

BASELINES = {"Fates": call(SimConfig(4096 * 20, loss=0.01, loss_model="bursty"))}
