"""Figures of chapter 15 (planner): step breakdowns with overlap, heatmaps, validation.

Every number drawn comes from :mod:`scaleout.planner`; nothing is computed here.
"""

from __future__ import annotations

import math

import numpy as np
import plotly.graph_objects as go

from .. import checks
from .. import planner as PL
from ..mesh import Mesh
from .animate import animation
from .theme import NEUTRAL, new_figure, rank_color

PART_NAMES = {
    "compute": "compute",
    "bubble": "pipeline bubble",
    "tp": "TP communication (exposed)",
    "pp": "PP communication",
    "dp": "DP communication (exposed)",
    "optimizer": "optimizer step",
}
HIDDEN_NAMES = {"tp": "TP hidden by overlap", "dp": "DP hidden by overlap"}


def plan_label(plan: PL.Plan) -> str:
    """A short label: t, p, d, b, v, ZeRO, recomputation, SP."""
    plan = checks.instance("plan", plan, PL.Plan)
    sp = " SP" if plan.sp else ""
    v = f" v={plan.v}" if plan.v > 1 else ""
    return (f"t={plan.t} p={plan.p} d={plan.d} b={plan.b}{v} ZeRO-{plan.zero} "
            f"{plan.recompute}{sp}")  # fmt: skip


def _predictions(name, preds):
    if not isinstance(preds, list | tuple) or not preds:
        raise checks.fail(name, "a non-empty list of planner.Prediction", preds)
    return [checks.instance(name, p, PL.Prediction) for p in preds[:64]]


def breakdown_figure(preds, labels=None, title: str = "") -> go.Figure:
    """Stacked bars of each prediction's step along the critical path (compute, bubble,
    exposed TP / PP / DP, optimizer), and, hatched beyond it, the communication that
    overlap hid behind compute (it costs nothing: the bar's solid part is the step)."""
    preds = _predictions("preds", preds)
    if labels is None:
        labels = [plan_label(p.plan) for p in preds]
    if not isinstance(labels, list | tuple):
        raise checks.fail("labels", "None or a list of strings", labels)
    labels = [checks.text("label", x, 120) for x in labels]
    if len(labels) != len(preds):
        raise checks.fail("labels", f"{len(preds)} labels, one per prediction", labels)
    y = labels[::-1]
    fig = new_figure(
        title=title or "Where a step's time goes", barmode="stack",
        xaxis=dict(title="seconds per step"), yaxis=dict(title="plan", automargin=True),
        height=220 + 40 * len(preds), legend=dict(orientation="h", y=-0.22),
    )  # fmt: skip
    for j, (key, name) in enumerate(PART_NAMES.items()):
        vals = [p.parts.get(key, 0.0) for p in preds][::-1]
        color = NEUTRAL if key == "compute" else rank_color(j)
        fig.add_trace(go.Bar(y=y, x=vals, name=name, orientation="h", marker_color=color,
                             hovertemplate=name + ": %{x:.3g} s<extra></extra>"))  # fmt: skip
    for key, name in HIDDEN_NAMES.items():
        vals = [p.hidden.get(key, 0.0) for p in preds][::-1]
        j = list(PART_NAMES).index(key)
        fig.add_trace(go.Bar(
            y=y, x=vals, name=name, orientation="h", opacity=0.45,
            marker=dict(color="white", line=dict(color=rank_color(j), width=1.5),
                        pattern=dict(shape="/", fgcolor=rank_color(j))),
            hovertemplate=name + ": %{x:.3g} s (not on the critical path)<extra></extra>",
        ))  # fmt: skip
    return fig


def heatmap_traces(grid: PL.Grid) -> list[go.Heatmap]:
    """Grey where the pair has plans but none fits; the best step time (s) where one does."""
    grid = checks.instance("grid", grid, PL.Grid)
    best = np.array(grid.best, dtype=np.float64)
    possible = np.array(grid.possible, dtype=bool)
    x, y = [str(v) for v in grid.col_values], [str(v) for v in grid.row_values]
    masked = np.where(possible & np.isnan(best), 1.0, np.nan)
    text = [["" if math.isnan(v) else f"{v:.3g}" for v in row] for row in best]
    return [
        go.Heatmap(x=x, y=y, z=masked, showscale=False, name="does not fit",
                   colorscale=[[0, "#D9D9D9"], [1, "#D9D9D9"]], hoverinfo="skip"),
        go.Heatmap(x=x, y=y, z=best, text=text, texttemplate="%{text}", colorscale="Viridis",
                   reversescale=True, colorbar=dict(title="step (s)"), name="fits",
                   hovertemplate=(f"{grid.rows}=%{{y}}, {grid.cols}=%{{x}}<br>best step "
                                  "%{z:.3g} s<extra></extra>")),
    ]  # fmt: skip


AXIS_NAMES = {"t": "tensor-parallel size t", "p": "pipeline stages p", "d": "data-parallel size d",
              "b": "micro-batch size b", "v": "chunks per GPU v", "zero": "ZeRO stage"}  # fmt: skip


def _layout(grid: PL.Grid, title: str) -> dict:
    return dict(title=title, margin=dict(t=80, b=90), height=440,
                xaxis=dict(title=AXIS_NAMES[grid.cols], type="category"),
                yaxis=dict(title=AXIS_NAMES[grid.rows], type="category"))  # fmt: skip


def heatmap_figure(grid: PL.Grid, title: str = "", subtitle: str = "") -> go.Figure:
    """Best predicted step time over the other plan fields, for each pair of ``grid``."""
    grid = checks.instance("grid", grid, PL.Grid)
    head = title or f"Best predicted step per ({grid.rows}, {grid.cols})"
    fig = new_figure(**_layout(grid, f"{head}<br><sup>{subtitle}</sup>" if subtitle else head))
    fig.add_traces(heatmap_traces(grid))
    fig.add_annotation(text="grey: no plan fits in memory; blank: no legal plan",
                       xref="paper", yref="paper", x=0, y=-0.22, showarrow=False,
                       font=dict(size=11))  # fmt: skip
    return fig


UNITS = {
    "eq3": "TFLOP/s per GPU (eq. 3)",
    "model": "TFLOP/s per GPU (model FLOPs)",
    "seconds": "s per step",
}


def _rows(rows):
    if not isinstance(rows, list | tuple) or not rows or len(rows) > 1000:
        raise checks.fail("rows", "a non-empty list of planner Row records (at most 1000)", rows)
    return [checks.instance("rows", r, PL.Row) for r in rows]


def validation_figure(rows) -> go.Figure:
    """The error of every published run, predicted / measured step time - 1, one marker
    per run in table order, coloured by source (filled: held out; open: fitted); a bar
    through a marker spans the errors over the plausible plans of an assumption-dependent
    run; the band is +-10 %."""
    rows = _rows(rows)
    sources = list(dict.fromkeys(r.run.sweep.split(",")[0] for r in rows))
    keys = [r.run.key for r in rows]
    fig = new_figure(
        title="Published runs: predicted / measured step time - 1 (filled: held out; open: "
              "fitted; bars: range over assumed plans)",
        xaxis=dict(title="published run", type="category", tickangle=-60,
                   tickfont=dict(size=9), categoryorder="array", categoryarray=keys),
        yaxis=dict(title="error of the predicted step (%)", zeroline=True),
        height=560, margin=dict(b=170), legend=dict(orientation="h", y=1.02, yanchor="bottom"),
    )  # fmt: skip
    fig.add_hrect(y0=-10, y1=10, fillcolor="#DDDDDD", opacity=0.35, line_width=0)
    for j, src in enumerate(sources):
        sel = [r for r in rows if r.run.sweep.split(",")[0] == src]
        lo = [100 * (r.error - min(r.errors or (r.error,))) for r in sel]
        hi = [100 * (max(r.errors or (r.error,)) - r.error) for r in sel]
        fig.add_trace(go.Scatter(
            x=[r.run.key for r in sel], y=[100 * r.error for r in sel], mode="markers",
            name=src, error_y=dict(type="data", array=hi, arrayminus=lo, visible=True,
                                   thickness=1.5, width=3),
            marker=dict(size=9, color=rank_color(j),
                        symbol=["circle" if r.run.split == "held-out" else "circle-open"
                                for r in sel], line=dict(width=2, color=rank_color(j))),
            text=[f"measured {r.measured_s:.3g} s, predicted {r.predicted_s:.3g} s" for r in sel],
            hovertemplate="%{x}: %{y:+.1f} %<br>%{text}<extra></extra>",
        ))  # fmt: skip
    return fig


SWEEP_AXES = {
    13: "(pipeline stages p, tensor-parallel size t)",
    14: "(pipeline stages p, data-parallel size d)",
    15: "(tensor-parallel size t, data-parallel size d)",
    16: "micro-batch size b",
}


def sweep_figure(rows, figure: int) -> go.Figure:
    """One of Narayanan et al.'s Figures 13-16 beside the planner: achieved TFLOP/s per GPU
    (eq. 3) of every configuration, measured (markers, with the reading's uncertainty) and
    predicted (dashed), one colour per global batch. ``rows`` from
    :func:`scaleout.planner.fit.validation`."""
    rows = _rows(rows)
    figure = checks.choice("figure", figure, tuple(SWEEP_AXES))
    prefix = f"Narayanan Fig. {figure}, "
    sel = [r for r in rows if r.run.sweep.startswith(prefix)]
    if not sel:
        raise checks.fail("rows", f"rows holding the sweeps of Figure {figure}", len(rows))
    batches = list(dict.fromkeys(r.run.sweep for r in sel))
    fig = new_figure(
        title=f"Narayanan et al. Figure {figure} (64 A100): measured and predicted",
        xaxis=dict(title=SWEEP_AXES[figure], type="category"),
        yaxis=dict(title="achieved TFLOP/s per GPU (eq. 3)", rangemode="tozero"),
        height=420, legend=dict(orientation="h", y=-0.25),
    )  # fmt: skip
    for j, sweep in enumerate(batches):
        rs = [r for r in sel if r.run.sweep == sweep]
        x = [r.run.key.split(" ", 2)[2] for r in rs]
        batch = sweep.removeprefix(prefix)
        fig.add_trace(go.Scatter(
            x=x, y=[r.run.measured for r in rs], mode="markers", name=f"measured, {batch}",
            marker=dict(size=10, color=rank_color(j)),
            error_y=dict(type="data", array=[r.run.uncertainty for r in rs], visible=True),
            hovertemplate="%{x}: measured %{y:.0f} TFLOP/s<extra></extra>",
        ))  # fmt: skip
        fig.add_trace(go.Scatter(
            x=x, y=[PL.flops_per_gpu(r.run, r.predicted_s) / 1e12 for r in rs],
            mode="lines+markers", name=f"predicted, {batch}",
            line=dict(color=rank_color(j), dash="dash"), marker=dict(symbol="x", size=8),
            hovertemplate="%{x}: predicted %{y:.3g} TFLOP/s<extra></extra>",
        ))  # fmt: skip
    return fig


def batch_animation(grids, batches, model_name: str) -> go.Figure:
    """One heatmap frame per global batch (``grids[k]`` from :func:`scaleout.planner.search.grid`
    at ``batches[k]``), on one (t, p) grid of rows and columns."""
    if not isinstance(grids, list | tuple) or not grids or len(grids) > 60:
        raise checks.fail("grids", "a list of 1 to 60 planner.Grid", grids)
    grids = [checks.instance("grids", g, PL.Grid) for g in grids]
    if not isinstance(batches, list | tuple):
        raise checks.fail("batches", "a list of global batches", batches)
    batches = [checks.integer("batch", b, 1, 2**24) for b in batches]
    if len(batches) != len(grids):
        raise checks.fail("batches", f"{len(grids)} batches, one per grid", batches)
    checks.text("model_name", model_name, 80)
    frames, titles = [], []
    for g, batch in zip(grids, batches, strict=True):
        frames.append(heatmap_traces(g))
        best = g.results[0].plan
        titles.append(f"{model_name}, batch B = {batch}<br><sup>best: {plan_label(best)}</sup>")
    return animation(frames, [str(b) for b in batches], frame_titles=titles,
                     slider_prefix="global batch B = ", **_layout(grids[0], titles[0]))  # fmt: skip


def mesh_figure(dp: int = 2, pp: int = 2, tp: int = 2) -> go.Figure:
    """The ranks of :class:`scaleout.mesh.Mesh` (Megatron's order: rank = t + T (d + D p))
    drawn flat: one row per data-parallel replica, pipeline stages left to right,
    tensor-parallel ranks side by side in a box (one server's NVLink domain); dashed:
    pipeline groups, dotted: data groups."""
    dp, pp, tp = (checks.integer(n, x, 1, 8) for n, x in (("dp", dp), ("pp", pp), ("tp", tp)))
    mesh = Mesh(tp=tp, dp=dp, pp=pp)
    grid = np.array([[[mesh.rank(dp=i, pp=j, tp=k) for k in range(tp)] for j in range(pp)]
                     for i in range(dp)])  # fmt: skip

    def xy(i, j, k):
        return j * (tp + 1) + k, dp - 1 - i

    fig = new_figure(
        title=f"One rank grid, {dp} x {pp} x {tp} (data x pipeline x tensor)",
        xaxis=dict(title="pipeline stage, then tensor-parallel rank", showgrid=False,
                   tickvals=[j * (tp + 1) + (tp - 1) / 2 for j in range(pp)],
                   ticktext=[f"stage {j}" for j in range(pp)], range=[-1, pp * (tp + 1)]),
        yaxis=dict(title="data-parallel replica", showgrid=False, tickvals=list(range(dp)),
                   ticktext=[f"replica {dp - 1 - y}" for y in range(dp)], range=[-0.7, dp - 0.3]),
        height=380, margin=dict(l=120), showlegend=True, legend=dict(orientation="h", y=-0.3),
    )  # fmt: skip
    for i in range(dp):
        for j in range(pp):
            x0, y0 = xy(i, j, 0)
            fig.add_shape(type="rect", x0=x0 - 0.4, x1=x0 + tp - 0.6, y0=y0 - 0.3, y1=y0 + 0.3,
                          line=dict(color="#444444", width=1.5))  # fmt: skip
    for name, dash, lines in (
        ("pipeline group", "dash", [grid[i, :, k] for i in range(dp) for k in range(tp)]),
        ("data group", "dot", [grid[:, j, k] for j in range(pp) for k in range(tp)]),
    ):
        xs, ys = [], []
        for line in lines:
            pts = [xy(*np.argwhere(grid == r)[0]) for r in line]
            if name == "pipeline group":  # a bracket around the boxes, off the tensor row
                k = int(np.argwhere(grid == line[0])[0][2])
                off = 0.42 if k % 2 else -0.42
                pts = [pts[0], *[(x, y + off) for x, y in pts], pts[-1]]
            for x, y in pts:
                xs.append(x)
                ys.append(y)
            xs.append(None)
            ys.append(None)
        fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines", name=name, hoverinfo="skip",
                                 line=dict(dash=dash, color="#666666")))  # fmt: skip
    pos = [xy(*np.argwhere(grid == r)[0]) for r in range(grid.size)]
    fig.add_trace(
        go.Scatter(
            x=[p[0] for p in pos], y=[p[1] for p in pos], mode="markers+text",
            text=[str(r) for r in range(grid.size)], textfont=dict(color="white"),
            marker=dict(size=30, color=[rank_color(r) for r in range(grid.size)]),
            name="rank (box: tensor group)", hovertemplate="rank %{text}<extra></extra>",
        )
    )  # fmt: skip
    return fig


def validation_table(rows) -> go.Figure:
    """The validation table as a figure: run, split, GPUs, plan, the measured value in the
    source's unit (with its reading uncertainty), measured and predicted seconds per step,
    the error (and its range over assumed plans), what was assumed, and the source."""
    rows = _rows(rows)

    def measured(r):
        u = f" +- {r.run.uncertainty:g}" if r.run.uncertainty else ""
        return f"{r.run.measured:g}{u} {UNITS[r.run.convention]}"

    def err(r):
        if len(r.errors) > 1:
            return f"{r.error:+.1%} ({min(r.errors):+.1%} to {max(r.errors):+.1%})"
        return f"{r.error:+.1%}"

    cols = {
        "run": [r.run.key for r in rows],
        "split": [r.run.split for r in rows],
        "GPUs": [f"{r.run.cluster.gpus:,}" for r in rows],
        "plan (t, p, d, b, v)": [
            f"{r.run.plan.t}, {r.run.plan.p}, {r.run.plan.d}, {r.run.plan.b}, {r.run.plan.v}"
            for r in rows
        ],
        "measured (source's unit)": [measured(r) for r in rows],
        "measured s": [f"{r.measured_s:.3g}" for r in rows],
        "predicted s": [f"{r.predicted_s:.3g}" for r in rows],
        "error (range)": [err(r) for r in rows],
        "assumed": [r.run.assumed or "-" for r in rows],
        "source": [r.run.source for r in rows],
    }
    fig = new_figure(
        title="Published runs: measured and predicted seconds per step",
        height=140 + 34 * len(rows),
        margin=dict(l=10, r=10, t=50, b=10),
    )
    fig.add_trace(go.Table(
        columnwidth=[120, 55, 50, 90, 150, 60, 60, 130, 230, 330],
        header=dict(values=list(cols), align="left", fill_color="#E5E5E5"),
        cells=dict(values=list(cols.values()), align="left", height=30, font=dict(size=10)),
    ))  # fmt: skip
    return fig


def explorer_figure(model: str, gpus: int, global_batch: int, overlap: str) -> go.Figure:
    """The (t, p) heatmap for one of ``scaleout.planner.EXPLORER_MODELS`` on ``gpus``
    GPUs of its kind, at ``global_batch``, with TP ``overlap`` (the explorer's figure; the
    planner computes)."""
    checks.choice("model", model, tuple(PL.EXPLORER_MODELS))
    net, gpu, topology = PL.EXPLORER_MODELS[model]
    gpus = checks.integer("gpus", gpus, 8, PL.model.MAX_GPUS)
    checks.choice("overlap", overlap, PL.OVERLAPS)
    cl = PL.Cluster(f"{gpus} GPUs", gpus, gpu, topology)
    g = PL.grid(net, cl, global_batch, space=PL.Space(overlap=overlap),
                calibration=PL.calibration(cl.generation))  # fmt: skip
    best = g.results[0]
    sub = f"best: {plan_label(best.plan)}, {best.step_s:.3g} s, MFU {best.mfu:.0%}"
    return heatmap_figure(g, f"{net.name} on {gpus:,} {gpu}, B = {global_batch:,}", sub)
