from fuzz import call

BASELINES = {
    "simulate_job": call(3600.0, 40.0, 600.0, 600.0, segments=20, jobs=50, background_s=10.0),
    "expected_events": call(3600.0, 40.0, 600.0, 600.0, 20),
    "JobResult": call(0.9, 0.01, [100.0, 110.0], [0, 1], 90.0),
}
