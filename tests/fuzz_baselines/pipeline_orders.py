from fuzz import call

BASELINES = {
    "stage_order": call("1f1b", 4, 8),
}
