"""Figures for the chapter "ZeRO sharding" (chapters/06_zero.ipynb).

Every number drawn comes from :mod:`scaleout.memory` (model states, activations, the ZeRO-3
step) or from measurements and tables passed in; this module only converts bytes to GB for
display. Kinds of state get their own colours (Paul Tol's colour-blind-safe "muted" scheme,
chosen apart from the rank colours); a rank's shard is always drawn in that rank's colour.
Sizes are bounded so that every figure stays legible (see each function).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go

from .. import checks
from .. import memory as M
from .animate import MAX_FRAMES, animation
from .theme import NEUTRAL, new_figure, rank_color

GB = 1e9
KIND_COLORS = {
    "parameters": "#332288",
    "gradients": "#44AA99",
    "optimizer states": "#DDCC77",
    "activations": "#CC6677",
}
STAGE_LABELS = {0: "plain DP", 1: "ZeRO-1", 2: "ZeRO-2", 3: "ZeRO-3"}
ACCOUNTING_LABELS = {
    "mixed": "ZeRO paper (fp16)",
    "megatron-bf16": "Megatron bf16",
    "megatron-fp16": "Megatron fp16",
    "fp32": "fp32",
}
EMPTY = "#F2F2F2"
UNREDUCED = "#777777"
FITS, TOO_BIG = "#BBCCEE", "#F2F2F2"  # Paul Tol's pale blue; light grey
MAX_FIGURE_RANKS = 16  # ranks drawn one row each
MAX_ANIMATION_SIZE = 8  # layers and ranks of the ZeRO-3 animation (cells grow as L dp^2)
MAX_CURVE_POINTS = 64
MAX_TABLE_CELLS = 400


def _is_list(x) -> bool:
    """A sequence or array that is not a string."""
    return isinstance(x, Sequence | np.ndarray) and not isinstance(x, str)


def _str(x):
    """``x`` itself, or None for anything that is not a string (so ``==`` is safe)."""
    return x if isinstance(x, str) else None


def _params(params) -> float:
    return checks.positive("params", params)


def stage_layout(dp: int = 4, optimizer: str = "adam", precision: str = "mixed") -> go.Figure:
    """What each rank stores at each stage, in bytes per model parameter, split by kind
    (``dp`` at most ``MAX_FIGURE_RANKS``)."""
    dp = checks.integer("dp", dp, 1, MAX_FIGURE_RANKS)
    rows = [(s, r) for s in M.STAGES for r in range(dp)]
    states = {s: M.model_state_bytes(1.0, s, dp, optimizer, None, precision) for s in M.STAGES}
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
        held = [_attr(states[s], kind) for s, _ in rows]
        text = [f"shard {r}" if s >= M.SHARDED_FROM[kind] else "full" for s, r in rows]
        fig.add_bar(
            y=y, x=held, orientation="h", name=kind, text=text,
            textposition="inside", insidetextanchor="middle",
            marker=dict(color=KIND_COLORS[kind], line=dict(color="white", width=1)),
            hovertemplate="%{x:.3g} bytes/parameter of " + kind + " (%{text})<extra></extra>",
        )  # fmt: skip
    return fig


def _short(state: M.State) -> str:
    """A segment label: "W bf16", "g fp32", "master", "m", "v", "g copy"."""
    name = state.name
    for key, label in (("master", "master"), ("momentum", "m"), ("variance", "v"),
                       ("copy", "g copy")):  # fmt: skip
        if key in name:
            return label
    role = {"parameters": "W", "gradients": "g"}.get(state.kind, "K")
    return f"{role} {name.split()[0]}"


def accountings(dp: int = 8, precisions: Sequence[str] = ("mixed", "megatron-bf16",
                "megatron-fp16")) -> go.Figure:  # fmt: skip
    """Bytes per parameter of each accounting of Adam's model states (one bar per state),
    unsharded and with the optimizer states sharded over ``dp`` ranks (ZeRO-1, which is
    Megatron's distributed optimizer)."""
    dp = checks.integer("dp", dp, 2, 2**20)
    if not _is_list(precisions) or not 1 <= len(precisions) <= len(M.PRECISIONS):
        raise checks.fail("precisions", f"a sequence of 1 to {len(M.PRECISIONS)} accountings",
                          precisions)  # fmt: skip
    precisions = [checks.choice("precisions entry", p, M.PRECISIONS) for p in precisions]
    if len(set(precisions)) != len(precisions):
        raise checks.fail("precisions", "distinct accountings", precisions)
    rows = [(p, z) for p in precisions for z in (0, 1)]
    y = [f"{ACCOUNTING_LABELS[p]}<br>{'unsharded' if z == 0 else f'ZeRO-1, d = {dp}'}"
         for p, z in rows]  # fmt: skip
    fig = new_figure(
        barmode="stack", height=130 + 46 * len(rows),
        title_text="Bytes per parameter of mixed-precision Adam, three accountings",
        xaxis_title="model-state bytes per parameter held by one GPU",
        yaxis=dict(title="", autorange="reversed", automargin=True), showlegend=True,
        legend=dict(orientation="h", y=1.0, yanchor="bottom", x=1, xanchor="right",
                    traceorder="normal"),
        margin=dict(l=140, t=80), uniformtext=dict(minsize=9, mode="hide"),
    )  # fmt: skip
    per_row = [M.model_state_bytes(1.0, z, dp, "adam", None, p) for p, z in rows]
    states = [M.states_per_param("adam", p) for p, _ in rows]
    for slot in range(max(len(st) for st in states)):  # one trace per position in the stack
        held = [(st[slot], h.breakdown[st[slot].name]) if slot < len(st) else (None, 0.0)
                for st, h in zip(states, per_row, strict=True)]  # fmt: skip
        fig.add_bar(
            y=y, x=[b for _, b in held], orientation="h", showlegend=False,
            text=[_short(s) if s else "" for s, _ in held],
            hovertext=[f"{s.name}: {b:.3g} bytes/parameter" if s else "" for s, b in held],
            hoverinfo="text", textposition="inside", insidetextanchor="middle",
            marker=dict(color=[KIND_COLORS[s.kind] if s else EMPTY for s, _ in held],
                        line=dict(color="white", width=1)),
        )  # fmt: skip
    for kind in M.KINDS:  # legend entries: one per kind
        fig.add_bar(y=y[:1], x=[0], orientation="h", name=kind,
                    marker_color=KIND_COLORS[kind], hoverinfo="skip")  # fmt: skip
    totals = [h.total for h in per_row]
    fig.add_scatter(
        y=y, x=totals, mode="text", text=[f"  {t:.3g}" for t in totals],
        textposition="middle right", showlegend=False, hoverinfo="skip",
    )  # fmt: skip
    fig.update_xaxes(range=[0, max(totals) * 1.15])
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
    gb = checks.nonnegative("gb", gb)
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


def _inputs(params, act_bytes, gpu_bytes) -> tuple[float, float, float]:
    return (_params(params), checks.nonnegative("act_bytes", act_bytes),
            checks.positive("gpu_bytes", gpu_bytes))  # fmt: skip


def memory_by_stage(
    params, dp, act_bytes=0.0, gpu_bytes=M.DEFAULT_GPU_BYTES, title=None
) -> go.Figure:
    """Per-device memory of each stage at one N_d: stacked bars with the GPU's capacity."""
    params, act_bytes, gpu_bytes = _inputs(params, act_bytes, gpu_bytes)
    dp = checks.integer("dp", dp, 1)
    title = f"{params / 1e9:,.4g}B parameters: N<sub>d</sub> = {dp}" if title is None else title
    title = checks.text("title", title, 300)
    traces, top = _stage_traces(params, dp, act_bytes, gpu_bytes)
    fig = new_figure(**_bars_layout(title, max(top, gpu_bytes / GB)))
    fig.add_traces(traces)
    return fig


def memory_vs_dp(
    params, dps: Sequence[int], act_bytes=0.0, gpu_bytes=M.DEFAULT_GPU_BYTES, name="", start=None
) -> go.Figure:
    """The same bars with a slider over N_d (fixed y range, so sharded stages shrink),
    showing N_d = ``start`` (one of ``dps``; default the first) until the slider moves."""
    params, act_bytes, gpu_bytes = _inputs(params, act_bytes, gpu_bytes)
    dps = checks.array("dps", dps, ndim=1, integer=True, low=1, max_size=MAX_FRAMES).tolist()
    if not isinstance(name, str) or len(name) > 200:
        raise checks.fail("name", "a string of at most 200 characters", name)
    k = 0 if start is None else None
    if start is not None:
        checks.integer("start", start, 1)
        if start not in dps:
            raise checks.fail("start", f"one of dps {dps}", start)
        k = dps.index(start)
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
    fig.update(data=frames[k])
    fig.update_layout(title_text=titles[k])
    fig.layout.sliders[0].active = k
    return fig


CURVES = (  # (recompute, flash_attention, legend, dash, colour, width)
    ("none", False, "no recompute, scores stored", "solid", KIND_COLORS["activations"], 2.5),
    ("none", True, "no recompute, FlashAttention", "solid", "#88CCEE", 7),  # wide: under
    ("selective", False, "selective recompute", "dash", "#882255", 2.5),  # selective's line
    ("full", False, "full recompute", "dot", "#117733", 2.5),
)


def activation_curves(config: M.Transformer, seqs: Sequence[int], batch: int = 1, tp: int = 1):
    """GB of activations per layer against sequence length: no recomputation with the
    attention matrices stored (Korthikanti et al.) and with FlashAttention, selective and
    full recomputation (at most ``MAX_CURVE_POINTS`` lengths)."""
    checks.instance("config", config, M.Transformer)
    seqs = checks.array("seqs", seqs, ndim=1, integer=True, low=1, max_size=MAX_CURVE_POINTS)
    batch, tp = checks.integer("batch", batch, 1), checks.integer("tp", tp, 1)
    fig = new_figure(
        height=440,
        title_text=f"Activations per layer, {config.name} config (b = {batch})",
        xaxis=dict(
            title="sequence length s (tokens)",
            type="log",
            tickvals=seqs.tolist(),
            ticktext=[str(x) for x in seqs.tolist()],
        ),
        yaxis=dict(title="activation memory per layer (GB)", type="log", dtick=1),
        legend=dict(x=0.02, y=0.98),
    )
    for mode, flash, label, dash, color, width in CURVES:
        y = M.activation_bytes_per_layer(seqs, batch, config.hidden, config.heads, mode, tp,
                                         flash_attention=flash)  # fmt: skip
        fig.add_scatter(
            x=seqs.tolist(),
            y=np.asarray(y) / GB,
            mode="lines+markers",
            name=label,
            line=dict(dash=dash, color=color, width=width),
            hovertemplate="s = %{x}: %{y:.3g} GB<extra>" + label + "</extra>",
        )
    return fig


def table_figure(rows: Sequence[str], columns: Sequence[str], text, shaded, title: str,
                 bold=None, shade_name: str = "fits", row_title: str = "",
                 column_title: str = "") -> go.Figure:  # fmt: skip
    """A table drawn as a heatmap: ``text[i][j]`` in row i, column j; cells with
    ``shaded[i][j]`` true in pale blue (the legend says ``shade_name``), the others grey;
    ``bold[i][j]`` true in bold. At most ``MAX_TABLE_CELLS`` cells."""
    for key, labels in (("rows", rows), ("columns", columns)):
        if not _is_list(labels) or not len(labels):
            raise checks.fail(key, "a non-empty sequence of labels", labels)
        for label in labels:
            checks.text(f"{key} entry", label, 80)
    shape = (len(rows), len(columns))
    if shape[0] * shape[1] > MAX_TABLE_CELLS:
        raise checks.fail("rows x columns", f"at most {MAX_TABLE_CELLS} cells", shape)
    checks.text("title", title, 300)
    checks.text("shade_name", shade_name, 80)
    for key, value in (("row_title", row_title), ("column_title", column_title)):
        if not isinstance(value, str) or len(value) > 80:
            raise checks.fail(key, "a string of at most 80 characters", value)
    text = _grid("text", text, shape, str)
    shaded = _grid("shaded", shaded, shape, bool)
    bold = [[False] * shape[1]] * shape[0] if bold is None else _grid("bold", bold, shape, bool)
    cells = [[f"<b>{t}</b>" if b else t for t, b in zip(tr, br, strict=True)]
             for tr, br in zip(text, bold, strict=True)]  # fmt: skip
    fig = new_figure(
        height=120 + 34 * shape[0], title_text=title,
        xaxis=dict(title=column_title, side="top", showgrid=False, type="category",
                   automargin=True),
        yaxis=dict(title=row_title, autorange="reversed", showgrid=False, type="category",
                   automargin=True),
        margin=dict(l=20, t=110, b=20), showlegend=True,
        legend=dict(orientation="h", y=0, yanchor="top", x=0),
    )  # fmt: skip
    fig.add_heatmap(
        x=list(columns), y=list(rows), z=[[1 if s else 0 for s in r] for r in shaded],
        zmin=0, zmax=1, colorscale=[[0, TOO_BIG], [1, FITS]], showscale=False,
        text=cells, texttemplate="%{text}", hoverinfo="text", xgap=2, ygap=2,
    )  # fmt: skip
    for name, color in ((shade_name, FITS), ("does not", TOO_BIG)):
        fig.add_scatter(x=[None], y=[None], mode="markers", name=name,
                        marker=dict(symbol="square", size=14, color=color,
                                    line=dict(color="#888888", width=1)))  # fmt: skip
    return fig


MAX_TABLE_MODELS = 16  # rows of zero_table1 and min_dp_table are models x stages / modes


def zero_table1(models, dps: Sequence[int], gpu_bytes=32e9, stages=(1, 2, 3)) -> go.Figure:
    """ZeRO's Table 1 (Rajbhandari et al., section 5) as a figure: GB of model states per
    device (:func:`scaleout.memory.model_state_bytes`) for each model (``models``: name ->
    parameters) and stage (rows, labelled with the smallest N_d that fits ``gpu_bytes``,
    from :func:`scaleout.memory.min_dp_to_fit`) at each N_d in ``dps`` (columns). Every
    cell that fits is shaded; the first fitting column of each row is bold, as in the
    paper. At most ``MAX_TABLE_MODELS`` models."""
    if not isinstance(models, Mapping) or not 1 <= len(models) <= MAX_TABLE_MODELS:
        raise checks.fail("models", f"a mapping of 1 to {MAX_TABLE_MODELS} names -> parameters",
                          models)  # fmt: skip
    dps = checks.array("dps", dps, ndim=1, integer=True, low=1, max_size=64).tolist()
    gpu_bytes = checks.positive("gpu_bytes", gpu_bytes)
    if not _is_list(stages) or not 1 <= len(stages) <= len(M.STAGES):
        raise checks.fail("stages", "a sequence of ZeRO stages", stages)
    stages = [checks.integer("stages entry", st, 0, 3) for st in stages]
    rows, text, fits, first = [], [], [], []
    for name, psi in models.items():
        checks.text("models key", name, 40)
        psi = _params(psi)
        for st in stages:
            gb = [M.model_state_bytes(psi, st, d).total / GB for d in dps]
            need = M.min_dp_to_fit(psi, st, gpu_bytes=gpu_bytes)
            rows.append(f"{name} {STAGE_LABELS[st]}, "
                        + ("never" if need is None else f"N_d ≥ {need}"))  # fmt: skip
            text.append([gb_text(g).removesuffix(" GB") for g in gb])
            fits.append([g * GB <= gpu_bytes for g in gb])
            first.append([f and not any(fits[-1][:j]) for j, f in enumerate(fits[-1])])
    return table_figure(rows, [str(d) for d in dps], text, fits,
                        "ZeRO Table 1: GB per device (bold: the paper's bold entries)",
                        bold=first, shade_name=f"fits a {gpu_bytes / GB:g} GB V100",
                        column_title="N<sub>d</sub>")  # fmt: skip


def min_dp_table(need, activations, gpu_bytes=M.DEFAULT_GPU_BYTES) -> go.Figure:
    """The smallest N_d at which each stage fits ``gpu_bytes`` (columns: stages; "—" where
    no N_d does), one row per key of ``need`` (a (model, activation setting) pair ->
    one :func:`scaleout.memory.min_dp_to_fit` result per stage), labelled with its
    activation bytes from ``activations`` (same keys)."""
    if not isinstance(need, Mapping) or not 1 <= len(need) <= 4 * MAX_TABLE_MODELS:
        raise checks.fail("need", f"a mapping of 1 to {4 * MAX_TABLE_MODELS} rows", need)
    if not isinstance(activations, Mapping) or set(activations) != set(need):
        raise checks.fail("activations", "a mapping with the keys of need", activations)
    gpu_bytes = checks.positive("gpu_bytes", gpu_bytes)
    rows, text = [], []
    for key, row in need.items():
        if not isinstance(key, tuple) or len(key) != 2:
            raise checks.fail("need key", "a (model, activation setting) pair", key)
        name, label = (checks.text("need key entry", k, 40) for k in key)
        if not _is_list(row) or len(row) != len(M.STAGES):
            raise checks.fail(f"need[{key!r}]", f"{len(M.STAGES)} entries, one per stage", row)
        for n in row:
            if n is not None:
                checks.integer(f"need[{key!r}] entry", n, 1)
        act = checks.nonnegative(f"activations[{key!r}]", activations[key])
        rows.append(f"{name}, {label}, {gb_text(act / GB)}")
        text.append(["—" if n is None else str(n) for n in row])
    fits = [[n is not None for n in row] for row in need.values()]
    return table_figure(rows, list(STAGE_LABELS.values()), text, fits,
                        f"Smallest N<sub>d</sub> that fits a {gpu_bytes / GB:g} GB GPU "
                        "(micro-batch 1)", shade_name="fits at some N_d")  # fmt: skip


def published_table(names: Sequence[str], measured, predicted, fitted) -> go.Figure:
    """Measured against modelled TFLOP/s per GPU as a table: one row per run (``names``),
    the ``measured`` column, then for each model variant (``predicted``: label -> one
    value per run) its prediction and its error (prediction / measured - 1); the cells of
    the rows a variant was fitted on (``fitted``: label -> row indices) are shaded."""
    if not _is_list(names) or not 1 <= len(names) <= 4 * MAX_TABLE_MODELS:
        raise checks.fail("names", f"a sequence of 1 to {4 * MAX_TABLE_MODELS} run names", names)
    n = len(names)
    meas = checks.array("measured", measured, ndim=1, low=0.0, low_open=True, max_size=n)
    if meas.shape != (n,):
        raise checks.fail("measured", f"{n} values, one per run", measured)
    if not isinstance(predicted, Mapping) or not 1 <= len(predicted) <= 4:
        raise checks.fail("predicted", "a mapping of 1 to 4 labels -> predictions", predicted)
    if not isinstance(fitted, Mapping) or set(fitted) != set(predicted):
        raise checks.fail("fitted", "a mapping with the labels of predicted", fitted)
    columns, text, shaded = ["measured"], [[f"{m:.3g}"] for m in meas], [[False] for _ in meas]
    for label, values in predicted.items():
        checks.text("predicted label", label, 30)
        pred = checks.array(f"predicted[{label!r}]", values, ndim=1, low=0.0, max_size=n)
        if pred.shape != (n,):
            raise checks.fail(f"predicted[{label!r}]", f"{n} values, one per run", values)
        rows = fitted[label]
        if not _is_list(rows):
            raise checks.fail(f"fitted[{label!r}]", "a sequence of row indices", rows)
        rows = {checks.integer(f"fitted[{label!r}] entry", r, 0, n - 1) for r in rows}
        columns += [label, f"error, {label}"]
        for i in range(n):
            text[i] += [f"{pred[i]:.3g}", f"{pred[i] / meas[i] - 1:+.0%}"]
            shaded[i] += [i in rows] * 2
    return table_figure(list(names), columns, text, shaded,
                        "TFLOP/s per GPU: measured (Narayanan et al. 2021, Table 2) and modelled",
                        shade_name="row the variant was fitted on")  # fmt: skip


def _grid(name: str, grid, shape, kind) -> list:
    """A list of ``shape[0]`` rows of ``shape[1]`` entries of type ``kind``."""
    what = f"{shape[0]} rows of {shape[1]} {'strings' if kind is str else 'booleans'}"
    if not _is_list(grid) or len(grid) != shape[0]:
        raise checks.fail(name, what, grid)
    out = []
    for row in grid:
        if not _is_list(row) or len(row) != shape[1]:
            raise checks.fail(name, what, grid)
        if kind is str:
            out.append(
                [t if t == "" else checks.text(f"{name} entry", t, 80) for t in map(_str, row)]
            )
        else:
            out.append([checks.boolean(f"{name} entry", b) for b in row])
    return out


def zero3_animation(layers: int = 4, dp: int = 4, prefetch: int = 0) -> go.Figure:
    """One ZeRO-3 step (:func:`scaleout.memory.zero3_step`): rows are ranks and their
    parameters (W), gradients (g) and optimizer states (m, v); columns are layers, each cut
    into dp shards. Shard s belongs to rank s and is drawn in its colour. At most
    ``MAX_ANIMATION_SIZE`` layers and ranks, and ``MAX_FRAMES`` frames."""
    layers = checks.integer("layers", layers, 1, MAX_ANIMATION_SIZE)
    dp = checks.integer("dp", dp, 1, MAX_ANIMATION_SIZE)
    steps = M.zero3_step(layers, dp, prefetch)
    if len(steps) > MAX_FRAMES:
        raise checks.fail("layers", f"few enough layers for {MAX_FRAMES} frames", layers)
    xs = [i * (dp + 1) + s for i in range(layers) for s in range(dp)]
    rows = ["W", "g", "m,v"]
    px, py = [], []
    for r in range(dp):
        for j in range(len(rows)):
            for i in range(layers):
                for s in range(dp):
                    px.append(i * (dp + 1) + s)
                    py.append(r * (len(rows) + 1) + j)
    frames, labels, titles = [], [], []
    for k, f in enumerate(steps):
        color, text, hover = [], [], []
        for r in range(dp):
            for row in rows:
                for i in range(layers):
                    for s in range(dp):
                        c, t, h = _zero3_cell(f, row, r, i, s)
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
            what = "own shard" if mine else f"gathered from rank {s}"
            new = f.updated[i] and mine
            return rank_color(s), "W′" if new else "W", what + (" (updated)" if new else "")
        return EMPTY, "", "not held"
    if row == "g":
        if f.grad[i] == "full":
            return UNREDUCED, "g", "own gradient, not yet summed"
        if f.grad[i] == "shard" and mine:
            return rank_color(s), "Σg", "summed gradient of its shard"
        return EMPTY, "", "not held"
    if mine:
        return rank_color(s), "m,v", "Adam states of its shard"
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
    and the even split (total / N_d) as references (at most ``MAX_FIGURE_RANKS`` ranks)."""
    measured = checks.array("measured", measured, ndim=1, low=0.0, max_size=MAX_FIGURE_RANKS)
    predicted = checks.array("predicted", predicted, ndim=1, low=0.0, max_size=MAX_FIGURE_RANKS)
    if len(predicted) != len(measured):
        raise checks.fail("predicted", f"{len(measured)} values, one per rank", predicted.tolist())
    ideal = checks.nonnegative("ideal", ideal)
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
        x=ranks, y=measured.tolist(), name="measured from optimizer.state",
        marker_color=[rank_color(r) for r in ranks],
        hovertemplate="rank %{x}: %{y} bytes<extra>measured</extra>",
    )  # fmt: skip
    fig.add_scatter(
        x=ranks, y=predicted.tolist(), mode="markers", name="predicted by greedy_partition",
        marker=dict(symbol="x", size=12, color="black"),
        hovertemplate="rank %{x}: %{y} bytes<extra>predicted</extra>",
    )  # fmt: skip
    fig.add_scatter(
        x=[-0.5, len(ranks) - 0.5], y=[ideal, ideal], mode="lines", name="even split (1/N_d)",
        line=dict(color="black", dash="dash"), hoverinfo="skip",
    )  # fmt: skip
    return fig
