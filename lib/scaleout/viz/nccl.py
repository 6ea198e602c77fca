"""Figures for the chapter "How NCCL moves the bytes" (chapters/10_nccl.ipynb).

Everything drawn comes from :mod:`scaleout.nccl` (the model's predictions, the protocol
and channel data of :mod:`scaleout.nccl.wire`) or from measurements passed in; this module
only arranges it. Algorithms keep one colour each (Okabe & Ito's palette, as ranks do).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go

from .. import checks
from .. import nccl as N
from ..nccl import published as P
from ..nccl import wire
from .animate import animation
from .theme import NEUTRAL, new_figure, rank_color

ALGO_COLORS = {a: rank_color(i) for i, a in enumerate(N.ALGORITHMS)}
PROTO_DASH = {"ll": "dot", "ll128": "dash", "simple": "solid"}
STATE_COLORS = (NEUTRAL, rank_color(0), "#000000", rank_color(2), rank_color(3))
SIZES = 2.0 ** np.arange(3, 35, 1)  # 8 B .. 16 GiB


def _check_sizes(sizes):
    return checks.array("sizes", sizes, ndim=1, low=0.0, high=2.0**50, low_open=True,
                        max_size=4096)  # fmt: skip


def protocol_animation(protocol: str, nbytes: int = 512) -> go.Figure:
    """The receive buffer while ``protocol`` moves ``nbytes``: 8-byte cells, 16 per row
    (128 bytes); colours give each cell's state (:data:`scaleout.nccl.wire.STATES`)."""
    frames = wire.protocol_frames(protocol, nbytes)
    rows = frames[0].cells.shape[0]
    scale = [[i / 4, STATE_COLORS[i]] for i in range(5)]
    traces = []
    for f in frames:
        text = [[wire.STATES[v] for v in row] for row in f.cells]
        traces.append([go.Heatmap(
            z=f.cells, zmin=0, zmax=4, colorscale=scale, showscale=False, xgap=2, ygap=2,
            text=text, hovertemplate="byte %{x}: %{text}<extra></extra>",
            x=np.arange(wire.ROW) * wire.CELL)])  # fmt: skip
    legend = [go.Scatter(x=[None], y=[None], mode="markers", name=name,
                         marker=dict(size=12, symbol="square", color=STATE_COLORS[i]))
              for i, name in enumerate(wire.STATES)]  # fmt: skip
    fig = animation(
        [t + legend for t in traces], [str(k) for k in range(len(frames))],
        frame_titles=[f"{protocol}: {f.caption}" for f in frames], slider_prefix="step ",
        xaxis=dict(title_text="byte offset within a 128-byte row", range=[-4, 124]),
        yaxis=dict(title_text="row of the receive buffer", autorange="reversed",
                   range=[rows - 0.5, -0.5]),
        height=300 + 24 * rows, legend=dict(orientation="h", y=-0.35),
    )  # fmt: skip
    return fig


def _node_xy(node: int, gpu: int, gpus: int):
    return node * (gpus + 2) + gpu, 2.0


def rails_animation(gpus: int = 8, nics: int = 8) -> go.Figure:
    """Two servers, their GPUs (top) and NICs (bottom), rail switches between: one frame per
    ring channel (how it enters, crosses and leaves each server) and a last frame for a
    PXN send (NVLink to the GPU on the destination's rail, then the rail)."""
    channels = wire.ring_paths(gpus, nics)
    per = gpus // nics
    base = []
    for node in (0, 1):
        xs = [_node_xy(node, g, gpus)[0] for g in range(gpus)]
        base.append(go.Scatter(x=xs, y=[2] * gpus, mode="markers+text", text=[
            f"G{g}" for g in range(gpus)], textposition="middle center",
            marker=dict(size=26, color="white", line=dict(color="#555", width=2)),
            showlegend=False, hoverinfo="skip"))  # fmt: skip
        nx = [_node_xy(node, n * per, gpus)[0] for n in range(nics)]
        base.append(go.Scatter(x=nx, y=[0.8] * nics, mode="markers+text", text=[
            f"N{n}" for n in range(nics)], textposition="middle center",
            marker=dict(size=22, symbol="square", color="#DDDDDD"), showlegend=False,
            hoverinfo="skip"))  # fmt: skip
    frames, labels, titles = [], [], []
    for ch in channels:
        color = rank_color(ch.index)
        xs, ys = [], []
        for node in (0, 1):
            entry = _node_xy(node, ch.entry_nic * per, gpus)[0]
            xs += [entry, *[_node_xy(node, g, gpus)[0] for g in ch.order]]
            ys += [0.8] + [2.0] * len(ch.order)
            xs.append(_node_xy(node, ch.exit_nic * per, gpus)[0])
            ys.append(0.8)
            xs.append(None)
            ys.append(None)
        path = go.Scatter(x=xs, y=ys, mode="lines", line=dict(color=color, width=3),
                          name=f"channel {ch.index}", hoverinfo="skip")  # fmt: skip
        frames.append([*base, path])
        labels.append(f"ch {ch.index}")
        titles.append(f"channel {ch.index}: in through NIC {ch.entry_nic}, out through NIC "
                      f"{ch.exit_nic} (rail {ch.exit_nic} to the next server)")  # fmt: skip
    hops = wire.pxn_route(3 % gpus, 5 % gpus, gpus)
    xs = [_node_xy(n, g, gpus)[0] if kind == "gpu" else _node_xy(n, g, gpus)[0]
          for kind, n, g in hops]  # fmt: skip
    ys = [2.0 if kind == "gpu" else 0.8 for kind, _, _ in hops]
    frames.append(
        [
            *base,
            go.Scatter(
                x=xs,
                y=ys,
                mode="lines+markers",
                name="PXN send",
                line=dict(color="#000000", width=3, dash="dash"),
            ),
        ]
    )
    labels.append("PXN")
    titles.append(f"PXN: G{hops[0][2]} sends to G{hops[-1][2]} of the other server over "
                  f"NVLink to G{hops[1][2]}, then rail {hops[-1][2]}")  # fmt: skip
    width = 2 * (gpus + 2)
    return animation(frames, labels, frame_titles=titles, slider_prefix="",
                     xaxis=dict(visible=False, range=[-1, width - 2]),
                     yaxis=dict(visible=False, range=[0.3, 2.6]), height=330,
                     legend=dict(orientation="h", y=-0.1))  # fmt: skip


def busbw_figure(collective: str = "allreduce", sizes=None, *, machine) -> go.Figure:
    """Bus bandwidth against size for every algorithm NCCL can run on ``machine`` (a
    Topology, a :class:`scaleout.machine.Machine` or a preset name; each algorithm with its
    best protocol), and the one NCCL picks (markers). From :func:`scaleout.nccl.model.predict`."""
    topo = N.model._topo(machine)
    sizes = SIZES if sizes is None else _check_sizes(sizes)
    checks.choice("collective", collective, N.COLLECTIVES)
    fig = new_figure()
    chosen = N.predict(collective, sizes, machine=topo)
    for algo in N.ALGORITHMS:
        try:
            p = N.predict(collective, sizes, algorithm=algo, machine=topo)
        except ValueError:
            continue  # NCCL cannot run this algorithm here
        fig.add_scatter(x=sizes, y=p.busbw_gb_per_s, mode="lines", name=algo.replace("_", " "),
                        line=dict(color=ALGO_COLORS[algo], width=2),
                        customdata=np.asarray(p.protocol),
                        hovertemplate="%{x:.3s}B: %{y:.4g} GB/s (%{customdata})"
                        "<extra>" + algo + "</extra>")  # fmt: skip
    label = np.char.add(np.asarray(chosen.algorithm, str), "/")
    label = np.char.add(label, np.asarray(chosen.protocol, str))
    colors = [ALGO_COLORS[a] for a in chosen.algorithm]
    fig.add_scatter(x=sizes, y=chosen.busbw_gb_per_s, mode="markers", name="NCCL's choice",
                    marker=dict(size=8, color=colors, line=dict(color="black", width=1)),
                    customdata=label, hovertemplate="%{x:.3s}B: %{customdata}, %{y:.4g} "
                    "GB/s<extra>choice</extra>")  # fmt: skip
    t = N.model._topo(topo)
    fig.update_layout(
        title_text=f"{collective} on {t.name}: {t.nodes} x {t.gpus_per_node} GPUs "
        f"(NCCL {N.RELEASE} model)",
        xaxis=dict(type="log", title_text="size (bytes)", exponentformat="power"),
        yaxis=dict(title_text="bus bandwidth (GB/s)", rangemode="tozero"),
        height=440, legend=dict(x=0.01, y=0.99),
    )  # fmt: skip
    return fig


def choice_map(nodes: Sequence[int], collective: str = "allreduce", sizes=None, *, machine):
    """The (algorithm, protocol) NCCL picks for each size (x) and node count (y) of
    ``machine``'s servers (as in :func:`busbw_figure`)."""
    sizes = SIZES if sizes is None else _check_sizes(sizes)
    if not isinstance(nodes, list | tuple):
        raise checks.fail("nodes", "a list of node counts", nodes)
    nodes = [checks.integer("nodes", n, 1, 8192) for n in nodes]
    if not nodes:
        raise checks.fail("nodes", "a non-empty list of node counts", nodes)
    base = N.model._topo(machine)
    pairs = [f"{a}/{p}" for a in N.ALGORITHMS for p in N.PROTOCOLS]
    z, text = [], []
    for n in nodes:
        pred = N.predict(collective, sizes, machine=base.with_(nodes=n))
        keys = [f"{a}/{p}" for a, p in zip(pred.algorithm, pred.protocol, strict=True)]
        z.append([pairs.index(k) for k in keys])
        text.append(keys)
    used = sorted({v for row in z for v in row})
    index = {v: i for i, v in enumerate(used)}
    zz = [[index[v] for v in row] for row in z]
    colors = [ALGO_COLORS[pairs[v].split("/")[0]] for v in used]
    k = max(len(used) - 1, 1)
    scale = (
        [[i / k, c] for i, c in enumerate(colors)]
        if len(used) > 1
        else [[0, colors[0]], [1, colors[0]]]
    )
    fig = new_figure()
    fig.add_heatmap(
        x=np.log2(sizes),
        y=[str(n) for n in nodes],
        z=zz,
        text=text,
        colorscale=scale,
        showscale=False,
        xgap=1,
        ygap=1,
        texttemplate="",
        hovertemplate="2^%{x} B on %{y} nodes: %{text}<extra></extra>",
    )
    for v in used:  # a legend of the pairs in use
        fig.add_scatter(x=[None], y=[None], mode="markers", name=pairs[v],
                        marker=dict(size=12, symbol="square",
                                    color=ALGO_COLORS[pairs[v].split("/")[0]],
                                    line=dict(color="white" if "simple" in pairs[v] else
                                              "black", width=2)))  # fmt: skip
    fig.update_layout(
        title_text=f"NCCL's choice for {collective} on {base.name}",
        xaxis=dict(title_text="log2 of the size in bytes", dtick=4),
        yaxis=dict(title_text="nodes", type="category"),
        height=380,
    )
    return fig


def validation_figure(
    rows: Sequence[Mapping], title: str = "NCCL's model against published measurements"
) -> go.Figure:
    """Measured (x) against predicted (y) values, one marker per row (``label``,
    ``measured``, ``predicted``, ``kind``: "busbw" in GB/s or "time" in us), with the
    y = x line and a +-20 % band."""
    rows = _check_rows(rows)
    title = checks.text("title", title, 120)
    fig = new_figure()
    for kind, symbol, color in (("busbw", "circle", rank_color(0)),
                                ("time", "diamond", rank_color(3))):  # fmt: skip
        sel = [r for r in rows if r["kind"] == kind]
        if not sel:
            continue
        fig.add_scatter(x=[r["measured"] for r in sel], y=[r["predicted"] for r in sel],
                        mode="markers", name="bus bandwidth (GB/s)" if kind == "busbw" else
                        "time at small sizes (µs)", text=[r["label"] for r in sel],
                        marker=dict(size=10, symbol=symbol, color=color),
                        hovertemplate="%{text}<br>measured %{x:.4g}, predicted %{y:.4g}"
                        "<extra></extra>")  # fmt: skip
    values = [v for r in rows for v in (r["measured"], r["predicted"])]
    lo, hi = min(values) / 1.5, max(values) * 1.5
    line = np.array([lo, hi])
    fig.add_scatter(
        x=line, y=line, mode="lines", name="predicted = measured", line=dict(color="black", width=1)
    )
    fig.add_scatter(x=np.r_[line, line[::-1]], y=np.r_[line * 1.2, line[::-1] / 1.2],
                    fill="toself", mode="none", fillcolor="rgba(0,0,0,0.08)",
                    name="within 20 %", hoverinfo="skip")  # fmt: skip
    fig.update_layout(
        title_text=title,
        xaxis=dict(type="log", title_text="measured (GB/s or µs)"),
        yaxis=dict(type="log", title_text="predicted (GB/s or µs)"),
        height=460,
        legend=dict(x=0.01, y=0.99),
    )
    return fig


def validation_table(
    rows: Sequence[Mapping], title: str = "measured against predicted, one row per published run"
):
    """The validation rows as a table: setup, what was measured, measured, predicted, error,
    NCCL's choice in the model, and the source."""
    rows = _check_rows(rows)
    title = checks.text("title", title, 120)
    unit = {"busbw": "GB/s", "time": "µs"}
    cols = {
        "setup": [r["label"] for r in rows],
        "quantity": [
            f"{'busbw' if r['kind'] == 'busbw' else 'time'} at {_bytes(r['nbytes'])}" for r in rows
        ],  # fmt: skip
        "measured": [f"{r['measured']:.4g} {unit[r['kind']]}" for r in rows],
        "predicted": [f"{r['predicted']:.4g} {unit[r['kind']]}" for r in rows],
        "error": [f"{100 * r['error']:+.0f} %" for r in rows],
        "model runs": [f"{r['algorithm']}/{r['protocol']}" for r in rows],
        "NCCL": [r["release"] for r in rows],
        "source": [r["source"].split("github.com/")[-1].split("/blob")[0] for r in rows],
    }
    fig = new_figure()
    fig.add_table(header=dict(values=list(cols), fill_color="#E5E5E5", align="left"),
                  cells=dict(values=list(cols.values()), align="left", height=22),
                  columnwidth=[2.4, 1.4, 1.1, 1.1, 0.8, 1.3, 0.9, 2.2])  # fmt: skip
    fig.update_layout(
        height=60 + 23 * len(rows) + 40,
        margin=dict(l=5, r=5, t=30, b=5),
        title_text=title,
    )
    return fig


_ROW_KEYS = ("label", "kind", "measured", "predicted", "error", "algorithm", "protocol",
             "release", "source", "nbytes")  # fmt: skip


def _check_rows(rows) -> list:
    """Rows of :func:`scaleout.nccl.published.rows` (mappings with those keys), checked by
    the one check the published module's summaries use."""
    return P._check_rows(rows, _ROW_KEYS)


def _bytes(n: float) -> str:
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:g} {unit}"
    return f"{n:g} B"


def gloo_figure(sizes, seconds, nranks: int, latency_s: float, gb_per_s: float):
    """Measured gloo all-reduce bus bandwidth against size, with the two regimes the model
    reads off it: the latency floor and the bandwidth plateau (``latency_s``, ``gb_per_s``
    from :func:`scaleout.costmodel.fit_alpha_beta`)."""
    sizes = _check_sizes(sizes)
    seconds = checks.array("seconds", seconds, ndim=1, low=0.0, low_open=True)
    if seconds.shape != sizes.shape:
        raise checks.fail("seconds", f"one time per size ({len(sizes)})", len(seconds))
    nranks = checks.integer("nranks", nranks, 2, 64)
    latency_s = checks.positive("latency_s", latency_s, 3600.0)
    gb_per_s = checks.positive("gb_per_s", gb_per_s, 1e6)
    factor = 2 * (nranks - 1) / nranks
    busbw = sizes / seconds / 1e9 * factor
    grid = np.logspace(np.log10(sizes.min()), np.log10(sizes.max()), 60)
    model = grid / (latency_s + grid * factor / (gb_per_s * 1e9)) / 1e9 * factor
    fig = new_figure()
    fig.add_scatter(
        x=sizes,
        y=busbw,
        mode="markers",
        name="measured (gloo, CPU)",
        marker=dict(size=9, color=rank_color(0)),
    )
    fig.add_scatter(
        x=grid,
        y=model,
        mode="lines",
        name="latency + size / bandwidth",
        line=dict(color=rank_color(3), width=2),
    )
    fig.add_hline(
        y=gb_per_s,
        line=dict(color="black", dash="dot"),
        annotation_text="bandwidth plateau",
        annotation_position="bottom right",
    )
    fig.update_layout(title_text=f"gloo all_reduce on {nranks} CPU processes, read as "
                      "nccl-tests reads NCCL", xaxis=dict(type="log", title_text="size (bytes)"),
                      yaxis=dict(title_text="bus bandwidth (GB/s)", type="log"), height=420,
                      legend=dict(x=0.01, y=0.99))  # fmt: skip
    return fig


def shm_figure(results: Sequence) -> go.Figure:
    """One-way time (left) and bandwidth (right) of the LL and Simple protocols measured
    between two processes (:func:`scaleout.nccl.shm.pingpong` results)."""
    from plotly.subplots import make_subplots

    from ..nccl.shm import PingPong

    if (
        not isinstance(results, list | tuple)
        or not results
        or not all(isinstance(r, PingPong) for r in results)
    ):
        raise checks.fail("results", "a non-empty list of PingPong results", results)
    fig = make_subplots(rows=1, cols=2, subplot_titles=("one-way time", "payload bandwidth"))
    fig.update_layout(template=new_figure().layout.template)
    for i, proto in enumerate(("ll", "simple")):
        sel = sorted((r for r in results if r.protocol == proto), key=lambda r: r.nbytes)
        x = [r.nbytes for r in sel]
        fig.add_scatter(x=x, y=[r.seconds * 1e6 for r in sel], name=proto, mode="lines+markers",
                        line=dict(color=rank_color(i)), row=1, col=1)  # fmt: skip
        fig.add_scatter(
            x=x,
            y=[r.gb_per_s for r in sel],
            name=proto,
            mode="lines+markers",
            line=dict(color=rank_color(i)),
            showlegend=False,
            row=1,
            col=2,
        )
    for col, title in ((1, "time (µs)"), (2, "GB/s")):
        fig.update_xaxes(type="log", title_text="message size (bytes)", row=1, col=col)
        fig.update_yaxes(type="log", title_text=title, row=1, col=col)
    fig.update_layout(
        title_text="LL against Simple between two CPU processes (measured)", height=400
    )
    return fig
