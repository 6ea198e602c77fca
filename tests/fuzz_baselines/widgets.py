import ipywidgets as W
import plotly.graph_objects as go
from fuzz import call


def _figure(p):
    return go.Figure(go.Bar(x=[0, 1], y=[p, 1]))


BASELINES = {
    "Explorer": call("fuzz-explorer", {"p": W.IntSlider(value=2, min=1, max=3)}, _figure),
    "pack": call([{"data": [{"x": [1, 2, 3], "y": [4, 5, 6]}]}] * 2),
    "unpack": call({"#": 0}, [{"data": []}]),
}

# An endless static iterable; sliders whose step is 0 (issue 31).
import itertools  # noqa: E402

EXTREMES = {
    "Explorer": [
        call(
            "fuzz-x",
            {"p": W.IntSlider(value=0, min=0, max=10)},
            _figure,
            static={"p": itertools.count()},
        ),
        call("fuzz-x", {"p": W.IntSlider(value=1, min=1, max=3, step=0)}, _figure),
        call("fuzz-x", {"p": W.FloatSlider(value=1, min=1, max=3, step=0)}, _figure),
    ]
}
