"""Figures of chapter 18 (your own cluster): a log's bus bandwidth beside the model's, and a
measured time line with the fitted and held-out sizes. Numbers come from
:mod:`scaleout.calibrate`; nothing is computed here except unit conversions for the axes.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from .. import checks
from ..calibrate.fit import Fit
from ..calibrate.judge import Comparison
from .theme import NEUTRAL, rank_color, template

_GIB = 2**30


def log_beside_model(c: Comparison, title: str, corrected=None) -> go.Figure:
    """Measured bus bandwidth (markers) and the model's (line) against size, log-log; with
    ``corrected`` (model busbw after a correction, one per row) a dashed third curve."""
    checks.instance("c", c, Comparison)
    checks.text("title", title, 80)
    x = (c.nbytes / _GIB).tolist()
    fig = go.Figure(layout=dict(template=template()))
    fig.add_scatter(
        x=x,
        y=c.model_gb_per_s.tolist(),
        mode="lines",
        name="model (ch. 10)",
        line=dict(color=NEUTRAL, width=2),
        hovertemplate="%{x:.3g} GiB: %{y:.4g} GB/s<extra>model</extra>",
    )
    if corrected is not None:
        y = checks.array("corrected", corrected, ndim=1, low=0.0)
        fig.add_scatter(
            x=x,
            y=y.tolist(),
            mode="lines",
            name="model, corrected",
            line=dict(color=rank_color(1), width=2, dash="dash"),
            hovertemplate="%{x:.3g} GiB: %{y:.4g} GB/s<extra>corrected</extra>",
        )
    fig.add_scatter(
        x=x,
        y=c.measured_gb_per_s.tolist(),
        mode="markers",
        name="measured",
        marker=dict(color=rank_color(0), size=9),
        hovertemplate="%{x:.3g} GiB: %{y:.4g} GB/s<extra>measured</extra>",
    )
    fig.update_layout(
        title=dict(text=title),
        height=420,
        legend=dict(orientation="h", x=0, y=-0.25),
        xaxis=dict(type="log", title=dict(text="size (GiB)")),
        yaxis=dict(type="log", title=dict(text="bus bandwidth (GB/s)")),
    )
    return fig


def fit_line(fit: Fit, title: str) -> go.Figure:
    """Measured times (fitted: open circles; held out: filled) and the fitted line."""
    checks.instance("fit", fit, Fit)
    checks.text("title", title, 80)
    fig = go.Figure(layout=dict(template=template()))
    grid = np.geomspace(fit.nbytes.min(), fit.nbytes.max(), 40)
    fig.add_scatter(
        x=(grid / 2**20).tolist(),
        y=(fit.seconds_for(grid) * 1e3).tolist(),
        mode="lines",
        name="latency + bytes / bandwidth",
        line=dict(color=NEUTRAL, width=2),
        hovertemplate="%{x:.3g} MiB: %{y:.3g} ms<extra>fit</extra>",
    )
    for label, sel, symbol, color in (
        ("fitted", fit.fitted, "circle-open", NEUTRAL),
        ("held out", ~fit.fitted, "circle", rank_color(0)),
    ):
        fig.add_scatter(
            x=(fit.nbytes[sel] / 2**20).tolist(),
            y=(fit.seconds[sel] * 1e3).tolist(),
            mode="markers",
            name=label,
            marker=dict(symbol=symbol, size=10, color=color),
            hovertemplate="%{x:.3g} MiB: %{y:.3g} ms<extra>" + label + "</extra>",
        )
    fig.update_layout(
        title=dict(text=title),
        height=400,
        legend=dict(orientation="h", x=0, y=-0.25),
        xaxis=dict(type="log", title=dict(text="size (MiB)")),
        yaxis=dict(type="log", title=dict(text="time (ms)")),
    )
    return fig
