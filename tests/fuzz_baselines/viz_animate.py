import plotly.graph_objects as go
from fuzz import call

FRAMES = [[go.Bar(x=[0, 1], y=[k, 1])] for k in range(3)]

BASELINES = {
    "animation": call(FRAMES, ["a", "b", "c"], frame_titles=["1", "2", "3"], duration_ms=500),
}
