"""Figures for the chapter "Data parallelism" (chapters/02_data_parallel.ipynb).

Every figure is drawn from :mod:`scaleout.data_parallel` data: gradients averaged over
ranks, DDP's buckets (:class:`~scaleout.data_parallel.Buckets`) and step timelines
(:class:`~scaleout.data_parallel.StepTimeline`). Buckets are coloured along the Viridis
scale (a colour-blind-safe sequential scale, distinct from the categorical rank colours)
and named in text; ranks keep their book-wide colours.

Limits: at most :data:`MAX_BUCKET_COLORS` colours, :data:`MAX_ARROWS` ranks in the
gradient figure, :data:`MAX_BARS` parameters in the bucket figure and
:data:`MAX_SWEEP` points in the cap sweep (beyond, a figure is unreadable).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.colors
import plotly.graph_objects as go

from .. import checks
from ..data_parallel import Accumulation, Buckets, StepTimeline
from .animate import animation
from .theme import NEUTRAL, new_figure, rank_color

#: Frames of the timeline animation (at most).
TIMELINE_FRAMES = 40
#: Most bucket colours (:func:`bucket_colors`).
MAX_BUCKET_COLORS = 4096
#: Most ranks in :func:`gradient_average_figure`.
MAX_ARROWS = 64
#: Most parameters in :func:`bucket_figure`.
MAX_BARS = 4096
#: Most caps in :func:`cap_sweep_figure`.
MAX_SWEEP = 1000
_LANES = ("naive: backward", "naive: all-reduce", "DDP: backward", "DDP: all-reduce")


def _timeline(name: str, value) -> StepTimeline:
    return checks.instance(name, value, StepTimeline, "a data_parallel.StepTimeline")


def bucket_colors(n: int) -> list[str]:
    """``n`` colours along Viridis (its pale yellow end left out), bucket 0 darkest."""
    n = checks.integer("n", n, 1, MAX_BUCKET_COLORS)
    return plotly.colors.sample_colorscale("Viridis", list(np.linspace(0.0, 0.85, n)))


def gradient_average_figure(rank_grads, full_grad) -> go.Figure:
    """Each rank's 2-D gradient as an arrow from the origin (rank colours), their average
    (thick black) and the full-batch gradient (dotted ring at its tip)."""
    g = checks.array("rank_grads", rank_grads, ndim=2, max_size=2 * MAX_ARROWS)
    full = checks.array("full_grad", full_grad, ndim=1)
    if g.shape[1] != 2:
        raise checks.fail("rank_grads", "a (p, 2) array of 2-D gradients", g.shape)
    if full.shape != (2,):
        raise checks.fail("full_grad", "one 2-D gradient", full.shape)
    mean = g.mean(axis=0)
    fig = new_figure(height=470, showlegend=True)
    arrows = [(f"rank {r}: mean of its shard", v, rank_color(r), 2) for r, v in enumerate(g)]
    arrows.append(("average over ranks (all-reduce / p)", mean, "black", 4))
    for name, v, color, width in arrows:
        fig.add_scatter(
            x=[0, v[0]],
            y=[0, v[1]],
            mode="lines+markers",
            name=name,
            line=dict(color=color, width=width),
            marker=dict(symbol="arrow", angleref="previous", size=[0, 14], color=color),
            hovertemplate=f"{name}<br>(%{{x:.3f}}, %{{y:.3f}})<extra></extra>",
        )
    fig.add_scatter(
        x=[full[0]],
        y=[full[1]],
        mode="markers",
        name="full-batch gradient (one process)",
        marker=dict(symbol="circle-open", size=22, color="black", line=dict(width=2, dash="dot")),
        hovertemplate="full batch<br>(%{x:.3f}, %{y:.3f})<extra></extra>",
    )
    points = np.vstack([g, full[None], np.zeros((1, 2))])  # every tip, and the origin
    pad = 0.12 * float(np.ptp(points, axis=0).max()) or 1.0  # all at the origin: unit box
    lo, hi = points.min(axis=0) - pad, points.max(axis=0) + pad
    fig.update_layout(
        title_text=f"Shard gradients on {len(g)} ranks and their average",
        xaxis=dict(title_text="∂L/∂w₀ (loss per unit of w₀)", range=[lo[0], hi[0]], zeroline=True),
        yaxis=dict(
            title_text="∂L/∂w₁ (loss per unit of w₁)",
            range=[lo[1], hi[1]],
            zeroline=True,
            scaleanchor="x",  # equal scales: the arrows' directions are true
        ),
        legend=dict(orientation="h", x=0.0, y=-0.22, yanchor="top"),
    )
    return fig


def bucket_figure(names: Sequence[str], param_bytes, buckets: Buckets) -> go.Figure:
    """One row per bucket (bucket 0 at the top); each parameter is a segment as long as its
    gradient, in the order DDP fills the bucket; a black tick marks the bucket's cap."""
    buckets = checks.instance("buckets", buckets, Buckets, "a data_parallel.Buckets")
    sizes = checks.array("param_bytes", param_bytes, ndim=1, low=0.0, low_open=True,
                         max_size=MAX_BARS)  # fmt: skip
    if not isinstance(names, list | tuple) or not all(isinstance(n, str) for n in names):
        raise checks.fail("names", "a list of parameter names (strings)", names)
    n_params = sum(len(m) for m in buckets.params)
    for name, count in (("names", len(names)), ("param_bytes", sizes.size)):
        if count != n_params:
            raise checks.fail(name, f"one entry per parameter of buckets ({n_params})", count)
    colors = bucket_colors(len(buckets))
    xs, bases, ys, texts, hovers, fill = [], [], [], [], [], []
    for k, members in enumerate(buckets.params):
        row = f"bucket {k}"
        left = np.concatenate(([0.0], np.cumsum(sizes[members])[:-1]))
        for i, x0 in zip(members, left, strict=True):
            xs.append(sizes[i] / 1024)
            bases.append(x0 / 1024)
            ys.append(row)
            texts.append(names[i])
            hovers.append(f"{names[i]}: {sizes[i] / 1024:.2f} KiB in {row}")
            fill.append(colors[k])
    fig = new_figure(
        height=140 + 48 * len(buckets), barmode="overlay", showlegend=False, margin=dict(l=80)
    )
    fig.add_bar(
        x=xs,
        base=bases,
        y=ys,
        orientation="h",
        text=texts,
        textposition="inside",
        insidetextanchor="middle",
        hovertext=hovers,
        hoverinfo="text",
        marker=dict(color=fill, line=dict(color="white", width=1.5)),
    )
    rows = [f"bucket {k}" for k in range(len(buckets))]
    capped = buckets.capped
    fig.add_scatter(
        x=(buckets.caps[capped] / 1024),
        y=[r for r, c in zip(rows, capped, strict=True) if c],
        mode="markers",
        marker=dict(symbol="line-ns", size=34, line=dict(width=3, color="black")),
        hovertemplate="cap %{x:.1f} KiB<extra></extra>",
    )
    fig.update_layout(
        title_text="DDP's buckets, filled in reverse registration order",
        xaxis_title_text="gradient bytes in the bucket (KiB); black tick: the bucket's cap",
        yaxis=dict(title_text="", categoryorder="array", categoryarray=rows[::-1]),
    )
    return fig


def _bars(tl: StepTimeline, lane: str):
    """(compute, comm) bar geometry of one timeline, one bar per bucket in each lane: the
    backward compute of the bucket's parameters (contiguous in time: they are filled in the
    order the backward pass produces them) and its all-reduce. Base, width (ms), colour
    value in [0, 1] (bucket 0 .. last, on Viridis as :func:`bucket_colors`), hover text."""
    n = len(tl.buckets)
    begin = tl.grad_ready_s - tl.compute_s
    c_start = np.array([begin[m].min() for m in tl.buckets.params]) * 1e3
    c_end = np.array([tl.grad_ready_s[m].max() for m in tl.buckets.params]) * 1e3
    shade = np.arange(n) / max(n - 1, 1)
    compute = dict(
        base=c_start,
        x=c_end - c_start,
        y=[f"{lane}: backward"] * n,
        color=shade,
        hover=[
            f"bucket {k}: {len(m)} tensors, gradients ready {a:.2f}-{b:.2f} ms"
            for k, (m, a, b) in enumerate(zip(tl.buckets.params, c_start, c_end, strict=True))
        ],
    )
    comm = dict(
        base=tl.start_s * 1e3,
        x=(tl.end_s - tl.start_s) * 1e3,
        y=[f"{lane}: all-reduce"] * n,
        color=shade,
        hover=[
            f"bucket {k}: {b / 1e6:.2f} MB, ready {r:.2f} ms, all-reduce {s:.2f}-{e:.2f} ms"
            for k, (b, r, s, e) in enumerate(
                zip(
                    tl.buckets.nbytes,
                    tl.ready_s * 1e3,
                    tl.start_s * 1e3,
                    tl.end_s * 1e3,
                    strict=True,
                )
            )
        ],
    )
    return compute, comm


def _bar_trace(parts, name) -> go.Bar:
    return go.Bar(
        x=np.concatenate([p["x"] for p in parts]),
        base=np.concatenate([p["base"] for p in parts]),
        y=np.array(sum((p["y"] for p in parts), [])),  # arrays validate much faster
        orientation="h",
        name=name,
        hovertext=np.array(sum((p["hover"] for p in parts), [])),
        hoverinfo="text",
        marker=dict(
            color=np.concatenate([p["color"] for p in parts]),
            colorscale="Viridis",
            cmin=0.0,
            cmax=1 / 0.85,  # as bucket_colors: the pale yellow end left out
            line=dict(width=0),
        ),
        showlegend=False,
    )


def _gantt_traces(naive: StepTimeline, ddp: StepTimeline) -> list[go.Bar]:
    nc, nm = _bars(naive, "naive")
    dc, dm = _bars(ddp, "DDP")
    return [_bar_trace([nc, dc], "backward"), _bar_trace([nm, dm], "all-reduce")]


def _layout(t_max: float, title: str, backward_ms: float) -> dict:
    return dict(
        barmode="overlay",
        bargap=0.25,
        height=400,
        title=dict(text=title, font=dict(size=14)),
        xaxis=dict(title_text="time since the backward pass began (ms)", range=[0, t_max]),
        yaxis=dict(categoryorder="array", categoryarray=list(_LANES[::-1]), title_text=""),
        margin=dict(l=140, t=80),
        shapes=[  # the end of the backward pass: what lies right of it is exposed
            dict(
                type="line",
                xref="x",
                yref="paper",
                x0=backward_ms,
                x1=backward_ms,
                y0=0,
                y1=1,
                line=dict(color=NEUTRAL, dash="dash", width=1.5),
            )
        ],
    )


def _summary(naive: StepTimeline, ddp: StepTimeline) -> str:
    """A second title line: step and exposed all-reduce of both (dashed: end of backward)."""
    return (
        f"<br><sub>step: naive {naive.step_s * 1e3:.1f} ms, DDP {ddp.step_s * 1e3:.1f} ms; "
        f"exposed all-reduce: {naive.exposed_comm_s * 1e3:.1f} ms, "
        f"{ddp.exposed_comm_s * 1e3:.1f} ms</sub>"
    )


def _span_ms(naive: StepTimeline, ddp: StepTimeline) -> float:
    t_end = max(naive.end_s[-1], ddp.end_s[-1]) * 1e3
    if not t_end > 0:
        raise checks.fail("naive", "a timeline that takes some time (its end is at 0 s)", t_end)
    return checks.finite_result("the timeline's end (ms)", t_end)


def timeline_figure(naive: StepTimeline, ddp: StepTimeline, title: str | None = None):
    """Gantt chart of one step's backward pass and all-reduces, naive above DDP below.
    Bars of one colour belong to one bucket (its parameters' compute and its all-reduce);
    the dashed line marks the end of the backward pass."""
    naive, ddp = _timeline("naive", naive), _timeline("ddp", ddp)
    if title is not None:
        title = checks.text("title", title)
    t_max = 1.04 * _span_ms(naive, ddp)
    title = title or f"One step: naive against DDP with {len(ddp.buckets)} buckets"
    fig = new_figure(**_layout(t_max, title + _summary(naive, ddp), naive.backward_s * 1e3))
    fig.add_traces(_gantt_traces(naive, ddp))
    return fig


def timeline_animation(naive: StepTimeline, ddp: StepTimeline, frames: int = TIMELINE_FRAMES):
    """The same Gantt chart played in time: the slider moves 'now' (a black line); what has
    not happened yet is veiled. Only the veil and the line change from frame to frame, so
    the page stores the bars once."""
    naive, ddp = _timeline("naive", naive), _timeline("ddp", ddp)
    frames = checks.integer("frames", frames, 2, TIMELINE_FRAMES)
    t_end = _span_ms(naive, ddp)
    t_max = 1.04 * t_end
    gantt = _gantt_traces(naive, ddp)
    data, labels, titles = [], [], []
    for j, now in enumerate(np.linspace(0.0, t_end, frames)):
        left, width = [float(now)] * len(_LANES), [float(t_max - now)] * len(_LANES)
        if j == 0:  # the bars, a veil over what has not happened yet, and a line at 'now'
            veil = go.Bar(
                x=width,
                base=left,
                y=list(_LANES),
                orientation="h",
                width=0.9,
                marker=dict(color="rgba(255,255,255,0.82)", line=dict(width=0)),
                hoverinfo="skip",
                showlegend=False,
            )
            line = go.Scatter(
                x=left[:2],
                y=[_LANES[0], _LANES[-1]],
                mode="lines",
                line=dict(color="black", width=2),
                hoverinfo="skip",
                showlegend=False,
            )
            data.append([go.Bar(), go.Bar(), veil, line])  # bars: set once, below
        else:  # frames only move the veil and the line: the page stays light
            data.append([go.Bar(), go.Bar(), go.Bar(x=width, base=left), go.Scatter(x=left[:2])])
        if now < naive.backward_s * 1e3:
            state = "computing"
        elif now < naive.end_s[-1] * 1e3:
            state = "all-reducing, GPU idle"
        else:
            state = "done"
        done = int(np.sum(ddp.end_s * 1e3 <= now + 1e-9))
        labels.append(f"{now:.1f}")
        titles.append(
            f"naive: {state}; DDP: {done}/{len(ddp.buckets)} buckets reduced" + _summary(naive, ddp)
        )
    fig = animation(
        data,
        labels,
        frame_titles=titles,
        slider_prefix="t (ms) = ",
        duration_ms=250,
        **_layout(t_max, titles[0], naive.backward_s * 1e3),
    )
    for trace, bars in zip(fig.data[:2], gantt, strict=True):  # stored once, in no frame
        trace.update({k: v for k, v in bars.to_plotly_json().items() if k != "type"})
    return fig


def cap_sweep_figure(caps_mib, ddp: Sequence[StepTimeline], naive: StepTimeline) -> go.Figure:
    """Step time and exposed all-reduce against the bucket cap (log axis), one DDP
    timeline per cap, with the naive step and the compute-only floor as flat lines."""
    caps = checks.array("caps_mib", caps_mib, ndim=1, low=0.0, low_open=True,
                        max_size=MAX_SWEEP)  # fmt: skip
    naive = _timeline("naive", naive)
    if not isinstance(ddp, list | tuple) or len(ddp) != caps.size or caps.size < 2:
        raise checks.fail("ddp", f"a list of one timeline per cap ({caps.size}, at least 2)", ddp)
    ddp = [_timeline(f"ddp[{i}]", t) for i, t in enumerate(ddp)]
    step = np.array([t.step_s for t in ddp]) * 1e3
    exposed = np.array([t.exposed_comm_s for t in ddp]) * 1e3
    checks.finite_result("the step times (ms)", np.concatenate([step, [naive.step_s * 1e3]]))
    buckets = [len(t.buckets) for t in ddp]
    fig = new_figure(height=420, legend=dict(x=0.02, y=0.62, yanchor="top"))
    fig.add_scatter(
        x=caps,
        y=step,
        name="DDP step",
        mode="lines+markers",
        customdata=buckets,
        hovertemplate="cap %{x:.3g} MiB: step %{y:.2f} ms, %{customdata} buckets<extra></extra>",
    )
    fig.add_scatter(
        x=caps,
        y=exposed,
        name="DDP exposed all-reduce",
        mode="lines+markers",
        customdata=buckets,
        hovertemplate="cap %{x:.3g} MiB: exposed %{y:.2f} ms, %{customdata} buckets<extra></extra>",
    )
    flat = [
        ("naive step (one all-reduce after backward)", naive.step_s, "dash"),
        ("compute only (forward + backward)", naive.forward_s + naive.backward_s, "dot"),
    ]
    for name, value, dash in flat:
        fig.add_scatter(
            x=[caps.min(), caps.max()],
            y=[value * 1e3] * 2,
            name=name,
            mode="lines",
            line=dict(color="black" if dash == "dash" else NEUTRAL, dash=dash, width=2),
            hovertemplate=f"{name}: %{{y:.2f}} ms<extra></extra>",
        )
    fig.update_layout(
        title_text="Step time against the bucket cap<br><sub>too small: every bucket pays "
        "latency; too large: the last bucket is exposed</sub>",
        margin=dict(t=80),
        xaxis=dict(type="log", title_text="bucket cap (MiB)"),
        yaxis=dict(title_text="time per step (ms)", rangemode="tozero"),
    )
    return fig


#: Most rows of :func:`caps_table_figure`.
MAX_TABLE_ROWS = 40


def caps_table_figure(labels: Sequence[str], naive: StepTimeline, ddp: Sequence[StepTimeline],
                      title: str = "One step for each bucket cap") -> go.Figure:  # fmt: skip
    """The naive step and one DDP timeline per bucket cap as a table (drawn by
    :func:`scaleout.viz.memory.table_figure`): buckets, all-reduce total, exposed, step;
    the row of the fastest step is shaded. ``labels`` names the caps, one per timeline."""
    from .memory import table_figure

    naive = _timeline("naive", naive)
    if not isinstance(labels, list | tuple) or not 1 <= len(labels) <= MAX_TABLE_ROWS:
        raise checks.fail("labels", f"a list of 1 to {MAX_TABLE_ROWS} cap names", labels)
    if not isinstance(ddp, list | tuple) or len(ddp) != len(labels):
        raise checks.fail("ddp", f"a list of one timeline per label ({len(labels)})", ddp)
    ddp = [_timeline(f"ddp[{i}]", t) for i, t in enumerate(ddp)]
    timelines = [naive, *ddp]
    rows = ["naive (one, after backward)", *(checks.text("labels entry", x, 80) for x in labels)]
    steps = [t.step_s for t in timelines]
    checks.finite_result("the step times", np.array(steps))
    fastest = int(np.argmin(steps))
    text = [[str(len(t.buckets)), f"{t.comm_s * 1e3:.1f} ms", f"{t.exposed_comm_s * 1e3:.1f} ms",
             f"{t.step_s * 1e3:.1f} ms"] for t in timelines]  # fmt: skip
    shaded = [[i == fastest] * 4 for i in range(len(rows))]
    columns = ["buckets", "all-reduce total", "exposed", "step"]
    return table_figure(rows, columns, text, shaded, checks.text("title", title, 300),
                        shade_name="fastest step", row_title="bucket cap")  # fmt: skip


def accumulation_table_figure(rows, title: str = "Gradient accumulation: one optimizer step"):
    """``rows``: a mapping from a row label to a (no_sync, sync every micro-step) pair of
    :class:`~scaleout.data_parallel.Accumulation` records, drawn as a table (step time and
    bucket all-reduces of each); rows where ``no_sync`` is the faster step are shaded."""
    from .memory import table_figure

    if not isinstance(rows, dict) or not 1 <= len(rows) <= MAX_TABLE_ROWS:
        raise checks.fail("rows", f"a dict of 1 to {MAX_TABLE_ROWS} labelled pairs", rows)
    labels, text, shaded = [], [], []
    for label, pair in rows.items():
        labels.append(checks.text("rows key", label, 80))
        if not isinstance(pair, tuple) or len(pair) != 2:
            raise checks.fail(f"rows[{label!r}]", "a (no_sync, sync) pair of Accumulation", pair)
        quiet, loud = (checks.instance(f"rows[{label!r}]", a, Accumulation, "an Accumulation")
                       for a in pair)  # fmt: skip
        text.append([f"{quiet.step_s * 1e3:.1f} ms", str(quiet.allreduces),
                     f"{loud.step_s * 1e3:.1f} ms", str(loud.allreduces)])  # fmt: skip
        shaded.append([quiet.step_s < loud.step_s] * 4)
    columns = [
        "step, no_sync",
        "all-reduces, no_sync",
        "step, sync every micro-step",
        "all-reduces, sync",
    ]
    return table_figure(labels, columns, text, shaded, checks.text("title", title, 300),
                        shade_name="no_sync is faster", row_title="NIC, micro-steps k")  # fmt: skip
