from fuzz import call

BASELINES = {
    "Bandwidth": call(50e9),
}
