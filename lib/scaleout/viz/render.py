"""How every figure of the book reaches the reader.

Plotly's default renderer writes only plotly's own mime type, which a Jupyter Book 1 build
drops, leaving an empty space. :class:`FigureOutput` instead offers two renderings of the
same figure:

* ``application/vnd.plotly.v1+json``: JupyterLab draws it natively (plotly's lab extension);
* ``text/html``: a ``<div class="scaleout-figure">`` plus a small inline script that calls
  ``Plotly.newPlot``. The book's HTML build keeps this one; plotly.js itself is served once
  from the book's ``_static`` folder (see :mod:`scaleout.sphinxext`), never from a CDN and
  never embedded in the figure.

Both renderings are pure functions of the figure and its ``name``: the div id is the name,
plotly's random uids are removed, so re-running a notebook gives byte-identical output and
strict nbval holds.

They are also the same bytes on every CPU. numpy picks SIMD code paths per processor, and
``exp``, ``log`` or ``power`` can differ in the last bit between them; :func:`portable`
therefore rounds every float of a figure to :data:`SIGNIFICANT_DIGITS` significant digits
(Python's correctly rounded formatting, not numpy's) and writes plotly's base64 arrays as
plain lists. Six digits are far below what a plot can show (a pixel is about 1e-3 of an
axis) and above what a hover label prints.
"""

from __future__ import annotations

import base64
import html
import json
import math
import re
from collections.abc import Mapping

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio

from .. import checks
from .names import labels, relabel_spec

PLOTLY_MIME = "application/vnd.plotly.v1+json"
CONFIG = {"responsive": True, "displaylogo": False}
_NAME = re.compile(r"^[a-z][a-z0-9-]{0,62}$")
NO_PLOTLY = "This figure needs plotly.js, which this page did not load."


def check_name(name: str, what: str = "name") -> str:
    """Figure names become HTML ids: lower-case letters, digits and '-', starting a letter."""
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise checks.fail(
            what,
            f"a string matching {_NAME.pattern} (lower-case letters, digits and '-'; it "
            "becomes the figure's stable HTML id)",
            name,
        )
    return str.__str__(name)  # a plain str: a subclass's __format__/__str__ cannot alter the id


#: Significant digits every float of a figure is rounded to (see :func:`portable`).
SIGNIFICANT_DIGITS = 6
_TYPED = {"f8": "<f8", "f4": "<f4", "i1": "i1", "u1": "u1", "i2": "<i2", "u2": "<u2"}
_TYPED |= {"i4": "<i4", "u4": "<u4"}
MIN_HEIGHT_PX, MAX_HEIGHT_PX = 100, 4000


def _round(x: float) -> float | int | None:
    if not math.isfinite(x):
        return None  # JSON has no NaN/inf; plotly treats null as a gap, as it does NaN
    y = float(f"{x:.{SIGNIFICANT_DIGITS}g}")
    # Whole numbers as ints: "3" rather than "3.0" (plotly reads both the same).
    return int(y) if y.is_integer() and abs(y) < 1e15 else y


def _typed_array(obj: dict) -> list:
    """Decode plotly's ``{"dtype", "bdata", "shape"}`` typed array into nested lists."""
    dtype = _TYPED.get(obj["dtype"])
    if dtype is None:
        raise ValueError(f"unknown plotly typed-array dtype {obj['dtype']!r}")
    arr = np.frombuffer(base64.b64decode(obj["bdata"]), dtype=dtype)
    if "shape" in obj:
        arr = arr.reshape([int(n) for n in str(obj["shape"]).split(",")])
    return portable(arr.tolist())


#: Deepest nesting of lists and dicts :func:`portable` accepts (plotly figures use < 10).
MAX_DEPTH = 64


def portable(obj):
    """``obj`` (JSON data) with every float rounded to :data:`SIGNIFICANT_DIGITS` digits and
    plotly's base64 typed arrays written out as lists: the same bytes on every CPU. Nesting
    deeper than ``MAX_DEPTH`` is a ValueError."""
    return _portable(obj, 0)


def _portable(obj, depth):
    if isinstance(obj, float):
        return _round(obj)
    if isinstance(obj, list | dict) and depth >= MAX_DEPTH:
        raise checks.fail(
            "obj", f"JSON data nested at most {MAX_DEPTH} deep", f"deeper, {type(obj).__name__}"
        )
    if isinstance(obj, list):
        return [_portable(v, depth + 1) for v in obj]
    if isinstance(obj, dict):
        if "bdata" in obj and "dtype" in obj:
            return _typed_array(obj)
        return {k: _portable(v, depth + 1) for k, v in obj.items()}
    return obj


def figure_spec(fig: go.Figure) -> dict:
    """The figure as portable JSON data (data, layout, frames): no random uids, floats
    rounded to :data:`~scaleout.viz.render.SIGNIFICANT_DIGITS` significant digits (see
    :func:`scaleout.viz.render.portable`), identifiers in the text it shows replaced by the
    reader's names (:func:`scaleout.viz.names.relabel_spec`)."""
    if not isinstance(fig, go.Figure):
        raise ValueError(f"fig must be a plotly.graph_objects.Figure, got {type(fig).__name__}")
    spec = portable(json.loads(pio.to_json(fig, validate=True, remove_uids=True, engine="json")))
    spec = relabel_spec(spec)  # the reader's names, not the code's identifiers
    if not spec.get("frames"):
        spec.pop("frames", None)
    return spec


def _json_for_script(obj) -> str:
    """JSON that is safe inside an HTML <script> element."""
    text = json.dumps(obj, separators=(",", ":"), ensure_ascii=True)
    return text.replace("</", "<\\/").replace("<!--", "<\\!--")


def figure_height(spec: dict) -> int:
    """The figure's height in pixels (layout.height, 450 by default), checked."""
    checks.instance("spec", spec, dict)
    layout = checks.instance("spec['layout']", spec.get("layout", {}), dict)
    height = layout.get("height") or 450
    return checks.integer("layout.height", height, MIN_HEIGHT_PX, MAX_HEIGHT_PX)


def _div(div_id: str, spec: dict, hidden: bool = False) -> str:
    check_name(div_id, "div_id")
    height = figure_height(spec)
    style = f"width:100%;height:{int(height)}px" + (";display:none" if hidden else "")
    return f'<div class="scaleout-figure" id="{div_id}" style="{style}"></div>'


# One function that draws a spec into a div; shared by single figures and choices.
_DRAW_JS = (
    "function(id,s){var el=document.getElementById(id);if(!el)return;"
    "if(!window.Plotly){el.textContent=" + json.dumps(NO_PLOTLY) + ";return;}"
    "window.Plotly.newPlot(el,s.data,s.layout||{},s.config).then(function(gd){"
    "if(s.frames){return window.Plotly.addFrames(gd,s.frames);}})}"
)


def figure_html(spec: dict, div_id: str) -> str:
    """HTML for one figure: a div and the inline script that draws it."""
    checks.instance("spec", spec, dict)
    spec = dict(spec, config=CONFIG)
    return (
        f"{_div(div_id, spec)}\n<script>(function(){{var draw={_DRAW_JS};"
        f'draw("{div_id}",{_json_for_script(spec)});}})();</script>'
    )


class FigureOutput:
    """A figure as notebook output: native in JupyterLab, static-safe in the built book.

    Use :func:`show` in chapters; this class is public for composite outputs.
    """

    def __init__(self, fig: go.Figure, name: str):
        self.name = check_name(name)
        self.spec = figure_spec(fig)

    def _repr_mimebundle_(self, include=None, exclude=None):
        return {
            PLOTLY_MIME: dict(self.spec, config=CONFIG),
            "text/html": figure_html(self.spec, self.name),
            "text/plain": f"<figure {self.name}>",
        }


def show(fig: go.Figure, name: str) -> None:
    """Display ``fig`` under the stable id ``name`` (unique within its chapter)."""
    from IPython.display import display

    display(FigureOutput(fig, name))


_CHOICE_CSS = (
    ".scaleout-choice-bar{display:flex;flex-wrap:wrap;gap:.3em;align-items:center;"
    "margin:.3em 0}.scaleout-choice-bar button{border:1px solid #888;border-radius:4px;"
    "background:#fff;padding:.1em .7em;cursor:pointer;font:inherit}"
    ".scaleout-choice-bar button[aria-checked=true]{background:#0072B2;color:#fff;"
    "border-color:#0072B2}"
)


class ChoiceOutput:
    """Several figures behind one row of buttons (e.g. one animation per rank count).

    In the built book the buttons work with no kernel: each option's figure is stored in
    the page and drawn the first time it is chosen. JupyterLab shows the default option
    natively (its buttons would need the page's plotly.js, which JupyterLab does not have);
    chapters pair a choice with a live explorer for that.
    """

    def __init__(self, figures: Mapping[str, go.Figure], name: str, label: str, default=None):
        self.name = check_name(name)
        if not isinstance(figures, Mapping) or not figures:
            raise ValueError("figures must be a non-empty mapping of option label -> Figure")
        self.labels = [str(k) for k in figures]
        if len(set(self.labels)) != len(self.labels):
            raise ValueError(f"option labels must be distinct, got {self.labels}")
        self.specs = [figure_spec(f) for f in figures.values()]
        default = self.labels[0] if default is None else str(default)
        if default not in self.labels:
            raise ValueError(f"default must be one of {self.labels}, got {default!r}")
        self.default = self.labels.index(default)
        self.label = str(label)

    def _html(self) -> str:
        n, d = self.name, self.default
        buttons = "".join(
            f'<button type="button" role="radio" aria-checked="{str(i == d).lower()}" '
            f'data-index="{i}">{html.escape(labels(lab, subscripts=False))}</button>'
            for i, lab in enumerate(self.labels)
        )
        divs = "\n".join(_div(f"{n}-{i}", s, hidden=i != d) for i, s in enumerate(self.specs))
        specs = [dict(s, config=CONFIG) for s in self.specs]
        script = (
            f"(function(){{var draw={_DRAW_JS};var specs={_json_for_script(specs)};"
            f'var root=document.getElementById("{n}");var drawn={{}};'
            'function pick(i){root.querySelectorAll(".scaleout-choice-bar button")'
            '.forEach(function(b){b.setAttribute("aria-checked",String(b.dataset.index==i));});'
            f'for(var j=0;j<specs.length;j++){{var el=document.getElementById("{n}-"+j);'
            'el.style.display=(j==i)?"":"none";}'
            f'var id="{n}-"+i;if(!drawn[i]){{drawn[i]=true;draw(id,specs[i]);}}'
            "else if(window.Plotly){window.Plotly.Plots.resize(document.getElementById(id));}}"
            'root.querySelectorAll(".scaleout-choice-bar button").forEach(function(b){'
            'b.addEventListener("click",function(){pick(Number(b.dataset.index));});});'
            f"pick({d});}})();"
        )
        return (
            f'<div class="scaleout-choice" id="{n}"><style>{_CHOICE_CSS}</style>'
            f'<div class="scaleout-choice-bar" role="radiogroup" '
            f'aria-label="{html.escape(self.label)}"><span>{html.escape(self.label)}:</span>'
            f"{buttons}</div>\n{divs}\n<script>{script}</script></div>"
        )

    def _repr_mimebundle_(self, include=None, exclude=None):
        return {
            PLOTLY_MIME: dict(self.specs[self.default], config=CONFIG),
            "text/html": self._html(),
            "text/plain": f"<figure {self.name}: {self.label} in {self.labels}>",
        }


def show_choice(figures: Mapping[str, go.Figure], name: str, label: str, default=None) -> None:
    """Display one figure per option with buttons to switch, working in the static book."""
    from IPython.display import display

    display(ChoiceOutput(figures, name, label, default))
