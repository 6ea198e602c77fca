"""Figures for the chapter "Expert parallelism" (chapters/07_expert_parallel.ipynb).

Every figure is drawn from :mod:`scaleout.moe` data: a :class:`~scaleout.moe.Routing`, a
:class:`~scaleout.moe.DispatchPlan`, a :class:`~scaleout.moe.Mesh`, or arrays of costs the
library computed; nothing here computes a cost. An expert is drawn in the colour of the
rank that holds it (``experts_per_rank`` experts to a rank, in order), so the book's rank
colours carry over; dropped copies are dark grey with a cross, copies not yet claimed pale
grey. Colour is never the only cue: every cell and bar names its expert or rank.

Limits: at most :data:`MAX_TOKENS_DRAWN` tokens and :data:`MAX_EXPERTS_DRAWN` experts in
the routing figures and :data:`MAX_RANKS_DRAWN` ranks in the matrix and topology figures
(beyond, a figure is unreadable).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go

from .. import checks
from ..moe import DispatchPlan, Mesh, Routing, claim_order
from .animate import MAX_FRAMES, animation
from .theme import new_figure, rank_color

#: Most tokens a routing figure draws.
MAX_TOKENS_DRAWN = 64
#: Most experts a routing figure draws.
MAX_EXPERTS_DRAWN = 64
#: Most ranks a matrix or topology figure draws.
MAX_RANKS_DRAWN = 64
DROPPED = "#555555"
_GRID_X = [0.0, 0.56]
_BARS_X = [0.66, 1.0]


def _labels(name: str, value, n: int) -> list[str]:
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
        raise checks.fail(name, "a list of strings", value)
    if len(value) != n:
        raise checks.fail(name, f"{n} labels, one per value", len(value))
    return list(value)


def _routing(routing, experts_per_rank) -> tuple[Routing, int]:
    checks.instance("routing", routing, Routing, "a scaleout.moe.Routing")
    if routing.tokens > MAX_TOKENS_DRAWN or routing.n_experts > MAX_EXPERTS_DRAWN:
        raise checks.fail(
            "routing",
            f"at most {MAX_TOKENS_DRAWN} tokens and {MAX_EXPERTS_DRAWN} experts to draw",
            (routing.tokens, routing.n_experts),
        )
    per = checks.integer("experts_per_rank", experts_per_rank, 1, routing.n_experts)
    if routing.n_experts % per:
        raise checks.fail("experts_per_rank", f"a divisor of {routing.n_experts}", per)
    return routing, per


def _expert_color(e: int, per: int) -> str:
    return rank_color(int(e) // per)


def _state(routing: Routing, per: int, claimed: int):
    """Traces of the routing after the first ``claimed`` claims (the "choice" order)."""
    t, k, e = routing.tokens, routing.k, routing.n_experts
    order = claim_order(t, k, routing.blocks)
    done = np.zeros((t, k), dtype=bool)
    done[order[:claimed, 0], order[:claimed, 1]] = True
    kept, dropped = done & routing.kept, done & routing.dropped
    xs, ys = np.meshgrid(np.arange(t), np.arange(k), indexing="ij")
    colors = np.where(
        dropped,
        DROPPED,
        np.where(kept, np.vectorize(lambda x: _expert_color(x, per))(routing.experts), "#EEEEEE"),
    )
    text = [str(v) if done[i, j] else "" for (i, j), v in np.ndenumerate(routing.experts)]
    grid = go.Scatter(
        x=xs.ravel(),
        y=ys.ravel() + 1,
        mode="markers+text",
        text=text,
        marker=dict(
            symbol=np.where(dropped, "square-x", "square").ravel().tolist(),
            size=22,
            color=colors.ravel().tolist(),
            line=dict(width=1, color="white"),
        ),
        textfont=dict(size=10, color="white"),
        name="token copies",
        showlegend=False,
        hovertemplate="token %{x}, choice %{y}: expert %{text}<extra></extra>",
        xaxis="x",
        yaxis="y",
    )
    if 0 < claimed <= order.shape[0]:
        ct, cj = order[claimed - 1]
        cx, cy = [int(ct)], [int(cj) + 1]
    else:
        cx, cy = [None], [None]
    now = go.Scatter(
        x=cx,
        y=cy,
        mode="markers",
        showlegend=False,
        hoverinfo="skip",
        marker=dict(symbol="square-open", size=30, color="black", line=dict(width=3)),
        xaxis="x",
        yaxis="y",
    )
    kept_per = np.bincount(routing.experts[kept], minlength=e)
    drop_per = np.bincount(routing.experts[dropped], minlength=e)
    names = [f"E{i}" for i in range(e)]
    bars_kept = go.Bar(
        x=names,
        y=kept_per,
        name="kept",
        xaxis="x2",
        yaxis="y2",
        marker=dict(color=[_expert_color(i, per) for i in range(e)]),
        hovertemplate="%{x}: %{y} kept<extra></extra>",
    )
    bars_drop = go.Bar(
        x=names,
        y=drop_per,
        name="dropped",
        xaxis="x2",
        yaxis="y2",
        marker=dict(color=DROPPED, line=dict(color="white", width=1)),
        hovertemplate="%{x}: %{y} dropped<extra></extra>",
    )
    return [grid, now, bars_kept, bars_drop], int(kept.sum()), int(dropped.sum())


def _layout(routing: Routing, title: str) -> dict:
    t, k, e = routing.tokens, routing.k, routing.n_experts
    ymax = max(int(routing.routed.max()), routing.capacity or 0) + 1
    shapes = []
    if routing.capacity is not None:
        shapes.append(
            dict(
                type="line",
                xref="x2",
                yref="y2",
                x0=-0.5,
                x1=e - 0.5,
                y0=routing.capacity,
                y1=routing.capacity,
                line=dict(dash="dash", color="black", width=2),
            )
        )
    return dict(
        title=title,
        height=460,
        margin=dict(t=90),
        barmode="stack",
        showlegend=True,
        legend=dict(x=_BARS_X[0], y=1.02, yanchor="bottom", orientation="h"),
        xaxis=dict(
            domain=_GRID_X,
            title="token (claims run left to right, choice by choice)",
            range=[-0.7, t - 0.3],
            showgrid=False,
            dtick=max(1, t // 10),
        ),
        yaxis=dict(title="choice", range=[0.4, k + 0.6], dtick=1, showgrid=False),
        xaxis2=dict(domain=_BARS_X, anchor="y2", title="expert (colour: its rank)"),
        yaxis2=dict(anchor="x2", title="token copies", range=[0, ymax]),
        shapes=shapes,
        annotations=[]
        if routing.capacity is None
        else [
            dict(
                xref="x2",
                yref="y2",
                x=e - 0.5,
                y=routing.capacity,
                xanchor="right",
                yanchor="bottom",
                text=f"capacity {routing.capacity}",
                showarrow=False,
            )
        ],
    )


def routing_animation(routing: Routing, experts_per_rank: int = 1, title: str = "") -> go.Figure:
    """The copies claiming capacity one by one in the ``"choice"`` order (all first
    choices in token order, then the second choices...): left, each token's choices
    (coloured once claimed, a cross when dropped, the current claim boxed); right, each
    expert's kept and dropped copies against its capacity. At most
    ``MAX_FRAMES`` (60) frames (claims grouped when there are more)."""
    routing, per = _routing(routing, experts_per_rank)
    checks.instance("title", title, str)
    claims = routing.tokens * routing.k
    step = -(-claims // (MAX_FRAMES - 1))
    marks = list(range(0, claims, step)) + [claims]
    frames, labels, titles = [], [], []
    order = claim_order(routing.tokens, routing.k, routing.blocks)
    for c in marks:
        traces, kept, dropped = _state(routing, per, c)
        frames.append(traces)
        labels.append(str(c))
        if c == 0:
            what = "no claims yet"
        else:
            tok, j = order[c - 1]
            e = routing.experts[tok, j]
            fate = "full, dropped" if routing.dropped[tok, j] else "kept"
            what = f"claim {c}: token {tok}, choice {j + 1} → E{e} ({fate})"
        titles.append(f"{title}{what}<br>{kept} kept, {dropped} dropped so far")
    return animation(
        frames,
        labels,
        frame_titles=titles,
        slider_prefix="claims: ",
        duration_ms=400,
        **_layout(routing, title),
    )


def load_bars(routing: Routing, experts_per_rank: int = 1, title: str = "",
              ymax: int | None = None) -> go.Figure:  # fmt: skip
    """Each expert's copies: kept (its rank's colour) and dropped (dark grey) stacked to
    the copies routed to it, against the capacity (dashed) and the mean load k T / E
    (dotted); diamonds (right axis): each expert's mean gate probability P_i, the other
    factor of the balance loss. ``ymax`` fixes the left axis (so that the figures of one
    explorer compare)."""
    routing, per = _routing(routing, experts_per_rank)
    checks.instance("title", title, str)
    e = routing.n_experts
    top = max(int(routing.routed.max()), routing.capacity or 0) + 1
    if ymax is not None:
        top = max(top, checks.integer("ymax", ymax, 1, 10**7))
    names = [f"E{i}" for i in range(e)]
    fig = new_figure(
        title=title, height=400, barmode="stack", xaxis_title="expert (colour: its rank)",
        yaxis=dict(title="token copies", range=[0, top]), legend=dict(orientation="h", y=-0.25),
        yaxis2=dict(title="mean gate probability P<sub>i</sub>", overlaying="y", side="right",
                    range=[0, 1], showgrid=False),
        margin=dict(r=70),
    )  # fmt: skip
    colors = [_expert_color(i, per) for i in range(e)]
    fig.add_bar(x=names, y=routing.counts, name="kept", marker_color=colors,
                hovertemplate="%{x}: %{y} kept<extra></extra>")  # fmt: skip
    fig.add_bar(
        x=names, y=routing.routed - routing.counts, name="dropped",
        marker=dict(color=DROPPED, line=dict(color="white", width=1)),
        hovertemplate="%{x}: %{y} dropped<extra></extra>",
    )  # fmt: skip
    fig.add_scatter(x=names, y=routing.probability, yaxis="y2", mode="markers",
                    name="P<sub>i</sub> (right axis)",
                    marker=dict(symbol="diamond", size=11, color="black"),
                    hovertemplate="%{x}: P = %{y:.3f}<extra></extra>")  # fmt: skip
    mean = routing.k * routing.tokens / e
    fig.add_scatter(x=[names[0], names[-1]], y=[mean, mean], mode="lines",
                    name=f"mean load k T / E = {mean:.3g}",
                    line=dict(color="black", dash="dot"))  # fmt: skip
    if routing.capacity is not None:
        cap = routing.capacity * routing.blocks
        fig.add_scatter(
            x=[names[0], names[-1]],
            y=[cap, cap],
            mode="lines",
            name=f"capacity {cap}",
            line=dict(color="black", dash="dash", width=2),
        )
    return fig


def _plan(plan) -> DispatchPlan:
    checks.instance("plan", plan, DispatchPlan, "a scaleout.moe.DispatchPlan")
    if plan.ep > MAX_RANKS_DRAWN:
        raise checks.fail("plan", f"at most {MAX_RANKS_DRAWN} ranks to draw", plan.ep)
    return plan


def _label(x: float, what: str) -> str:
    if what == "copies":
        return f"{x:.0f}" if float(x).is_integer() else f"{x:.1f}"
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if x >= size:
            return f"{x / size:.3g} {unit}"
    return f"{x:.3g} B"


def plan_matrix(plan: DispatchPlan, what: str = "copies", title: str = "") -> go.Figure:
    """The dispatch all-to-all as an (ep x ep) matrix: row i = what rank i sends, column j
    = what rank j receives (``what``: ``"copies"`` or ``"bytes"``). The diagonal stays on
    its rank. The combine is the same matrix transposed."""
    plan = _plan(plan)
    what = checks.choice("what", what, ("copies", "bytes"))
    checks.instance("title", title, str)
    m = plan.tokens if what == "copies" else plan.bytes
    ranks = [f"rank {r}" for r in range(plan.ep)]
    text = [[_label(v, what) for v in row] for row in m]
    fig = new_figure(
        title=title,
        height=170 + 50 * min(plan.ep, 12),
        margin=dict(t=110),
        xaxis=dict(title="to (destination rank)", side="top", showgrid=False),
        yaxis=dict(
            title=dict(text="from (source rank)", standoff=16),
            autorange="reversed",
            showgrid=False,
            automargin=True,
        ),
    )
    fig.add_heatmap(
        z=m,
        x=ranks,
        y=ranks,
        text=text if plan.ep <= 16 else None,
        texttemplate="%{text}" if plan.ep <= 16 else None,
        colorscale="Cividis",
        colorbar=dict(title="copies" if what == "copies" else "bytes"),
        hovertemplate="%{y} -> %{x}: %{z:.4g}<extra></extra>",
    )
    for r in range(plan.ep):
        fig.add_shape(
            type="rect",
            x0=r - 0.5,
            x1=r + 0.5,
            y0=r - 0.5,
            y1=r + 0.5,
            line=dict(color=rank_color(r), width=3),
        )
    return fig


def alltoall_topology(rank_nvlink_bytes, rank_network_bytes, gpus_per_node: int,
                      nvlink_gb_per_s: float, network_gb_per_s: float,
                      title: str = "") -> go.Figure:  # fmt: skip
    """The all-to-all on the machine: each node's GPUs above its NVSwitch (solid blue
    links), GPU i of every node on rail switch i (dashed orange links, the GPU's NIC). Each
    link is as thick as the bytes its GPU pushes through it in its busiest direction (the
    per-rank bytes of :func:`scaleout.moe.alltoall_seconds`), labelled with the bytes and
    the link's per-direction speed."""
    nv = checks.array("rank_nvlink_bytes", rank_nvlink_bytes, ndim=1, low=0.0)
    nw = checks.array("rank_network_bytes", rank_network_bytes, ndim=1, low=0.0)
    p = nv.size
    if nw.shape != nv.shape or p > MAX_RANKS_DRAWN:
        raise checks.fail("rank_network_bytes", f"one value per rank (at most {MAX_RANKS_DRAWN})",
                          nw.shape)  # fmt: skip
    g = checks.integer("gpus_per_node", gpus_per_node, 1, 16)
    if p % g or p // g > 4:
        raise checks.fail("gpus_per_node", f"a divisor of {p} ranks giving at most 4 nodes", g)
    bnv = checks.positive("nvlink_gb_per_s", nvlink_gb_per_s)
    bnw = checks.positive("network_gb_per_s", network_gb_per_s)
    checks.instance("title", title, str)
    nodes = p // g
    top = max(float(nv.max()), float(nw.max()), 1.0)
    rail_y = 0.0

    def y_of(n):  # nodes alternate above and below the rail switches
        return (1 + n // 2) * 2.2 * (1 if n % 2 == 0 else -1)

    fig = new_figure(title=title, height=260 + 110 * nodes, showlegend=True,
                     xaxis=dict(visible=False, range=[-1.6, g + 0.2]),
                     yaxis=dict(visible=False, range=[min(y_of(n) for n in range(nodes)) - 1.4,
                                                      max(y_of(n) for n in range(nodes)) + 1.4]),
                     legend=dict(orientation="h", y=-0.05))  # fmt: skip
    for kind, bytes_, speed, color, dash in (
        ("NVLink to the node's NVSwitch", nv, bnv, "#0072B2", "solid"),
        ("NIC to its rail switch", nw, bnw, "#D55E00", "dash"),
    ):
        for r in range(p):
            n, i = divmod(r, g)
            y = y_of(n)
            end = y + (0.9 if y > 0 else -0.9) if kind.startswith("NVLink") else rail_y
            width = 1 + 9 * float(bytes_[r]) / top
            fig.add_scatter(
                x=[i, i], y=[y, end], mode="lines", showlegend=r == 0, legendgroup=kind,
                name=f"{kind} ({speed:g} GB/s per direction)",
                line=dict(color=color, width=width if bytes_[r] > 0 else 0.5, dash=dash),
                hovertemplate=f"rank {r}: {_label(float(bytes_[r]), 'bytes')}<extra></extra>",
            )  # fmt: skip
    for n in range(nodes):
        y = y_of(n)
        sy = y + (0.9 if y > 0 else -0.9)
        fig.add_shape(type="rect", x0=-0.4, x1=g - 0.6, y0=sy - 0.12, y1=sy + 0.12,
                      fillcolor="#0072B2", line=dict(width=0))  # fmt: skip
        fig.add_annotation(x=-0.5, y=y, text=f"node {n}", showarrow=False, xanchor="right")
        fig.add_annotation(x=-0.5, y=sy, text="NVSwitch", showarrow=False, xanchor="right",
                           font=dict(size=11))  # fmt: skip
        first = n * g
        fig.add_annotation(
            x=g - 0.5, y=(y + sy) / 2, xanchor="left", showarrow=False, font=dict(size=11),
            text=f"{_label(float(nv[first]), 'bytes')}",
        )  # fmt: skip
    for i in range(g):
        fig.add_annotation(x=i, y=rail_y, text=f"rail {i}", showarrow=False, bgcolor="white",
                           bordercolor="#D55E00", font=dict(size=10))  # fmt: skip
    fig.add_annotation(x=-0.5, y=rail_y, xanchor="right", showarrow=False, font=dict(size=11),
                       text=f"per NIC {_label(float(nw[0]), 'bytes')}")  # fmt: skip
    xs = [r % g for r in range(p)]
    ys = [y_of(r // g) for r in range(p)]
    fig.add_scatter(
        x=xs, y=ys, mode="markers+text", text=[str(r) for r in range(p)], name="GPU (rank)",
        marker=dict(size=24, color=[rank_color(r) for r in range(p)],
                    line=dict(color="black", width=1)),
        textfont=dict(color="white"), hovertemplate="rank %{text}<extra></extra>",
    )  # fmt: skip
    return fig


def cost_curves(
    x,
    series: Mapping[str, Sequence[float]],
    x_title: str,
    y_title: str,
    title: str = "",
    log_x: bool = True,
    marker_x=None,
    marker_text: str = "",
    log_y: bool = False,
    highlight=None,
) -> go.Figure:
    """Lines of precomputed costs against ``x`` (one per entry of ``series``, book colours
    in order); a dotted vertical line at ``marker_x`` (e.g. the NVLink domain size); a
    black diamond at ``highlight = (x, y, name)`` (e.g. the point a slider picks)."""
    xs = checks.array("x", x, ndim=1, max_size=10_000)
    if not isinstance(series, Mapping) or not series:
        raise checks.fail("series", "a non-empty mapping name -> values", series)
    for name in ("x_title", "y_title", "title", "marker_text"):
        checks.instance(name, locals()[name], str)
    checks.boolean("log_x", log_x)
    checks.boolean("log_y", log_y)
    fig = new_figure(
        title=title,
        height=420,
        xaxis=dict(title=x_title, type="log" if log_x else "linear"),
        yaxis=dict(title=y_title, type="log" if log_y else "linear", rangemode="tozero"),
        legend=dict(orientation="h", y=-0.25),
    )
    for i, (name, ys) in enumerate(series.items()):
        ys = checks.array(f"series[{name!r}]", ys, ndim=1, finite=False, max_size=10_000)
        if ys.shape != xs.shape:
            raise checks.fail(f"series[{name!r}]", f"{xs.size} values, one per x", ys.size)
        fig.add_scatter(
            x=xs,
            y=ys,
            name=str(name),
            mode="lines+markers",
            line=dict(
                color=rank_color(i), width=2.5, dash=("solid", "dash", "dot", "dashdot")[i % 4]
            ),
        )
    if marker_x is not None:
        mx = checks.real("marker_x", marker_x, low=0.0, low_open=log_x)
        ys_all = [v for tr in fig.data for v in tr.y if v is not None and np.isfinite(v)]
        fig.add_scatter(x=[mx, mx], y=[0, max(ys_all) * 1.05], mode="lines",
                        name=marker_text or f"x = {mx:g}", hoverinfo="skip",
                        line=dict(dash="dot", color="black", width=1.5))  # fmt: skip
    if highlight is not None:
        if not isinstance(highlight, tuple | list) or len(highlight) != 3:
            raise checks.fail("highlight", "None or a tuple (x, y, name)", highlight)
        hx = checks.real("highlight x", highlight[0], low=0.0, low_open=log_x)
        hy = checks.real("highlight y", highlight[1], low=0.0, low_open=log_y)
        name = checks.text("highlight name", highlight[2], 80)
        fig.add_scatter(x=[hx], y=[hy], mode="markers", name=name,
                        marker=dict(size=14, symbol="diamond", color="black"))  # fmt: skip
    if log_x:
        fig.update_xaxes(range=[float(np.log10(xs.min())) - 0.1, float(np.log10(xs.max())) + 0.1],
                         tickvals=xs.tolist() if xs.size <= 16 else None)  # fmt: skip
    fig.update_layout(margin=dict(t=80))
    return fig


def mesh_figure(grid: Mesh, experts: int, title: str = "") -> go.Figure:
    """The ranks of an EP x expert-DP mesh (tp = 1): rows are EP groups (dashed: one
    all-to-all each), columns hold the same experts (dotted: their gradients are
    all-reduced down the column); each column names its experts."""
    checks.instance("grid", grid, Mesh, "a scaleout.moe.Mesh")
    e = checks.integer("experts", experts, grid.ep, 4096)
    if e % grid.ep or grid.tp != 1 or grid.world > MAX_RANKS_DRAWN:
        raise checks.fail(
            "grid",
            f"a tp = 1 mesh of at most {MAX_RANKS_DRAWN} ranks whose ep divides {e}",
            (grid.tp, grid.ep, grid.world),
        )
    checks.instance("title", title, str)
    per = e // grid.ep
    fig = new_figure(
        title=title,
        height=140 + 90 * grid.expert_dp,
        showlegend=False,
        xaxis=dict(visible=False, range=[-1.3, grid.ep - 0.5]),
        yaxis=dict(visible=False, range=[grid.expert_dp - 0.4, -0.9]),
    )
    for d in range(grid.expert_dp):
        fig.add_annotation(x=-1.25, y=d, showarrow=False, xanchor="left", font=dict(size=11),
                           text=f"EP group {d}<br>(all-to-alls)")  # fmt: skip
        fig.add_shape(
            type="rect",
            x0=-0.5,
            x1=grid.ep - 0.5,
            y0=d - 0.4,
            y1=d + 0.4,
            line=dict(color="#888888", dash="dash", width=1.5),
            layer="below",
        )
    for ei in range(grid.ep):
        if grid.expert_dp > 1:  # the expert gradients are all-reduced down each column
            fig.add_shape(type="line", x0=ei, x1=ei, y0=0, y1=grid.expert_dp - 1, layer="below",
                          line=dict(color="black", width=3, dash="dot"))  # fmt: skip
    for ei in range(grid.ep):
        held = f"E{ei * per}–E{(ei + 1) * per - 1}" if per > 1 else f"E{ei}"
        fig.add_annotation(
            x=ei,
            y=-0.7,
            text=f"{held}<br>expert-DP group {ei}",
            showarrow=False,
            font=dict(size=11),
        )
    for r in range(grid.world):
        c = grid.coords(r)
        x, y = c["ep"], c["expert_dp"]
        fig.add_shape(
            type="rect",
            x0=x - 0.4,
            x1=x + 0.4,
            y0=y - 0.3,
            y1=y + 0.3,
            fillcolor=rank_color(r),
            line=dict(color="black", width=1),
        )
        fig.add_annotation(
            x=x,
            y=y,
            text=f"rank {r}",
            showarrow=False,
            font=dict(color="white" if r % 8 not in (6,) else "black"),
        )
    fig.add_scatter(x=[0], y=[0], mode="markers", marker=dict(opacity=0), hoverinfo="skip")
    return fig


_SYMBOLS = ("circle", "square", "diamond", "triangle-up", "x", "star")


def measured_vs_model(
    labels: Sequence[str], measured, model, title: str = "", unit: str = "µs", groups=None
) -> go.Figure:
    """Each published measurement against the model's prediction (log axes), with the
    line y = x; points above it: the model is too slow, below: too fast. ``groups`` (one
    name per row, at most six distinct) draws each group in its own colour and marker."""
    m = checks.array("measured", measured, ndim=1, low=0.0, low_open=True, max_size=1000)
    p = checks.array("model", model, ndim=1, low=0.0, low_open=True, max_size=1000)
    if m.shape != p.shape:
        raise checks.fail("model", f"{m.size} values, one per measurement", p.size)
    labels = _labels("labels", labels, m.size)
    groups = ["DeepEP rows"] * m.size if groups is None else _labels("groups", groups, m.size)
    names = list(dict.fromkeys(groups))
    if len(names) > len(_SYMBOLS):
        raise checks.fail("groups", f"at most {len(_SYMBOLS)} distinct names", len(names))
    checks.instance("title", title, str)
    checks.instance("unit", unit, str)
    lo, hi = float(min(m.min(), p.min())) / 1.3, float(max(m.max(), p.max())) * 1.3
    span = [float(np.log10(lo)), float(np.log10(hi))]
    fig = new_figure(
        title=title,
        height=460,
        xaxis=dict(title=f"measured ({unit})", type="log", range=span),
        yaxis=dict(title=f"model ({unit})", type="log", range=span),
        legend=dict(orientation="h", y=-0.2),
    )
    fig.add_scatter(
        x=[lo, hi],
        y=[lo, hi],
        mode="lines",
        name="model = measured",
        line=dict(color="black", dash="dot"),
    )
    for i, name in enumerate(names):
        rows = [j for j, g in enumerate(groups) if g == name]
        fig.add_scatter(
            x=m[rows],
            y=p[rows],
            mode="markers",
            name=name,
            text=[labels[j] for j in rows],
            marker=dict(size=10, color=rank_color(i), symbol=_SYMBOLS[i]),
            hovertemplate="%{text}<br>measured %{x:.3g}, model %{y:.3g}<extra></extra>",
        )
    return fig


def rows_table(rows: Sequence[str], columns: Sequence[str], text, shaded, title: str,
               shade_name: str) -> go.Figure:  # fmt: skip
    """A table of precomputed strings (``text[i][j]``), the cells with ``shaded[i][j]``
    in pale blue and named ``shade_name`` in the legend (the book's table figure,
    :func:`scaleout.viz.memory.table_figure`)."""
    from .memory import table_figure

    return table_figure(rows, columns, text, shaded, title, shade_name=shade_name)


def parameter_bars(names: Sequence[str], total, active, title: str = "") -> go.Figure:
    """Total against active parameters per model (billions)."""
    t = checks.array("total", total, ndim=1, low=0.0, max_size=100)
    a = checks.array("active", active, ndim=1, low=0.0, max_size=100)
    if t.shape != a.shape:
        raise checks.fail("active", f"{t.size} values, one per model", a.size)
    names = _labels("names", names, t.size)
    checks.instance("title", title, str)
    fig = new_figure(
        title=title,
        height=360,
        barmode="group",
        yaxis_title="parameters (billions)",
        legend=dict(orientation="h", y=-0.2),
    )
    fig.add_bar(
        x=list(names),
        y=t / 1e9,
        name="total (stored)",
        marker_color=rank_color(0),
        texttemplate="%{y:.1f}B",
        textposition="outside",
    )
    fig.add_bar(
        x=list(names),
        y=a / 1e9,
        name="active per token (computed)",
        marker_color=rank_color(1),
        texttemplate="%{y:.1f}B",
        textposition="outside",
    )
    return fig
