"""Animations: frames + a slider + play/pause, never autoplaying.

A figure's animation is built from data the library computed (one list of traces per
frame); this module only arranges it for plotly. At most :data:`MAX_FRAMES` frames, so a
page stays light and a slider stays usable.
"""

from __future__ import annotations

from collections.abc import Sequence

import plotly.graph_objects as go
from plotly.basedatatypes import BaseTraceType

from .. import checks
from .theme import new_figure

MAX_FRAMES = 60


def animation(
    frames: Sequence[Sequence[go.Trace]],
    labels: Sequence[str],
    *,
    frame_titles: Sequence[str] | None = None,
    slider_prefix: str = "",
    duration_ms: int = 700,
    **layout,
) -> go.Figure:
    """A figure that steps through ``frames`` with a slider and play/pause buttons.

    ``frames[k]`` is the list of traces of frame k (every frame the same number of traces,
    in the same order); ``labels[k]`` names it on the slider; ``frame_titles[k]``, if given,
    replaces the figure title in that frame (say what happens in that step). ``layout``
    keywords go to ``update_layout`` (axis titles with units, fixed axis ranges so frames
    do not jump). Nothing plays until the reader presses play.
    """
    if not isinstance(frames, list | tuple) or not all(
        isinstance(f, list | tuple) and all(isinstance(t, BaseTraceType) for t in f) for f in frames
    ):
        raise checks.fail("frames", "a list of frames, each a list of plotly traces", frames)
    if not isinstance(labels, list | tuple) or not all(isinstance(x, str) for x in labels):
        raise checks.fail("labels", "a list of strings (one per frame)", labels)
    if frame_titles is not None and (
        not isinstance(frame_titles, list | tuple)
        or not all(isinstance(x, str) for x in frame_titles)
    ):
        raise checks.fail("frame_titles", "None or a list of strings (one per frame)", frame_titles)
    checks.instance("slider_prefix", slider_prefix, str)
    duration_ms = checks.integer("duration_ms", duration_ms, 1, 60_000)
    frames = [list(f) for f in frames]
    labels = list(labels)
    if not 1 <= len(frames) <= MAX_FRAMES:
        raise ValueError(f"frames must hold 1..{MAX_FRAMES} frames, got {len(frames)}")
    if len(labels) != len(frames):
        raise ValueError(f"labels must have one entry per frame ({len(frames)}), got {len(labels)}")
    if len(set(labels)) != len(labels):
        raise ValueError("labels must be distinct (they name the frames)")
    if frame_titles is not None and len(frame_titles) != len(frames):
        raise ValueError("frame_titles must have one entry per frame")
    ntraces = {len(f) for f in frames}
    if len(ntraces) != 1:
        raise ValueError(f"every frame must have the same number of traces, got {sorted(ntraces)}")

    def frame_layout(k):
        return {"title": {"text": frame_titles[k]}} if frame_titles is not None else {}

    fig = new_figure(**layout)
    fig.add_traces(frames[0])
    if frame_titles is not None:
        fig.update_layout(title_text=frame_titles[0])
    fig.frames = [
        go.Frame(data=f, name=lab, layout=frame_layout(k))
        for k, (f, lab) in enumerate(zip(frames, labels, strict=True))
    ]
    still = {"mode": "immediate", "frame": {"duration": 0, "redraw": True}}
    still["transition"] = {"duration": 0}
    play = {"frame": {"duration": duration_ms, "redraw": True}, "fromcurrent": True}
    play["transition"] = {"duration": 0}
    fig.update_layout(
        sliders=[
            {
                "active": 0,
                "currentvalue": {"prefix": slider_prefix},
                "pad": {"t": 45},
                "steps": [
                    {"label": lab, "method": "animate", "args": [[lab], still]} for lab in labels
                ],
            }
        ],
        updatemenus=[
            {
                "type": "buttons",
                "direction": "left",
                "x": 0.0,
                "xanchor": "right",
                "y": 0.0,
                "yanchor": "top",
                "pad": {"t": 45, "r": 10},
                "showactive": False,
                "buttons": [
                    {"label": "▶", "method": "animate", "args": [None, play]},
                    {"label": "❚❚", "method": "animate", "args": [[None], still]},
                ],
            }
        ],
    )
    return fig
