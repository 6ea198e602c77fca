from fuzz import call

BASELINES = {
    "gloo_log": call("allreduce", [1024, 4096], [1e-4, 2e-4], 4, host="localhost"),
}
SKIP = {
    "time_collective": "a rank's worker: needs an initialised process group (scaleout.dist.run)",
}
