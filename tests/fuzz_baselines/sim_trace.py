BASELINES = {}
SKIP = {
    "Event": "a record (NamedTuple) of a simulated operation, made only by StepTrace",
    "StepTrace": "built only by sim.simulate (fuzzed) from the engine's arrays",
}
