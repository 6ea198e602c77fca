"""The book's one look: a colour per rank, used the same way in every chapter.

Rank colours follow Okabe & Ito's colour-blind-safe palette ("Color Universal Design",
2008), with black moved last; rank r gets ``RANK_COLORS[r % 8]``. Figures that show more
than eight ranks repeat the cycle, and also label ranks in text (colour is never the only
cue).
"""

from __future__ import annotations

import numbers

import plotly.graph_objects as go

RANK_COLORS = (
    "#0072B2",  # blue
    "#E69F00",  # orange
    "#009E73",  # bluish green
    "#D55E00",  # vermillion
    "#56B4E9",  # sky blue
    "#CC79A7",  # reddish purple
    "#F0E442",  # yellow
    "#000000",  # black
)
NEUTRAL = "#BBBBBB"  # empty / idle / not-yet-valid data
FONT = "system-ui, -apple-system, 'Segoe UI', Roboto, Helvetica, Arial, sans-serif"


def rank_color(rank: int) -> str:
    """Colour of ``rank`` (an int >= 0) in every figure of the book."""
    if isinstance(rank, bool) or not isinstance(rank, numbers.Integral) or rank < 0:
        raise ValueError(f"rank must be an integer >= 0, got {rank!r}")
    return RANK_COLORS[int(rank) % len(RANK_COLORS)]


def template() -> go.layout.Template:
    """A small plotly template (kept small: it is stored with every figure)."""
    axis = dict(
        exponentformat="SI",  # 10G, never plotly's default "10B" (billions) next to bytes
        showgrid=True,
        gridcolor="#E5E5E5",
        zeroline=False,
        linecolor="#444444",
        ticks="outside",
        title_standoff=8,
    )
    return go.layout.Template(
        layout=dict(
            font=dict(family=FONT, size=13, color="#222222"),
            title=dict(x=0.0, xanchor="left", font=dict(size=15)),  # clear of the modebar
            colorway=list(RANK_COLORS),
            paper_bgcolor="white",
            plot_bgcolor="white",
            xaxis=axis,
            yaxis=axis,
            margin=dict(l=60, r=20, t=50, b=50),
            hoverlabel=dict(font_family=FONT),
            legend=dict(bgcolor="rgba(255,255,255,0.8)"),
        )
    )


def new_figure(**layout) -> go.Figure:
    """An empty figure in the book's theme; ``layout`` keywords go to ``update_layout``."""
    fig = go.Figure(layout=dict(template=template()))
    if layout:
        try:
            fig.update_layout(**layout)
        except ValueError as e:  # plotly's own message: restate it in the library's form
            first = next((line for line in str(e).splitlines() if line.strip()), "")
            raise ValueError(
                f"layout keywords must be valid plotly layout properties ({first.strip()})"
            ) from None
    return fig
