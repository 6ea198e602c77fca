"""Figures of chapter 14 (compute): rooflines with a layer's kernels on them, GEMM
efficiency against shape, a layer's throughput against micro-batch and tensor-parallel
size, the validation table, and what this machine measures. Every number comes from
:mod:`scaleout.compute` or from the chapter's measurements; nothing is computed here
except unit conversions for the axes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .. import checks
from .. import hardware as H
from .theme import NEUTRAL, rank_color, template

MAX_POINTS = 4096
MAX_CURVES = 16
KIND_STYLE = {  # colour index and marker per kind of kernel
    "gemm": (0, "circle"),
    "attention": (1, "diamond"),
    "memory": (3, "square"),
}
ROLE_STYLE = {"fit": (NEUTRAL, "circle-open"), "transfer": (rank_color(0), "circle"),
              "sweep": (rank_color(3), "diamond"), "shapes": (rank_color(1), "square")}  # fmt: skip
ROLE_LABEL = {"fit": "sets a ceiling (MAMF)", "transfer": "sibling GPU (MAMF)",
              "sweep": "SwiGLU sweep (H100)", "shapes": "27 shapes (XLA, H100)"}  # fmt: skip
_INTENSITY = np.logspace(-2, 4, 61)  # FLOPs per byte, for the roof lines


def _title(title) -> str:
    if not isinstance(title, str) or len(title) > 500:
        raise checks.fail("title", "a string of at most 500 characters", title)
    return title


def _roof(fig, gpu: H.GPU, dtype: str, row: int, col: int, color: str, showlegend: bool):
    peak, bw = gpu.peak_flops(dtype), gpu.hbm_bytes_per_s
    y = np.minimum(peak, _INTENSITY * bw) / 1e12
    fig.add_scatter(x=_INTENSITY.tolist(), y=y.tolist(), mode="lines", name="roofline",
                    line=dict(color=color, width=2), showlegend=showlegend,
                    hovertemplate="%{x:.3g} FLOP/B: %{y:.4g} TFLOP/s<extra>roofline</extra>",
                    row=row, col=col)  # fmt: skip


def roofline(panels: Mapping[str, tuple], dtype: str = "bf16", title: str = "") -> go.Figure:
    """One roofline per panel: ``{gpu name: [(label, kind, intensity, flop_per_s), ...]}``
    (kinds: ``KIND_STYLE``), points placed at their intensity (FLOPs per HBM byte) and the
    FLOP/s the model gives them; log-log axes."""
    if not isinstance(panels, Mapping) or not 1 <= len(panels) <= 4:
        raise checks.fail("panels", "a mapping of 1 to 4 GPU names -> points", panels)
    gpus = [H.gpu(name) for name in panels]
    fig = make_subplots(rows=1, cols=len(gpus), subplot_titles=[g.name for g in gpus],
                        horizontal_spacing=0.08)  # fmt: skip
    shown = set()
    for col, (gpu, points) in enumerate(zip(gpus, panels.values(), strict=True), start=1):
        _roof(fig, gpu, dtype, 1, col, "#444444", col == 1)
        if not isinstance(points, Sequence) or len(points) > MAX_POINTS:
            raise checks.fail("points", f"a sequence of at most {MAX_POINTS} tuples", points)
        for kind, (color, symbol) in KIND_STYLE.items():
            chosen = [p for p in points if p[1] == kind]
            if not chosen:
                continue
            x = checks.array("intensity", [p[2] for p in chosen], ndim=1, low=0.0, low_open=True)
            y = checks.array("flop_per_s", [p[3] for p in chosen], ndim=1, low=0.0)
            fig.add_scatter(
                x=x.tolist(), y=(y / 1e12).tolist(), mode="markers", name=kind,
                text=[str(p[0]) for p in chosen], showlegend=kind not in shown,
                marker=dict(color=rank_color(color), symbol=symbol, size=11,
                            line=dict(color="white", width=1)),
                hovertemplate="%{text}<br>%{x:.3g} FLOP/B, %{y:.4g} TFLOP/s<extra></extra>",
                row=1, col=col,
            )  # fmt: skip
            shown.add(kind)
        fig.update_xaxes(type="log", title_text="FLOP per HBM byte", range=[-2, 4], row=1,
                         col=col)  # fmt: skip
        fig.update_yaxes(type="log", range=[-1.5, 3.6], row=1, col=col)
    fig.update_yaxes(title_text=f"{dtype} TFLOP/s", row=1, col=1)
    fig.update_layout(template=template(), height=460, title=_title(title),
                      margin=dict(t=90), legend=dict(orientation="h", y=-0.22, x=0))  # fmt: skip
    return fig


def curves(x, series: Mapping[str, Sequence], x_title: str, y_title: str, title: str = "",
           log_x: bool = False, hlines: Mapping[str, float] | None = None,
           mode: str = "lines+markers") -> go.Figure:  # fmt: skip
    """Lines of ``series`` (label -> y values, one per ``x``) with optional dashed
    horizontal references ``hlines`` (label -> y)."""
    x = checks.array("x", x, ndim=1, max_size=MAX_POINTS)
    if not isinstance(series, Mapping) or not 1 <= len(series) <= MAX_CURVES:
        raise checks.fail("series", f"a mapping of 1 to {MAX_CURVES} labels -> values", series)
    checks.choice("mode", mode, ("lines", "markers", "lines+markers"))
    fig = go.Figure(layout=dict(template=template()))
    for i, (label, values) in enumerate(series.items()):
        y = checks.array(f"series[{label!r}]", values, ndim=1, finite=True, max_size=MAX_POINTS)
        if y.shape != x.shape:
            raise checks.fail(f"series[{label!r}]", f"{x.size} values, one per x", y.size)
        fig.add_scatter(
            x=x.tolist(),
            y=y.tolist(),
            mode=mode,
            name=str(label),
            line=dict(color=rank_color(i)),
            marker=dict(color=rank_color(i)),
            hovertemplate="%{x:.4g}: %{y:.4g}<extra>" + str(label) + "</extra>",
        )
    if hlines is not None and (not isinstance(hlines, Mapping) or len(hlines) > MAX_CURVES):
        what = f"None or a mapping of at most {MAX_CURVES} labels -> y"
        raise checks.fail("hlines", what, hlines)
    for j, (label, value) in enumerate((hlines or {}).items()):
        fig.add_hline(
            y=checks.real(f"hlines[{label!r}]", value),
            annotation_text=str(label),
            annotation_position="top right" if j % 2 == 0 else "bottom right",
            line=dict(dash="dash", color=rank_color(len(series) + j)),
        )
    if checks.boolean("log_x", log_x):
        ticks = x.tolist() if x.size <= 12 else None
        fig.update_xaxes(type="log", tickvals=ticks)
    fig.update_xaxes(title_text=x_title)
    fig.update_yaxes(title_text=y_title)
    fig.update_layout(title=_title(title), height=400, legend=dict(orientation="h", y=-0.25, x=0))
    return fig


def validation(rows) -> go.Figure:
    """Predicted against measured TFLOP/s (log-log) for :func:`scaleout.compute.validation.rows`,
    one marker style per role, with the line predicted = measured."""
    from ..compute.validation import Row  # a record type, not a cost

    if not isinstance(rows, list | tuple) or not 1 <= len(rows) <= MAX_POINTS:
        raise checks.fail("rows", f"a list of 1 to {MAX_POINTS} validation rows", rows)
    for row in rows:
        checks.instance("rows", row, Row, "validation.Row records")
    fig = go.Figure(layout=dict(template=template()))
    top = max(max(r.measurement.tflops, r.predicted_tflops) for r in rows) * 1.3
    fig.add_scatter(
        x=[100, top],
        y=[100, top],
        mode="lines",
        name="predicted = measured",
        line=dict(color="#444444", dash="dot"),
        hoverinfo="skip",
    )
    for role, (color, symbol) in ROLE_STYLE.items():
        chosen = [r for r in rows if r.role == role]
        if not chosen:
            continue
        fig.add_scatter(
            x=[r.measurement.tflops for r in chosen], y=[r.predicted_tflops for r in chosen],
            mode="markers", name=ROLE_LABEL[role],
            marker=dict(color=color, symbol=symbol, size=11),
            text=[f"{r.measurement.accelerator} {r.measurement.dtype} {r.measurement.shape}"
                  f" on {r.gpu}: {r.error:+.0%}" for r in chosen],
            hovertemplate="%{text}<br>measured %{x:.4g}, predicted %{y:.4g}<extra></extra>",
        )  # fmt: skip
    fig.update_xaxes(type="log", title_text="measured TFLOP/s (published)")
    fig.update_yaxes(type="log", title_text="predicted TFLOP/s (model)")
    fig.update_layout(height=440, title="GEMM model against published measurements",
                      legend=dict(orientation="h", y=-0.2, x=0))  # fmt: skip
    return fig


def measured_cpu(labels, gflops, intensity, peak_gflops, copy_gb_per_s) -> go.Figure:
    """Left: measured GFLOP/s of each matrix product (``labels``). Right: the roofline of
    this machine from its measured peak (GFLOP/s) and copy bandwidth (GB/s), with the same
    products at their ``intensity`` (FLOPs per byte of minimum traffic)."""
    if not isinstance(labels, list | tuple) or not 1 <= len(labels) <= MAX_POINTS:
        raise checks.fail("labels", f"a list of 1 to {MAX_POINTS} labels", labels)
    labels = [checks.text("label", str(x), 80) for x in labels]
    y = checks.array("gflops", gflops, ndim=1, low=0.0, low_open=True, max_size=MAX_POINTS)
    x = checks.array("intensity", intensity, ndim=1, low=0.0, low_open=True, max_size=MAX_POINTS)
    if not len(labels) == y.size == x.size:
        raise checks.fail("gflops", f"{len(labels)} values, one per label", y.size)
    peak = checks.positive("peak_gflops", peak_gflops)
    bw = checks.positive("copy_gb_per_s", copy_gb_per_s)
    fig = make_subplots(
        rows=1,
        cols=2,
        column_widths=[0.5, 0.5],
        horizontal_spacing=0.12,
        subplot_titles=("matrix products (float32)", "this machine's roofline"),
    )
    colors = [rank_color(i % 8) for i in range(len(labels))]
    fig.add_bar(
        x=labels,
        y=y.tolist(),
        marker_color=colors,
        name="measured",
        showlegend=False,
        hovertemplate="%{x}: %{y:.3g} GFLOP/s<extra></extra>",
        row=1,
        col=1,
    )
    grid = np.logspace(-1, 3, 41)
    fig.add_scatter(x=grid.tolist(), y=np.minimum(peak, grid * bw).tolist(), mode="lines",
                    name="roofline (measured peak, copy bandwidth)", row=1, col=2,
                    line=dict(color="#444444"))  # fmt: skip
    fig.add_scatter(
        x=x.tolist(),
        y=y.tolist(),
        mode="markers",
        text=labels,
        marker=dict(color=colors, size=11, line=dict(color="white", width=1)),
        name="products",
        showlegend=False,
        row=1,
        col=2,
        hovertemplate="%{text}: %{x:.3g} FLOP/B, %{y:.3g} GFLOP/s<extra></extra>",
    )
    fig.update_yaxes(title_text="GFLOP/s", row=1, col=1)
    fig.update_xaxes(type="log", title_text="FLOP per byte", row=1, col=2)
    fig.update_yaxes(type="log", title_text="GFLOP/s", row=1, col=2)
    fig.update_layout(template=template(), height=430,
                      legend=dict(orientation="h", y=-0.3, x=0.55))  # fmt: skip
    return fig


def breakdown(parts: Mapping[str, Mapping[str, float]], title: str = "") -> go.Figure:
    """Stacked bars: ``{bar label: {segment label: milliseconds}}`` (the same segments in
    every bar), e.g. a layer's time by kind for several configurations."""
    if not isinstance(parts, Mapping) or not 1 <= len(parts) <= 64:
        raise checks.fail("parts", "a mapping of 1 to 64 bars -> {segment: ms}", parts)
    bars = list(parts)
    segments = list(next(iter(parts.values())))
    fig = go.Figure(layout=dict(template=template()))
    for i, seg in enumerate(segments):
        values = [checks.nonnegative(f"{bar} {seg}", parts[bar][seg]) for bar in bars]
        fig.add_bar(
            x=bars,
            y=values,
            name=seg,
            marker_color=rank_color(i),
            hovertemplate="%{x}: %{y:.3g} ms<extra>" + seg + "</extra>",
        )
    fig.update_layout(barmode="stack", title=_title(title), height=400,
                      yaxis_title="time per micro-batch (ms)",
                      legend=dict(orientation="h", y=-0.25, x=0))  # fmt: skip
    return fig


def layer_validation(rows, title: str = "") -> go.Figure:
    """Korthikanti et al.'s Table 4 against the layer model
    (:func:`scaleout.compute.validation.layer_rows`): for the forward (left) and backward
    (right) pass of each experiment, the measured time beside the model's, the model's bar
    split into compute and exposed tensor-parallel communication, its error on top."""
    from ..compute.validation import LayerRow  # a record type, not a cost

    if not isinstance(rows, list | tuple) or not 1 <= len(rows) <= 64:
        raise checks.fail("rows", "a list of 1 to 64 validation.LayerRow records", rows)
    for row in rows:
        checks.instance("rows", row, LayerRow, "validation.LayerRow records")
    title = _title(title)
    fig = make_subplots(
        rows=1,
        cols=2,
        shared_yaxes=True,
        horizontal_spacing=0.04,
        subplot_titles=("forward", "backward (recomputation included)"),
    )
    fig.update_layout(template=template())
    x = [_wrap(r.measurement.experiment) for r in rows]
    for col, phase in ((1, "forward"), (2, "backward")):
        first = col == 1
        measured = [getattr(r.measurement, f"{phase}_ms") for r in rows]
        comp = [getattr(r, f"compute_{phase}_ms") for r in rows]
        comm = [getattr(r, f"comm_{phase}_ms") for r in rows]
        err = [f"{r.error(phase):+.0%}" for r in rows]
        fig.add_bar(
            x=x,
            y=measured,
            name="measured (Korthikanti et al.)",
            offsetgroup="m",
            marker_color=NEUTRAL,
            showlegend=first,
            legendgroup="m",
            hovertemplate="%{x}: %{y:.3g} ms measured<extra></extra>",
            row=1,
            col=col,
        )
        fig.add_bar(
            x=x,
            y=comp,
            name="model: compute",
            offsetgroup="p",
            marker_color=rank_color(0),
            showlegend=first,
            legendgroup="c",
            hovertemplate="%{x}: %{y:.3g} ms of compute<extra></extra>",
            row=1,
            col=col,
        )
        fig.add_bar(x=x, y=comm, base=comp, name="model: exposed TP communication",
                    offsetgroup="p", marker_color=rank_color(1), showlegend=first,
                    legendgroup="t", text=err, textposition="outside",
                    hovertemplate="%{x}: %{y:.3g} ms of communication<extra></extra>",
                    row=1, col=col)  # fmt: skip
    fig.update_yaxes(title_text="time per layer and micro-batch (ms)", row=1, col=1)
    fig.update_xaxes(tickangle=0)
    fig.update_layout(barmode="group", height=480, title=title, margin=dict(b=130),
                      legend=dict(orientation="h", y=-0.3, x=0))  # fmt: skip
    return fig


def _wrap(label: str, width: int = 12) -> str:
    """``label`` broken into lines of about ``width`` characters for an axis tick."""
    lines, line = [], ""
    for word in label.split():
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}".strip()
    return "<br>".join([*lines, line])
