"""Figures for the chapters "Model parallelism" (chapters/03_model_parallel.ipynb) and
"Pipeline parallelism" (chapters/05_pipeline_parallel.ipynb).

Every figure is drawn from :mod:`scaleout.pipeline` data: timelines come from the simulated
:func:`~scaleout.pipeline.schedule` (or from measured records), bubbles, in-flight counts,
memory and step times from the library's functions. Gantt charts put stages on the y axis
(stage 0 on top) and time on the x axis. They colour operations by *phase* (blue forward,
orange backward, green weight gradient; a darker shade for a later model chunk) and print
the micro-batch number on each bar, or, with ``color_by="stage"``, by rank
(:func:`~scaleout.viz.rank_color`) with the backward hatched.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go

from .. import checks
from .. import pipeline as P
from .animate import MAX_FRAMES, animation
from .theme import NEUTRAL, new_figure, rank_color

# Light to dark shades per phase; shade k is model chunk k (interleaved schedules).
PHASE_COLORS = {
    "F": ("#9ECAE1", "#4292C6", "#2171B5", "#08519C"),
    "B": ("#FDAE6B", "#F16913", "#D94801", "#A63603"),
    "W": ("#A1D99B", "#41AB5D", "#238B45", "#006D2C"),
    "BW": ("#BCBDDC", "#807DBA", "#6A51A3", "#4A1486"),
}
PHASE_NAMES = {
    "F": "forward F", "B": "backward B", "W": "weight gradient W", "BW": "full backward B+W",
}  # fmt: skip
_PATTERN = {"F": "", "B": "/", "W": ".", "BW": "x"}
_LOOK = {"F": "solid", "B": "hatched", "W": "dotted", "BW": "cross-hatched"}
_TOP_LEGEND = dict(
    orientation="h", x=1.0, xanchor="right", y=1.0, yanchor="bottom", traceorder="normal"
)
TIME_TITLE = "time (units of t_f, one micro-batch's forward on one stage)"
MAX_SCHEDULES = 8  # timelines one figure shows (stacked or grouped): more is unreadable
MAX_POINTS = 1000  # points one curve of a figure may have


def _title(name, value, default=""):
    return default if value is None else checks.instance(name, value, str, "a string")


def _timelines(name, scheds, cls=P.Timeline):
    """``scheds`` as a list of 1..MAX_SCHEDULES timelines."""
    if isinstance(scheds, Mapping):
        items = list(scheds.items())
        if not 1 <= len(items) <= MAX_SCHEDULES:
            raise checks.fail(name, f"a mapping of 1..{MAX_SCHEDULES} label -> schedule", scheds)
        for label, s in items:
            checks.text(f"a label of {name}", label)
            checks.instance(f"{name}[{label!r}]", s, cls, f"a {cls.__name__}")
        return items
    if not isinstance(scheds, list | tuple) or not 1 <= len(scheds) <= MAX_SCHEDULES:
        raise checks.fail(name, f"a list of 1..{MAX_SCHEDULES} schedules", scheds)
    for s in scheds:
        checks.instance(f"an element of {name}", s, cls, f"a {cls.__name__}")
    return list(scheds)


def _simulation_budget(runs):
    """Refuse a figure that would simulate more than ``pipeline.MAX_OPERATIONS`` operations
    in all (``runs``: (name, p, m, v) of each simulation it needs)."""
    total = sum((3 if name == "zb-h1" else 2) * p * v * m for name, p, m, v in runs)
    if total > P.MAX_OPERATIONS:
        raise ValueError(
            f"the figure's simulations must hold at most {P.MAX_OPERATIONS} operations in all, "
            f"got {total}: draw fewer or smaller pipelines"
        )


#: A Gantt chart labels its bars with their micro-batch only up to this many operations per
#: stage (forward, backward and weight pieces of every chunk).
MAX_LABELLED_PER_STAGE = 48


def gantt_traces(tl, color_by="phase", xaxis="x", yaxis="y", legend=True, scale=1.0):
    """Bar traces of a :class:`~scaleout.pipeline.Timeline`, y = stage number: the idle
    intervals (bubbles) in light grey, then one trace per phase and chunk. ``scale``
    multiplies times (e.g. 1e3 for seconds -> ms). Hover text is a template over the bars'
    own data (no per-bar strings), which keeps figures light."""
    tl = checks.instance("tl", tl, P.Timeline, "a Timeline")
    color_by = checks.choice("color_by", color_by, ("phase", "stage"))
    xaxis, yaxis = _axis("xaxis", xaxis, "x"), _axis("yaxis", yaxis, "y")
    legend = checks.boolean("legend", legend)
    scale = checks.positive("scale", scale, 1e12)
    common = dict(orientation="h", xaxis=xaxis, yaxis=yaxis, width=0.8, showlegend=legend)
    # Micro-batch numbers inside the bars only while a row holds few enough to read; beyond
    # that plotly shrinks them to specks, and laying them out dominates a redraw (hover
    # still names every bar).
    labels = len(tl.phase) <= MAX_LABELLED_PER_STAGE * tl.p
    ist, i0, i1 = P.idle_intervals(tl)
    traces = [
        go.Bar(
            y=ist, base=i0 * scale, x=(i1 - i0) * scale, name="idle (bubble)",
            marker=dict(color="#EEEEEE", line=dict(width=0)), hoverinfo="skip", **common,
        )
    ]  # fmt: skip
    for ph in P.PHASES:
        for c in range(tl.v):
            sel = np.flatnonzero((tl.phase == ph) & (tl.chunk == c))
            if len(sel):
                traces.append(_phase_bars(tl, sel, ph, c, color_by, scale, common, labels))
        if color_by == "stage" and np.any(tl.phase == ph) and legend:  # a grey legend swatch
            traces.append(
                go.Bar(
                    x=[0], y=[0], base=[0], name=f"{PHASE_NAMES[ph]} ({_LOOK[ph]})",
                    xaxis=xaxis, yaxis=yaxis, orientation="h", hoverinfo="skip",
                    marker=dict(color={"F": "#555555", "B": "#999999", "W": "#CCCCCC"}[ph]),
                )
            )  # fmt: skip
    return traces


def _axis(name, value, letter):
    value = checks.text(name, value, 8)
    if not (value[0] == letter and (value[1:] == "" or value[1:].isdigit())):
        raise checks.fail(name, f"a plotly axis id such as '{letter}' or '{letter}2'", value)
    return value


def _phase_bars(tl, sel, ph, c, color_by, scale, common, labels=True):
    """One bar trace: the operations ``sel`` (all of phase ``ph``, chunk ``c``); ``labels``:
    micro-batch numbers drawn inside the bars (always in the hover)."""
    st, mb = tl.stage[sel], tl.microbatch[sel]
    a, b = tl.start[sel] * scale, tl.end[sel] * scale
    name = PHASE_NAMES[ph]
    chunk = f", chunk {c}" if tl.v > 1 else ""
    if color_by == "phase":
        colors, ink = PHASE_COLORS[ph][min(c, 3)], "#222222" if c == 0 else "white"
        pattern = dict(shape="")
        name += f" (chunk {c})" if c else ""
    else:
        colors = [rank_color(int(r)) for r in st]
        ink = ["#222222" if ph != "F" or int(r) % 8 == 6 else "white" for r in st]
        pattern = dict(shape=_PATTERN[ph], fgcolor="white", solidity=0.5)
        common = dict(common, showlegend=False)
    hover = (f"stage %{{y}}: {ph} of micro-batch %{{text}}{chunk}<br>from %{{base:.4g}}, "
             "lasts %{x:.4g}<extra></extra>")  # fmt: skip
    return go.Bar(
        y=st, base=a, x=b - a, name=name, hovertemplate=hover,
        legendgroup=name, marker=dict(color=colors, line=dict(color="white", width=0.5),
                                      pattern=pattern),
        text=[str(j) for j in mb], textposition="inside" if labels else "none",
        insidetextanchor="middle",
        textfont=dict(color=ink, size=11), **common,
    )  # fmt: skip


def _stage_axis(p: int, **kw) -> dict:
    return dict(
        tickmode="array", tickvals=list(range(p)), ticktext=[str(r) for r in range(p)],
        range=[p - 0.5, -0.5], autorange=False, showgrid=False, zeroline=False, **kw,
    )  # fmt: skip


def gantt(tl, title="", color_by="phase", time_title=TIME_TITLE, scale=1.0, height=None):
    """A Gantt chart of one timeline: stages down (stage 0 on top), time across."""
    tl = checks.instance("tl", tl, P.Timeline, "a Timeline")
    title, time_title = _title("title", title), _title("time_title", time_title)
    height = checks.optional_integer("height", height, 100, 4000)
    fig = new_figure(
        title_text=title, barmode="overlay", height=height or 190 + 30 * tl.p,
        xaxis_title_text=time_title, yaxis=_stage_axis(tl.p, title_text="pipeline stage (GPU)"),
        legend=_TOP_LEGEND, margin=dict(l=70, r=20, t=110 if "<br>" in title else 90, b=60),
    )  # fmt: skip
    fig.add_traces(gantt_traces(tl, color_by=color_by, scale=scale))
    return fig


def _nice_step(x: float) -> float:
    """The smallest of 1, 2, 2.5, 5 x 10^k that is >= x (round slider labels)."""
    k = 10.0 ** np.floor(np.log10(x))
    return float(min(c * k for c in (1, 2, 2.5, 5, 10) if c * k >= x - 1e-12))


LABELS = {"naive": "naive", "gpipe": "GPipe", "1f1b": "1F1B", "zb-h1": "ZB-H1"}


def _describe(s, label=None) -> str:
    name = label or LABELS.get(s.name, f"interleaved, v = {s.v}")
    return f"{name}: {s.makespan:.4g} time units, bubble {P.bubble_fraction(s):.3g}"


def schedules_animation(scheds: Sequence, frames=40, color_by="phase", title="", labels=None):
    """Schedules stacked on one time axis, with a slider over time: the part of each
    timeline after the slider's time is veiled, so the reader watches the pipeline fill,
    run and drain. ``scheds`` are :class:`~scaleout.pipeline.Schedule` objects; ``labels``
    (one string per schedule) replace the schedules' names in the notes above each."""
    scheds = _timelines("scheds", scheds, P.Schedule)
    frames = checks.integer("frames", frames, 2, MAX_FRAMES)
    color_by = checks.choice("color_by", color_by, ("phase", "stage"))
    title = _title("title", title)
    if labels is not None:
        if not isinstance(labels, list | tuple) or len(labels) != len(scheds):
            raise checks.fail("labels", f"None or {len(scheds)} strings, one per schedule", labels)
        labels = [checks.text("a label", lab) for lab in labels]
    labels = labels or [None] * len(scheds)
    t_end = max(s.makespan for s in scheds)
    step = _nice_step(t_end / (frames - 1))
    times = np.round(np.arange(0, t_end + step, step), 6)
    times[-1] = min(times[-1], t_end)
    row_px, gap_px, margin = [26 * s.p + 10 for s in scheds], 64, dict(l=70, r=20, t=110, b=130)
    plot_px = sum(row_px) + gap_px * (len(scheds) - 1)
    top, layout, axes = 1.0, {}, []
    for k, (s, px) in enumerate(zip(scheds, row_px, strict=True)):
        suffix = "" if k == 0 else str(k + 1)
        dom = [max(0.0, top - px / plot_px), top]
        top = dom[0] - gap_px / plot_px
        layout[f"yaxis{suffix}"] = _stage_axis(
            s.p, domain=dom, anchor=f"x{suffix}", title_text="stage"
        )
        layout[f"xaxis{suffix}"] = dict(range=[0, t_end * 1.01], anchor=f"y{suffix}")
        if k:
            layout[f"xaxis{suffix}"]["matches"] = "x"
        axes.append((f"x{suffix}", f"y{suffix}", dom))
    layout[f"xaxis{'' if len(scheds) == 1 else len(scheds)}"]["title_text"] = TIME_TITLE
    notes = [
        dict(text=_describe(s, lab), x=0, xref="paper", xanchor="left", y=dom[1],
             yref="paper", yanchor="bottom", showarrow=False, font=dict(size=13))
        for s, lab, (_, _, dom) in zip(scheds, labels, axes, strict=True)
    ]  # fmt: skip

    def veil(t, xa, ya, p):
        """The not-yet-happened part, veiled, and a line at time t."""
        return [
            go.Scatter(
                x=[t, t_end * 1.01, t_end * 1.01, t, t], y=[-0.5, -0.5, p - 0.5, p - 0.5, -0.5],
                fill="toself", fillcolor="rgba(255,255,255,0.78)", line=dict(width=0),
                mode="lines", hoverinfo="skip", showlegend=False, xaxis=xa, yaxis=ya,
            ),
            go.Scatter(
                x=[t, t], y=[-0.5, p - 0.5], mode="lines", line=dict(color="#222222", width=2),
                hoverinfo="skip", showlegend=False, xaxis=xa, yaxis=ya,
            ),
        ]  # fmt: skip

    frame_traces = [
        [tr for s, (xa, ya, _) in zip(scheds, axes, strict=True) for tr in veil(t, xa, ya, s.p)]
        for t in times
    ]
    fig = animation(
        frame_traces, [f"{t:g}" for t in times], slider_prefix="time = ",
        title_text=title, barmode="overlay", height=plot_px + margin["t"] + margin["b"],
        annotations=notes, legend=dict(_TOP_LEGEND, y=1 + 26 / plot_px), margin=margin,
        **layout,
    )  # fmt: skip
    # Scatter traces draw above bars whatever their order, so the frames (veils, traces
    # 0..) stay small and the bars, added after, never change.
    shown = set()
    for s, (xa, ya, _) in zip(scheds, axes, strict=True):
        for tr in gantt_traces(s, color_by=color_by, xaxis=xa, yaxis=ya):
            tr.update(showlegend=tr.showlegend is not False and tr.name not in shown)
            shown.add(tr.name)
            fig.add_trace(tr)
    return fig


def bubble_vs_m(p, ms, vs=(2, 4)):
    """Simulated bubble fraction against m for each schedule (markers) on top of the
    published closed forms (lines), plus GPipe's bubble-over-total-time definition."""
    p = checks.integer("p", p, 1, P.MAX_STAGES)
    ms = checks.array("ms", ms, ndim=1, integer=True, low=1, high=P.MAX_MICROBATCHES,
                      max_size=64)  # fmt: skip
    vs = checks.array("vs", vs, ndim=1, integer=True, low=2, high=P.MAX_CHUNKS, max_size=3)
    rows = [("1f1b", 1, "GPipe and 1F1B: (p-1)/m", "solid")]
    rows += [("interleaved", int(v), f"interleaved, v = {v}: (p-1)/(vm)", "dash") for v in vs]
    rows += [("zb-h1", 1, "ZB-H1: (p-1)/(3m)", "dot")]
    points = [
        (name, v, ms[ms % p == 0] if name == "interleaved" else ms[ms >= (p if name == "zb-h1"
                                                                          else 1)])
        for name, v, _, _ in rows
    ]  # fmt: skip
    _simulation_budget([(name, p, int(m), v) for name, v, xs in points for m in xs])
    fig = new_figure(
        title_text=f"Bubble against micro-batches, p = {p}",
        xaxis=dict(type="log", title_text="micro-batches per step m", dtick=np.log10(2)),
        yaxis=dict(type="log", title_text="bubble fraction (idle / ideal time)"),
        height=620, legend=dict(x=0.0, y=-0.18, yanchor="top"), margin=dict(b=200),
    )  # fmt: skip
    colors = ["#4292C6", "#F16913", "#A63603", "#7F2704", "#41AB5D"]
    for (name, v, label, dash), (_, _, xs), color in zip(rows, points, colors, strict=False):
        closed = [P.bubble_closed_form(name, p, int(m), v) for m in xs]
        sim = [P.bubble_fraction(P.schedule(name, p, int(m), v)) for m in xs]
        fig.add_scatter(x=xs, y=closed, mode="lines", name=label, line=dict(color=color, dash=dash))
        fig.add_scatter(
            x=xs, y=sim, mode="markers", marker=dict(color=color, size=8, symbol="circle-open"),
            name="simulated", showlegend=name == "1f1b", legendgroup="sim",
            hovertemplate="m = %{x}: simulated %{y:.4g}<extra></extra>",
        )  # fmt: skip
    gp = [P.bubble_closed_form("gpipe", p, int(m), of="total") for m in ms]
    fig.add_scatter(
        x=ms, y=gp, mode="lines", line=dict(color="#555555", dash="longdash", width=1.5),
        name="GPipe's own definition (idle / total): (p-1)/(m+p-1)",
    )  # fmt: skip
    return fig


def in_flight_bars(scheds):
    """Peak micro-batches of activations each stage holds, per schedule (grouped bars);
    ``scheds`` maps a label to a :class:`~scaleout.pipeline.Schedule` (same p and m)."""
    items = _timelines("scheds", scheds, P.Schedule)
    first = items[0][1]
    if any((s.p, s.m) != (first.p, first.m) for _, s in items):
        raise checks.fail("scheds", "schedules of the same p and m", [(s.p, s.m) for _, s in items])
    fig = new_figure(
        title_text=f"Peak activations held, p = {first.p}, m = {first.m}",
        barmode="group", xaxis_title_text="pipeline stage (GPU)", height=460,
        yaxis_title_text="peak in flight (micro-batches)", margin=dict(t=90),
        legend=dict(_TOP_LEGEND, y=1.02),
    )  # fmt: skip
    colors = ["#4292C6", "#F16913", "#A63603", "#41AB5D", "#777777"]
    for k, (label, s) in enumerate(items):
        fig.add_bar(x=list(range(s.p)), y=P.peak_in_flight(s), name=label,
                    marker_color=colors[k % len(colors)])  # fmt: skip
    fig.update_xaxes(tickmode="linear", dtick=1)
    return fig


def in_flight_over_time(scheds, stage=0):
    """Micro-batches in flight on one stage over time, per schedule (step lines)."""
    items = _timelines("scheds", scheds)
    stage = checks.integer("stage", stage, 0, min(s.p for _, s in items) - 1)
    fig = new_figure(
        title_text=f"Activations held by stage {stage} over one step",
        xaxis_title_text=TIME_TITLE, yaxis_title_text="in flight (micro-batches)", height=420,
        legend=dict(_TOP_LEGEND, y=1.02), margin=dict(t=90),
    )  # fmt: skip
    colors = ["#4292C6", "#F16913", "#A63603", "#41AB5D"]
    for k, (label, s) in enumerate(items):
        t, n = P.in_flight_timeline(s, stage)
        last = n[-1] if len(n) else 0.0
        t, n = np.concatenate([[0.0], t, [s.makespan]]), np.concatenate([[0.0], n, [last]])
        fig.add_scatter(x=t, y=n, mode="lines", line_shape="hv", name=label,
                        line_color=colors[k % len(colors)])  # fmt: skip
    return fig


def microbatch_sweep(bs, predicted, measured=None, title="",
                     yaxis_title="throughput relative to b = 1"):  # fmt: skip
    """Throughput against micro-batch size b: the model (lines, one per label of
    ``predicted``) and published measurements (open markers, ``measured``, the same labels),
    each a sequence of one value per b in ``bs``; a star marks each curve's best b. The
    values come from :func:`scaleout.pipeline_published.microbatch_throughput` or the
    published tables; nothing is computed here."""
    bs = checks.array("bs", bs, ndim=1, integer=True, low=1, high=1 << 30, max_size=64)
    curves = _curves("predicted", predicted, bs.size)
    points = _curves("measured", measured, bs.size) if measured is not None else {}
    fig = new_figure(
        title_text=_title("title", title), height=460, legend=dict(x=1.0, xanchor="right", y=1.0),
        xaxis=dict(type="log", title_text="micro-batch size b (sequences)", dtick=np.log10(2)),
        yaxis=dict(title_text=checks.text("yaxis_title", yaxis_title)),
    )  # fmt: skip
    for k, (label, y) in enumerate(curves.items()):
        color = rank_color(k)
        fig.add_scatter(x=bs, y=y, mode="lines", name=f"{label}: model", line_color=color)
        best = int(np.argmax(y))
        fig.add_scatter(x=[bs[best]], y=[y[best]], mode="markers", showlegend=False,
                        marker=dict(color=color, size=13, symbol="star"),
                        hovertemplate=f"{label}: best b = {bs[best]}<extra></extra>")  # fmt: skip
        if label in points:
            fig.add_scatter(x=bs, y=points[label], mode="markers", name=f"{label}: measured",
                            marker=dict(color=color, size=10, symbol="circle-open",
                                        line_width=2))  # fmt: skip
    return fig


def _curves(name, curves, n):
    """``curves`` as {label: array of n values >= 0}."""
    if not isinstance(curves, Mapping) or not 1 <= len(curves) <= MAX_SCHEDULES:
        raise checks.fail(name, f"a mapping of 1..{MAX_SCHEDULES} label -> values", curves)
    out = {}
    for key, values in curves.items():
        y = checks.array(f"{name}[{key!r}]", values, ndim=1, max_size=MAX_POINTS, low=0)
        if y.size != n:
            raise checks.fail(f"{name}[{key!r}]", f"{n} values (one per b)", values)
        out[checks.text(f"a label of {name}", key)] = y
    return out


def validation_scatter(groups, title=""):
    """Predicted against measured (one colour per group of
    :class:`scaleout.pipeline_published.Row`), with the line predicted = measured and a
    +-10 % band; hovering a point names its setting and schedule."""
    from ..pipeline_published import Row  # viz reads records, computes nothing

    if not isinstance(groups, Mapping) or not 1 <= len(groups) <= MAX_SCHEDULES:
        raise checks.fail("groups", f"a mapping of 1..{MAX_SCHEDULES} label -> rows", groups)
    items = {}
    for label, rows in groups.items():
        if not isinstance(rows, tuple | list) or not 1 <= len(rows) <= MAX_POINTS:
            raise checks.fail(f"groups[{label!r}]", f"1..{MAX_POINTS} Row records", rows)
        items[checks.text("a label of groups", label)] = [
            checks.instance(f"groups[{label!r}]", r, Row) for r in rows
        ]
    values = [v for rows in items.values() for r in rows for v in (r.measured, r.predicted)]
    lo, hi = min(values) / 1.15, max(values) * 1.15
    fig = new_figure(
        title_text=_title("title", title), height=560,
        xaxis=dict(type="log", title_text="measured (ratio to the reference run)"),
        yaxis=dict(type="log", title_text="predicted by the simulator (same ratio)"),
        legend=dict(orientation="h", x=0.0, y=-0.16, yanchor="top"), margin=dict(b=170),
    )  # fmt: skip
    line = np.array([lo, hi])
    for f, dash in ((1.0, "solid"), (1.1, "dot"), (1 / 1.1, "dot")):
        fig.add_scatter(x=line, y=f * line, mode="lines", hoverinfo="skip", showlegend=f == 1.1,
                        name="predicted = measured, +-10 %",
                        line=dict(color=NEUTRAL, dash=dash, width=1))  # fmt: skip
    symbols = ["circle", "diamond", "square", "triangle-up", "x", "cross", "star", "pentagon"]
    for k, (label, rows) in enumerate(items.items()):
        fig.add_scatter(
            x=[r.measured for r in rows], y=[r.predicted for r in rows], mode="markers",
            name=label, marker=dict(color=rank_color(k), size=9, symbol=symbols[k]),
            text=[f"{r.setting}: {r.schedule}" for r in rows],
            hovertemplate="%{text}<br>measured %{x:.3g}, predicted %{y:.3g}<extra></extra>",
        )  # fmt: skip
    return fig


def _budgets(name, mapping, low=0.0, high=None):
    if not isinstance(mapping, Mapping) or not 1 <= len(mapping) <= MAX_SCHEDULES:
        raise checks.fail(name, f"a mapping of 1..{MAX_SCHEDULES} label -> number", mapping)
    return {checks.text(f"a label of {name}", k): checks.real(f"{name}[{k!r}]", v, low, high,
                                                              low_open=True)
            for k, v in mapping.items()}  # fmt: skip


def memory_figure(params, bytes_per_param, gpus):
    """Model states (GB) against parameter count for several bytes-per-parameter budgets,
    with horizontal lines at GPU memory sizes."""
    params = checks.array("params", params, ndim=1, low=0, low_open=True, max_size=MAX_POINTS)
    bytes_per_param = _budgets("bytes_per_param", bytes_per_param, high=1e3)
    gpus = _budgets("gpus", gpus, high=1e6)
    fig = new_figure(
        title_text="Model states against one GPU's memory (dashed)",
        xaxis=dict(type="log", title_text="parameters"),
        yaxis=dict(type="log", title_text="memory (GB, 1e9 bytes)"),
        height=480, legend=dict(x=0.0, y=1.0, yanchor="top"),
    )  # fmt: skip
    colors = ["#4292C6", "#F16913", "#A63603", "#7F2704", "#41AB5D"]
    for k, (label, bpp) in enumerate(bytes_per_param.items()):
        gb = P.model_state_bytes(params, bpp) / 1e9
        fig.add_scatter(
            x=params, y=gb, mode="lines", name=f"{label}: {bpp:g} B/param",
            line=dict(color=colors[k % len(colors)], width=2.5),
            hovertemplate="%{x:.3s} params: %{y:.4g} GB<extra></extra>",
        )  # fmt: skip
    same: dict[float, list[str]] = {}  # one line per memory size, e.g. "A100 / H100"
    for label, gb in gpus.items():
        same.setdefault(float(gb), []).append(label.replace(f" {gb:g}GB", ""))
    lines = {f"{' / '.join(names)} {gb:g} GB": gb for gb, names in same.items()}
    for label, gb in lines.items():  # traces, not hlines: annotations misplace on log axes
        fig.add_scatter(
            x=[params.min(), params.max()], y=[gb, gb], mode="lines+text", text=["", label],
            textposition="top left", line=dict(color=NEUTRAL, dash="dash", width=1.5),
            showlegend=False, hovertemplate=f"{label}: {gb:g} GB<extra></extra>",
        )  # fmt: skip
    return fig


def memory_per_gpu(params, bytes_per_param=16, gpu_gb=P.DEFAULT_GPU_GB, max_gpus=64, gpu_name=None):
    """Model states per GPU when the model is cut evenly across 1..max_gpus GPUs, against
    one GPU's memory (``gpu_name``: its name, for the title); the fewest GPUs that fit is
    marked."""
    params = checks.positive("params", params, 1e16)
    gpu_name = _title("gpu_name", gpu_name, "")
    bytes_per_param = checks.positive("bytes_per_param", bytes_per_param, 1e3)
    gpu_gb = checks.positive("gpu_gb", gpu_gb, 1e6)
    max_gpus = checks.integer("max_gpus", max_gpus, 1, MAX_POINTS)
    n = np.arange(1, max_gpus + 1)
    per = P.model_state_bytes(params, bytes_per_param) / n / 1e9
    need = P.min_gpus(params, bytes_per_param, gpu_gb)
    fig = new_figure(
        title_text=f"{params / 1e9:g}B params x {bytes_per_param:g} B: {need} "
        f"{gpu_name or 'GPUs'}{' GPUs' if gpu_name else ''} of {gpu_gb:g} GB",
        xaxis=dict(title_text="GPUs the model states are cut across"),
        yaxis=dict(type="log", title_text="model states per GPU (GB)"), height=420,
        legend=dict(x=1.0, xanchor="right", y=1.0),
    )  # fmt: skip
    fig.add_scatter(x=n, y=per, mode="lines+markers", name="per GPU", marker_size=5,
                    line_color="#4292C6")  # fmt: skip
    fig.add_scatter(
        x=[1, max_gpus], y=[gpu_gb, gpu_gb], mode="lines", name=f"{gpu_gb:g} GB per GPU",
        line=dict(color="#A63603", dash="dash"),
    )  # fmt: skip
    if need <= max_gpus:
        fig.add_scatter(x=[need], y=[per[need - 1]], mode="markers", name=f"{need} GPUs fit",
                        marker=dict(color="#A63603", size=12, symbol="star"))  # fmt: skip
    return fig


def states_breakdown(breakdowns, title="", unit="bytes per parameter"):
    """Bytes per parameter of each accounting of the model states (one horizontal bar per
    accounting, one segment per state), e.g. ``{"ZeRO paper": {"fp16 parameters": 2, ...}}``;
    the data comes from :func:`scaleout.memory.states_per_param`. Any other breakdown of a
    total into parts (at most 1000 ``unit`` each) draws the same way."""
    if not isinstance(breakdowns, Mapping) or not 1 <= len(breakdowns) <= MAX_SCHEDULES:
        raise checks.fail("breakdowns", f"a mapping of 1..{MAX_SCHEDULES} accounting -> "
                          "{state: bytes per parameter}", breakdowns)  # fmt: skip
    rows = {checks.text("an accounting", k): _budgets(f"breakdowns[{k!r}]", v, high=1e3)
            for k, v in breakdowns.items()}  # fmt: skip
    title, unit = _title("title", title), checks.text("unit", unit)
    fig = new_figure(
        title_text=title, barmode="stack", height=170 + 60 * len(rows),
        xaxis_title_text=unit, yaxis=dict(autorange="reversed"),
        legend=dict(orientation="h", x=0.0, y=-0.3, yanchor="top"), margin=dict(l=190, b=140),
    )  # fmt: skip
    states = list(dict.fromkeys(s for parts in rows.values() for s in parts))
    palette = ["#4292C6", "#9ECAE1", "#F16913", "#FDAE6B", "#A63603", "#41AB5D", "#A1D99B"]
    for k, state in enumerate(states):
        have = [(acc, parts[state]) for acc, parts in rows.items() if state in parts]
        fig.add_bar(
            y=[a for a, _ in have], x=[b for _, b in have], orientation="h", name=state,
            marker_color=palette[k % len(palette)], text=[f"{b:g}" for _, b in have],
            textposition="inside", hovertemplate=f"{state}: %{{x:g}} B<extra>%{{y}}</extra>",
        )  # fmt: skip
    for acc, parts in rows.items():
        fig.add_annotation(x=sum(parts.values()), y=acc, text=f"<b>{sum(parts.values()):g} B</b>",
                           showarrow=False, xanchor="left", xshift=6)  # fmt: skip
    return fig


def cuts_figure(n_layers=4, p=4):
    """The two ways to cut a model over p GPUs: whole layers per GPU (pipeline, left) or a
    slice of every layer per GPU (tensor, right). Squares are weight blocks coloured by
    the GPU that holds them."""
    n_layers = checks.integer("n_layers", n_layers, 1, 16)
    p = checks.integer("p", p, 1, 16)
    owners = P.layer_owners(n_layers, p)
    fig = new_figure(
        title_text=f"{n_layers} layers on {p} GPUs; colour: the GPU holding a block",
        height=170 + 50 * n_layers, showlegend=True, margin=dict(t=100),
        xaxis=dict(domain=[0, 0.44], showticklabels=False, showgrid=False,
                   title_text="weights of a layer (columns)"),
        xaxis2=dict(domain=[0.56, 1], showticklabels=False, showgrid=False, anchor="y2",
                    title_text="weights of a layer (columns)"),
        yaxis=dict(autorange="reversed", title_text="layer", tickmode="array",
                   tickvals=list(range(n_layers)), showgrid=False),
        yaxis2=dict(autorange="reversed", anchor="x2", tickmode="array",
                    tickvals=list(range(n_layers)), showgrid=False, matches="y"),
        annotations=[
            dict(text="vertical cut: pipeline<br>(whole layers)", x=0.22, y=1.02,
                 xref="paper", yref="paper", showarrow=False, yanchor="bottom", font_size=14),
            dict(text="horizontal cut: tensor<br>(a slice of every layer)", x=0.78, y=1.02,
                 xref="paper", yref="paper", showarrow=False, yanchor="bottom", font_size=14),
        ],
        legend=dict(orientation="h", y=-0.15),
    )  # fmt: skip
    for r in range(p):
        for k, (xa, ya, cells) in enumerate(
            (
                ("x", "y", [(col, lay) for lay in range(n_layers) for col in range(p)
                            if owners[lay] == r]),
                ("x2", "y2", [(r, lay) for lay in range(n_layers)]),
            )
        ):  # fmt: skip
            fig.add_scatter(
                x=[c for c, _ in cells], y=[lay for _, lay in cells], mode="markers",
                marker=dict(symbol="square", size=40, color=rank_color(r)),
                name=f"GPU {r}", legendgroup=f"gpu{r}", showlegend=k == 0, xaxis=xa, yaxis=ya,
                hovertemplate=f"GPU {r}: layer %{{y}}, column block %{{x}}<extra></extra>",
            )  # fmt: skip
    return fig
