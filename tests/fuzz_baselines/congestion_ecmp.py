from fuzz import call

BASELINES = {
    "ecmp_expected_max": call(8, 8),
    "enumerate_expected_max": call(5, 3),
    "ecmp_loads": call(8, 8, 10),
    "busiest_path_slowdown": call(8, 8),
}
