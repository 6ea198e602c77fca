"""Explorers: controls plus a plotly figure that follows them, live and in the static book.

The pattern every chapter uses::

    Explorer(
        "ring-cost-explorer",
        {"p": SelectionSlider(options=[2, 4, 8], value=8, description="ranks p"), ...},
        make_figure,                        # make_figure(p=..., ...) -> go.Figure
        static={"p": [2, 8]},               # optional: the values the static book holds
    )                                       # last expression of the cell displays it

Every explorer works twice:

* **Live** (JupyterLab, Binder, Colab): ipywidgets controls redraw the figure in place,
  for every value the controls allow.
* **Static** (the built HTML book, no kernel): the figure is precomputed in Python for every
  combination of the control values (each control's options, or the values ``static``
  declares for it when the full product is too large) and shipped inside the page as
  compact data (:func:`pack`: floats rounded as in :func:`scaleout.viz.render.portable`,
  every repeated trace, array or layout stored once). The page's own script
  (``_static/scaleout-explorer.js``, served by :mod:`scaleout.sphinxext`) draws native,
  labelled HTML controls and calls ``Plotly.react`` with the precomputed figure of the
  chosen combination. The page says which values it holds. No request leaves the site.

The book is built to show the static rendering instead of dead widgets
(``nb_mime_priority_overrides`` in ``_config.yml``).
"""

from __future__ import annotations

import html
import itertools
import json
import math
from collections.abc import Callable, Mapping, Sequence

import ipywidgets as W
import plotly.graph_objects as go

from . import checks
from .viz.names import labels
from .viz.render import (
    CONFIG,
    FigureOutput,
    _json_for_script,
    check_name,
    figure_height,
    figure_spec,
)

#: The most figures one explorer may precompute for the static book.
MAX_STATES = 640
#: The most characters of packed data (JSON) one explorer may add to its page.
MAX_STATIC_BYTES = 1_200_000
_MIN_INTERN = 24  # JSON values at least this long are stored once and referenced
_REF = "#"  # key of a reference object {"#": index} into the pool (no plotly key is "#")

STATIC_NOTE = (
    "This explorer runs in your browser with no kernel: the figure for each combination of "
    "the values offered by the controls above was computed in Python when the book was "
    "built. The live explorer (open the chapter in JupyterLab, Binder or Colab with the "
    "rocket button at the top of the page) takes any value in the full range of each "
    "control and recomputes the figure."
)
_SELECTION = (W.SelectionSlider, W.Dropdown, W.ToggleButtons, W.RadioButtons, W.Select)
_SLIDERS = (W.IntSlider, W.FloatSlider, W.SelectionSlider)


def _options(control: W.ValueWidget) -> list[tuple[str, object]]:
    """Every value a control allows, as (label, value) pairs, for the static book."""
    if isinstance(control, _SELECTION):
        return [(str(label), value) for label, value in zip(control._options_labels,
                                                             control._options_values,
                                                             strict=True)]  # fmt: skip
    if isinstance(control, W.Checkbox | W.ToggleButton):
        return [("off", False), ("on", True)]
    if isinstance(control, W.IntSlider | W.FloatSlider) and not control.step > 0:
        name = control.description or type(control).__name__
        raise checks.fail(f"control {name!r}: step", "> 0 (a slider must move)", control.step)
    if isinstance(control, W.IntSlider):
        count = (control.max - control.min) // control.step + 1
        if count > MAX_STATES:
            return []
        return [(str(v), v) for v in range(control.min, control.max + 1, control.step)]
    if isinstance(control, W.FloatSlider):
        count = math.floor((control.max - control.min) / control.step + 1e-9) + 1
        if count > MAX_STATES:
            return []
        values = [round(control.min + k * control.step, 12) for k in range(count)]
        fmt = control.readout_format or ".2f"
        return [(format(v, fmt), v) for v in values]
    raise ValueError(
        f"control {control.description or type(control).__name__!r}: the static book "
        f"supports {', '.join(c.__name__ for c in (*_SELECTION, W.IntSlider, W.FloatSlider))}"
        ", Checkbox and ToggleButton"
    )


def _readable_options(control: W.ValueWidget) -> None:
    """A choice's options shown by the reader's names (``"nvlink4-h100"`` reads "NVLink 4
    (H100)"); the values the control gives ``make_figure`` stay the code's identifiers."""
    if not isinstance(control, _SELECTION):
        return
    pairs = list(zip(control._options_labels, control._options_values, strict=True))
    readable = [(labels(str(lab), subscripts=False), value) for lab, value in pairs]
    if readable != [(str(lab), value) for lab, value in pairs]:
        value = control.value
        control.options = readable
        control.value = value


def _label_of(options: list[tuple[str, object]], value) -> str:
    for label, v in options:
        if _same(v, value):
            return label
    return str(value)


def _same(a, b) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        try:
            return math.isclose(float(a), float(b), rel_tol=1e-12, abs_tol=1e-12)
        except (TypeError, ValueError):
            return False
    return type(a) is type(b) and a == b


_MAX_DEPTH = 64  # JSON nesting a packed figure may have (plotly specs are far shallower)


def _json_node(name: str, node, depth: int):
    if depth > _MAX_DEPTH:
        raise checks.fail(name, f"JSON data nested at most {_MAX_DEPTH} deep", "deeper data")
    if isinstance(node, float) and not math.isfinite(node):
        raise checks.fail(name, "portable JSON data (finite numbers)", node)
    if not isinstance(node, dict | list | str | int | float | bool | type(None)):
        raise checks.fail(name, "JSON data (dict, list, str, number, bool, None)", node)
    return node


def pack(specs: Sequence[dict]) -> tuple[list, list]:
    """Deduplicate figures: ``(states, pool)``, every JSON value of at least
    ``_MIN_INTERN`` characters stored once in ``pool`` and referenced as ``{"#": i}``.

    Interning is bottom-up, so two figures that share a trace share it whole, and two
    traces that share only their x values share those. :func:`unpack` inverts it (the
    page's script does the same in JavaScript).
    """
    if not isinstance(specs, list | tuple) or not all(isinstance(s, dict) for s in specs):
        raise checks.fail("specs", "a list of figure specs (dicts)", specs)
    pool: list = []
    index: dict[str, int] = {}

    def intern(node, depth):
        _json_node("specs", node, depth)
        if isinstance(node, list):
            node = [intern(v, depth + 1) for v in node]
        elif isinstance(node, dict):
            node = {str(k): intern(v, depth + 1) for k, v in node.items()}
        else:
            return node
        key = json.dumps(node, separators=(",", ":"), sort_keys=True, ensure_ascii=True)
        if len(key) < _MIN_INTERN:
            return node
        if key not in index:
            index[key] = len(pool)
            pool.append(node)
        return {_REF: index[key]}

    states = [intern(spec, 0) for spec in specs]
    return states, pool


def unpack(node, pool: list):
    """Resolve the references of one packed state (the inverse of :func:`pack`)."""
    checks.instance("pool", pool, list)

    def resolve(node, depth):
        _json_node("node", node, depth)
        if isinstance(node, dict):
            if set(node) == {_REF}:
                ref = node[_REF]
                if not checks.is_integer(ref) or not 0 <= ref < len(pool):
                    raise checks.fail("node", f"references into the pool (0..{len(pool) - 1})", ref)
                return resolve(pool[ref], depth + 1)
            return {k: resolve(v, depth + 1) for k, v in node.items()}
        if isinstance(node, list):
            return [resolve(v, depth + 1) for v in node]
        return node

    return resolve(node, 0)


class Explorer:
    """Controls and a figure rebuilt from their values: live in a kernel, precomputed in
    the static book (see the module docstring).

    ``static`` maps a control's keyword to the values the static book holds for it (a
    subset of what the control allows, including its initial value); controls it does not
    name contribute every value they allow. At most
    :data:`~scaleout.widgets.MAX_STATES` combinations and
    :data:`~scaleout.widgets.MAX_STATIC_BYTES` of packed data: beyond, the constructor says
    which control to declare coarser.
    """

    def __init__(
        self,
        name: str,
        controls: Mapping[str, W.ValueWidget],
        make_figure: Callable[..., go.Figure],
        static: Mapping[str, Sequence] | None = None,
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
        for control in self.controls.values():
            _readable_options(control)
        self.make_figure = make_figure
        self.static_options = self._static_options(static or {})
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

    def _static_options(self, static: Mapping[str, Sequence]) -> dict[str, list]:
        if not isinstance(static, Mapping):
            raise checks.fail("static", "a mapping of control keyword -> values", static)
        unknown = set(static) - set(self.controls)
        if unknown:
            raise ValueError(f"static names controls {sorted(unknown)} that are not in controls")
        grid, total = {}, 1
        for key, control in self.controls.items():
            allowed = _options(control)
            if key in static:
                try:  # never more than the limit allows: static may be endless (a generator)
                    values = list(itertools.islice(static[key], MAX_STATES + 1))
                except TypeError:
                    raise checks.fail(f"static[{key!r}]", "an iterable of values",
                                      static[key]) from None  # fmt: skip
                if not values:
                    raise ValueError(f"static[{key!r}] must list at least one value")
                if len(values) > MAX_STATES:
                    raise ValueError(
                        f"static[{key!r}] must list at most {MAX_STATES} values (the static "
                        f"book precomputes at most {MAX_STATES} figures), got more"
                    )
                chosen = []
                for v in values:
                    match = [o for o in allowed if _same(o[1], v)] if allowed else []
                    if allowed and not match:
                        raise ValueError(
                            f"static[{key!r}] holds {v!r}, which control {key!r} cannot take"
                        )
                    chosen.append(match[0] if match else (str(v), v))
                allowed = chosen
            elif not allowed:
                raise ValueError(
                    f"control {key!r} allows more than {MAX_STATES} values: declare the "
                    f"values the static book holds with static={{{key!r}: [...]}}"
                )
            if not any(_same(v, control.value) for _, v in allowed):
                raise ValueError(
                    f"the static values of {key!r} must include its initial value {control.value!r}"
                )
            grid[key] = allowed
            total *= len(allowed)
        if total > MAX_STATES:
            sizes = ", ".join(f"{k}: {len(v)}" for k, v in grid.items())
            raise ValueError(
                f"explorer {self.name!r} would precompute {total} figures ({sizes}); at "
                f"most {MAX_STATES}: declare fewer values with static={{...}}"
            )
        return grid

    def values(self) -> dict:
        """The current value of each control, by keyword."""
        return {key: control.value for key, control in self.controls.items()}

    def _build(self, **values) -> go.Figure:
        fig = self.make_figure(**(values or self.values()))
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

    def static_states(self) -> tuple[list[dict], list]:
        """Every precomputed figure spec, in row-major order over the controls, and the
        index of the initial combination."""
        keys = list(self.static_options)
        specs = []
        for combo in itertools.product(*(self.static_options[k] for k in keys)):
            fig = self._build(**{k: v for k, (_, v) in zip(keys, combo, strict=True)})
            specs.append(figure_spec(fig))
        initial = []
        for key in keys:
            control = self.controls[key]
            opts = self.static_options[key]
            initial.append(next(i for i, (_, v) in enumerate(opts) if _same(v, control.value)))
        return specs, initial

    def static_payload(self) -> dict:
        """The data the page's script reads: controls, packed states and the pool."""
        specs, initial = self.static_states()
        states, pool = pack(specs)
        controls = []
        for (key, opts), start in zip(self.static_options.items(), initial, strict=True):
            control = self.controls[key]
            widget = "range" if isinstance(control, _SLIDERS) and len(opts) > 1 else "select"
            controls.append(
                {
                    "key": key,
                    "label": control.description or key,
                    "widget": widget,
                    "options": [label for label, _ in opts],
                    "initial": start,
                }
            )
        index = 0
        for start, opts in zip(initial, self.static_options.values(), strict=True):
            index = index * len(opts) + start
        height = figure_height(specs[index])
        payload = {"controls": controls, "states": states, "pool": pool, "config": CONFIG}
        payload["height"] = height
        size = len(_json_for_script(payload))
        if size > MAX_STATIC_BYTES:
            raise ValueError(
                f"explorer {self.name!r}: its {len(specs)} precomputed figures pack to "
                f"{size} bytes, over {MAX_STATIC_BYTES}; declare fewer values with "
                "static={...} or draw fewer points"
            )
        return payload

    def available_text(self) -> str:
        """Which values the static book holds, for the page (plain text)."""
        subsets = []
        for key, opts in self.static_options.items():
            control = self.controls[key]
            allowed = [] if isinstance(control, W.FloatSlider) else _options(control)
            if not allowed or len(allowed) != len(opts):
                label = control.description or key
                subsets.append(f"{label}: {', '.join(lab for lab, _ in opts)}")
        if not subsets:
            return "every value of every control"
        return "every value of the other controls, and " + "; ".join(subsets)

    def static_html(self) -> str:
        """What the built book shows: controls driven by precomputed figures, no kernel."""
        payload = self.static_payload()
        n = self.name
        return (
            f'<div class="scaleout-explorer" id="{n}-explorer" data-explorer="{n}">'
            f'<div class="scaleout-explorer-controls" aria-label="explorer controls"></div>'
            f'<div class="scaleout-figure" id="{n}" style="width:100%;height:'
            f'{payload["height"]}px"></div>'
            f'<p class="scaleout-explorer-note">{html.escape(STATIC_NOTE)} '
            f"<em>Values held:</em> {html.escape(self.available_text())}.</p>"
            f'<script type="application/json" class="scaleout-explorer-data">'
            f"{_json_for_script(payload)}</script></div>"
        )

    def _repr_mimebundle_(self, include=None, exclude=None):
        bundle = dict(self.box._repr_mimebundle_())
        bundle["text/html"] = self.static_html()
        bundle["text/plain"] = f"<explorer {self.name}: {self.available_text()}>"
        return bundle
