"""Figures for the chapter "Tensor parallelism" (chapters/04_tensor_parallel.ipynb).

Every figure is drawn from :mod:`scaleout.tensor_parallel`: which GPU holds which block
comes from :func:`~scaleout.tensor_parallel.matmul_shards`; what f and g do from
``OPERATORS``; times from :func:`~scaleout.tensor_parallel.layer_comm_seconds` and
:func:`~scaleout.tensor_parallel.layer_compute_seconds`; the hidden and exposed
communication from :func:`~scaleout.tensor_parallel.layer_overlap` records; the
scatter-gather steps from :func:`~scaleout.tensor_parallel.stage_transfer_schedule`,
replayed with :func:`scaleout.collectives.replay`; the Figure 13 comparison from
:mod:`scaleout.tensor_parallel.published` records. Arguments are checked with
:mod:`scaleout.checks`.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .. import checks
from .. import collectives as C
from .. import hardware as H
from .. import tensor_parallel as tp
from ..tensor_parallel import network as tpn
from ..tensor_parallel import published as tpp
from .animate import animation
from .theme import NEUTRAL, new_figure, rank_color, template

SUM_COLOR = "#333333"  # a reduced (summed) result, as in viz.collectives
IDLE = "#E0E0E0"
_SIZES = {"m": 4, "k": 8, "n": 8}  # any t in 1, 2, 4, 8 divides k and n
_BOX = {"x": (0.0, 1.6), "y": (2.2, 3.8), "z": (4.4, 6.0)}  # horizontal extent of each
_DIMS = {"x": ("m", "k"), "y": ("k", "n"), "z": ("m", "n")}
_ROW = 1.4  # vertical distance between GPU rows
_TICKS_125 = [m * 10.0**e for e in range(-3, 4) for m in (1, 2, 5)]  # 1-2-5 log ticks
SPLIT_TS = (1, 2, 4, 8)  # the t the split animation can draw (divisors of k = n = 8)
MAX_FIGURE_T = 8  # GPU rows the block figure and the stage animation draw
MAX_TS = 64  # points on the communication figure


def _rect(x0, x1, y0, y1):
    return [x0, x1, x1, x0, x0, None], [y0, y0, y1, y1, y0, None]


def _block(name: str, row: int, block: tuple[slice, slice]):
    """Polygon of ``block`` (row slice, column slice) of matrix ``name`` on GPU ``row``."""
    rows, cols = (_SIZES[d] for d in _DIMS[name])
    r0, r1, _ = block[0].indices(rows)
    c0, c1, _ = block[1].indices(cols)
    left, right = _BOX[name]
    width = right - left
    top = row * _ROW
    return _rect(
        left + width * c0 / cols, left + width * c1 / cols, top + r0 / rows, top + r1 / rows
    )


def _polys(blocks):
    xs, ys = [], []
    for name, row, block in blocks:
        x, y = _block(name, row, block)
        xs += x
        ys += y
    return xs, ys


def split_matmul_animation(mode: str, t: int) -> go.Figure:
    """Z = X Y on t GPUs, one row per GPU: what it holds, its local product, the combine
    (all-gather of column blocks, or all-reduce of partial sums). 3 frames; t in SPLIT_TS."""
    mode = checks.choice("mode", mode, tp.MODES)
    t = checks.choice("t", t, SPLIT_TS)
    shards = tp.matmul_shards(mode, _SIZES["m"], _SIZES["k"], _SIZES["n"], t)
    every = (slice(None), slice(None))
    outline = _polys((name, s.rank, every) for s in shards for name in _BOX)
    combine = "all-gather" if mode == "column" else "all-reduce"
    held = [[("x", s.rank, s.x), ("y", s.rank, s.y)] for s in shards]
    stages = [
        ("hold", held, [], f"{mode} split, t = {t}: what each GPU holds"),
        (
            "compute",
            [h + [("z", s.rank, s.z)] for h, s in zip(held, shards, strict=True)],
            [],
            "each GPU multiplies its own blocks, no communication"
            + (" (a full-size partial sum)" if mode == "row" else " (a column block of Z)"),
        ),
    ]
    if mode == "column":
        gathered = [h + [("z", r, s.z) for s in shards] for r, h in enumerate(held)]
        stages.append(("combine", gathered, [], f"{combine}: every GPU gets all {t} blocks"))
    else:
        summed = [("z", s.rank, every) for s in shards]
        stages.append(("combine", held, summed, f"{combine}: Z = Σ of the {t} partials"))
    if t == 1:
        stages[-1] = (stages[-1][0], stages[1][1], [], "t = 1: nothing to combine, Z = X Y")

    def note(stage, s):
        z = f"Z[:, {s.z[1].start}:{s.z[1].stop}]" if mode == "column" else f"Z_{s.rank} (partial)"
        if stage == "hold":
            x = "X" if mode == "column" else f"X[:, {s.x[1].start}:{s.x[1].stop}]"
            y = (
                f"Y[:, {s.y[1].start}:{s.y[1].stop}]"
                if mode == "column"
                else (f"Y[{s.y[0].start}:{s.y[0].stop}, :]")
            )
            return f"holds {x}, {y}"
        if stage == "compute":
            return f"computes {z}"
        return "holds Z" if (mode == "column" or t == 1) else "holds Z = Σ partials"

    frames, labels, titles = [], [], []
    centers = [s.rank * _ROW + 0.5 for s in shards]
    for stage, per_gpu, summed, title in stages:
        traces = [
            go.Scatter(
                x=outline[0],
                y=outline[1],
                mode="lines",
                line=dict(color="#888", width=1),
                hoverinfo="skip",
                showlegend=False,
            )
        ]
        for r in range(t):
            xs, ys = _polys(b for gpu in per_gpu for b in gpu if _owner(b, shards, mode) == r)
            traces.append(
                go.Scatter(
                    x=xs or [None],
                    y=ys or [None],
                    fill="toself",
                    mode="lines",
                    fillcolor=rank_color(r),
                    line=dict(color="white", width=1),
                    name=f"rank {r}",
                    hoverinfo="skip",
                    showlegend=False,
                )
            )
        xs, ys = _polys(summed)
        traces.append(
            go.Scatter(
                x=xs or [None],
                y=ys or [None],
                fill="toself",
                mode="lines",
                fillcolor=SUM_COLOR,
                line=dict(color="white", width=1),
                hoverinfo="skip",
                showlegend=False,
            )
        )
        traces.append(
            go.Scatter(
                x=[6.2] * t,
                y=centers,
                mode="text",
                textposition="middle right",
                text=[f"GPU {s.rank} {note(stage, s)}" for s in shards],
                hoverinfo="skip",
                showlegend=False,
                textfont=dict(size=12),
            )
        )
        frames.append(traces)
        labels.append(stage)
        titles.append(title)
    mid = [(a + b) / 2 for a, b in _BOX.values()]
    return animation(
        frames,
        labels,
        frame_titles=titles,
        slider_prefix="stage: ",
        height=230 + 62 * t,
        xaxis=dict(
            title_text="operand (shaded: the share a GPU holds; m = 4, k = n = 8 elements)",
            tickvals=mid,
            ticktext=["X (m × k)", "Y (k × n)", "Z = X Y (m × n)"],
            range=[-0.2, 10.2],
            showgrid=False,
            zeroline=False,
        ),
        yaxis=dict(
            title_text="GPU (tensor-parallel rank)",
            tickvals=centers,
            ticktext=[str(s.rank) for s in shards],
            range=[t * _ROW - 0.2, -0.3],
            showgrid=False,
        ),
    )


def _owner(block, shards, mode) -> int:
    """Which rank's colour a block is drawn in: the rank that computed it (column blocks of
    a gathered Z are the computing rank's), else the GPU row it sits on."""
    name, row, (rows, cols) = block
    if name == "z" and mode == "column":
        for s in shards:
            if s.z[1] == cols:
                return s.rank
    return row


_STAGES = {  # box labels per GPU r (lanes), column headers
    "mlp": ("XA<sub>{r}</sub>+a<sub>{r}</sub>", "GeLU", "Y<sub>{r}</sub>B<sub>{r}</sub>"),
    "attention": ("Q,K,V<br>heads {r}", "softmax<br>(QKᵀ/√d)V", "·W<sub>O</sub><br>rows {r}"),
}
_HEADERS = {
    "mlp": ("GEMM 1<br>by columns", "GeLU<br>(local)", "GEMM 2<br>by rows"),
    "attention": ("Q, K, V<br>by columns", "attention<br>(local)", "W<sub>O</sub><br>by rows"),
}


def megatron_block_figure(block: str, direction: str, t: int = 2) -> go.Figure:
    """One block of a layer on t GPUs with Megatron's f and g: which of them all-reduces in
    this ``direction`` ("forward" or "backward"), from ``tensor_parallel.OPERATORS``."""
    block = checks.choice("block", block, tuple(_STAGES))
    direction = checks.choice("direction", direction, ("forward", "backward"))
    t = checks.integer("t", t, 1, MAX_FIGURE_T)
    fig = new_figure(height=180 + 90 * t)
    columns = ["input", "f", *_HEADERS[block], "g", "output"]
    xs = list(range(len(columns)))
    half_w, half_h = 0.4, 0.34
    for r in range(t):
        labels = ["X<br>(b, s, h)", None, *_STAGES[block], None, "Z<br>(b, s, h)"]
        for x, text in zip(xs, labels, strict=True):
            if text is None:
                continue
            lane = x not in (0, len(xs) - 1)
            fig.add_shape(
                type="rect",
                x0=x - half_w,
                x1=x + half_w,
                y0=r - half_h,
                y1=r + half_h,
                fillcolor=rank_color(r) if lane else "#F2F2F2",
                opacity=0.85 if lane else 1,
                line=dict(color="#666", width=1),
            )
            color = "white" if lane and r % 8 not in (4, 6) else "#222"
            fig.add_annotation(
                x=x, y=r, text=text.format(r=r), showarrow=False, font=dict(color=color, size=12)
            )
    ops = {name: tp.OPERATORS[name][direction] for name in ("f", "g")}
    for name, x in (("f", 1), ("g", len(xs) - 2)):
        active = ops[name] != "identity"
        fig.add_shape(
            type="rect",
            x0=x - half_w,
            x1=x + half_w,
            y0=-half_h - 0.1,
            y1=t - 1 + half_h + 0.1,
            fillcolor=SUM_COLOR if active else "#FFFFFF",
            line=dict(color=SUM_COLOR, width=2),
        )
        label = f"<b>{name}</b><br>" + ("all-<br>reduce<br>Σ" if active else "iden-<br>tity")
        fig.add_annotation(
            x=x,
            y=(t - 1) / 2,
            text=label,
            showarrow=False,
            font=dict(color="white" if active else SUM_COLOR, size=12),
        )
    forward = direction == "forward"
    for r in range(t):
        for x in xs[:-1]:
            a, b = (x + half_w, x + 1 - half_w) if forward else (x + 1 - half_w, x + half_w)
            fig.add_annotation(
                x=b,
                y=r,
                ax=a,
                ay=r,
                xref="x",
                yref="y",
                axref="x",
                ayref="y",
                text="",
                showarrow=True,
                arrowhead=2,
                arrowsize=1.2,
                arrowwidth=1.5,
                arrowcolor="#555",
            )
    busy = [name for name, op in ops.items() if op != "identity"]
    idle = [name for name, op in ops.items() if op == "identity"]
    flow = "activations flow left to right" if forward else "gradients flow right to left"
    fig.update_layout(
        title_text=f"{'MLP' if block == 'mlp' else 'Self-attention'}, {direction}: "
        f"{' and '.join(busy)} all-reduces a (b, s, h) tensor, "
        f"{' and '.join(idle)} is the identity",
        xaxis=dict(
            title_text=f"stage of the block ({flow})",
            tickvals=xs,
            ticktext=columns,
            tickangle=0,
            range=[-0.55, len(xs) - 0.45],
            showgrid=False,
            zeroline=False,
            tickfont=dict(size=11),
        ),
        yaxis=dict(
            title_text="GPU (tensor rank)",
            tickvals=list(range(t)),
            range=[t - 0.45, -0.6],
            showgrid=False,
            zeroline=False,
        ),
        margin=dict(l=70, r=10, t=50, b=80),
    )
    return fig


def comm_time_figure(
    b: int,
    s: int,
    h: int,
    dtype_bytes: float = 2,
    ts=(2, 4, 8, 16, 32, 64),
    gpus_per_server: int = tp.GPUS_PER_SERVER,
    intra: str | None = None,
    inter: str = tp.INTER,
    peak_flops: float | None = None,
    gpu: str | None = None,
) -> go.Figure:
    """Communication time per layer (forward + backward, one micro-batch) against t for
    NCCL's model and the two alpha-beta topologies of
    :func:`~scaleout.tensor_parallel.collective_seconds` (the flat ring across servers is
    the one-NIC teaching case), with the ideal compute time per GPU, and the server boundary
    marked. ``ts``: at most MAX_TS sizes; those that do not divide h, or cross the boundary
    without filling whole servers, are left out. NCCL's curve is left out for links its
    model does not cover (P100), and the title says so. ``intra`` defaults to NVLink 4 and
    ``peak_flops`` to the H100 SXM's dense bf16 peak; ``gpu`` (a key of
    :data:`scaleout.tensor_parallel.network.GPU_NVLINK`) sets both instead
    (:func:`scaleout.tensor_parallel.gpu_server`), and then neither may be given. The
    subtitle states the peak and what stays fixed."""
    if gpu is not None:
        for name, value in (("intra", intra), ("peak_flops", peak_flops)):
            if value is not None:
                raise checks.fail(name, "None when gpu is given (gpu sets it)", value)
        server = tp.gpu_server(gpu)
        intra, peak_flops = server.intra, server.peak_flops
    intra = tp.INTRA if intra is None else intra
    peak_flops = tp.H100_SXM_BF16_DENSE_FLOPS if peak_flops is None else peak_flops
    peak_flops = checks.positive("peak_flops", peak_flops, 1e18)
    h = checks.integer("h", h, 1, tp.MAX_HIDDEN)
    g = checks.integer("gpus_per_server", gpus_per_server, 1, tp.MAX_T)
    ts = checks.array("ts", ts, ndim=1, integer=True, low=1, high=tp.MAX_T, max_size=MAX_TS)
    ts = sorted({int(t) for t in ts if h % t == 0 and (t <= g or t % g == 0)})
    if not ts:
        raise checks.fail("ts", f"sizes t of which at least one divides h = {h}", ts)
    gpus_per_server = g
    links = dict(gpus_per_server=gpus_per_server, intra=intra, inter=inter)
    fig = new_figure(height=480)
    labels = {"nccl": "NCCL's model", "flat-ring": "alpha-beta ring, one NIC across servers "
              "(teaching case)", "two-level": "alpha-beta two-level"}  # fmt: skip
    intra = checks.choice("intra", intra, tuple(H.LINKS))
    inter = checks.choice("inter", inter, tuple(H.LINKS))
    nccl_ok = intra in tpn.NVLINK_GPUS or H.link(intra).kind == "pcie"
    styles = [("flat-ring", "dot", 3), ("two-level", "dash", 0)]
    if nccl_ok:
        styles.insert(0, ("nccl", "solid", 5))
    for topology, dash, color in styles:
        ms = [
            tp.layer_comm_seconds(b, s, h, t, dtype_bytes, topology=topology, **links).total * 1e3
            for t in ts
        ]
        fig.add_scatter(
            x=ts,
            y=ms,
            mode="lines+markers",
            name=f"communication, {labels[topology]}",
            line=dict(dash=dash, width=3 if topology == "nccl" else 2.5, color=rank_color(color)),
            hovertemplate="t = %{x}: %{y:.3g} ms<extra>" + topology + "</extra>",
        )
    compute = [tp.layer_compute_seconds(b, s, h, t, peak_flops).total * 1e3 for t in ts]
    fig.add_scatter(
        x=ts,
        y=compute,
        mode="lines+markers",
        name="compute at peak (ideal)",
        line=dict(dash="dashdot", width=2, color=rank_color(2)),
        hovertemplate="t = %{x}: %{y:.3g} ms<extra>compute</extra>",
    )
    # Between G and 2G on the log axis: a shape takes the data value, an annotation log10.
    boundary = gpus_per_server * np.sqrt(2)
    fig.add_shape(
        type="line",
        x0=boundary,
        x1=boundary,
        y0=0,
        y1=1,
        yref="paper",
        line=dict(color="#888", dash="dot", width=2),
    )
    fig.add_annotation(
        x=np.log10(boundary),
        y=1,
        yref="paper",
        text=f"edge of the NVLink domain<br>({gpus_per_server} GPUs: one server)",
        showarrow=False,
        xanchor="right",
        yanchor="top",
        align="right",
        font=dict(size=12, color="#555"),
    )
    whose = f"the {gpu}'s" if gpu else "a"
    fig.update_layout(
        title_text=f"Tensor-parallel communication per layer, b = {b}, s = {s}, h = {h}<br>"
        f"<sup>{intra} inside a server, {inter} per GPU between servers; compute at "
        f"{whose} dense peak of {peak_flops / 1e12:g} "
        f"TFLOP/s<br>fixed: {gpus_per_server} GPUs per server, {dtype_bytes:g}-byte values, "
        "nothing overlapped" + ("" if nccl_ok else f"; NCCL's model has no {intra}") + "</sup>",
        xaxis=dict(type="log", title_text="tensor-parallel GPUs t", tickvals=ts),
        yaxis=dict(
            type="log",
            title_text="time per layer, fwd + bwd (ms)",
            tickvals=_TICKS_125,
            ticktext=[f"{v:g}" for v in _TICKS_125],
        ),
        legend=dict(orientation="h", x=0.0, y=-0.2, yanchor="top"),
        margin=dict(t=95, b=110),
    )
    return fig


def stage_transfer_animation(
    t: int, scatter_gather: bool, b: int, s: int, h: int, dtype_bytes: float = 2
) -> go.Figure:
    """Two pipeline stages on two servers, t GPUs each, one row per GPU and one square per
    chunk of the stage output. A square is coloured by the rail (GPU) that carried it across
    servers; outlined squares received data in this step. t <= MAX_FIGURE_T."""
    t = checks.integer("t", t, 1, MAX_FIGURE_T)
    scatter_gather = checks.boolean("scatter_gather", scatter_gather)
    steps = tp.stage_transfer_schedule(t, t, scatter_gather)
    start = np.zeros((2 * t, t))
    start[:t] = (2.0 ** np.arange(t))[:, None]  # server A: GPU i's copy of every chunk
    states = C.replay(start, steps, trajectory=True)
    info = tp.stage_transfer(b, s, h, t, dtype_bytes)
    full_s, sg_s = tp.stage_transfer_seconds(b, s, h, t, dtype_bytes)
    chunk_mb = info.tensor_bytes / t / 1e6
    gap = t + 2  # x offset of server B
    xs = [c + (gap if g >= t else 0) for g in range(2 * t) for c in range(t)]
    ys = [g % t for g in range(2 * t) for _ in range(t)]
    frames, labels, titles = [], [], []
    for k, state in enumerate(states):
        colors = [rank_color(int(np.log2(v))) if v else NEUTRAL for v in state.reshape(-1)]
        moves = steps[k - 1].transfers if k else ()
        cells = go.Scatter(
            x=xs,
            y=ys,
            mode="markers",
            showlegend=False,
            hoverinfo="text",
            hovertext=[
                f"{'stage k' if g < t else 'stage k+1'}, GPU {g % t}, chunk {c}: "
                + (
                    f"carried by rail {int(np.log2(v))}"
                    if g >= t and v
                    else "held"
                    if v
                    else "not yet here"
                )
                for g in range(2 * t)
                for c, v in enumerate(state[g])
            ],
            marker=dict(
                symbol="square",
                size=22 if t <= 4 else 17,
                color=colors,
                line=dict(color="white", width=1),
            ),
        )
        rails = [m for m in moves if m.src < t]
        active_x, active_y, idle_x, idle_y = [], [], [], []
        for i in range(t):
            on = any(m.src == i for m in rails)
            (active_x if on else idle_x).extend([t - 0.4, gap - 0.6, None])
            (active_y if on else idle_y).extend([i, i, None])
        recv = go.Scatter(
            x=[m.chunk + gap for m in moves],
            y=[m.dst - t for m in moves],
            mode="markers",
            showlegend=False,
            hoverinfo="skip",
            marker=dict(
                symbol="square-open",
                size=30 if t <= 4 else 24,
                line=dict(width=3),
                color=[rank_color(m.src % t) for m in moves],
            ),
        )
        frames.append(
            [
                go.Scatter(
                    x=idle_x or [None],
                    y=idle_y or [None],
                    mode="lines",
                    line=dict(color=IDLE, width=2),
                    hoverinfo="skip",
                    showlegend=False,
                ),
                go.Scatter(
                    x=active_x or [None],
                    y=active_y or [None],
                    mode="lines",
                    line=dict(color="#222", width=5),
                    hoverinfo="skip",
                    showlegend=False,
                ),
                cells,
                recv,
            ]
        )
        sent = C.bytes_sent_per_rank(steps[:k], 2 * t) * chunk_mb  # MB, one chunk = 1 element
        cross, nvlink = sent[:t].sum(), sent[t:].max()
        labels.append("start" if k == 0 else str(k))
        if k == 0:
            mode = "scatter-gather" if scatter_gather else "sending the whole tensor"
            titles.append(f"t = {t}, {mode}: stage k's output is on all {t} GPUs of server A")
        elif steps[k - 1].phase == "rail":
            titles.append(f"step {k}/{len(steps)}, NIC rails: {cross:.1f} MB across servers so far")
        else:
            titles.append(
                f"step {k}/{len(steps)}, all-gather on NVLink: {cross:.1f} MB across servers, "
                f"{nvlink:.1f} MB per GPU on NVLink"
            )
    titles[-1] += (
        f"<br>model time: {(sg_s if scatter_gather else full_s) * 1e3:.2f} ms "
        f"(scatter-gather {sg_s * 1e3:.2f} ms, whole {full_s * 1e3:.2f} ms)"
    )
    ticks = list(range(t)) + [c + gap for c in range(t)]
    fig = animation(
        frames,
        labels,
        frame_titles=titles,
        slider_prefix="step ",
        height=270 + 40 * t,
        title_font_size=13,
        margin=dict(t=80),
        xaxis=dict(
            title_text=f"chunk of the stage output ({chunk_mb:.2f} MB each)",
            tickvals=ticks,
            ticktext=[str(c % t) for c in range(2 * t)],
            range=[-0.8, gap + t - 0.2],
            showgrid=False,
            zeroline=False,
        ),
        yaxis=dict(
            title_text="GPU (tensor rank) in its server",
            tickvals=list(range(t)),
            range=[t - 0.4, -0.6],
            showgrid=False,
        ),
    )
    for x, text in (
        ((t - 1) / 2, "server A: stage k"),
        (t + 0.8, "NIC rails"),
        (gap + (t - 1) / 2, "server B: stage k+1"),
    ):
        fig.add_annotation(
            x=x, y=-0.6, text=text, showarrow=False, yanchor="bottom", font=dict(size=12)
        )
    return fig


_OVERLAP_PARTS = (  # (label, colour index of viz.rank_color, LayerOverlap -> ms)
    ("compute at peak (ideal)", 2, lambda r: r.compute.total * 1e3),
    ("communication, exposed", 3, lambda r: r.exposed.total * 1e3),
    ("communication, hidden behind a GEMM", 0, lambda r: r.hidden * 1e3),
)


def overlap_figure(records, title: str = "") -> go.Figure:
    """Horizontal stacked bars, one per labelled :class:`~scaleout.tensor_parallel.LayerOverlap`
    record (``{label: record}``, at most 12): ideal compute, exposed and hidden
    communication of one layer, forward + backward, in ms. The bar's length to the end of
    the exposed part is the layer's time."""
    if not isinstance(records, dict) or not 1 <= len(records) <= 12:
        raise checks.fail("records", "a dict of 1 to 12 {label: LayerOverlap}", records)
    for label, record in records.items():
        checks.text("records label", label)
        checks.instance(f"records[{label!r}]", record, tp.LayerOverlap)
    title = checks.text("title", title, 300) if title else ""
    labels = list(records)
    fig = new_figure(height=150 + 48 * len(labels))
    for name, color, part in _OVERLAP_PARTS:
        values = [part(records[k]) for k in labels]
        fig.add_bar(
            y=labels,
            x=values,
            orientation="h",
            name=name,
            marker_color=rank_color(color),
            marker_pattern_shape="/" if "hidden" in name else "",
            hovertemplate="%{y}: %{x:.3g} ms<extra>" + name + "</extra>",
        )
    fig.update_layout(
        barmode="stack",
        title_text=title or "One layer, forward + backward: compute and communication",
        xaxis=dict(title_text="time per layer and micro-batch (ms)", rangemode="tozero"),
        yaxis=dict(title_text="overlap schedule", autorange="reversed", title_standoff=12),
        legend=dict(orientation="h", x=0.0, y=-0.25, yanchor="top", traceorder="normal"),
        margin=dict(l=250, t=60, b=110),
    )
    return fig


def figure13_figure(rows) -> go.Figure:
    """Narayanan et al.'s Figure 13 splits as the model prices them: one panel per global
    batch size, throughput per GPU relative to the best split of that panel, grouped bars
    per (t, p) for each topology of the :class:`~scaleout.tensor_parallel.published.Iteration`
    records ``rows`` (from :func:`~scaleout.tensor_parallel.published.figure13`, at most
    40), with the paper's measured best split (t = 8) marked."""
    if not isinstance(rows, list | tuple) or not 1 <= len(rows) <= 40:
        raise checks.fail("rows", "a list of 1 to 40 published.Iteration records", rows)
    for r in rows:
        checks.instance("rows item", r, tpp.Iteration, "a published.Iteration")
    batches = sorted({r.batch for r in rows})
    topologies = list(dict.fromkeys(r.topology for r in rows))
    names = {"nccl": "NCCL's model", "flat-ring": "one NIC (teaching case)",
             "two-level": "two-level (alpha-beta)"}  # fmt: skip
    colors = {"nccl": 5, "flat-ring": 3, "two-level": 0}
    fig = make_subplots(rows=1, cols=len(batches), shared_yaxes=True,
                        subplot_titles=[f"global batch {b}" for b in batches])  # fmt: skip
    for col, batch in enumerate(batches, start=1):
        for topology in topologies:
            sel = sorted((r for r in rows if r.batch == batch and r.topology == topology),
                         key=lambda r: -r.t)  # fmt: skip
            best = max(r.tflops_per_gpu for r in sel)
            fig.add_bar(
                x=[f"t={r.t}, p={r.p}" for r in sel],
                y=[r.tflops_per_gpu / best for r in sel],
                name=names[topology],
                marker_color=rank_color(colors[topology]),
                showlegend=col == 1,
                customdata=[[r.tflops_per_gpu, r.comm_over_compute] for r in sel],
                hovertemplate="%{x}: %{y:.2f} of the best (%{customdata[0]:.0f} TFLOP/s, "
                "communication / compute %{customdata[1]:.2f})<extra>"
                + names[topology]
                + "</extra>",
                row=1,
                col=col,
            )
        fig.add_annotation(x="t=8, p=8", y=1.08, text="measured best", showarrow=False,
                           font=dict(size=11, color="#444"), row=1, col=col)  # fmt: skip
    fig.update_yaxes(title_text="throughput / best split of the model", range=[0, 1.15],
                     row=1, col=1)  # fmt: skip
    fig.update_xaxes(title_text="(tensor, pipeline) on 64 A100s")
    fig.update_layout(
        template=template(),
        barmode="group",
        height=440,
        title_text="162.2B GPT on 8 DGX A100 (Narayanan et al., Figure 13): the model's "
        "throughput per GPU<br><sup>ideal compute + every tensor-parallel all-reduce + 1F1B "
        "bubble; relative to the best split of each model</sup>",
        legend=dict(orientation="h", x=0.0, y=-0.25, yanchor="top"),
        margin=dict(t=90, b=110),
    )
    return fig
