"""Explorers: ipywidgets controls plus a plotly figure that follows them.

The pattern every chapter uses::

    explorer = Explorer(
        "ring-cost-explorer",
        {"p": IntSlider(8, 2, 64, description="ranks p"), ...},
        make_figure,                       # make_figure(p=..., ...) -> go.Figure
    )
    explorer                              # last expression of the cell displays it

With a live kernel (JupyterLab, Binder, Colab) the controls redraw the figure in place.
The built HTML book has no kernel and ipywidgets render there in their initial state only,
so an explorer's output also carries a static rendering: the figure for the initial values,
the controls' values as text, and a note that moving them needs a live kernel (launch
buttons at the top of the page). The book is built to show that rendering instead of dead
controls (``nb_mime_priority_overrides`` in ``_config.yml``).
"""

from __future__ import annotations

import html
from collections.abc import Callable, Mapping

import ipywidgets as W
import plotly.graph_objects as go

from .viz.render import FigureOutput, check_name, figure_html, figure_spec

LIVE_NOTE = (
    "The controls of this explorer run in a live Python kernel. To move them, open this "
    "chapter in JupyterLab, or launch it on Binder or Colab with the rocket button at the top "
    "of the page. Below: the figure for the values shown."
)


def _value_text(control: W.Widget) -> str:
    value = getattr(control, "value", None)
    if isinstance(control, W.SelectionSlider | W.Dropdown | W.ToggleButtons | W.RadioButtons):
        value = getattr(control, "label", value)
    desc = getattr(control, "description", "") or ""
    return f"{desc} = {value}" if desc else str(value)


class Explorer:
    """Controls (ipywidgets) and a figure rebuilt from their values on every change."""

    def __init__(
        self,
        name: str,
        controls: Mapping[str, W.ValueWidget],
        make_figure: Callable[..., go.Figure],
    ):
        self.name = check_name(name)
        if not isinstance(controls, Mapping) or not controls:
            raise ValueError("controls must be a non-empty mapping of keyword -> ipywidget")
        for key, control in controls.items():
            if not isinstance(control, W.ValueWidget):
                raise ValueError(f"control {key!r} must be an ipywidgets value widget")
        if not callable(make_figure):
            raise ValueError("make_figure must be callable as make_figure(**values)")
        self.controls = dict(controls)
        self.make_figure = make_figure
        self.output = W.Output()
        self.box = W.VBox(
            [
                W.HBox(list(self.controls.values()), layout=W.Layout(flex_flow="row wrap")),
                self.output,
            ]
        )
        self.figure = self._build()  # fails early, in the cell, if make_figure is broken
        for control in self.controls.values():
            control.observe(self._on_change, names="value")
        self._draw()

    def values(self) -> dict:
        """The current value of each control, by keyword."""
        return {key: control.value for key, control in self.controls.items()}

    def _build(self) -> go.Figure:
        fig = self.make_figure(**self.values())
        if not isinstance(fig, go.Figure):
            raise ValueError(f"make_figure must return a plotly Figure, got {type(fig).__name__}")
        return fig

    def _draw(self) -> None:
        # Set the Output widget's content directly rather than `with self.output: display()`:
        # no display or clear_output messages reach the cell's own output, so the cell's
        # output is the same whether a frontend, nbclient or nbval runs it.
        self.output.outputs = ()
        self.output.append_display_data(FigureOutput(self.figure, f"{self.name}-live"))

    def _on_change(self, change) -> None:
        self.figure = self._build()
        self._draw()

    def static_html(self) -> str:
        """What the built book shows: note, control values, figure at those values."""
        values = "; ".join(html.escape(_value_text(c)) for c in self.controls.values())
        return (
            f'<div class="scaleout-explorer" id="{self.name}-explorer">'
            f'<p class="scaleout-live-note" style="border-left:4px solid #0072B2;'
            f'padding:.3em .7em;background:#F2F7FB;margin:.3em 0">'
            f"<strong>Live explorer.</strong> {html.escape(LIVE_NOTE)}</p>"
            f'<p class="scaleout-values" style="margin:.3em 0"><em>Values:</em> {values}</p>'
            f"{figure_html(figure_spec(self.figure), self.name)}</div>"
        )

    def _repr_mimebundle_(self, include=None, exclude=None):
        bundle = dict(self.box._repr_mimebundle_())
        bundle["text/html"] = self.static_html()
        bundle["text/plain"] = f"<explorer {self.name}: needs a live kernel>"
        return bundle
