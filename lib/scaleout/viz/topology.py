"""Figures for the chapter "NVLink, NVSwitch and the cluster network" (chapter 11).

Bandwidths come from the tables of :mod:`scaleout.hardware` (read through
:class:`~scaleout.hardware.Bandwidth`, so every axis says per link or per GPU, per
direction or bidirectional); paths, link loads and times from :mod:`scaleout.topology`.
This module only lays them out.

Limits: :func:`traffic_figure` draws at most ``MAX_DRAWN_GPUS`` GPUs (a drawing, not a
model); :func:`allreduce_times` at most ``MAX_BARS`` bars.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .. import checks, nccl
from .. import hardware as H
from .. import topology as T
from .theme import NEUTRAL, rank_color, template

SCOPES = ("per link", "per GPU")
DOMAIN_SCOPES = ("per GPU", "whole domain")
PATTERN_COLOR = "#D55E00"
MAX_DRAWN_GPUS = 128
MAX_BARS = 24
MAX_POINTS = 1000


def _choices(make, scopes):
    return {f"{s}, {d}": make(s, d) for s in scopes for d in H.DIRECTIONS}


def nvlink_timeline(scope: str = "per GPU", direction: str = "bidirectional") -> go.Figure:
    """NVLink bandwidth by generation, ``scope`` per link or per GPU, counted ``direction``."""
    scope = checks.choice("scope", scope, SCOPES)
    direction = checks.choice("direction", direction, H.DIRECTIONS)
    rows = H.NVLINK_GENERATIONS
    bws = [r.per_link if scope == "per link" else r.per_gpu for r in rows]
    ys = [bw.to("GB/s", direction) for bw in bws]
    top = max(bw.to("GB/s", "bidirectional") for bw in bws)
    text = [
        f"{r.gpu}: {r.links} × {r.per_link.to('GB/s', direction):g} GB/s"
        if scope == "per GPU"
        else f"{r.gpu}: {r.per_link.to('GB/s', direction):g} GB/s"
        for r in rows
    ]
    hover = [
        f"NVLink {r.generation} ({r.gpu}, {r.year}): {r.links} links × "
        f"{r.per_link.label('GB/s', direction)} per link = {r.per_gpu.label('GB/s', direction)}"
        f" per GPU" + (" (read in third-party copies)" if r.secondary else "")
        for r in rows
    ]
    fig = go.Figure(layout=dict(template=template()))
    fig.add_scatter(
        x=[r.year for r in rows],
        y=ys,
        mode="lines+markers+text",
        text=text,
        textposition=["bottom right", "top right"] + ["top left"] * (len(rows) - 2),
        hovertext=hover,
        hoverinfo="text",
        marker=dict(
            size=12,
            color=rank_color(0),
            symbol=["circle-open" if r.secondary else "circle" for r in rows],
            line=dict(width=2, color=rank_color(0)),
        ),
        line=dict(color=rank_color(0), width=2),
        showlegend=False,
    )
    fig.update_layout(
        title_text=f"NVLink bandwidth {scope}, {direction}<br><sup>open circles (P100, V100): "
        "NVIDIA's figure as read in third-party copies</sup>",
        margin=dict(t=70),
        xaxis=dict(
            title_text="year of the GPU (NVLink generation 1 to 5)", dtick=1, range=[2015.2, 2024.8]
        ),
        yaxis=dict(title_text=f"bandwidth {scope} (GB/s, {direction})", range=[0, 1.15 * top]),
        height=420,
    )
    return fig


def nvlink_timeline_choices() -> dict[str, go.Figure]:
    """The four (scope, direction) versions of :func:`nvlink_timeline`, for show_choice."""
    return _choices(nvlink_timeline, SCOPES)


def nvswitch_domains(scope: str = "whole domain", direction: str = "bidirectional") -> go.Figure:
    """NVLink domains built on NVSwitch: per-GPU bandwidth, or the domain's total (GPUs ×
    per-GPU NVLink bandwidth, what its GPUs can inject), by year; log scale."""
    scope = checks.choice("scope", scope, DOMAIN_SCOPES)
    direction = checks.choice("direction", direction, H.DIRECTIONS)
    rows = [s for s in H.SYSTEMS if s.nvswitch_generation > 0]
    gens = {g.generation: g for g in H.NVSWITCH_GENERATIONS}
    fig = go.Figure(layout=dict(template=template()))
    for gen in sorted({s.nvswitch_generation for s in rows}):
        sub = [s for s in rows if s.nvswitch_generation == gen]
        sw = gens[gen]
        bws = [
            s.nvlink_per_gpu * (s.gpus_per_nvlink_domain if scope == "whole domain" else 1)
            for s in sub
        ]
        fig.add_scatter(
            x=[s.year for s in sub],
            y=[bw.to("TB/s" if scope == "whole domain" else "GB/s", direction) for bw in bws],
            mode="markers+text",
            name=f"NVSwitch gen {gen}: {sw.ports} ports per chip"
            + (" (secondary)" if sw.secondary else ""),
            text=[f"{s.name}<br>{s.gpus_per_nvlink_domain} GPUs" for s in sub],
            # a domain spanning servers announced a year before the next one: label it on
            # the left, so that the two 256-GPU domains (2022, 2023) do not overlap
            textposition=["middle left" if s.all_to_all_tb_per_s else "middle right" for s in sub],
            hovertext=[
                f"{s.name} ({s.year}): {s.gpus_per_nvlink_domain} GPUs × "
                f"{s.nvlink_per_gpu.label('GB/s', direction)} per GPU = "
                f"{(s.nvlink_per_gpu * s.gpus_per_nvlink_domain).label('TB/s', direction)}"
                + (
                    f"; quoted all-to-all: {s.all_to_all_tb_per_s:g} TB/s"
                    if s.all_to_all_tb_per_s
                    else ""
                )
                for s in sub
            ],
            hoverinfo="text",
            marker=dict(
                size=[10 + 3 * s.gpus_per_nvlink_domain**0.5 for s in sub],
                color=rank_color(gen - 1),
                line=dict(width=1, color="white"),
            ),
        )
    unit = "TB/s" if scope == "whole domain" else "GB/s"
    what = "GPUs × NVLink per GPU" if scope == "whole domain" else "NVLink per GPU"
    fig.update_layout(
        title_text=f"NVSwitch domains: {what}, {direction}<br><sup>marker size: GPUs in "
        "the NVLink domain</sup>",
        xaxis=dict(title_text="year", dtick=1, range=[2017.5, 2025.9]),
        yaxis=dict(type="log", title_text=f"{scope} ({unit}, {direction})"),
        height=520,
        margin=dict(t=70),
        legend=dict(orientation="h", x=0.0, y=-0.18, xanchor="left", yanchor="top"),
    )
    return fig


def nvswitch_domain_choices() -> dict[str, go.Figure]:
    """The four (scope, direction) versions of :func:`nvswitch_domains`."""
    return _choices(nvswitch_domains, DOMAIN_SCOPES)


def server_boundary(direction: str = "per direction") -> go.Figure:
    """Per GPU: NVLink bandwidth beside network (NIC) bandwidth, for each DGX server, with
    their ratio (the same whichever unit and direction both are read in)."""
    direction = checks.choice("direction", direction, H.DIRECTIONS)
    rows = [s for s in H.SYSTEMS if s.nic_per_gpu is not None]
    fig = go.Figure(layout=dict(template=template()))
    names = [s.name for s in rows]
    for label, get, color in (
        ("NVLink per GPU", lambda s: s.nvlink_per_gpu, rank_color(0)),
        ("network (NICs) per GPU", lambda s: s.nic_per_gpu, rank_color(1)),
    ):
        fig.add_bar(
            x=names,
            y=[get(s).to("GB/s", direction) for s in rows],
            name=label,
            marker_color=color,
            hovertext=[
                f"{get(s).label('GB/s', direction)} = {get(s).label('Gb/s', direction)}"
                for s in rows
            ],
            hoverinfo="text",
        )
    fig.add_scatter(
        x=names,
        y=[s.nvlink_per_gpu.to("GB/s", direction) for s in rows],
        mode="text",
        text=[f"{s.nvlink_to_network_ratio:g}×" for s in rows],
        textposition="top center",
        showlegend=False,
        hoverinfo="skip",
    )
    fig.update_layout(
        title_text=f"NVLink vs network, per GPU ({direction})<br><sup>number over each pair: "
        "NVLink ÷ network</sup>",
        margin=dict(t=70),
        barmode="group",
        xaxis=dict(title_text="server (its NICs shared by its GPUs)"),
        yaxis=dict(type="log", title_text=f"bandwidth per GPU (GB/s, {direction})"),
        height=420,
        legend=dict(x=0.01, y=0.99),
    )
    return fig


# --- the cluster drawing ------------------------------------------------------------------
_Y = {"nvswitch": 0.0, "gpu": 1.0, "nic": 2.0, "leaf": 4.0, "spine": 5.6}


def _positions(cluster: T.Cluster):
    """x of every GPU, NIC and leaf (servers side by side, leaves over their NICs)."""
    g, nics = cluster.gpus_per_server, cluster.nics_per_server
    gpu_x = [s * (g + 1) + i for s in range(cluster.servers) for i in range(g)]
    nic_x = []
    for s in range(cluster.servers):
        for k in range(nics):
            members = [gpu_x[s * g + i] for i in range(g) if i * nics // g == k]
            nic_x.append(sum(members) / len(members))
    leaf_members = [[] for _ in range(cluster.num_leaves)]
    for s in range(cluster.servers):
        for k in range(nics):
            leaf_members[cluster._leaf_of_nic(s, k)].append(nic_x[s * nics + k])
    leaf_x = [sum(m) / len(m) for m in leaf_members]
    if not cluster.rail_optimized:
        return gpu_x, nic_x, leaf_x
    # rails of one group: spread evenly over the group's width, in rail order
    for group in range(cluster.groups):
        ids = range(group * nics, (group + 1) * nics)
        lo, hi = min(min(leaf_members[i]) for i in ids), max(max(leaf_members[i]) for i in ids)
        for k, i in enumerate(ids):
            leaf_x[i] = lo + (hi - lo) * (k + 0.5) / nics
    return gpu_x, nic_x, leaf_x


def _edges(cluster: T.Cluster, loads: dict):
    """Physical links as (x0, y0, x1, y1, load per direction (max of both), hover)."""
    gpu_x, nic_x, leaf_x = _positions(cluster)
    out = []
    nics = cluster.nics_per_server
    for gpu, x in enumerate(gpu_x):  # PCIe to the NIC: drawn, not modelled
        out.append(
            (
                x,
                _Y["gpu"],
                nic_x[cluster.nic_of(gpu)],
                _Y["nic"],
                0.0,
                f"GPU {gpu} → its NIC over PCIe (not modelled)",
            )
        )
    for gpu, x in enumerate(gpu_x):
        o, i = loads.get(T.Link("nvlink-out", gpu), 0.0), loads.get(T.Link("nvlink-in", gpu), 0.0)
        out.append(
            (
                x,
                _Y["gpu"],
                x,
                _Y["nvswitch"],
                max(o, i),
                f"GPU {gpu} NVLink port: {o / 1e9:.3g} GB out, {i / 1e9:.3g} GB in",
            )
        )
    for nic, x in enumerate(nic_x):
        leaf = cluster._leaf_of_nic(nic // nics, nic % nics)
        o, i = loads.get(T.Link("nic-out", nic), 0.0), loads.get(T.Link("nic-in", nic), 0.0)
        out.append(
            (
                x,
                _Y["nic"],
                leaf_x[leaf],
                _Y["leaf"],
                max(o, i),
                f"NIC {nic} (server {nic // nics}) → {cluster.leaf_name(leaf)}: "
                f"{o / 1e9:.3g} GB out, {i / 1e9:.3g} GB in",
            )
        )
    for leaf, x in enumerate(leaf_x):
        u, d = loads.get(T.Link("leaf-up", leaf), 0.0), loads.get(T.Link("leaf-down", leaf), 0.0)
        out.append(
            (
                x,
                _Y["leaf"],
                x,
                _Y["spine"],
                max(u, d),
                f"{cluster.leaf_name(leaf)} ↔ spine: {u / 1e9:.3g} GB up, "
                f"{d / 1e9:.3g} GB down (uplink {cluster.leaf_uplink_gb_per_s(leaf):g}"
                " GB/s per direction)",
            )
        )
    return out


def _draw_cluster(fig, cluster: T.Cluster, traffic: T.Traffic, row: int, peak: float):
    units = cluster.servers * (cluster.gpus_per_server + 1) + 1.5
    size = min(17.0, 0.9 * 620 / units)  # GPU marker (px) for a ~650 px wide plot
    gpu_x, nic_x, leaf_x = _positions(cluster)
    g = cluster.gpus_per_server
    loads = T.link_loads(cluster, traffic)
    xs, ys = {}, {}
    for x0, y0, x1, y1, load, _ in _edges(cluster, loads):
        key = round(6 * load / peak) if load > 0 else -1
        xs.setdefault(key, []).extend([x0, x1, None])
        ys.setdefault(key, []).extend([y0, y1, None])
    for key in sorted(xs):
        fig.add_scatter(
            x=xs[key],
            y=ys[key],
            mode="lines",
            hoverinfo="skip",
            showlegend=False,
            line=dict(
                color=NEUTRAL if key < 0 else PATTERN_COLOR, width=1 if key < 0 else 1.5 + key
            ),
            row=row,
            col=1,
        )
    edges = _edges(cluster, loads)
    fig.add_scatter(
        x=[(e[0] + e[2]) / 2 for e in edges],
        y=[(e[1] + e[3]) / 2 for e in edges],
        mode="markers",
        marker=dict(size=8, opacity=0),
        hovertext=[e[5] for e in edges],
        hoverinfo="text",
        showlegend=False,
        row=row,
        col=1,
    )
    for s in range(cluster.servers):  # server boxes and their NVSwitch
        x0, x1 = gpu_x[s * g] - 0.45, gpu_x[s * g + g - 1] + 0.45
        fig.add_shape(
            type="rect", x0=x0, x1=x1, y0=-0.35, y1=2.4, line=dict(color="#888888"), row=row, col=1
        )
        fig.add_shape(
            type="line",
            x0=x0 + 0.1,
            x1=x1 - 0.1,
            y0=0,
            y1=0,
            line=dict(color="#444444", width=5),
            row=row,
            col=1,
        )
    left, right = min(gpu_x) - 0.5, max(gpu_x) + 0.5
    fig.add_shape(
        type="line",
        x0=left,
        x1=right,
        y0=_Y["spine"],
        y1=_Y["spine"],
        line=dict(color="#444444", width=7),
        row=row,
        col=1,
    )
    fig.add_scatter(
        x=gpu_x,
        y=[_Y["gpu"]] * len(gpu_x),
        mode="markers+text" if size >= 12 else "markers",
        text=[str(i % g) for i in range(len(gpu_x))],
        textfont=dict(color="white", size=10),
        marker=dict(
            size=size,
            color=[rank_color(i % g) for i in range(len(gpu_x))],
            line=dict(color="white", width=1),
        ),
        hovertext=[
            f"GPU {i}: server {i // g}, local rank {i % g}, rail {cluster.rail_of(i)}"
            for i in range(len(gpu_x))
        ],
        hoverinfo="text",
        showlegend=False,
        row=row,
        col=1,
    )
    nics = cluster.nics_per_server
    fig.add_scatter(
        x=nic_x,
        y=[_Y["nic"]] * len(nic_x),
        mode="markers",
        marker=dict(symbol="square", size=min(9.0, size), color="#666666"),
        hovertext=[f"NIC {k} of server {k // nics}" for k in range(len(nic_x))],
        hoverinfo="text",
        showlegend=False,
        row=row,
        col=1,
    )
    leaf_colors = [
        rank_color(k % nics) if cluster.rail_optimized else "#444444"
        for k in range(cluster.num_leaves)
    ]
    fig.add_scatter(
        x=leaf_x,
        y=[_Y["leaf"]] * len(leaf_x),
        mode="markers",
        marker=dict(
            symbol="diamond",
            size=min(15.0, size + 4),
            color=leaf_colors,
            line=dict(color="white", width=1),
        ),
        hovertext=[cluster.leaf_name(k) for k in range(cluster.num_leaves)],
        hoverinfo="text",
        showlegend=False,
        row=row,
        col=1,
    )


_LINK_WORDS = {
    "nvlink-out": "NVLink port",
    "nvlink-in": "NVLink port",
    "nic-out": "NIC",
    "nic-in": "NIC",
    "leaf-up": "leaf uplink",
    "leaf-down": "leaf uplink",
}


def _fabric_title(cluster: T.Cluster, traffic: T.Traffic) -> str:
    tiers = T.tier_bytes(cluster, traffic)
    timing = T.traffic_time(cluster, traffic)
    fabric = (
        f"<b>rail-optimized</b>: NIC i → rail leaf i, {cluster.servers_per_leaf} servers per group"
        if cluster.rail_optimized
        else f"<b>top-of-rack</b>: all NICs of {cluster.servers_per_leaf} servers → one leaf"
    )
    neck = f", bottleneck: {_LINK_WORDS[timing.bottleneck.kind]}" if timing.bottleneck else ""
    return (
        f"{fabric}<br>bytes via NVLink {tiers['nvlink'] / 1e9:.3g} GB · one leaf "
        f"{tiers['leaf'] / 1e9:.3g} GB · spine {tiers['spine'] / 1e9:.3g} GB · "
        f"{timing.seconds * 1e3:.3g} ms{neck}"
    )


def traffic_figure(
    pattern,
    servers: int,
    gpus_per_server: int,
    nbytes: float = 1e9,
    rail_group: int = 4,
    tor_group: int = 2,
    headline: str | None = None,
) -> go.Figure:
    """The same traffic ``pattern`` (a function cluster -> Traffic) on a rail-optimized
    fabric (top) and a top-of-rack fabric (bottom). Orange line width is proportional to
    the bytes a link carries in its busier direction; hover a link for both directions.
    ``nbytes`` is the size the subtitle states (the pattern decides what it sends).
    ``headline`` is the title: what the figure shows (default: the pattern's name); the
    subtitle names the pattern, the cluster and the size."""
    pattern = checks.function("pattern", pattern)
    if headline is not None:
        headline = checks.text("headline", headline, 120)
    servers = checks.integer("servers", servers, 1, MAX_DRAWN_GPUS)
    gpus_per_server = checks.integer("gpus_per_server", gpus_per_server, 1, MAX_DRAWN_GPUS)
    if servers * gpus_per_server > MAX_DRAWN_GPUS:
        raise checks.fail(
            "servers * gpus_per_server",
            f"at most {MAX_DRAWN_GPUS} GPUs in a drawing",
            servers * gpus_per_server,
        )
    nbytes = checks.positive("nbytes", nbytes)
    rail_group = checks.integer("rail_group", rail_group, 1, MAX_DRAWN_GPUS)
    tor_group = checks.integer("tor_group", tor_group, 1, MAX_DRAWN_GPUS)
    clusters = [
        T.Cluster(servers, gpus_per_server, rail_optimized=True, servers_per_leaf=rail_group),
        T.Cluster(servers, gpus_per_server, rail_optimized=False, servers_per_leaf=tor_group),
    ]
    traffics = [checks.instance("pattern(cluster)", pattern(c), T.Traffic) for c in clusters]
    peak = max(
        max(T.link_loads(c, t).values(), default=1.0)
        for c, t in zip(clusters, traffics, strict=True)
    )
    fig = make_subplots(
        rows=2,
        cols=1,
        vertical_spacing=0.14,
        subplot_titles=[_fabric_title(c, t) for c, t in zip(clusters, traffics, strict=True)],
    )
    for row, (c, t) in enumerate(zip(clusters, traffics, strict=True), start=1):
        _draw_cluster(fig, c, t, row, peak)
    width = servers * (gpus_per_server + 1)
    for row in (1, 2):
        fig.update_xaxes(visible=False, range=[-1.5, width], row=row, col=1)
        fig.update_yaxes(
            range=[-0.7, 6.2],
            row=row,
            col=1,
            showgrid=False,
            zeroline=False,
            tickvals=[0, 1, 2, 4, 5.6],
            ticktext=["NVSwitch", "GPU", "NIC", "leaf", "spine"],
        )
    fig.update_annotations(font_size=12)
    fig.update_layout(
        template=template(),
        title_text=f"{headline or traffics[0].name}<br><sup>{traffics[0].name}, {servers} "
        f"servers × {gpus_per_server} GPUs, {nbytes / 1e9:g} GB per GPU</sup>",
        height=740,
        margin=dict(t=130, l=80, r=10),
    )
    return fig


def allreduce_times(timings: dict, title: str, nccl_times: dict | None = None) -> go.Figure:
    """Horizontal bars: the fluid-bound time of each scenario of
    :func:`scaleout.topology.allreduce_scenarios` (a mapping of label -> Timing), split into
    latency and bandwidth terms, and, below them, NCCL's model for the scenarios of
    :func:`scaleout.topology.nccl_allreduce_scenarios` (``nccl_times``: label ->
    :class:`scaleout.nccl.model.Prediction`, one bar each, labelled with NCCL's algorithm and
    protocol)."""
    if not isinstance(timings, Mapping) or not 1 <= len(timings) <= MAX_BARS:
        raise checks.fail("timings", f"a mapping of 1 to {MAX_BARS} labels -> Timing", timings)
    for label, timing in timings.items():
        checks.text("timings label", label, 80)
        checks.instance("timings value", timing, T.Timing)
    nccl_times = {} if nccl_times is None else nccl_times
    if not isinstance(nccl_times, Mapping) or len(timings) + len(nccl_times) > MAX_BARS:
        raise checks.fail("nccl_times", f"None or a mapping of labels -> Prediction, at most "
                          f"{MAX_BARS} bars in all", nccl_times)  # fmt: skip
    for label, pred in nccl_times.items():
        checks.text("nccl_times label", label, 80)
        checks.instance("nccl_times value", pred, nccl.Prediction, "an nccl.Prediction")
        if np.ndim(pred.seconds) != 0:
            raise checks.fail("nccl_times value", "a Prediction for one size", pred.nbytes)
        if label in timings:
            raise checks.fail("nccl_times label", "a label not among the timings", label)
    title = checks.text("title", title, 400)
    names = (list(timings) + list(nccl_times))[::-1]
    fluid = [n for n in names if n in timings]
    fig = go.Figure(layout=dict(template=template()))
    for label, key, color in (
        ("fluid bound, GPUs reduce: bandwidth term", "bandwidth_s", rank_color(0)),
        ("fluid bound, GPUs reduce: latency term (steps × α)", "latency_s", rank_color(1)),
    ):
        fig.add_bar(
            y=fluid,
            x=[getattr(timings[n], key) * 1e3 for n in fluid],
            orientation="h",
            name=label,
            marker_color=color,
            hovertemplate="%{y}: %{x:.3g} ms<extra>" + label + "</extra>",
        )
    seconds = {n: timings[n].seconds if n in timings else nccl_times[n].seconds for n in names}
    if nccl_times:
        modelled = [n for n in names if n in nccl_times]
        fig.add_bar(
            y=modelled,
            x=[nccl_times[n].seconds * 1e3 for n in modelled],
            orientation="h",
            name=f"NCCL's cost model ({nccl.RELEASE})",
            marker_color=rank_color(2),
            customdata=[f"{nccl_times[n].algorithm}/{nccl_times[n].protocol}" for n in modelled],
            hovertemplate="%{y}: %{x:.3g} ms (%{customdata})<extra>NCCL's model</extra>",
        )
    text = {n: f"  {seconds[n] * 1e3:.3g} ms" for n in names}
    for n, pred in nccl_times.items():
        text[n] += f" ({pred.algorithm}/{pred.protocol})"
    fig.add_scatter(
        y=names,
        x=[seconds[n] * 1e3 for n in names],
        mode="text",
        text=[text[n] for n in names],
        textposition="middle right",
        showlegend=False,
        hoverinfo="skip",
    )
    top = max(max(seconds.values()) * 1e3, 1e-9)
    fig.update_layout(
        title_text=title,
        barmode="stack",
        xaxis=dict(title_text="time (ms)", range=[0, 1.45 * top]),
        yaxis=dict(title_text=""),
        height=220 + 36 * len(names),
        margin=dict(l=290, t=80, r=10),
        legend=dict(orientation="h", x=0.0, y=-0.2, xanchor="left", yanchor="top"),
    )
    return fig


def measured_bandwidth(sizes, p2p_bytes_per_s, memcpy_bytes_per_s, busbw: dict) -> go.Figure:
    """Left: point-to-point bandwidth between two processes against message size, with the
    machine's memory-copy rate. Right: all-reduce bus bandwidth by process count (a
    mapping of process count -> bytes/s). All bandwidths in bytes/s."""
    sizes = checks.array("sizes", sizes, ndim=1, low=0.0, low_open=True, max_size=MAX_POINTS)
    p2p = checks.array(
        "p2p_bytes_per_s", p2p_bytes_per_s, ndim=1, low=0.0, low_open=True, max_size=MAX_POINTS
    )
    if p2p.shape != sizes.shape:
        raise checks.fail("p2p_bytes_per_s", f"{sizes.size} values, one per size", p2p_bytes_per_s)
    memcpy_bytes_per_s = checks.positive("memcpy_bytes_per_s", memcpy_bytes_per_s)
    if not isinstance(busbw, Mapping) or not 1 <= len(busbw) <= MAX_BARS:
        raise checks.fail("busbw", f"a mapping of 1 to {MAX_BARS} process counts -> bytes/s", busbw)
    busbw = {
        checks.integer("busbw process count", p, 1, 2**20): checks.positive("busbw value", b)
        for p, b in busbw.items()
    }
    fig = make_subplots(
        rows=1,
        cols=2,
        column_widths=[0.62, 0.38],
        horizontal_spacing=0.12,
        subplot_titles=("send/recv, 2 processes", "all-reduce, 16 MB"),
    )
    memcpy = memcpy_bytes_per_s / 1e9
    fig.add_scatter(
        x=sizes.tolist(),
        y=(p2p / 1e9).tolist(),
        mode="lines+markers",
        name="send/recv, per direction",
        marker=dict(color=rank_color(0), size=8),
        line=dict(color=rank_color(0)),
        row=1,
        col=1,
    )
    ranks = sorted(busbw)
    fig.add_bar(
        x=[str(p) for p in ranks],
        y=[busbw[p] / 1e9 for p in ranks],
        name="all-reduce busbw",
        marker_color=rank_color(2),
        row=1,
        col=2,
    )
    for col in (1, 2):
        fig.add_hline(y=memcpy, line=dict(color=rank_color(3), dash="dash"), row=1, col=col)
    fig.add_scatter(
        x=[None],
        y=[None],
        mode="lines",
        name="memory copy (one core)",
        line=dict(color=rank_color(3), dash="dash"),
    )
    fig.update_xaxes(type="log", title_text="message size (bytes)", row=1, col=1)
    fig.update_xaxes(title_text="processes", type="category", row=1, col=2)
    fig.update_yaxes(title_text="GB/s (per direction)", rangemode="tozero", row=1, col=1)
    fig.update_yaxes(title_text="bus bandwidth (GB/s)", rangemode="tozero", row=1, col=2)
    fig.update_layout(
        template=template(),
        height=460,
        margin=dict(t=90),
        legend=dict(orientation="h", x=0.0, y=-0.22, xanchor="left", yanchor="top"),
        title_text="Measured on this machine (gloo over loopback)<br><sup>dashed: one core's "
        "memory-copy rate</sup>",
    )
    return fig
