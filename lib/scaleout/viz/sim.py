"""Figures of a simulated step (chapter 16): a timeline per rank and stream, the step's
breakdown beside the planner's closed form, and the slowest of n jittered GPUs."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import plotly.graph_objects as go

from .. import checks
from ..sim.trace import KIND_NAMES, STREAM_TITLES, STREAMS, StepTrace
from .pipeline import PHASE_COLORS
from .theme import NEUTRAL, new_figure

KIND_COLORS = {
    "F": PHASE_COLORS["F"][1], "B": PHASE_COLORS["B"][1], "W": PHASE_COLORS["W"][1],
    "BW": PHASE_COLORS["BW"][1], "send": "#7F7F7F", "grad bucket": "#CC79A7",
    "optimizer": "#222222", "dispatch": "#E69F00", "combine": "#56B4E9",
    "combine grad": "#E69F00", "dispatch grad": "#56B4E9", "KV pass": "#009E73",
    "dKV pass": "#009E73", "TP all-reduce": "#D55E00", "TP all-gather": "#E69F00",
    "TP reduce-scatter": "#56B4E9",
}  # fmt: skip
KIND_LABELS = {
    "F": "forward", "B": "backward (input grad)", "W": "weight grad", "BW": "full backward",
    "send": "pipeline send", "grad bucket": "gradient reduce", "optimizer": "optimizer",
    "dispatch": "all-to-all dispatch", "combine": "all-to-all combine",
    "combine grad": "all-to-all (combine's gradient)",
    "dispatch grad": "all-to-all (dispatch's gradient)", "KV pass": "ring: keys and values",
    "dKV pass": "ring: their gradients", "TP all-reduce": "TP all-reduce",
    "TP all-gather": "TP all-gather", "TP reduce-scatter": "TP reduce-scatter",
}  # fmt: skip
PART_COLORS = {
    "compute": "#0072B2", "exposed_comm": "#D55E00", "bubble": NEUTRAL,
    "straggler_wait": "#E69F00", "slowdown": "#CC79A7", "optimizer": "#222222",
}  # fmt: skip
PART_LABELS = {
    "compute": "compute", "exposed_comm": "exposed communication", "bubble": "bubble",
    "straggler_wait": "waiting for a straggler", "slowdown": "own slowdown",
    "optimizer": "optimizer",
}  # fmt: skip
#: The planner's parts mapped onto the simulator's.
PLANNER_PARTS = {"compute": "compute", "bubble": "bubble", "tp": "exposed_comm",
                 "pp": "exposed_comm", "dp": "exposed_comm", "optimizer": "optimizer"}  # fmt: skip
MAX_ROWS = 48  # rank-and-stream rows one timeline shows


def timeline(trace: StepTrace, ranks=None, title: str = "", scale: float = 1.0,
             unit: str = "s", streams=STREAMS) -> go.Figure:  # fmt: skip
    """Each simulated rank's streams as rows (compute, pipeline send, gradient reduce,
    expert all-to-all, context-parallel ring, tensor-parallel collectives;
    rows with no event left out), operations as bars coloured by kind. ``ranks``: the
    ranks to show (default all simulated units, at most 16); ``scale`` and ``unit`` the
    time axis (e.g. 1e3, "ms"); ``streams``: which of ``scaleout.sim.STREAMS``."""
    checks.instance("trace", trace, StepTrace)
    checks.text("title", title, 200)
    scale = checks.positive("scale", scale)
    checks.text("unit", unit, 10)
    a = trace._arrays
    if ranks is None:
        shown = sorted(trace.units)
    elif isinstance(ranks, list | tuple) and len(ranks) <= 16:
        shown = sorted({checks.integer("an element of ranks", r, 0, 1 << 24) for r in ranks})
    else:
        raise checks.fail("ranks", "None or a list of 1 to 16 simulated ranks", ranks)
    if not 1 <= len(shown) <= 16 or not set(shown) <= set(trace.units):
        raise checks.fail("ranks", f"1 to 16 of the simulated ranks {sorted(trace.units)[:8]}...",
                          ranks)  # fmt: skip
    if (not isinstance(streams, list | tuple) or not streams or len(streams) > len(STREAMS)
            or not all(isinstance(x, str) and x in STREAMS for x in streams)):  # fmt: skip
        raise checks.fail("streams", f"a non-empty list from {STREAMS}", streams)
    rows = []
    for r in shown:
        for k, title_k in enumerate(STREAM_TITLES):
            if STREAMS[k] in streams and np.any((a["rank"] == r) & (a["stream"] == k)):
                rows.append((r, k, f"rank {r} {title_k}"))
    rows = rows[:MAX_ROWS]
    y_of = {(r, k): n for n, (r, k, _) in enumerate(rows)}
    fig = new_figure(
        title_text=title, barmode="overlay", height=140 + 26 * len(rows),
        xaxis_title_text=f"time ({unit})",
        yaxis=dict(tickmode="array", tickvals=list(range(len(rows))),
                   ticktext=[x[2] for x in rows], range=[len(rows) - 0.5, -0.5],
                   autorange=False, showgrid=False, automargin=True),
        legend=dict(orientation="h", x=0, y=-0.25 if len(rows) < 8 else -0.1, yanchor="top"),
        margin=dict(l=20, r=20, t=50, b=90),
    )  # fmt: skip
    for kind, name in enumerate(KIND_NAMES):
        sel = np.flatnonzero((a["kind"] == kind) & np.isin(a["rank"], shown))
        sel = [i for i in sel.tolist() if (int(a["rank"][i]), int(a["stream"][i])) in y_of]
        if not sel:
            continue
        st, en = a["start"][sel] * scale, a["end"][sel] * scale
        fig.add_trace(go.Bar(
            y=[y_of[int(a["rank"][i]), int(a["stream"][i])] for i in sel], base=st, x=en - st,
            orientation="h", name=KIND_LABELS[name], marker=dict(color=KIND_COLORS[name],
            line=dict(width=0)), hovertemplate=f"{KIND_LABELS[name]}<br>%{{base:.4g}} to "
            f"%{{x:.3g}} {unit} long<extra></extra>",
        ))  # fmt: skip
    return fig


def breakdown_bars(columns: Mapping[str, dict], title: str = "", unit_s: float = 1.0,
                   unit: str = "s") -> go.Figure:  # fmt: skip
    """Stacked bars of step breakdowns: ``columns`` maps a label to a dict of seconds by
    part (the simulator's ``scaleout.sim.BREAKDOWN`` keys; a planner's parts are mapped
    by ``PLANNER_PARTS``)."""
    if not isinstance(columns, Mapping) or not 1 <= len(columns) <= 12:
        raise checks.fail("columns", "a mapping of 1..12 label -> parts", columns)
    checks.text("title", title, 200)
    unit_s = checks.positive("unit_s", unit_s)
    labels = [checks.text("a label of columns", k, 60) for k in columns]
    y_title = "seconds per step" if unit == "s" else f"seconds per step ({unit})"
    fig = new_figure(title_text=title, barmode="stack", yaxis_title_text=y_title, height=420,
                     legend=dict(orientation="h", x=0, y=-0.15, yanchor="top"),
                     margin=dict(l=60, r=20, t=50, b=110))  # fmt: skip
    mapped = []
    for parts in columns.values():
        if not isinstance(parts, Mapping):
            raise checks.fail("columns", "dicts of part -> seconds", parts)
        out = dict.fromkeys(PART_COLORS, 0.0)
        for key, sec in parts.items():
            part = key if key in PART_COLORS else PLANNER_PARTS.get(key)
            if part is None:
                raise checks.fail("columns", f"parts from {list(PART_COLORS)}", key)
            out[part] += checks.nonnegative(f"columns part {key!r}", sec)
        mapped.append(out)
    for part, color in PART_COLORS.items():
        ys = [m[part] / unit_s for m in mapped]
        if any(y > 0 for y in ys):
            hover = f"{PART_LABELS[part]}: %{{y:.3g}}<extra></extra>"
            fig.add_trace(go.Bar(x=labels, y=ys, name=PART_LABELS[part], marker_color=color,
                                 hovertemplate=hover))  # fmt: skip
    return fig


def slowest_of_n(gpus, curves: Mapping[str, list], title: str = "") -> go.Figure:
    """Step time relative to no jitter (y) against the GPU count (x, log), one line per
    curve label."""
    gpus = checks.array("gpus", gpus, low=1, high=1 << 24)
    if not isinstance(curves, Mapping) or not 1 <= len(curves) <= 8:
        raise checks.fail("curves", "a mapping of 1..8 label -> values", curves)
    fig = new_figure(title_text=title, xaxis=dict(type="log", title_text="GPUs"),
                     yaxis_title_text="step time / step without jitter", height=380,
                     legend=dict(x=0.02, y=0.98))  # fmt: skip
    for k, (label, ys) in enumerate(curves.items()):
        ys = checks.array(f"curves[{label!r}]", ys, low=0)
        if ys.shape != gpus.shape:
            raise checks.fail(f"curves[{label!r}]", f"{len(gpus)} values", ys.shape)
        fig.add_trace(go.Scatter(x=gpus, y=ys, mode="lines+markers", name=str(label),
                                 line=dict(dash=("solid", "dash", "dot")[k % 3])))  # fmt: skip
    return fig
