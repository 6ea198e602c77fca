"""Figures for the chapter "Sequence and context parallelism" (chapters/08_context_parallel.ipynb).

Which rank holds which tokens comes from :func:`scaleout.context_parallel.shard_positions`;
which rank computes which query-key pairs at which ring step, from
:func:`scaleout.context_parallel.ring_work` and the same positions; lockstep efficiency from
:func:`scaleout.context_parallel.balance`. Costs, memory and measurements are computed by
the chapter with :mod:`scaleout.context_parallel` and handed in as data: no figure here
computes a cost. Arguments are checked with :mod:`scaleout.checks`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go

from .. import checks
from .. import context_parallel as CP
from .. import memory as M
from .animate import animation
from .theme import NEUTRAL, new_figure, rank_color

PENDING = "#EEEEEE"  # a visible pair not computed yet
MAX_ANIMATION_SEQ = 64  # tokens the ring animation draws (one cell per query-key pair)
MAX_ANIMATION_CP = 8
MAX_POINTS = 64  # points per curve
MAX_SERIES = 12
MAX_BARS = 40
GB = 1e9


def _fade(color: str, alpha: float) -> str:
    r, g, b = (int(color[i : i + 2], 16) for i in (1, 3, 5))
    return f"rgba({r},{g},{b},{alpha})"


def _discrete(colors: Sequence[str]) -> list:
    """A plotly colorscale mapping the integer k (0 .. len-1, zmin=-0.5, zmax=len-0.5) to
    colors[k], with sharp steps."""
    n = len(colors)
    scale = []
    for k, c in enumerate(colors):
        scale += [[k / n, c], [(k + 1) / n, c]]
    return scale


def layouts_figure(seq: int = 16, cp: int = 4) -> go.Figure:
    """Who holds which token: one row per layout (contiguous, zig-zag, striped), one cell
    per position, coloured and labelled by the owning rank."""
    cp = checks.integer("cp", cp, 1, MAX_ANIMATION_CP)
    seq = checks.integer("seq", seq, 2 * cp, MAX_ANIMATION_SEQ)
    names = {"contiguous": "contiguous", "zigzag": "zig-zag", "striped": "striped"}
    z, text = [], []
    for layout in CP.LAYOUTS:
        owner = np.empty(seq, dtype=int)
        for r, pos in enumerate(CP.shard_positions(seq, cp, layout)):
            owner[pos] = r
        z.append(owner.tolist())
        text.append([str(o) for o in owner])
    fig = new_figure(
        height=260,
        title_text=f"Which rank holds which token: {seq} tokens on cp = {cp} ranks",
        xaxis=dict(title="token position", dtick=1 if seq <= 32 else 4, showgrid=False),
        yaxis=dict(autorange="reversed", showgrid=False),
        margin=dict(l=90, t=50, b=50),
    )
    fig.add_heatmap(
        x=list(range(seq)), y=[names[lay] for lay in CP.LAYOUTS], z=z, text=text,
        texttemplate="%{text}", zmin=-0.5, zmax=cp - 0.5, showscale=False, xgap=1, ygap=3,
        colorscale=_discrete([rank_color(r) for r in range(cp)]),
        hovertemplate="%{y}: token %{x} on rank %{z}<extra></extra>",
    )  # fmt: skip
    return fig


def _cells(seq, cp, layout, causal, step):
    """(z code per (query, key) cell, hover text) after ``step`` ring steps are done, the
    last of them "current": 0 pending, 1..cp done earlier by rank k-1, cp+1..2cp now."""
    pos = CP.shard_positions(seq, cp, layout)
    owner = np.empty(seq, dtype=int)
    for r, p in enumerate(pos):
        owner[p] = r
    q = np.arange(seq)[:, None]
    k = np.arange(seq)[None, :]
    # Step at which the query's rank holds the key's block: (owner(q) - owner(k)) mod cp.
    when = (owner[q] - owner[k]) % cp
    z = np.where(when < step, 1 + owner[q], 0)
    if step < cp:
        z = np.where(when == step, cp + 1 + owner[q], z)
    visible = (k <= q) if causal else np.ones((seq, seq), dtype=bool)
    z = np.where(visible, z, np.nan)
    return z, when


def ring_animation(seq: int = 16, cp: int = 4, layout: str = "zigzag", causal: bool = True):
    """Ring attention step by step. Left, the s x s attention matrix (query rows, key
    columns; the causal mask leaves the upper triangle empty): the pairs each rank
    computes at this step in its colour, earlier ones faded, later ones grey. Right, the
    query-key pairs each rank computes at this step (``ring_work``); a rank at 0 is idle
    and waits for the busiest. A last frame totals the steps with the lockstep efficiency
    of :func:`~scaleout.context_parallel.balance`."""
    cp = checks.integer("cp", cp, 1, MAX_ANIMATION_CP)
    layout = checks.choice("layout", layout, CP.LAYOUTS)
    seq = checks.integer("seq", seq, 2 * cp, MAX_ANIMATION_SEQ)
    causal = checks.boolean("causal", causal)
    work = CP.ring_work(seq, cp, layout, causal)
    summary = CP.balance(work)
    colors = [PENDING] + [_fade(rank_color(r), 0.3) for r in range(cp)]
    colors += [rank_color(r) for r in range(cp)]
    ranks = [f"rank {r}" for r in range(cp)]
    top = 1.15 * max(int(work.max()), int(work.sum(axis=1).max()) / cp, 1)
    frames, labels, titles = [], [], []
    for step in range(cp + 1):
        z, when = _cells(seq, cp, layout, causal, step)
        if step < cp:
            bars = work[:, step]
            idle = int(np.sum(bars == 0))
            whose = "its own K/V" if step == 0 else f"the K/V of rank r - {step} (mod {cp})"
            titles.append(
                f"{layout}, step {step}: rank r attends to {whose}<br>"
                f"busiest rank {int(bars.max())} pairs, {idle} of {cp} idle"
            )
            labels.append(f"step {step}")
            values, text = bars, ["idle" if b == 0 else str(int(b)) for b in bars]
            bar_title = "pairs computed at this step"
        else:
            totals = work.sum(axis=1)
            titles.append(
                f"{layout}, all {cp} steps: {summary['critical']} pairs on the slowest path<br>"
                f"for {summary['ideal']:.0f} per rank on average: efficiency "
                f"{summary['efficiency']:.0%}"
            )
            labels.append("total")
            values, text = totals / cp, [str(int(t)) for t in totals]
            bar_title = "pairs per rank, all steps (bar: per step on average)"
        hover = when.tolist() if step == 0 else None  # the same in every frame: sent once
        frames.append(
            [
                go.Heatmap(
                    z=np.where(np.isnan(z), None, z).tolist(), x=list(range(seq)),
                    y=list(range(seq)), zmin=-0.5, zmax=2 * cp + 0.5, showscale=False,
                    colorscale=_discrete(colors), xgap=1, ygap=1, customdata=hover,
                    hovertemplate="query %{y}, key %{x}: ring step %{customdata}<extra></extra>",
                    xaxis="x", yaxis="y",
                ),
                go.Bar(
                    x=ranks, y=[float(v) for v in values], text=text, textposition="outside",
                    marker_color=[rank_color(r) for r in range(cp)], xaxis="x2", yaxis="y2",
                    hovertemplate="%{x}: %{text} pairs<extra>" + bar_title + "</extra>",
                    showlegend=False,
                ),
            ]
        )  # fmt: skip
    return animation(
        frames, labels, frame_titles=titles, slider_prefix="", height=520,
        xaxis=dict(domain=[0.0, 0.55], title="key position", showgrid=False, dtick=4),
        yaxis=dict(title="query position", autorange="reversed", showgrid=False, dtick=4,
                   scaleanchor="x"),
        xaxis2=dict(domain=[0.68, 1.0], title="rank", anchor="y2"),
        yaxis2=dict(title="query-key pairs per head", range=[0, top], anchor="x2"),
        margin=dict(l=60, r=20, t=90, b=50), showlegend=False,
    )  # fmt: skip


def _series(name: str, series, n: int, gaps: bool = False) -> dict:
    """label -> 1-D array of n values >= 0 (NaN allowed as a gap with ``gaps``)."""
    if not isinstance(series, Mapping) or not 1 <= len(series) <= MAX_SERIES:
        raise checks.fail(name, f"a mapping of 1 to {MAX_SERIES} label -> values", series)
    out = {}
    for label, values in series.items():
        checks.text(f"{name} label", label, 80)
        key = f"{name}[{label!r}]"
        y = checks.array(key, values, ndim=1, finite=False, low=0.0) if not gaps else None
        if gaps:
            if isinstance(values, str | bytes) or not isinstance(values, list | tuple | np.ndarray):
                raise checks.fail(key, "a 1-D sequence of numbers >= 0 or NaN", values)
            try:
                raw = np.asarray(values, dtype=np.float64)
            except (TypeError, ValueError):
                raise checks.fail(key, "a 1-D sequence of numbers >= 0 or NaN", values) from None
            checks.array(key, np.where(np.isnan(raw), 0.0, raw), ndim=1, finite=False, low=0.0)
            y = raw
        if y.size != n:
            raise checks.fail(f"{name}[{label!r}]", f"{n} values, one per x", y.size)
        out[label] = y
    return out


def _dash(k: int) -> str:
    return ("solid", "dash", "dot", "dashdot", "longdash", "longdashdot")[k % 6]


def memory_figure(
    seqs, series, gpu_bytes: float = M.DEFAULT_GPU_BYTES, title: str = ""
) -> go.Figure:
    """Activation bytes per rank against sequence length, one curve per entry of
    ``series`` (label -> bytes per sequence length), with the GPU's memory as a line
    (``gpu_bytes``, default :data:`scaleout.memory.DEFAULT_GPU_BYTES`, an H100 SXM's)."""
    s = checks.array("seqs", seqs, ndim=1, integer=True, low=1, max_size=MAX_POINTS)
    curves = _series("series", series, s.size)
    gpu = checks.positive("gpu_bytes", gpu_bytes, 1e15)
    checks.instance("title", title, str)
    fig = new_figure(
        height=440, title_text=title or "Activation memory per GPU against sequence length",
        xaxis=dict(title="sequence length s (tokens)", type="log", tickvals=s.tolist(),
                   ticktext=[f"{v // 1024}K" if v >= 1024 else str(v) for v in s.tolist()]),
        yaxis=dict(title="activations kept for backward (GB per GPU)", type="log"),
        legend=dict(x=0.01, y=0.99),
    )  # fmt: skip
    for k, (label, y) in enumerate(curves.items()):
        fig.add_scatter(
            x=s.tolist(), y=(y / GB).tolist(), mode="lines+markers", name=label,
            line=dict(color=rank_color(k), dash=_dash(k)),
            hovertemplate="s = %{x}: %{y:.3g} GB<extra>" + label + "</extra>",
        )  # fmt: skip
    fig.add_scatter(
        x=[s[0], s[-1]], y=[gpu / GB] * 2, mode="lines", name=f"GPU memory ({gpu / GB:g} GB)",
        line=dict(color="#444444", width=1, dash="dot"), hoverinfo="skip",
    )  # fmt: skip
    return fig


def scheme_figure(cps, series, yaxis_title: str, title: str, log_y: bool = True) -> go.Figure:
    """One curve per scheme against the context-parallel degree (``series``: label ->
    values per cp; NaN where a scheme cannot run, drawn as a gap)."""
    x = checks.array("cps", cps, ndim=1, integer=True, low=1, max_size=MAX_POINTS)
    curves = _series("series", series, x.size, gaps=True)
    checks.text("yaxis_title", yaxis_title, 120)
    checks.text("title", title, 300)
    log_y = checks.boolean("log_y", log_y)
    fig = new_figure(
        height=480, title_text=title,
        xaxis=dict(title="context-parallel degree cp (GPUs)", type="log", tickvals=x.tolist(),
                   ticktext=[str(v) for v in x.tolist()]),
        yaxis=dict(title=yaxis_title, type="log" if log_y else "linear",
                   **({} if log_y else {"rangemode": "tozero"})),
        legend=dict(orientation="h", y=-0.2, x=0),
        margin=dict(l=70, r=20, t=80, b=110),
    )  # fmt: skip
    for k, (label, y) in enumerate(curves.items()):
        fig.add_scatter(
            x=x.tolist(), y=[None if not np.isfinite(v) else float(v) for v in y],
            mode="lines+markers", name=label, line=dict(color=rank_color(k), dash=_dash(k)),
            hovertemplate="cp = %{x}: %{y:.3g}<extra>" + label + "</extra>",
        )  # fmt: skip
    return fig


def benchmark_figure(labels, measured, predicted, title: str = "") -> go.Figure:
    """Measured against modelled efficiency, one pair of bars per measurement (fractions)."""
    if not isinstance(labels, list | tuple) or not 1 <= len(labels) <= MAX_BARS:
        raise checks.fail("labels", f"a list of 1 to {MAX_BARS} labels", labels)
    for label in labels:
        checks.text("labels entry", label, 80)
    m = checks.array("measured", measured, ndim=1, low=0.0, high=10.0)
    p = checks.array("predicted", predicted, ndim=1, low=0.0, high=10.0)
    if m.size != len(labels) or p.size != len(labels):
        raise checks.fail("measured, predicted", f"{len(labels)} values each", (m.size, p.size))
    checks.instance("title", title, str)
    fig = new_figure(
        height=440, title_text=title or "Ring attention: measured and modelled efficiency",
        barmode="group", yaxis=dict(title="efficiency (ideal time / time)", tickformat=".0%",
                                    range=[0, 1.1]),
        xaxis=dict(tickangle=-35, automargin=True), legend=dict(orientation="h", y=1.08, x=0),
        margin=dict(l=110, r=20, t=80, b=150),
    )  # fmt: skip
    fig.add_bar(x=list(labels), y=m.tolist(), name="measured", marker_color=rank_color(0),
                hovertemplate="%{x}: %{y:.1%}<extra>measured</extra>")  # fmt: skip
    fig.add_bar(x=list(labels), y=p.tolist(), name="model", marker_color=NEUTRAL,
                marker_line=dict(color="#444444", width=1),
                hovertemplate="%{x}: %{y:.1%}<extra>model</extra>")  # fmt: skip
    return fig


def hybrid_figure(degrees, measured, predicted, title: str = "") -> go.Figure:
    """Measured and modelled throughput of the hybrid (USP) against its Ulysses degree, on a
    fixed number of GPUs (ring degree = GPUs / Ulysses degree): ``measured`` and
    ``predicted`` map the same labels (one per ring layout) to iterations per second, one
    value per degree. Measured solid, model dashed, one colour per label."""
    x = checks.array("degrees", degrees, ndim=1, integer=True, low=1, max_size=MAX_POINTS)
    got = _series("measured", measured, x.size)
    model = _series("predicted", predicted, x.size)
    if list(got) != list(model):
        raise checks.fail("predicted", f"the labels of measured ({list(got)})", list(model))
    checks.instance("title", title, str)
    fig = new_figure(
        height=440, title_text=title or "Hybrid attention: measured and modelled throughput",
        xaxis=dict(title="Ulysses degree (ring degree = GPUs / Ulysses degree)", type="log",
                   tickvals=x.tolist(), ticktext=[str(v) for v in x.tolist()]),
        yaxis=dict(title="throughput (iterations per second)", rangemode="tozero"),
        legend=dict(orientation="h", y=-0.22, x=0), margin=dict(l=70, r=20, t=80, b=120),
    )  # fmt: skip
    for k, label in enumerate(got):
        for name, series, dash in (("measured", got, "solid"), ("model", model, "dash")):
            fig.add_scatter(
                x=x.tolist(), y=series[label].tolist(), mode="lines+markers",
                name=f"{label}, {name}", line=dict(color=rank_color(k), dash=dash),
                marker=dict(symbol="circle" if name == "measured" else "x"),
                hovertemplate="Ulysses %{x}: %{y:.3g} it/s<extra>" + f"{label}, {name}</extra>",
            )  # fmt: skip
    return fig
