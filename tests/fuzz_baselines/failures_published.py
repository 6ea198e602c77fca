from fuzz import call

BASELINES = {
    "rows": call(),
    "runs": call(),
    "value": call("llama3-405b", "interruptions"),
    "row": call("bloom-176b", "checkpoint time"),
    "llama3_causes": call(),
    "observed": call("llama3-405b", "all"),
    "assumed_range": call("restart time"),
    "per_component_rates": call(),
}
SKIP = {
    "Row": "a plain record read from the CSV by rows()",
    "Observed": "a plain record built by observed()",
}
