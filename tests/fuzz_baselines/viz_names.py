from fuzz import call

SPEC = {
    "data": [{"type": "bar", "x": [0, 1], "y": [1, 2], "name": "zb-h1"}],
    "layout": {"title": {"text": "allreduce on dgx-h100, E_p = 4"}},
    "frames": [{"name": "nvlink4-h100", "data": [{"name": "gpipe"}]}],
}

BASELINES = {
    "label": call("nvlink4-h100"),
    "labels": call("allreduce on dgx-h100, E_p = 4"),
    "relabel_spec": call(SPEC),
}


# Nesting deeper than the recursion limit.
def _deep(n):
    value = "zb-h1"
    for _ in range(n):
        value = {"text": [value]}
    return value


EXTREMES = {"relabel_spec": [call({"data": _deep(10_000)})]}
