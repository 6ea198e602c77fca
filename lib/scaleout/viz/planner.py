"""Figures of chapter 14 (planner): step time over (t, p), breakdown bars, validation.

Every number drawn comes from :mod:`scaleout.planner`; nothing is computed here.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from .. import planner as PL
from .animate import animation
from .theme import NEUTRAL, new_figure, rank_color

PART_NAMES = {
    "compute_s": "compute",
    "bubble_s": "pipeline bubble",
    "tp_s": "TP communication",
    "pp_s": "PP communication",
    "dp_s": "DP communication",
}


def plan_label(plans: PL.Plans, i: int) -> str:
    r = plans.row(i)
    return (
        f"t={r['t']} p={r['p']} d={r['d']} b={r['b']} m={r['m']} ZeRO-{r['zero']} {r['recompute']}"
    )


def heatmap_traces(plans: PL.Plans, ts=None, ps=None) -> list[go.Heatmap]:
    """Two heatmaps on the (p, t) grid ``ps`` x ``ts`` (default: those in ``plans``): grey
    where (t, p) exists but no plan fits, and the best step time (s) where one does."""
    pts, pps, grid = PL.best_per_tp(plans)
    possible = PL.possible_per_tp(plans)
    ts = list(pts if ts is None else ts)
    ps = list(pps if ps is None else ps)
    full = np.full((len(ts), len(ps)), np.nan)
    able = np.zeros((len(ts), len(ps)), dtype=bool)
    for i, t in enumerate(pts):
        for j, p in enumerate(pps):
            if t in ts and p in ps:
                full[ts.index(t), ps.index(p)] = grid[i, j]
                able[ts.index(t), ps.index(p)] = possible[i, j]
    x, y = [str(p) for p in ps], [str(t) for t in ts]
    masked = np.where(able & np.isnan(full), 1.0, np.nan)
    text = [[("" if np.isnan(v) else f"{v:.3g}") for v in row] for row in full]
    return [
        go.Heatmap(
            x=x, y=y, z=masked, showscale=False, name="does not fit",
            colorscale=[[0, "#D9D9D9"], [1, "#D9D9D9"]], hoverinfo="skip",
        ),
        go.Heatmap(
            x=x, y=y, z=full, text=text, texttemplate="%{text}", colorscale="Viridis",
            reversescale=True, colorbar=dict(title="step time (s)"), name="fits",
            hovertemplate="t=%{y}, p=%{x}<br>best step %{z:.3g} s<extra></extra>",
        ),
    ]  # fmt: skip


def _title(title: str, subtitle: str = "") -> str:
    return f"{title}<br><sup>{subtitle}</sup>" if subtitle else title


def _heatmap_layout(title: str) -> dict:
    return dict(
        title=title,
        margin=dict(t=80, b=90),
        xaxis=dict(title="pipeline stages p", type="category"),
        yaxis=dict(title="tensor-parallel size t", type="category"),
        height=440,
    )


def heatmap_figure(plans: PL.Plans, title: str = "", subtitle: str = "") -> go.Figure:
    """Best predicted step time (s) for each (t, p) over d, b, ZeRO stage and
    recomputation (:func:`scaleout.planner.best_per_tp`); grey: no plan fits memory."""
    title = _title(title or "Best predicted step time per (t, p)", subtitle)
    fig = new_figure(**_heatmap_layout(title))
    fig.add_traces(heatmap_traces(plans))
    fig.add_annotation(
        text="grey: no plan fits in memory; blank: (t, p) impossible",
        xref="paper", yref="paper", x=0, y=-0.22, showarrow=False, font=dict(size=11),
    )  # fmt: skip
    return fig


def breakdown_figure(plans: PL.Plans, k: int = 8, title: str = "") -> go.Figure:
    """Stacked bars of the ``k`` best plans' step time: compute, bubble, TP, PP, DP."""
    k = min(k, len(plans))
    labels = [plan_label(plans, i) for i in range(k)][::-1]
    fig = new_figure(
        title=title or f"Where the time goes: the {k} best plans",
        xaxis=dict(title="predicted step time (s)"),
        yaxis=dict(title="plan"),
        barmode="stack",
        height=260 + 34 * k,
        margin=dict(l=300),
        legend=dict(orientation="h", y=-0.25),
    )
    for j, (col, name) in enumerate(PART_NAMES.items()):
        vals = getattr(plans, col)[:k][::-1]
        color = NEUTRAL if col == "compute_s" else rank_color(j)
        fig.add_trace(
            go.Bar(
                y=labels, x=vals, name=name, orientation="h", marker_color=color,
                hovertemplate=name + ": %{x:.3g} s<extra></extra>",
            )
        )  # fmt: skip
    return fig


def validation_figure(names, published, predicted_same, predicted_best) -> go.Figure:
    """Per-GPU throughput (TFLOP/s) published, predicted for the published plan, and
    predicted for the planner's best plan, one group of bars per model."""
    fig = new_figure(
        title="Narayanan et al. 2021, Table 1, against the planner",
        xaxis=dict(title="model (parameters)", type="category"),
        yaxis=dict(title="throughput per GPU (TFLOP/s)"),
        barmode="group",
        height=420,
        legend=dict(orientation="h", y=-0.25),
    )
    for j, (vals, name) in enumerate(
        (
            (published, "published"),
            (predicted_same, "predicted, published (t, p, d)"),
            (predicted_best, "predicted, planner's best plan"),
        )
    ):
        fig.add_trace(
            go.Bar(
                x=list(names), y=list(vals), name=name, marker_color=rank_color(j),
                hovertemplate="%{x}: %{y:.0f} TFLOP/s<extra>" + name + "</extra>",
            )
        )  # fmt: skip
    return fig


def explorer_figure(preset: str, gpus: int, global_batch: int, achievable_fraction: float,
                    max_microbatch: int = 8) -> go.Figure:  # fmt: skip
    """The heatmap for a preset model on ``gpus`` GPUs of the preset's kind (explorer)."""
    model, cluster, _ = PL.PRESETS[preset]
    cluster = PL.Cluster(
        f"{gpus} GPUs", gpus, cluster.gpus_per_server, cluster.gpu_bytes, cluster.peak_flops,
        cluster.intra, cluster.inter,
    )  # fmt: skip
    try:
        plans = PL.candidates(model, cluster, global_batch, achievable_fraction,
                              max_microbatch=max_microbatch)  # fmt: skip
    except ValueError as e:
        fig = new_figure(title=str(e)[:90], xaxis=dict(title="pipeline stages p"),
                         yaxis=dict(title="tensor-parallel size t"))  # fmt: skip
        return fig
    title = f"{model.name} on {gpus} GPUs, batch {global_batch}"
    if plans.fits.any():
        best = PL.search_plans(plans)
        subtitle = f"best: {plan_label(best, 0)}, MFU {best.mfu[0]:.0%}"
    else:
        subtitle = "no plan fits in memory"
    return heatmap_figure(plans, title, subtitle)


def batch_animation(plan_sets, batches, model_name: str) -> go.Figure:
    """One heatmap frame per global batch (``plan_sets[k]`` from
    :func:`scaleout.planner.candidates` at ``batches[k]``), on one fixed (t, p) grid."""
    ts = sorted({int(t) for pl in plan_sets for t in pl.t})
    ps = sorted({int(p) for pl in plan_sets for p in pl.p})
    frames, titles = [], []
    for pl, batch in zip(plan_sets, batches, strict=True):
        frames.append(heatmap_traces(pl, ts, ps))
        best = PL.search_plans(pl)
        titles.append(_title(f"{model_name}, batch B = {batch}", f"best: {plan_label(best, 0)}"))
    return animation(
        frames, [str(b) for b in batches], frame_titles=titles,
        slider_prefix="global batch B = ", **_heatmap_layout(titles[0]),
    )  # fmt: skip


def mesh_figure(dp: int = 2, pp: int = 2, tp: int = 2) -> go.Figure:
    """The rank grid ``arange(dp pp tp).reshape(dp, pp, tp)`` drawn flat: one row per data-
    parallel replica, pipeline stages left to right, tensor-parallel ranks side by side in a
    box (one server's NVLink domain); dashed: pipeline groups, dotted: data groups."""
    grid = np.arange(dp * pp * tp).reshape(dp, pp, tp)

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
