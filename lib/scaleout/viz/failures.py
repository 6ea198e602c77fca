"""Figures of chapter 17 (failures, checkpoints and goodput): goodput against the checkpoint
interval and against the GPU count, Llama 3's root causes, and the explorer. The numbers come
from :mod:`scaleout.failures`; this module only draws them (and, for the explorer, asks the
library for them).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go

from .. import checks
from .. import failures as F
from .. import transformer as TF
from ..failures.renewal import MAX_GPUS
from .theme import rank_color, template

MAX_POINTS = 4096
MAX_CURVES = 8
#: Strategy colours, fixed across the chapter's figures.
STRATEGY_COLOR = {
    "synchronous": rank_color(0),
    "asynchronous": rank_color(1),
    "in-memory": rank_color(2),
}
#: The explorer's fixed grid of intervals in seconds, 1 minute to 24 hours (shared by all states).
EXPLORER_INTERVALS = np.geomspace(60.0, 86400.0, 40)
#: The explorer's models and their parameter counts, Llama 3 at the sizes its paper states
#: (rows of ``data/models.csv``) and a round 1T.
EXPLORER_MODELS = {
    **{m: float(TF.stated_params(f"Llama 3 {m}")) for m in ("8B", "70B", "405B")},
    "1T": 1e12,  # a round size, no published model
}


@functools.cache
def _template():
    """The theme, built once (the explorer draws hundreds of figures)."""
    return template()


def _title(title) -> str:
    if not isinstance(title, str) or len(title) > 300:
        raise checks.fail("title", "a string of at most 300 characters", title)
    return title


def _series(x, series, name="series"):
    x = checks.array("x", x, ndim=1, max_size=MAX_POINTS)
    if not isinstance(series, Mapping) or not 1 <= len(series) <= MAX_CURVES:
        raise checks.fail(name, f"a mapping of 1 to {MAX_CURVES} labels -> values", series)
    out = {}
    for label, values in series.items():
        checks.text(f"{name} label", label)
        y = checks.array(f"{name}[{label!r}]", values, ndim=1, finite=False, max_size=MAX_POINTS)
        if y.shape != x.shape:
            raise checks.fail(f"{name}[{label!r}]", f"{x.size} values, one per x", y.size)
        out[label] = [None if not np.isfinite(v) else float(v) for v in y]
    return x, out


def interval_figure(
    interval_s, goodputs: Mapping[str, Sequence], marks: Mapping[str, tuple], title: str = ""
) -> go.Figure:
    """Goodput (%) against the checkpoint interval (minutes, log axis): one line per entry of
    ``goodputs`` and a marker per entry of ``marks`` ({label: (interval_s, goodput)})."""
    x, series = _series(interval_s, goodputs, "goodputs")
    fig = go.Figure(layout=dict(template=template()))
    for i, (label, y) in enumerate(series.items()):
        fig.add_scatter(
            x=(x / 60).tolist(),
            y=[None if v is None else 100 * v for v in y],
            mode="lines",
            name=label,
            line=dict(color=rank_color(i)),
            hovertemplate="%{x:.3g} min: %{y:.2f}%<extra>" + label + "</extra>",
        )
    if not isinstance(marks, Mapping) or len(marks) > MAX_CURVES:
        raise checks.fail(
            "marks", f"a mapping of at most {MAX_CURVES} labels -> (s, goodput)", marks
        )
    symbols = ("star", "diamond", "triangle-up", "square", "x", "cross", "circle", "hexagon")
    for j, (label, point) in enumerate(marks.items()):
        if not isinstance(point, tuple) or len(point) != 2:
            raise checks.fail(f"marks[{label!r}]", "an (interval_s, goodput) pair", point)
        s = checks.positive(f"marks[{label!r}] interval", point[0])
        g = checks.fraction(f"marks[{label!r}] goodput", point[1])
        fig.add_scatter(
            x=[s / 60],
            y=[100 * g],
            mode="markers",
            name=str(label),
            marker=dict(
                symbol=symbols[j],
                size=12,
                color=rank_color(3 + j),
                line=dict(color="white", width=1),
            ),
            hovertemplate="%{x:.3g} min: %{y:.2f}%<extra>" + str(label) + "</extra>",
        )
    fig.update_xaxes(type="log", title_text="checkpoint interval (minutes)")
    fig.update_yaxes(title_text="goodput (%)")
    fig.update_layout(
        title=_title(title),
        height=440,
        margin=dict(t=60, b=110),
        legend=dict(orientation="h", y=-0.25, x=0),
    )
    return fig


def scale_figure(gpus, goodputs: Mapping[str, Sequence], title: str = "") -> go.Figure:
    """Goodput (%) at each strategy's best interval against the GPU count (log axis)."""
    x, series = _series(gpus, goodputs, "goodputs")
    fig = go.Figure(layout=dict(template=template()))
    for i, (label, y) in enumerate(series.items()):
        color = STRATEGY_COLOR.get(label, rank_color(i))
        fig.add_scatter(
            x=x.tolist(),
            y=[None if v is None else 100 * v for v in y],
            mode="lines+markers",
            name=label,
            line=dict(color=color),
            marker=dict(color=color),
            hovertemplate="%{x:,} GPUs: %{y:.2f}%<extra>" + label + "</extra>",
        )
    fig.update_xaxes(
        type="log",
        title_text="GPUs",
        tickvals=x.tolist(),
        ticktext=[f"{int(v / 1024)}K" if v >= 1024 else str(int(v)) for v in x],
    )
    fig.update_yaxes(title_text="goodput (%)")
    fig.update_layout(
        title=_title(title),
        height=420,
        margin=dict(t=60, b=100),
        legend=dict(orientation="h", y=-0.25, x=0),
    )
    return fig


def budget_figure(
    checkpoint_s, budget_s: Mapping[str, Sequence], marks: Mapping[str, float], title: str = ""
) -> go.Figure:
    """The largest mean restart time (minutes) that keeps a goodput target, against the
    checkpoint stall (seconds, log axis): one line per entry of ``budget_s`` (seconds, NaN
    or negative where no restart is fast enough) and a dotted vertical line per entry of
    ``marks`` ({label: checkpoint_s})."""
    x, series = _series(checkpoint_s, budget_s, "budget_s")
    fig = go.Figure(layout=dict(template=template()))
    for i, (label, y) in enumerate(series.items()):
        minutes = [None if v is None or v < 0 else v / 60 for v in y]
        fig.add_scatter(
            x=x.tolist(),
            y=minutes,
            mode="lines",
            name=label,
            line=dict(color=rank_color(i)),
            hovertemplate="C = %{x:.3g} s: R up to %{y:.3g} min<extra></extra>",
        )
    if not isinstance(marks, Mapping) or len(marks) > MAX_CURVES:
        raise checks.fail("marks", f"a mapping of at most {MAX_CURVES} labels -> seconds", marks)
    for j, (label, c) in enumerate(marks.items()):
        fig.add_vline(
            x=checks.positive(f"marks[{label!r}]", c),
            line=dict(dash="dot", color=rank_color(3 + j)),
            annotation_text=str(label),
            annotation_position="top right" if j % 2 else "bottom left",
        )
    fig.update_xaxes(type="log", title_text="checkpoint stall (s)")
    fig.update_yaxes(title_text="largest mean restart (min)", rangemode="tozero")
    fig.update_layout(
        title=_title(title),
        height=420,
        margin=dict(t=60, b=100),
        legend=dict(orientation="h", y=-0.25, x=0),
    )
    return fig


def causes_figure(causes: Mapping[str, tuple], title: str = "") -> go.Figure:
    """Horizontal bars of interruptions per root cause ({component: (category, count,
    share)}), coloured by category, largest on top."""
    if not isinstance(causes, Mapping) or not 1 <= len(causes) <= 64:
        raise checks.fail("causes", "a mapping of 1 to 64 components -> (category, n, %)", causes)
    items = sorted(causes.items(), key=lambda kv: kv[1][1])
    cats = list(
        dict.fromkeys(c for _, (c, _, _) in sorted(causes.items(), key=lambda kv: -kv[1][1]))
    )
    fig = go.Figure(layout=dict(template=template()))
    for i, cat in enumerate(cats):
        rows = [(name, n) for name, (c, n, _) in items if c == cat]
        fig.add_bar(
            y=[r[0] for r in rows],
            x=[checks.nonnegative("count", r[1]) for r in rows],
            orientation="h",
            name=str(cat),
            marker_color=rank_color(i),
            hovertemplate="%{y}: %{x}<extra>" + str(cat) + "</extra>",
        )
    fig.update_yaxes(categoryorder="array", categoryarray=[name for name, _ in items])
    fig.update_xaxes(title_text="unexpected interruptions in 54 days")
    fig.update_layout(
        title=_title(title),
        height=560,
        barmode="stack",
        margin=dict(l=200, t=60, b=110),
        legend=dict(orientation="h", y=-0.16, x=0),
    )
    return fig


def explorer_figure(
    gpus: int,
    gpu_mtbf_years: float,
    model: str,
    storage_gb_per_s: float,
    restart_min: float,
    host_gb_per_s: float = 25.0,
    peer_gb_per_s: float = 25.0,
) -> go.Figure:
    """The explorer's figure: goodput against the interval for the three strategies, for a
    job of ``gpus`` GPUs each failing once per ``gpu_mtbf_years`` on average, checkpointing
    the model states of ``model`` (a key of :data:`EXPLORER_MODELS`) at ``storage_gb_per_s``,
    restarting in ``restart_min`` minutes plus the reload (the library computes)."""
    n = checks.integer("gpus", gpus, 8, MAX_GPUS)
    years = checks.real("gpu_mtbf_years", gpu_mtbf_years, 0.01, 100.0)
    checks.choice("model", model, tuple(EXPLORER_MODELS))
    minutes = checks.real("restart_min", restart_min, 0.0, 24 * 60)
    m = float(F.job_mtbf_s(n, 1.0 / (years * 365.25 * 24)))
    size = F.checkpoint_size(EXPLORER_MODELS[model], n)
    strats = F.strategies(
        size.total,
        n,
        storage_gb_per_s=storage_gb_per_s,
        host_gb_per_s=host_gb_per_s,
        peer_gb_per_s=peer_gb_per_s,
        restart_s=minutes * 60,
    )
    taus = EXPLORER_INTERVALS
    curves, marks = {}, {}
    for name, s in strats.items():
        ok = taus >= s.background_s
        g = np.full(taus.shape, np.nan)
        g[ok] = F.goodput(m, s.stall_s, s.restart_s, taus[ok], background_s=s.background_s)
        curves[name] = g
        marks[name] = F.best(m, s)
    data = []
    for name, g in curves.items():
        color = STRATEGY_COLOR[name]
        data.append(
            dict(type="scatter", x=(taus / 60).tolist(), mode="lines", name=name,
                 y=[None if not np.isfinite(v) else 100 * v for v in g], line=dict(color=color),
                 hovertemplate="%{x:.3g} min: %{y:.2f}%<extra>" + name + "</extra>")
        )  # fmt: skip
        tau, best = marks[name]
        data.append(
            dict(type="scatter", x=[tau / 60], y=[100 * best], mode="markers", showlegend=False,
                 marker=dict(color=color, size=10, symbol="star",
                             line=dict(color="white", width=1)),
                 hovertemplate=f"best: %{{x:.3g}} min, %{{y:.2f}}%<extra>{name}</extra>")
        )  # fmt: skip
    sub = (
        f"job MTBF {m / 3600:.3g} h; checkpoint {size.total / 1e12:.3g} TB, "
        f"sync stall {strats['synchronous'].stall_s:.3g} s"
    )
    layout = dict(
        template=_template(), title=dict(text=f"{model} on {n:,} GPUs<br><sup>{sub}</sup>"),
        height=440, margin=dict(t=80, b=110), legend=dict(orientation="h", y=-0.25, x=0),
        xaxis=dict(type="log", title=dict(text="checkpoint interval (minutes)"), range=[0, 3.2]),
        yaxis=dict(title=dict(text="goodput (%)"), range=[0, 100]),
    )  # fmt: skip
    fig = go.Figure(data=data, layout=layout, skip_invalid=False)
    return fig
