"""Figures of chapter 14 (congestion): ECMP collisions, busbw per routing, DCQCN
trajectories, the PFC animation and fabric counts. Built from library results only."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from .. import checks
from ..congestion.collective import CollectiveResult
from ..congestion.dcqcn import DCQCNResult
from ..congestion.fabrics import FabricSize
from ..congestion.pfc import PFCResult
from .animate import animation
from .theme import NEUTRAL, RANK_COLORS, new_figure

MAX_POINTS = 300  # points per trace: figures stay small in the page


def ecmp_figure(flows: list[int], paths: int, expected: list[float], sampled) -> go.Figure:
    """Expected flows on the busiest path (exact) against sampled means, for ``flows``
    flows on ``paths`` paths; the dotted line is perfect balance."""
    n = checks.array("flows", flows, ndim=1, integer=True, low=0, max_size=10_000)
    paths = checks.integer("paths", paths, 1, 1 << 16)
    expected = checks.array("expected", expected, ndim=1, low=0.0, high=1e9)
    sampled = checks.array("sampled", sampled, ndim=1, low=0.0, high=1e9)
    if not len(n) == len(expected) == len(sampled):
        raise checks.fail("expected, sampled", f"one value per flow count ({len(n)})",
                          (len(expected), len(sampled)))  # fmt: skip
    flows = n.tolist()
    balance = [max(1.0, f / paths) for f in flows]
    fig = new_figure(
        title=f"Busiest of {paths} paths",
        xaxis_title="flows hashed (count)",
        yaxis_title="flows on busiest path",
        height=380,
        legend=dict(x=0.02, y=0.98),
    )
    fig.add_scatter(x=flows, y=expected.tolist(), mode="lines+markers", name="exact E[max]",
                    line=dict(color=RANK_COLORS[0]))  # fmt: skip
    fig.add_scatter(x=flows, y=sampled.tolist(), mode="markers", name="sampled mean",
                    marker=dict(color=RANK_COLORS[1], symbol="x", size=9))  # fmt: skip
    fig.add_scatter(x=flows, y=balance, mode="lines", name="perfect balance",
                    line=dict(color=NEUTRAL, dash="dot"))  # fmt: skip
    return fig


def busbw_figure(results: dict[str, object], bound: float) -> go.Figure:
    """Per-seed bus bandwidth as box plots, one per labelled result; the line is the
    no-collision bound."""
    if (
        not isinstance(results, dict)
        or not results
        or len(results) > 16
        or not all(
            isinstance(k, str) and isinstance(v, CollectiveResult) for k, v in results.items()
        )
    ):
        raise checks.fail("results", "a dict of 1..16 label -> CollectiveResult", results)
    bound = checks.positive("bound", bound, 1e9)
    fig = new_figure(
        title="Ring all-reduce per hash seed",
        yaxis_title="bus bandwidth (GB/s)",
        height=420,
        showlegend=False,
        margin=dict(b=110),
    )
    for k, (label, res) in enumerate(results.items()):
        fig.add_box(y=np.round(res.busbw_gb_per_s, 3), name=label, boxpoints=False,
                    marker_color=RANK_COLORS[k % len(RANK_COLORS)])  # fmt: skip
    fig.add_hline(y=bound, line=dict(color=NEUTRAL, dash="dot"),
                  annotation_text="no collisions", annotation_position="bottom right")  # fmt: skip
    fig.update_yaxes(rangemode="tozero")
    fig.update_xaxes(tickangle=-30)
    return fig


def dcqcn_figure(result: DCQCNResult, title: str = "DCQCN, N senders to one") -> go.Figure:
    """Sender rates (top) and the bottleneck queue (bottom) of a DCQCN fluid run."""
    checks.instance("result", result, DCQCNResult)
    every = max(1, -(-len(result.t_s) // MAX_POINTS))  # at most MAX_POINTS points a trace
    t_ms = np.round(result.t_s[::every] * 1e3, 4)
    rates, queue = result.rates_gbps[::every], result.queue_bytes[::every]
    fig = new_figure(title=title, height=480, legend=dict(x=0.99, xanchor="right", y=0.99))
    fig.set_subplots(rows=2, cols=1, shared_xaxes=True, row_heights=[0.65, 0.35],
                     vertical_spacing=0.08)  # fmt: skip
    n = result.rates_gbps.shape[1]
    for i in range(n):
        fig.add_scatter(x=t_ms, y=np.round(rates[:, i], 2), mode="lines",
                        name=f"sender {i}", showlegend=n <= 8,
                        line=dict(color=RANK_COLORS[i % len(RANK_COLORS)], width=1.5),
                        row=1, col=1)  # fmt: skip
    fig.add_scatter(x=t_ms, y=np.round(queue / 1e3, 1), mode="lines",
                    name="queue", showlegend=False, line=dict(color="#444444"),
                    row=2, col=1)  # fmt: skip
    fig.update_yaxes(title_text="rate (Gb/s)", range=[0, result.line_gbps * 1.05], row=1, col=1)
    fig.update_yaxes(title_text="queue (KB)", row=2, col=1)
    fig.update_xaxes(title_text="time (ms)", row=2, col=1)
    return fig


def pfc_animation(result: PFCResult, frames: int = 40) -> go.Figure:
    """The PFC run as an animation: throughputs so far (victim, incast) and, as bars,
    the buffers at S's port 0 and at U against XOFF; the title says who is paused."""
    checks.instance("result", result, PFCResult)
    frames = checks.integer("frames", frames, 2, 60)
    every = max(1, -(-len(result.t_s) // (MAX_POINTS // 2)))  # frames repeat the data
    t_us = np.round(result.t_s[::every] * 1e6, 2)
    victim, incast = result.victim_gbps[::every], result.incast_gbps[::every]
    paused_u, paused_host = result.paused_u[::every], result.paused_host[::every]
    ends = np.linspace(0, len(t_us) - 1, frames).astype(int)
    pause_marks = np.where(paused_u, 1.0, np.nan)
    traces, labels, titles = [], [], []
    for e in ends:
        upto = slice(0, e + 1)
        traces.append([
            go.Scatter(x=t_us[upto], y=np.round(victim[upto], 1), mode="lines",
                       name="victim (to idle port A)", line=dict(color=RANK_COLORS[0])),
            go.Scatter(x=t_us[upto], y=np.round(incast[upto], 1), mode="lines",
                       name="incast (to port X)", line=dict(color=RANK_COLORS[3])),
            go.Scatter(x=t_us[upto], y=np.round(pause_marks[upto] * 5, 2), mode="lines",
                       name="U paused by S", line=dict(color="#444444", width=6)),
        ])  # fmt: skip
        labels.append(f"{t_us[e]:.0f} µs")
        state = "U paused" if paused_u[e] else "U sending"
        host = ", V's host paused" if paused_host[e] else ""
        titles.append(f"PFC at {t_us[e]:.0f} µs: {state}{host}")
    return animation(
        traces, labels, frame_titles=titles, slider_prefix="t = ",
        xaxis=dict(title="time (µs)", range=[0, float(t_us[-1])]),
        yaxis=dict(title="throughput (Gb/s)", range=[0, 110]),
        height=480, legend=dict(orientation="h", x=0, y=1.0, yanchor="bottom"),
        margin=dict(b=60, t=110),
    )  # fmt: skip


def fabric_figure(sizes: dict[int, dict[str, object]]) -> go.Figure:
    """Switches per GPU of each design against cluster size (GPUs)."""
    what = "a dict of 1..64 GPU counts -> dict of design name -> FabricSize (same names)"
    if not isinstance(sizes, dict) or not 1 <= len(sizes) <= 64:
        raise checks.fail("sizes", what, sizes)
    first = next(iter(sizes.values()))
    for g, row in sizes.items():
        if not (checks.is_integer(g) and g > 0 and isinstance(row, dict) and row
                and list(row) == list(first)
                and all(isinstance(v, FabricSize) for v in row.values())):  # fmt: skip
            raise checks.fail("sizes", what, sizes)
    fig = new_figure(
        title="Switches per GPU",
        xaxis_title="GPUs (count)",
        yaxis_title="switches per GPU",
        height=380,
        legend=dict(x=0.02, y=0.98),
    )
    fig.update_xaxes(type="log")
    gpus = sorted(sizes)
    names = list(next(iter(sizes.values())))
    for k, name in enumerate(names):
        fig.add_scatter(x=gpus, y=[round(sizes[g][name].switches_per_gpu, 5) for g in gpus],
                        mode="lines+markers", name=name,
                        line=dict(color=RANK_COLORS[k]))  # fmt: skip
    return fig
