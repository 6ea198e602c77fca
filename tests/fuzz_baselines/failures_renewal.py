from fuzz import call

BASELINES = {
    "goodput": call(3600.0, 40.0, 600.0, 600.0, background_s=30.0),
    "job_mtbf_s": call(16384, {"GPU": 1e-5, "host": 2e-6}),
    "max_restart_s": call(10012.0, [2.8, 30.0], 0.9),
    "rate_per_gpu_hour": call(419, 16384, 1296.0),
}
