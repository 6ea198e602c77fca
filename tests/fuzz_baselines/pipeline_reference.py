from fuzz import call

BASELINES = {
    "stage_order": call("dualpipe-v", 4, 8, 2),
}
