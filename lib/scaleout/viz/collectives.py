"""Figures for the chapter "Collective communication" (chapters/01_collectives.ipynb).

Every figure is drawn from the library's data: who holds what comes from
:func:`scaleout.collectives.reference` and :func:`scaleout.collectives.replay` run on
symbolic inputs (rank r contributes the value 2**r, so a sum is the set of ranks it
contains); costs come from :mod:`scaleout.costmodel`.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .. import checks
from .. import collectives as C
from .. import costmodel as M
from .animate import animation
from .theme import NEUTRAL, rank_color, template

SUM_COLOR = "#333333"
LETTERS = "ABCDEFGH"
MAX_POINTS = 2000  # points per curve of a cost figure (enough for any log axis)
ALLREDUCE_ALGORITHMS = tuple(a for c, a in M.ALGORITHMS if c == "allreduce")

# Input layout per collective for p ranks: (elements per rank in, elements per rank out).
# One element stands for one chunk; slots a rank does not hold are drawn empty.
_SHAPES = {
    "broadcast": ("p", "p"),
    "reduce": ("p", "p"),
    "allreduce": ("p", "p"),
    "reducescatter": ("p", 1),
    "allgather": (1, "p"),
    "alltoall": ("p", "p"),
    "scatter": ("p", 1),
    "gather": (1, "p"),
}


def holdings(collective: str, p: int = 4, root: int = 0):
    """Who holds what before and after ``collective`` on ``p`` ranks, as (before, after).

    Each is a (p, p) object array of cells ``(chunk, frozenset(contributing ranks))`` or
    ``None`` for an empty slot. Derived from :func:`scaleout.collectives.reference`.
    """
    collective = checks.choice("collective", collective, tuple(_SHAPES))
    p = checks.integer("p", p, 2, len(LETTERS))
    root = checks.integer("root", root, 0, p - 1)
    n_in = p if _SHAPES[collective][0] == "p" else 1
    masks = np.array([[2.0**r] * n_in for r in range(p)])
    chunk_ids = np.array([[j if n_in > 1 else r for j in range(n_in)] for r in range(p)], float)
    only_root = collective in ("broadcast", "scatter")

    def cells(mask_rows, chunk_rows, slot_of):
        grid = np.full((p, p), None, dtype=object)
        for r, (mrow, crow) in enumerate(zip(mask_rows, chunk_rows, strict=True)):
            for k, (m, c) in enumerate(zip(mrow, crow, strict=True)):
                ranks = frozenset(i for i in range(p) if int(m) >> i & 1)
                if ranks:
                    grid[r, slot_of(r, k, len(mrow))] = (int(round(c / len(ranks))), ranks)
        return grid

    def slot(r, k, length):
        return k if length > 1 else r

    before_masks = [row if (not only_root or r == root) else [] for r, row in enumerate(masks)]
    before_chunks = [row if (not only_root or r == root) else [] for r, row in enumerate(chunk_ids)]
    before = cells(before_masks, before_chunks, slot)
    after = cells(
        C.reference(collective, masks, root), C.reference(collective, chunk_ids, root), slot
    )
    return before, after


def _cell_style(cell):
    if cell is None:
        return "", NEUTRAL, "empty"
    chunk, ranks = cell
    if len(ranks) == 1:
        (r,) = ranks
        return f"{LETTERS[r]}{chunk}", rank_color(r), f"rank {r}'s chunk {chunk}"
    names = "+".join(LETTERS[r] for r in sorted(ranks))
    return f"Σ{chunk}", SUM_COLOR, f"sum of chunk {chunk} over {names}"


def _grid_traces(grid, xaxis="x", yaxis="y"):
    """One scatter of square markers: a cell per (rank, slot)."""
    p = grid.shape[0]
    xs, ys, texts, colors, hovers = [], [], [], [], []
    for r in range(p):
        for k in range(p):
            text, color, hover = _cell_style(grid[r, k])
            xs.append(k)
            ys.append(r)
            texts.append(text)
            colors.append(color)
            hovers.append(f"rank {r}, slot {k}: {hover}")
    return go.Scatter(
        x=xs,
        y=ys,
        mode="markers+text",
        text=texts,
        hovertext=hovers,
        hoverinfo="text",
        marker=dict(symbol="square", size=34, color=colors, line=dict(color="white", width=1)),
        textfont=dict(color="white", size=12),
        showlegend=False,
        xaxis=xaxis,
        yaxis=yaxis,
    )


def collective_figure(collective: str, p: int = 4, root: int = 0) -> go.Figure:
    """Before/after grids of one collective: rows are ranks, columns are chunk slots."""
    before, after = holdings(collective, p, root)
    fig = make_subplots(rows=1, cols=2, subplot_titles=("before", "after"), horizontal_spacing=0.12)
    fig.add_trace(_grid_traces(before), 1, 1)
    fig.add_trace(_grid_traces(after), 1, 2)
    fig.update_layout(template=template(), height=90 + 46 * p, margin=dict(t=60, b=40))
    rooted = collective in ("broadcast", "reduce", "scatter", "gather")
    fig.update_layout(
        title_text=f"{collective} on {p} ranks" + (f" (root {root})" if rooted else "")
    )
    for col in (1, 2):
        fig.update_xaxes(
            title_text="chunk slot",
            tickvals=list(range(p)),
            range=[-0.6, p - 0.4],
            showgrid=False,
            row=1,
            col=col,
        )
        fig.update_yaxes(
            title_text="rank",
            tickvals=list(range(p)),
            range=[p - 0.4, -0.6],
            showgrid=False,
            row=1,
            col=col,
        )
    return fig


def ring_allreduce_animation(p: int) -> go.Figure:
    """The ring all-reduce step by step: how many ranks' data each chunk slot holds."""
    p = checks.integer("p", p, 2, len(LETTERS))
    steps = C.ring_allreduce_schedule(p, p)  # one element per chunk
    masks = np.array([[2.0**r] * p for r in range(p)])
    states = C.replay(masks, steps, trajectory=True)  # (2(p-1)+1, p, p)
    frames, labels, titles = [], [], []
    for k, state in enumerate(states):
        count = np.vectorize(lambda m: bin(int(m)).count("1"))(state)
        text = [["Σ" if c == p else f"{c}/{p}" for c in row] for row in count]
        hover = [
            [
                f"rank {r}, chunk {j}: sum of "
                + "+".join(LETTERS[i] for i in range(p) if int(state[r, j]) >> i & 1)
                for j in range(p)
            ]
            for r in range(p)
        ]
        heat = go.Heatmap(
            z=count,
            zmin=1,
            zmax=p,
            text=text,
            texttemplate="%{text}",
            hovertext=hover,
            hoverinfo="text",
            colorscale=[[0, "#DCEAF5"], [1, "#08306B"]],
            showscale=True,
            colorbar=dict(title=dict(text="ranks summed"), len=0.8),
            xgap=2,
            ygap=2,
        )
        moves = steps[k - 1].transfers if k else ()
        arrows = go.Scatter(
            x=[t.chunk for t in moves],
            y=[t.dst for t in moves],
            mode="markers",
            marker=dict(
                symbol="square-open",
                size=30,
                line=dict(width=4),
                color=[rank_color(t.src) for t in moves],
            ),
            hovertext=[
                f"rank {t.src} → rank {t.dst}: chunk {t.chunk} "
                + ("(added)" if t.reduce else "(copied)")
                for t in moves
            ],
            hoverinfo="text",
            showlegend=False,
        )
        frames.append([heat, arrows])
        if k == 0:
            labels.append("start")
            titles.append(f"p = {p}: every rank holds its own data (1/{p} of every sum)")
        else:
            phase = steps[k - 1].phase
            labels.append(f"{k}")
            verb = "adds it into" if phase == "reduce-scatter" else "overwrites"
            titles.append(
                f"step {k}/{2 * (p - 1)} ({phase}): each rank sends one chunk to "
                f"rank+1, which {verb} its copy"
            )
    return animation(
        frames,
        labels,
        frame_titles=titles,
        slider_prefix="step ",
        xaxis=dict(title_text="chunk", tickvals=list(range(p)), range=[-0.5, p - 0.5]),
        yaxis=dict(title_text="rank", tickvals=list(range(p)), range=[p - 0.5, -0.5]),
        height=260 + 34 * p,
        title_font_size=14,
    )


def _add_algorithm_lines(fig, x, seconds_by_algorithm, mode, hovertemplate):
    """One line per algorithm (times in seconds, drawn in µs), each with its own dash."""
    dashes = ("solid", "dash", "dot", "dashdot", "longdash")
    for i, (alg, seconds) in enumerate(seconds_by_algorithm.items()):
        with np.errstate(over="ignore"):
            micros = checks.finite_result("times in µs", np.asarray(seconds) * 1e6)
        fig.add_scatter(
            x=x,
            y=micros,
            name=alg.replace("_", " "),
            mode=mode,
            line=dict(dash=dashes[i % len(dashes)], width=2.5),
            hovertemplate=hovertemplate,
        )


def _sizes(name: str, values, default=None) -> np.ndarray:
    """Positive finite sizes for a log axis (at most MAX_POINTS), or the default grid."""
    if values is None and default is not None:
        return default
    return checks.array(name, values, ndim=1, low=0.0, low_open=True, max_size=MAX_POINTS)


def _algorithms(algorithms) -> tuple[str, ...]:
    if not isinstance(algorithms, list | tuple) or not 1 <= len(algorithms) <= 8:
        raise checks.fail("algorithms", f"a tuple of 1 to 8 of {ALLREDUCE_ALGORITHMS}", algorithms)
    return tuple(checks.choice("algorithms[i]", a, ALLREDUCE_ALGORITHMS) for a in algorithms)


def cost_curves(
    p: int,
    alpha: float,
    beta: float,
    gamma: float = 0.0,
    algorithms=("ring", "recursive_doubling", "rabenseifner", "tree"),
    nbytes=None,
) -> go.Figure:
    """All-reduce time against message size (log-log) for several algorithms, crossovers
    marked. Times from :func:`scaleout.costmodel.collective_time`."""
    nbytes = _sizes("nbytes", nbytes, np.logspace(2, 10, 81))
    algorithms = _algorithms(algorithms)
    p = checks.integer("p", p, 1, M.MAX_RANKS)
    alpha, beta = checks.positive("alpha", alpha), checks.positive("beta", beta)
    gamma = checks.nonnegative("gamma", gamma)
    fig = go.Figure(layout=dict(template=template()))
    times = {
        a: M.collective_time("allreduce", a, nbytes, p, alpha, beta, gamma) for a in algorithms
    }
    _add_algorithm_lines(fig, nbytes, times, "lines", "%{x:.3s}B: %{y:.4g} µs")
    if "ring" in algorithms:
        for alg in algorithms:
            if alg == "ring":
                continue
            x = M.crossover_bytes("allreduce", "ring", alg, p, alpha, beta, gamma)
            if np.isfinite(x) and nbytes.min() <= x <= nbytes.max():
                t = M.collective_time("allreduce", "ring", x, p, alpha, beta, gamma)
                fig.add_scatter(
                    x=[x],
                    y=[t * 1e6],
                    mode="markers",
                    showlegend=False,
                    marker=dict(size=10, color="black", symbol="x"),
                    hovertemplate=f"ring = {alg.replace('_', ' ')} at %{{x:.3s}}B<extra></extra>",
                )
    fig.update_layout(
        title_text=f"all-reduce on p = {p} ranks (α = {alpha * 1e6:.3g} µs, "
        f"1/β = {1 / beta / 1e9:.3g} GB/s)",
        xaxis=dict(type="log", title_text="message size per rank n (bytes)"),
        yaxis=dict(type="log", title_text="time (µs)"),
        height=430,
        legend=dict(x=0.02, y=0.98),
    )
    return fig


def measured_vs_model(nbytes, seconds, fit, p: int) -> go.Figure:
    """Measured all-reduce times (points) with the fitted ring model (line): filled
    markers for the sizes the fit used, open markers for the held-out ones
    (``fit.fitted``)."""
    nbytes = _sizes("nbytes", nbytes)
    seconds = checks.array("seconds", seconds, ndim=1, low=0.0, low_open=True,
                           max_size=MAX_POINTS)  # fmt: skip
    if seconds.shape != nbytes.shape:
        raise checks.fail("seconds", f"one time per size ({nbytes.size})", seconds.size)
    checks.instance("fit", fit, M.AlphaBetaFit)
    if fit.fitted.shape != nbytes.shape:
        raise checks.fail("fit", f"a fit of the same {nbytes.size} sizes",
                          f"a fit of {fit.fitted.size} points")  # fmt: skip
    p = checks.integer("p", p, 1, M.MAX_RANKS)
    grid = np.logspace(np.log10(nbytes.min()), np.log10(nbytes.max()), 60)
    model = M.collective_time("allreduce", "ring", grid, p, fit.alpha, fit.beta)
    with np.errstate(over="ignore"):
        checks.finite_result("times in ms", np.r_[seconds, model] * 1e3)
    fig = go.Figure(layout=dict(template=template()))
    held_out = ~fit.fitted
    for rows, name, symbol in ((fit.fitted, "measured, used by the fit", "circle"),
                               (held_out, "measured, held out", "circle-open")):  # fmt: skip
        if rows.any():
            fig.add_scatter(
                x=nbytes[rows],
                y=seconds[rows] * 1e3,
                mode="markers",
                name=name,
                marker=dict(size=10, color=rank_color(0), symbol=symbol, line=dict(width=2)),
            )
    fig.add_scatter(
        x=grid,
        y=model * 1e3,
        mode="lines",
        name="fitted ring model",
        line=dict(color=rank_color(3), width=2.5),
    )
    fig.update_layout(
        title_text=f"gloo all_reduce on {p} CPU processes: measured and α-β fit",
        xaxis=dict(type="log", title_text="message size per rank n (bytes)"),
        yaxis=dict(type="log", title_text="time (ms)"),
        height=420,
        legend=dict(x=0.02, y=0.98),
    )
    return fig


def cost_vs_ranks(
    nbytes: float,
    alpha: float,
    beta: float,
    gamma: float = 0.0,
    algorithms=("ring", "recursive_doubling", "rabenseifner", "tree"),
    ranks=None,
) -> go.Figure:
    """All-reduce time against the number of ranks p for one message size (log-log)."""
    ranks = 2 ** np.arange(1, 13) if ranks is None else M._ranks(ranks, "ranks")
    if np.ndim(ranks) != 1 or np.size(ranks) > MAX_POINTS:
        raise checks.fail("ranks", f"a 1-D array of at most {MAX_POINTS} rank counts", ranks)
    nbytes = checks.positive("nbytes", nbytes)
    algorithms = _algorithms(algorithms)
    fig = go.Figure(layout=dict(template=template()))
    times = {
        a: M.collective_time("allreduce", a, nbytes, ranks, alpha, beta, gamma) for a in algorithms
    }
    _add_algorithm_lines(fig, ranks, times, "lines+markers", "p = %{x}: %{y:.4g} µs")
    fig.update_layout(
        title_text=f"all-reduce of n = {nbytes / 1e6:g} MB per rank against rank count",
        xaxis=dict(type="log", title_text="ranks p"),
        yaxis=dict(type="log", title_text="time (µs)"),
        height=400,
        legend=dict(x=0.02, y=0.98),
    )
    return fig
