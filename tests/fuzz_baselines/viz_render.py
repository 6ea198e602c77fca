import plotly.graph_objects as go
from fuzz import call

FIG = go.Figure(go.Bar(x=[0, 1], y=[1, 2]))
SPEC = {"data": [{"type": "bar", "x": [0, 1], "y": [1, 2]}], "layout": {"height": 300}}

BASELINES = {
    "check_name": call("a-figure"),
    "portable": call({"x": [0.1, 2.0]}),
    "figure_spec": call(FIG),
    "figure_height": call(SPEC),
    "figure_html": call(SPEC, "a-figure"),
    "FigureOutput": call(FIG, "a-figure"),
    "ChoiceOutput": call({"a": FIG, "b": FIG}, "a-choice", "option"),
}
SKIP = {
    "show": "displays through IPython: FigureOutput is fuzzed instead",
    "show_choice": "displays through IPython: ChoiceOutput is fuzzed instead",
}


# Nesting deeper than the recursion limit (issue 31).
def _deep(n):
    value = 1.0
    for _ in range(n):
        value = [value]
    return value


EXTREMES = {"portable": [call(_deep(10_000))]}
