from fuzz import call

BASELINES = {
    "gpus_to_hold": call(16e12, 80e9),
    "min_dp_to_fit": call(7.5e9, 3, 32e9),
}
