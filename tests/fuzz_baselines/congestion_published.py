from fuzz import call

BASELINES = {
    "rows": call("DCQCN"),
    "value": call("dcqcn-Kmax"),
}
SKIP = {
    "Row": "a record of data/congestion.csv, built by its loader",
}
