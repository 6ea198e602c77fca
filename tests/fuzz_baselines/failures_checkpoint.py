from fuzz import call

from scaleout.failures.checkpoint import Strategy

BASELINES = {
    "checkpoint_size": call(70e9, 1024, model_parallel=8, stage=1, optimizer_states=True),
    "Strategy": call("synchronous", 40.0, 0.0, 640.0),
    "strategies": call(
        1e12, 1024, storage_gb_per_s=100.0, host_gb_per_s=25.0, peer_gb_per_s=25.0, restart_s=600.0
    ),
    "best": call(3600.0, Strategy("asynchronous", 0.5, 40.0, 640.0)),
}
SKIP = {"CheckpointSize": "a plain record of floats, built by checkpoint_size"}
