from fuzz import call

from scaleout.rdma_sim import SimConfig

BASELINES = {
    "SimConfig": call(4096 * 20, loss=0.01),
    "Fates": call(SimConfig(4096 * 20, loss=0.01)),
}
SKIP = {
    "Timeline": "a result record built by the engines",
    "SimResult": "a result record built by the engines",
}
