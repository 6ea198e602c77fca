from fuzz import call

BASELINES = {
    "greedy_partition": call([1000, 1000, 1000, 10, 10], 4),
    "Zero3Frame": call("start", "", -1, (False, False), ("none", "none"), (False, False)),
    "zero3_step": call(4, 4, prefetch=1),
}
