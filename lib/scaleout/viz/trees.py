"""Figures for the chapter "Double binary trees" (chapters/09_double_binary_tree.ipynb).

Everything drawn comes from :mod:`scaleout.trees` (NCCL's trees, the pipelined schedule
replayed by :func:`scaleout.collectives.replay`, the alpha-beta costs) and
:mod:`scaleout.costmodel` (the ring); this module only arranges it. Tree 1 and tree 2 each
have one colour (Paul Tol's colour-blind-safe indigo and wine); ranks keep the book's rank
colours, drawn as the rim of each node, with the rank number inside.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .. import checks
from .. import collectives as C
from .. import costmodel as M
from .. import trees as T
from .animate import animation
from .theme import NEUTRAL, rank_color, template

TREE_COLORS = ("#332288", "#882255")  # tree 1, tree 2
ROLE_SYMBOLS = {"root": "diamond", "interior": "circle", "leaf": "square"}
_LINES = {"ring": ("#000000", "solid"), "one tree": (TREE_COLORS[0], "dot"),
          "two trees": (TREE_COLORS[1], "dash")}  # fmt: skip
MAX_POINTS = 2000  # points per curve of a cost figure


def _check_n(n: int, low: int = 2, high: int = 64, name: str = "n") -> int:
    return checks.integer(name, n, low, high)


def _link(link: str) -> str:
    return "" if link == "" else checks.text("link", link, 80)


def _sizes(name: str, values) -> np.ndarray:
    return checks.array(name, values, ndim=1, low=0.0, low_open=True, max_size=MAX_POINTS)


def _scaled(name: str, values, scale: float) -> np.ndarray:
    """``values * scale`` for a figure axis; an overflow raises (NaN, "no crossover", is a
    gap in the line)."""
    with np.errstate(over="ignore", invalid="ignore"):
        out = np.asarray(values, dtype=np.float64) * scale
    checks.finite_result(name, np.nan_to_num(out, nan=0.0, posinf=np.inf, neginf=-np.inf))
    return out


def _roles(tree: T.BinaryTree) -> list[str]:
    return ["root" if p < 0 else "leaf" if leaf else "interior"
            for p, leaf in zip(tree.parent, tree.is_leaf, strict=True)]  # fmt: skip


def _positions(n: int, which: int, nccl_version) -> np.ndarray:
    """x of each rank: its in-order position, so both trees read left to right like NCCL's
    drawings. A shifted tree 2 starts at rank 1, so its rank 0 is drawn last (x = n)."""
    r = np.arange(n)
    if which == 1 and T._second_tree_is_shifted(n, tuple(nccl_version)):
        return (r - 1) % n + 1
    return r


def _edges(tree: T.BinaryTree, x: np.ndarray, depth: np.ndarray, ranks=None):
    """x, y lists with None between segments, child to parent, for ``ranks`` (default all)."""
    xs, ys = [], []
    ranks = np.flatnonzero(tree.parent >= 0) if ranks is None else ranks
    for r in ranks:
        p = tree.parent[r]
        xs += [x[r], x[p], None]
        ys += [depth[r], depth[p], None]
    return xs, ys


def _node_traces(tree, x, depth, roles, other_roles, which, xaxis, yaxis, size):
    traces = []
    for role, symbol in ROLE_SYMBOLS.items():
        ranks = [r for r in range(tree.n) if roles[r] == role]
        hover = [
            f"rank {r}: {role} of tree {which + 1}, {other_roles[r]} of tree {2 - which}"
            f"<br>parent {tree.parent[r]}, children "
            f"{[int(c) for c in tree.children[r] if c >= 0]}"
            for r in ranks
        ]
        traces.append(go.Scatter(
            x=[x[r] for r in ranks], y=[depth[r] for r in ranks], mode="markers+text",
            text=[str(r) for r in ranks], textfont=dict(size=max(8, size // 2), color="#222222"),
            marker=dict(symbol=symbol, size=size, color="white",
                        line=dict(width=3, color=[rank_color(r) for r in ranks])),
            hovertext=hover, hoverinfo="text", name=role, showlegend=False,
            xaxis=xaxis, yaxis=yaxis,
        ))  # fmt: skip
    return traces


def trees_figure(n: int, nccl_version=T.RULE_CHANGED) -> go.Figure:
    """NCCL's two trees for n ranks (2..64), one panel each; node shape = role in that tree."""
    n, nccl_version = _check_n(n), T._version(nccl_version)
    pair = T.double_binary_tree(n, nccl_version)
    roles = [_roles(t) for t in pair]
    shifted = T._second_tree_is_shifted(n, tuple(nccl_version))
    how = "tree 1 shifted by one rank" if shifted else "tree 1 mirrored"
    height = max(560, 320 + 110 * int(M.ceil_log2(n)))
    fig = make_subplots(rows=2, cols=1, vertical_spacing=85 / (height - 200), subplot_titles=(
        "tree 1 (ncclGetBtree), root 0",
        f"tree 2 = {how}, root {T.dtree_roots(n, nccl_version)[1]}"))  # fmt: skip
    size = 26 if n <= 16 else 20 if n <= 32 else 15
    for which, tree in enumerate(pair):
        x, depth = _positions(n, which, nccl_version), tree.depths()
        ex, ey = _edges(tree, x, depth)
        axis = "" if which == 0 else "2"
        fig.add_scatter(x=ex, y=ey, mode="lines", line=dict(color=TREE_COLORS[which], width=2),
                        hoverinfo="skip", name=f"tree {which + 1} edge",
                        xaxis=f"x{axis}", yaxis=f"y{axis}")  # fmt: skip
        fig.add_traces(_node_traces(tree, x, depth, roles[which], roles[1 - which], which,
                                    f"x{axis}", f"y{axis}", size))  # fmt: skip
    for role, symbol in ROLE_SYMBOLS.items():  # legend only: shapes in a neutral colour
        fig.add_scatter(x=[None], y=[None], mode="markers", name=role,
                        marker=dict(symbol=symbol, size=14, color="white",
                                    line=dict(width=3, color="#666666")))  # fmt: skip
    depth = pair[0].depth
    fig.update_layout(
        template=template(),
        title_text=f"NCCL's two trees for p = {n} ranks ({'odd' if n % 2 else 'even'} p)",
        height=height, margin=dict(t=90, b=110),
        legend=dict(orientation="h", x=0, y=-70 / (height - 200), yanchor="top"),
    )  # fmt: skip
    every = 1 if n <= 16 else 4
    for which in range(2):
        x = _positions(n, which, nccl_version)
        ticks = sorted(range(0, n, every), key=lambda r: x[r])
        fig.update_xaxes(
            title_text="rank, in in-order position (left subtree < rank < right subtree)",
            range=[-0.7, n + 0.7], showgrid=False, tickvals=[int(x[r]) for r in ticks],
            ticktext=[str(r) for r in ticks], row=which + 1, col=1,
        )  # fmt: skip
    fig.update_yaxes(title_text="depth (edges)", autorange="reversed",
                     range=[depth + 0.5, -0.5], tickvals=list(range(depth + 1)))  # fmt: skip
    return fig


def allreduce_animation(p: int, chunks: int = 4, trees: int = 2) -> go.Figure:
    """The pipelined all-reduce step by step: active edges of each tree, and how many ranks'
    data each chunk of each rank holds (Σ: all p). From :func:`scaleout.trees.tree_allreduce`
    run on ones, one element per chunk. At most 60 frames: chunks <= 60 - 2 ceil(log2 p)."""
    p, trees = _check_n(p, 2, 16, "p"), T._trees(trees)
    chunks = checks.integer("chunks", chunks, 1, 60 - 2 * int(M.ceil_log2(p)))
    sched = T.tree_allreduce_schedule(p, trees * chunks, chunks, trees)
    states = C.replay(np.ones((p, trees * chunks)), sched.steps(), trajectory=True)
    pair = T.double_binary_tree(p)[:trees]
    place = [(_positions(p, t, T.RULE_CHANGED), tree.depths()) for t, tree in enumerate(pair)]
    cols = [f"T{t + 1} c{c}" for t in range(trees) for c in range(chunks)]
    frames, labels, titles = [], [], []
    for s, state in enumerate(states):  # state s = after step s (0: the inputs)
        traces = []
        for t, tree in enumerate(pair):
            (x, depth), ax = place[t], dict(xaxis=f"x{t + 1}", yaxis=f"y{t + 1}")
            ex, ey = _edges(tree, x, depth)
            traces.append(
                go.Scatter(
                    x=ex,
                    y=ey,
                    mode="lines",
                    hoverinfo="skip",
                    **ax,
                    line=dict(color=NEUTRAL, width=1.5),
                    showlegend=False,
                )
            )
            mid_x, mid_y, mid_text = [], [], []
            for up in (True, False):
                sel = (sched.step == s - 1) & (sched.tree == t) & (sched.up == up)
                kids = sched.src[sel] if up else sched.dst[sel]
                kx, ky = _edges(tree, x, depth, kids)
                traces.append(go.Scatter(
                    x=kx, y=ky, mode="lines", hoverinfo="skip", showlegend=False, **ax,
                    line=dict(color=TREE_COLORS[t], width=5, dash="solid" if up else "dot"),
                ))  # fmt: skip
                mid_x += [(x[k] + x[tree.parent[k]]) / 2 for k in kids]
                mid_y += [(depth[k] + depth[tree.parent[k]]) / 2 for k in kids]
                mid_text += [f"{'↑' if up else '↓'}c{c}" for c in sched.chunk[sel]]
            traces.append(go.Scatter(
                x=mid_x, y=mid_y, text=mid_text, mode="text", textposition="middle right",
                textfont=dict(color=TREE_COLORS[t], size=12), hoverinfo="skip",
                showlegend=False, **ax,
            ))  # fmt: skip
            traces.append(go.Scatter(
                x=x, y=depth, mode="markers+text", text=[str(r) for r in range(p)],
                marker=dict(size=22, color="white",
                            line=dict(width=3, color=[rank_color(r) for r in range(p)])),
                hovertext=[f"rank {r}" for r in range(p)], hoverinfo="text",
                showlegend=False, **ax,
            ))  # fmt: skip
        count = state.astype(int)
        traces.append(go.Heatmap(
            z=count, x=cols, y=[f"rank {r}" for r in range(p)], zmin=1, zmax=p,
            text=[["Σ" if c == p else str(c) for c in row] for row in count],
            texttemplate="%{text}", colorscale=[[0, "#F2EEF7"], [1, "#3F007D"]], xgap=2, ygap=2,
            colorbar=dict(title=dict(text="ranks summed"), len=0.3, y=0.15),
            hovertemplate="%{y}, %{x}: sum of %{z} ranks<extra></extra>",
            xaxis=f"x{trees + 1}", yaxis=f"y{trees + 1}",
        ))  # fmt: skip
        frames.append(traces)
        labels.append("start" if s == 0 else str(s))
        if s == 0:
            titles.append(f"p = {p}, {chunks} chunks per tree: every rank holds only its data")
        else:
            sel = sched.step == s - 1
            nup, ndown = int(sched.up[sel].sum()), int((~sched.up[sel]).sum())
            titles.append(f"step {s}/{sched.nsteps}: {nup} messages go up, {ndown} come down")
    names = [f"tree {t + 1}: solid ↑ partial sums, dotted ↓ final sums" for t in range(trees)]
    grid = make_subplots(
        rows=trees + 1,
        cols=1,
        row_heights=[1.0] * trees + [1.2],
        vertical_spacing=0.13,
        subplot_titles=names + ["chunks on each rank"],
    )
    layout = grid.layout.to_plotly_json()
    layout.pop("template", None)
    depth = pair[0].depth
    for t in range(trees):
        x = place[t][0]
        layout[f"xaxis{t + 1 if t else ''}"].update(
            range=[-0.7, p + 0.7], showgrid=False, title_text="rank, in in-order position",
            tickvals=[int(v) for v in x], ticktext=[str(r) for r in range(p)],
        )  # fmt: skip
        layout[f"yaxis{t + 1 if t else ''}"].update(
            range=[depth + 0.5, -0.5], title_text="depth", tickvals=list(range(depth + 1))
        )
    layout[f"xaxis{trees + 1}"].update(title_text="chunk (tree, index)")
    layout[f"yaxis{trees + 1}"].update(autorange="reversed", title_text="rank")
    return animation(
        frames,
        labels,
        frame_titles=titles,
        slider_prefix="step ",
        height=380 + 190 * trees + 26 * p,
        title_font_size=14,
        margin=dict(t=100),
        **layout,
    )


def cost_vs_ranks(alpha: float, beta: float, link: str = "", ranks=None) -> go.Figure:
    """Three panels against rank count: the latency floor (1 chunk), the bandwidth term
    (many chunks) and the crossover size below which each tree beats the ring."""
    ranks = np.unique(np.round(np.logspace(np.log10(2), np.log10(65536), 97))) if (
        ranks is None) else M._ranks(ranks, "ranks")  # fmt: skip
    if ranks.ndim != 1 or ranks.size > MAX_POINTS or ranks.min() < 2:
        raise checks.fail("ranks", f"a 1-D array of at most {MAX_POINTS} rank counts >= 2", ranks)
    alpha, beta, link = checks.positive("alpha", alpha), checks.positive("beta", beta), _link(link)
    fig = make_subplots(
        rows=3,
        cols=1,
        vertical_spacing=0.13,
        subplot_titles=(
            "latency floor: time for a message of 0 bytes",
            "bandwidth term: busiest port's bytes per byte of n (many chunks)",
            "crossover: the tree beats the ring below this message size",
        ),
    )
    lat = {"ring": M.collective_time("allreduce", "ring", 0.0, ranks, alpha, beta),
           "one tree": T.tree_allreduce_time(0.0, ranks, alpha, beta, 1, 1),
           "two trees": T.tree_allreduce_time(0.0, ranks, alpha, beta, 1, 2)}  # fmt: skip
    per_byte = {
        "ring": M.ALGORITHMS[("allreduce", "ring")].beta_per_byte(ranks),
        "one tree": T.port_load(ranks, 1),
        "two trees": T.port_load(ranks, 2),
    }
    cross = {"one tree": T.crossover_vs_ring(ranks, alpha, beta, 1),
             "two trees": T.crossover_vs_ring(ranks, alpha, beta, 2)}  # fmt: skip
    for row, (data, unit) in enumerate(((lat, "µs"), (per_byte, "B/B"), (cross, "B")), 1):
        for name, y in data.items():
            color, dash = _LINES[name]
            fig.add_scatter(
                x=ranks, y=_scaled("the curves", y, 1e6 if row == 1 else 1.0), mode="lines",
                name=name, legendgroup=name, showlegend=row == 1,
                line=dict(color=color, dash=dash, width=2.5),
                hovertemplate=f"{name}, p = %{{x}}: %{{y:.4g}} {unit}<extra></extra>",
                row=row, col=1,
            )  # fmt: skip
    ticks = [2, 16, 128, 1024, 8192, 65536]
    fig.update_xaxes(
        type="log",
        title_text="ranks p",
        tickvals=ticks,
        tickangle=0,
        ticktext=[str(t) for t in ticks],
        range=np.log10([1.8, 80000]),
    )
    fig.update_yaxes(type="log", dtick=1, title_text="time (µs)", row=1, col=1)
    fig.update_yaxes(title_text="bytes per byte (B/B)", range=[0, 3.3], row=2, col=1)
    fig.update_yaxes(type="log", dtick=2, title_text="message size (bytes)", row=3, col=1)
    fig.update_layout(
        template=template(), height=920, margin=dict(t=90, b=110),
        legend=dict(orientation="h", x=0, y=-0.08, yanchor="top", xanchor="left"),
        title_text=f"All-reduce vs ranks ({_link_text(link, alpha, beta)})",
    )  # fmt: skip
    return fig


def _link_text(link: str, alpha: float, beta: float) -> str:
    return f"{link + ': ' if link else ''}α = {alpha * 1e6:.3g} µs, {1 / beta / 1e9:.3g} GB/s"


def time_vs_size(p: int, alpha: float, beta: float, link: str = "", nbytes=None) -> go.Figure:
    """All-reduce time against message size on p ranks: ring, one tree, two trees (best
    chunk count), with the crossovers against the ring marked."""
    nbytes = np.logspace(1, 11, 101) if nbytes is None else _sizes("nbytes", nbytes)
    p = checks.integer("p", p, 2, M.MAX_RANKS)
    alpha, beta, link = checks.positive("alpha", alpha), checks.positive("beta", beta), _link(link)
    fig = go.Figure(layout=dict(template=template()))
    ring = M.collective_time("allreduce", "ring", nbytes, p, alpha, beta)
    curves = {"ring": ring, "one tree": T.best_tree_time(nbytes, p, alpha, beta, 1),
              "two trees": T.best_tree_time(nbytes, p, alpha, beta, 2)}  # fmt: skip
    for name, t in curves.items():
        color, dash = _LINES[name]
        fig.add_scatter(
            x=nbytes,
            y=_scaled("the times", t, 1e6),
            name=name,
            mode="lines",
            line=dict(color=color, dash=dash, width=2.5),
            hovertemplate=f"{name}: %{{x:.3s}}B, %{{y:.4g}} µs<extra></extra>",
        )
    for trees, name in ((1, "one tree"), (2, "two trees")):
        x = T.crossover_vs_ring(p, alpha, beta, trees)
        if np.isfinite(x) and nbytes.min() <= x <= nbytes.max():
            y = M.collective_time("allreduce", "ring", x, p, alpha, beta) * 1e6
            fig.add_scatter(
                x=[x],
                y=[y],
                mode="markers",
                showlegend=False,
                marker=dict(size=11, color="black", symbol="x"),
                hovertemplate=f"ring = {name} at %{{x:.3s}}B<extra></extra>",
            )
    fig.update_layout(
        title_text=f"p = {p} ranks ({_link_text(link, alpha, beta)})", margin=dict(t=80),
        xaxis=dict(type="log", title_text="message size per rank n (bytes)"),
        yaxis=dict(type="log", dtick=1, title_text="time (µs)"),
        height=420, legend=dict(x=0.02, y=0.98),
    )  # fmt: skip
    return fig


def traffic_figure(p: int = 8, chunks: int = 8) -> go.Figure:
    """Flows into and out of each rank per step: two-tree all-reduce against the ring."""
    p, chunks = _check_n(p, 2, 16, "p"), checks.integer("chunks", chunks, 1, 32)
    tree_steps = T.tree_allreduce_schedule(p, 2 * chunks, chunks, 2).steps()
    ring_steps = C.ring_allreduce_schedule(p, p)
    data = [T.flows_per_step(tree_steps, p), T.flows_per_step(ring_steps, p)]
    zmax = int(max(d.max() for pair in data for d in pair))
    fig = make_subplots(rows=2, cols=2, horizontal_spacing=0.1, vertical_spacing=0.16,
                        subplot_titles=("two trees: flows in", "two trees: flows out",
                                        "ring: flows in", "ring: flows out"))  # fmt: skip
    for row, (fin, fout) in enumerate(data, 1):
        for col, z in enumerate((fin, fout), 1):
            fig.add_heatmap(
                z=z.T, x=np.arange(1, z.shape[0] + 1), y=np.arange(p), zmin=0, zmax=zmax,
                text=z.T, texttemplate="%{text}", xgap=1, ygap=1, showscale=row == col == 1,
                colorscale=[[0, "#FFFFFF"], [0.5, "#FDAE61"], [1, "#A50026"]],
                colorbar=dict(title=dict(text="flows"), len=0.5, y=0.78),
                hovertemplate="step %{x}, rank %{y}: %{z} flows<extra></extra>", row=row, col=col,
            )  # fmt: skip
    fig.update_xaxes(title_text="step")
    fig.update_yaxes(title_text="rank", autorange="reversed", dtick=1)
    fig.update_layout(template=template(), height=620, margin=dict(t=90),
                      title_text=f"Peers per rank and step, p = {p}, {chunks} chunks")  # fmt: skip
    return fig


def measured_figure(nbytes, seconds: dict, p: int) -> go.Figure:
    """Measured times of hand-written all-reduces against message size, one line each."""
    nbytes, p = _sizes("nbytes", nbytes), checks.integer("p", p, 1, M.MAX_RANKS)
    if not isinstance(seconds, dict) or not 1 <= len(seconds) <= 8:
        raise checks.fail("seconds", "a dict of 1 to 8 {name: times in seconds}", seconds)
    curves = {}
    for name, t in seconds.items():
        t = checks.array(f"seconds[{checks.text('name', name, 40)!r}]", t, ndim=1, low=0.0,
                         low_open=True, max_size=MAX_POINTS)  # fmt: skip
        if t.shape != nbytes.shape:
            raise checks.fail(f"seconds[{name!r}]", f"one time per size ({nbytes.size})", t.size)
        curves[name] = t
    fig = go.Figure(layout=dict(template=template()))
    for name, t in curves.items():
        color, dash = _LINES.get(name, (rank_color(1), "dashdot"))
        fig.add_scatter(
            x=nbytes,
            y=_scaled("the times", t, 1e3),
            name=name,
            mode="lines+markers",
            line=dict(color=color, dash=dash, width=2.5),
        )
    fig.update_layout(
        title_text=f"Measured: {p} gloo processes, this machine", margin=dict(t=80),
        xaxis=dict(type="log", title_text="message size per rank n (bytes)"),
        yaxis=dict(rangemode="tozero", title_text="time per all-reduce (ms)"),
        height=400, legend=dict(x=0.02, y=0.98),
    )  # fmt: skip
    return fig


def summit_figure(comparison) -> go.Figure:
    """Measured (markers) and modelled (lines) 8-byte all-reduce times on Summit against
    the GPU count, for the two trees and the ring (:func:`scaleout.trees.summit_comparison`)."""
    c = checks.instance("comparison", comparison, T.PublishedComparison)
    fig = go.Figure(layout=dict(template=template()))
    rows = (("two trees", c.measured_tree_us, c.model_tree_us, "NCCL 2.4 trees"),
            ("ring", c.measured_ring_us, c.model_ring_us, "NCCL 2.3 ring"))  # fmt: skip
    for name, measured, model, label in rows:
        color, dash = _LINES[name]
        fig.add_scatter(
            x=c.gpus, y=measured, mode="markers", name=f"{label}, measured",
            marker=dict(color=color, size=10, symbol="circle"),
            hovertemplate=f"{label}, %{{x}} GPUs: %{{y:.4g}} µs measured<extra></extra>",
        )  # fmt: skip
        fig.add_scatter(
            x=c.gpus, y=model, mode="lines", name=f"{name}, this chapter's model",
            line=dict(color=color, dash=dash, width=2.5),
            hovertemplate=f"{name}, %{{x}} GPUs: %{{y:.4g}} µs modelled<extra></extra>",
        )  # fmt: skip
    ticks = [int(g) for g in c.gpus]
    fig.update_layout(
        title_text="8-byte all-reduce on Summit: published (NCCL blog, 2019) and modelled",
        xaxis=dict(type="log", title_text="GPUs (6 per node)", tickvals=ticks,
                   ticktext=[f"{t:,}" for t in ticks]),
        yaxis=dict(type="log", title_text="time per all-reduce (µs)"),
        height=430, legend=dict(x=0.02, y=0.98),
    )  # fmt: skip
    return fig
