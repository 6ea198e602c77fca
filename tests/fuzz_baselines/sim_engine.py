BASELINES = {}
SKIP = {
    "Graph": "the engine's graph, built and fed only by sim.simulate (fuzzed); "
    "tests/unit/test_sim.py drives it directly",
    "run": "runs a Graph built only by sim.simulate (fuzzed); its size is bounded by MAX_OPS",
}
