"""Figures for the chapter "ZeRO sharding" (chapters/06_zero.ipynb).

Every number drawn comes from :mod:`scaleout.memory` (model states, activations, the ZeRO-3
step) or from measurements passed in; this module only converts bytes to GB for display.
Kinds of state get their own colours (Paul Tol's colour-blind-safe "muted" scheme, chosen
apart from the rank colours); a rank's shard is always drawn in that rank's colour.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from .. import memory as M
from .animate import animation
from .theme import NEUTRAL, new_figure, rank_color

GB = 1e9
KIND_COLORS = {
    "parameters": "#332288",
    "gradients": "#44AA99",
    "optimizer states": "#DDCC77",
    "activations": "#CC6677",
}
STAGE_LABELS = {0: "plain DP", 1: "ZeRO-1", 2: "ZeRO-2", 3: "ZeRO-3"}
EMPTY = "#F2F2F2"
UNREDUCED = "#777777"


def stage_layout(dp: int = 4, optimizer: str = "adam", precision: str = "mixed") -> go.Figure:
    """What each rank stores at each stage, in bytes per model parameter, split by kind."""
    rows = [(s, r) for s in M.STAGES for r in range(dp)]
    fig = new_figure(
        barmode="stack",
        height=150 + 26 * len(rows),
        title_text=f"Model states held by each of N<sub>d</sub> = {dp} ranks",
        xaxis_title="bytes per model parameter held by the rank (× ψ = bytes)",
        yaxis=dict(title="stage, rank", autorange="reversed"),
        legend=dict(
            orientation="h", y=1.0, yanchor="bottom", x=1, xanchor="right", traceorder="normal"
        ),
        margin=dict(l=150, t=80),
        uniformtext=dict(minsize=9, mode="hide"),
    )
    y = [[STAGE_LABELS[s] for s, _ in rows], [f"rank {r}" for _, r in rows]]
    for kind in M.KINDS:
        held = [_attr(M.model_state_bytes(1.0, s, dp, optimizer, None, precision), kind)
                for s, _ in rows]  # fmt: skip
        text = [f"shard {r}" if s >= M.SHARDED_FROM[kind] else "full" for s, r in rows]
        fig.add_bar(
            y=y, x=held, orientation="h", name=kind, text=text,
            textposition="inside", insidetextanchor="middle",
            marker=dict(color=KIND_COLORS[kind], line=dict(color="white", width=1)),
            hovertemplate="%{x:.3g} bytes/parameter of " + kind + " (%{text})<extra></extra>",
        )  # fmt: skip
    return fig


def _attr(states: M.ModelStates, kind: str) -> float:
    """Bytes of one kind of state in ``states``."""
    return {"parameters": states.parameters, "gradients": states.gradients,
            "optimizer states": states.optimizer_states}[kind]  # fmt: skip


def _stage_traces(params: float, dp: int, act_bytes: float, gpu_bytes: float | None):
    """Bars (parameters, gradients, optimizer states, activations), totals, GPU line."""
    x = [STAGE_LABELS[s] for s in M.STAGES]
    states = [M.model_state_bytes(params, s, dp) for s in M.STAGES]
    traces = []
    for kind in M.KINDS:
        y = [_attr(st, kind) / GB for st in states]
        traces.append(_bar(x, y, kind))
    traces.append(_bar(x, [act_bytes / GB] * 4, "activations"))
    totals = [M.device_bytes(params, s, dp, act_bytes) / GB for s in M.STAGES]
    traces.append(
        go.Scatter(
            x=x,
            y=totals,
            mode="text",
            text=[gb_text(t) for t in totals],
            textposition="top center",
            showlegend=False,
            hoverinfo="skip",
        )
    )
    g = [] if gpu_bytes is None else [gpu_bytes / GB] * 2
    traces.append(
        go.Scatter(
            x=[x[0], x[-1]] if g else [],
            y=g,
            mode="lines",
            name=f"GPU memory ({gpu_bytes / GB:g} GB)" if g else "GPU memory",
            line=dict(color="black", dash="dash", width=2),
            hovertemplate="GPU memory: %{y:.4g} GB<extra></extra>",
        )
    )
    return traces, max(totals)


def gb_text(gb: float) -> str:
    """A GB amount for a label: 16,128 GB, 31.4 GB, 1.88 GB, 0.117 GB."""
    return f"{gb:,.0f} GB" if gb >= 100 else f"{gb:.3g} GB"


def _bar(x, y, kind):
    return go.Bar(
        x=x,
        y=y,
        name=kind,
        marker=dict(color=KIND_COLORS[kind], line=dict(color="white", width=0.5)),
        hovertemplate="%{x}: %{y:.4g} GB of " + kind + "<extra></extra>",
    )


def _bars_layout(title: str, top: float) -> dict:
    return dict(
        barmode="stack",
        height=480,
        title_text=title,
        xaxis_title="ZeRO stage",
        yaxis_title="memory per device (GB)",
        yaxis_range=[0, top * 1.15],
        legend=dict(orientation="h", y=1.0, yanchor="bottom", x=0, traceorder="normal"),
        margin=dict(t=100),
    )


def memory_by_stage(params, dp, act_bytes=0.0, gpu_bytes=80e9, title=None) -> go.Figure:
    """Per-device memory of each stage at one N_d: stacked bars with the GPU's capacity."""
    traces, top = _stage_traces(params, dp, act_bytes, gpu_bytes)
    title = title or f"{params / 1e9:,.4g}B parameters: N<sub>d</sub> = {dp}"
    fig = new_figure(**_bars_layout(title, max(top, gpu_bytes / GB)))
    fig.add_traces(traces)
    return fig


def memory_vs_dp(
    params, dps: Sequence[int], act_bytes=0.0, gpu_bytes=80e9, name="", start=None
) -> go.Figure:
    """The same bars with a slider over N_d (fixed y range, so sharded stages shrink),
    showing N_d = ``start`` (one of ``dps``; default the first) until the slider moves."""
    frames, tops = [], []
    for dp in dps:
        traces, top = _stage_traces(params, dp, act_bytes, gpu_bytes)
        frames.append(traces)
        tops.append(top)
    label = name or f"{params / 1e9:,.4g}B parameters"
    titles = [f"{label}: N<sub>d</sub> = {dp}" for dp in dps]
    layout = _bars_layout(titles[0], max(max(tops), gpu_bytes / GB))
    fig = animation(frames, [str(d) for d in dps], frame_titles=titles,
                    slider_prefix="N_d = ", **layout)  # fmt: skip
    k = 0 if start is None else list(dps).index(start)
    fig.update(data=frames[k])
    fig.update_layout(title_text=titles[k])
    fig.layout.sliders[0].active = k
    return fig


def activation_curves(config: M.Transformer, seqs: Sequence[int], batch: int = 1, tp: int = 1):
    """GB of activations per layer against sequence length, for each recomputation mode."""
    fig = new_figure(
        height=420,
        title_text=f"Activations per layer, {config.name} config (b = {batch})",
        xaxis=dict(
            title="sequence length s (tokens)",
            type="log",
            tickvals=list(seqs),
            ticktext=[str(x) for x in seqs],
        ),
        yaxis=dict(title="activation memory per layer (GB)", type="log", dtick=1),
        legend=dict(x=0.02, y=0.98),
    )
    dashes = {"none": "solid", "selective": "dash", "full": "dot"}
    colors = {"none": KIND_COLORS["activations"], "selective": "#882255", "full": "#117733"}
    for mode in M.RECOMPUTE:
        y = M.activation_bytes_per_layer(np.asarray(seqs), batch, config.hidden,
                                         config.heads, mode, tp)  # fmt: skip
        fig.add_scatter(
            x=list(seqs),
            y=np.asarray(y) / GB,
            mode="lines+markers",
            name=f"recompute: {mode}",
            line=dict(dash=dashes[mode], color=colors[mode], width=2.5),
            hovertemplate="s = %{x}: %{y:.3g} GB<extra>" + mode + "</extra>",
        )
    return fig


def zero3_animation(layers: int = 4, dp: int = 4) -> go.Figure:
    """One ZeRO-3 step (:func:`scaleout.memory.zero3_step`): rows are ranks and their
    parameters (W), gradients (g) and optimizer states (m, v); columns are layers, each cut
    into dp shards. Shard s belongs to rank s and is drawn in its colour."""
    steps = M.zero3_step(layers, dp)
    xs = [i * (dp + 1) + s for i in range(layers) for s in range(dp)]
    rows = ["W", "g", "m,v"]
    frames, labels, titles = [], [], []
    for k, f in enumerate(steps):
        px, py, color, text, hover = [], [], [], [], []
        for r in range(dp):
            for j, row in enumerate(rows):
                for i in range(layers):
                    for s in range(dp):
                        c, t, h = _zero3_cell(f, row, r, i, s)
                        px.append(i * (dp + 1) + s)
                        py.append(r * (len(rows) + 1) + j)
                        color.append(c)
                        text.append(t)
                        hover.append(f"rank {r}, layer {i}, shard {s}: {h}")
        cells = go.Scatter(
            x=px, y=py, mode="markers+text", text=text, hovertext=hover, hoverinfo="text",
            marker=dict(symbol="square", size=27, color=color, line=dict(color="white", width=1)),
            textfont=dict(color="white", size=11), showlegend=False,
        )  # fmt: skip
        frames.append([cells, _highlight(f, dp, len(rows) * dp + dp)])
        labels.append("start" if k == 0 else str(k))
        titles.append(f"{k}/{len(steps) - 1}: {f.title}")
    ytick = [r * (len(rows) + 1) + j for r in range(dp) for j in range(len(rows))]
    ytext = [f"rank {r} {row}" for r in range(dp) for row in rows]
    height = 240 + 24 * len(ytick)
    return animation(
        frames, labels, frame_titles=titles, slider_prefix="frame ",
        height=height, margin=dict(l=100, t=70),
        xaxis=dict(title="layer (each cut into one shard per rank)", showgrid=False,
                   tickvals=[i * (dp + 1) + (dp - 1) / 2 for i in range(layers)],
                   ticktext=[f"layer {i}" for i in range(layers)], range=[-1, max(xs) + 1]),
        yaxis=dict(title="rank and state", showgrid=False, tickvals=ytick, ticktext=ytext,
                   range=[max(ytick) + 1, -1]),
    )  # fmt: skip


def _zero3_cell(f: M.Zero3Frame, row: str, r: int, i: int, s: int):
    """(colour, text, hover) of one cell of the ZeRO-3 figure."""
    mine = s == r
    if row == "W":
        if mine or f.gathered[i]:
            what = "its own parameter shard" if mine else f"gathered copy of rank {s}'s shard"
            new = f.updated[i] and mine
            return rank_color(s), "W′" if new else "W", what + (" (updated)" if new else "")
        return EMPTY, "", "not held"
    if row == "g":
        if f.grad[i] == "full":
            return UNREDUCED, "g", "this rank's own gradient, not yet summed"
        if f.grad[i] == "shard" and mine:
            return rank_color(s), "Σg", "gradient summed over all ranks (its shard)"
        return EMPTY, "", "not held"
    if mine:
        return rank_color(s), "m,v", "Adam momentum and variance of its shard"
    return EMPTY, "", "not held"


def _highlight(f: M.Zero3Frame, dp: int, ymax: int) -> go.Scatter:
    """An outline around the layer acted on (all layers for the update, none at start)."""
    if f.layer < 0 and f.op != "update":
        return go.Scatter(x=[None], y=[None], mode="lines", showlegend=False, hoverinfo="skip")
    lo = (f.layer if f.layer >= 0 else 0) * (dp + 1) - 0.6
    hi = (f.layer if f.layer >= 0 else len(f.gathered) - 1) * (dp + 1) + dp - 0.4
    return go.Scatter(
        x=[lo, hi, hi, lo, lo], y=[-0.7, -0.7, ymax - 0.3, ymax - 0.3, -0.7], mode="lines",
        line=dict(color=NEUTRAL if f.op == "compute" else "black", width=2, dash="dot"),
        showlegend=False, hoverinfo="skip",
    )  # fmt: skip


def measured_state_bytes(measured: Sequence[float], predicted: Sequence[float], ideal: float):
    """Per-rank optimizer-state bytes measured from a real optimizer, with the prediction
    and the even split (total / N_d) as references."""
    ranks = list(range(len(measured)))
    fig = new_figure(
        height=380,
        title_text="Optimizer-state bytes per rank (ZeRO-1)",
        xaxis=dict(title="rank", tickvals=ranks),
        yaxis_title="optimizer-state memory (bytes)",
        legend=dict(orientation="h", y=-0.25, x=0),
        margin=dict(b=100),
    )
    fig.add_bar(
        x=ranks, y=list(measured), name="measured from optimizer.state",
        marker_color=[rank_color(r) for r in ranks],
        hovertemplate="rank %{x}: %{y} bytes<extra>measured</extra>",
    )  # fmt: skip
    fig.add_scatter(
        x=ranks, y=list(predicted), mode="markers", name="predicted by greedy_partition",
        marker=dict(symbol="x", size=12, color="black"),
        hovertemplate="rank %{x}: %{y} bytes<extra>predicted</extra>",
    )  # fmt: skip
    fig.add_scatter(
        x=[-0.5, len(ranks) - 0.5], y=[ideal, ideal], mode="lines", name="even split (1/N_d)",
        line=dict(color="black", dash="dash"), hoverinfo="skip",
    )  # fmt: skip
    return fig
