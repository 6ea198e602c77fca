"""Figures for the book: one theme, one way to show a figure, one animation helper.

Chapters call :func:`show` (or :func:`show_choice`) and never plotly's own renderers, so
every figure renders in JupyterLab and in the static HTML book alike (see
``scaleout.viz.render``). Topic modules (``viz.collectives`` ...) turn library data into
figures; they never compute a cost themselves.
"""

from .animate import MAX_FRAMES, animation
from .names import label, labels
from .render import ChoiceOutput, FigureOutput, check_name, figure_spec, show, show_choice
from .theme import NEUTRAL, RANK_COLORS, new_figure, rank_color, template

__all__ = [
    "MAX_FRAMES",
    "NEUTRAL",
    "RANK_COLORS",
    "ChoiceOutput",
    "FigureOutput",
    "animation",
    "check_name",
    "figure_spec",
    "label",
    "labels",
    "new_figure",
    "rank_color",
    "show",
    "show_choice",
    "template",
]
