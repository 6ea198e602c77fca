from fuzz import call

TRACE = {
    "baseTimeNanoseconds": 1_000_000_000,
    "traceEvents": [
        {"ph": "X", "name": "F0", "ts": 10.0, "dur": 5.0},
        {"ph": "X", "name": "B0", "ts": 20.0, "dur": 7.0},
        {"ph": "X", "name": "aten::mm", "ts": 11.0, "dur": 1.0},
    ],
}

BASELINES = {
    "operations": call(TRACE, names=None),
}
SKIP = {
    "warm_up": "takes no argument; its first call imports much of torch (seconds, over the "
    "fuzz budget); run by chapter 16",
    "pipeline_rank": "a rank function for scaleout.dist.run (needs a process group); run by "
    "tests/integration/test_sim_replay.py",
    "ddp_rank": "a rank function for scaleout.dist.run (needs a process group); run by "
    "tests/integration/test_sim_replay.py",
}
