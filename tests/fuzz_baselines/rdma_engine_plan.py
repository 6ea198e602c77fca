SKIP = {
    "run_length": "a step of the batched engine, called only by simulate_fast (fuzzed)",
    "wake": "a step of the batched engine, called only by simulate_fast (fuzzed)",
}
