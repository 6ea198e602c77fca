SKIP = {"Receiver": "a step of the batched engine, built and fed only by simulate_fast (fuzzed)"}
