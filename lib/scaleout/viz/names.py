"""The names a reader knows: identifiers of the library as figures show them.

The code keys links, systems, schedules and collectives by short identifiers
(``nvlink4-h100``, ``dgx-h100``, ``zb-h1``, ``allreduce``); a figure shows the reader's name
("NVLink 4 (H100)", "DGX H100", "ZB-H1", "all-reduce"), and a one-letter symbol with a
one-letter index (``E_p``, ``t_f``) as a subscript (plotly's ``<sub>`` markup).

:func:`scaleout.viz.label` names one identifier; :func:`scaleout.viz.labels` rewrites every
identifier inside a text; :func:`relabel_spec` applies it to the text a figure shows (trace
names and text, titles, axis and legend titles, tick labels, annotations, slider and button
labels).
:func:`scaleout.viz.figure_spec` calls it, so every figure the book stores (in the
HTML and in JupyterLab alike) carries readable text while identifiers stay in the code.
"""

from __future__ import annotations

import re

from .. import checks

#: The reader's name of each identifier, as NVIDIA names its products (NVLink generations,
#: DGX and HGX systems) and as the papers spell each algorithm or schedule.
HUMAN = {
    "nvlink1-p100": "NVLink 1 (P100)",
    "nvlink2-v100": "NVLink 2 (V100)",
    "nvlink3-a100": "NVLink 3 (A100)",
    "nvlink4-h100": "NVLink 4 (H100)",
    "nvlink5-b200": "NVLink 5 (B200)",
    "dgx-a100": "DGX A100",
    "dgx-h100": "DGX H100",
    "dgx-b200": "DGX B200",
    "dgx-gb200": "DGX GB200",
    "hgx-h100-4nic": "HGX H100, 4 NICs",
    "nic-100g": "100 Gb/s NIC",
    "nic-200g": "200 Gb/s NIC",
    "nic-400g": "400 Gb/s NIC",
    "pcie": "PCIe",
    "rabenseifner": "Rabenseifner",
    "recursive_doubling": "recursive doubling",
    "zb-h1": "ZB-H1",
    "zb-h2": "ZB-H2",
    "1f1b": "1F1B",
    "gpipe": "GPipe",
    "allreduce": "all-reduce",
    "allgather": "all-gather",
    "reducescatter": "reduce-scatter",
    "alltoall": "all-to-all",
    "megatron": "Megatron-LM",
}
# Longest first, so that no identifier is cut by a shorter one; an identifier is a whole
# word (not part of a longer name, a path or another identifier).
_KEYS = sorted(HUMAN, key=len, reverse=True)
_IDENTIFIER = re.compile(r"(?<![\w./-])(" + "|".join(map(re.escape, _KEYS)) + r")(?![\w/-])")
_SUBSCRIPT = re.compile(r"(?<![\w<>/])([A-Za-z])_([a-z])(?![\w])")
#: Most characters of one text :func:`scaleout.viz.labels` rewrites (longer text is a
#: ValueError: no figure shows a page of text).
MAX_TEXT = 100_000


def label(identifier: str) -> str:
    """The reader's name for one identifier (``"nvlink4-h100"`` -> ``"NVLink 4 (H100)"``);
    a string that is no known identifier comes back as it is."""
    checks.instance("identifier", identifier, str)
    return HUMAN.get(identifier.strip(), identifier)


def labels(text: str, subscripts: bool = True) -> str:
    """``text`` with every known identifier replaced by its name and, if ``subscripts``, every
    one-letter symbol with a one-letter index (``E_p``) written ``E<sub>p</sub>``. Idempotent."""
    checks.instance("text", text, str)
    if len(text) > MAX_TEXT:
        raise checks.fail("text", f"a string of at most {MAX_TEXT} characters", len(text))
    out = _IDENTIFIER.sub(lambda m: HUMAN[m.group(1)], text)
    if subscripts:
        out = _SUBSCRIPT.sub(r"\1<sub>\2</sub>", out)
    return out


# Keys whose string values a reader sees. "name" of a frame is not one (slider steps refer
# to frames by name), nor hover templates, ids, groups or custom data.
_SHOWN = frozenset({"name", "text", "ticktext", "label", "prefix", "suffix"})
_PLAIN = frozenset({"hovertemplate", "hovertext"})
_SKIP = frozenset({"template", "customdata", "meta", "ids", "legendgroup",
                   "args", "args2", "method", "uid", "texttemplate"})  # fmt: skip
_MAX_DEPTH = 64


def _relabel(node, key, depth):
    if depth > _MAX_DEPTH:
        raise checks.fail("spec", f"JSON data nested at most {_MAX_DEPTH} deep", "deeper data")
    if isinstance(node, dict):
        return {
            k: v if k in _SKIP else _relabel(v, k if k in _SHOWN | _PLAIN else key, depth + 1)
            for k, v in node.items()
        }
    if isinstance(node, list):
        return [_relabel(v, key, depth + 1) for v in node]
    if isinstance(node, str) and key in _SHOWN and not node.startswith("$"):  # $: LaTeX
        return labels(node)
    if isinstance(node, str) and key in _PLAIN:  # %{...} placeholders: no subscripts
        return labels(node, subscripts=False)
    return node


def relabel_spec(spec: dict) -> dict:
    """A copy of a figure's JSON data (``{"data", "layout", "frames"}``) whose shown text
    reads as :func:`scaleout.viz.labels` writes it. Frame names (which slider steps refer
    to) are kept."""
    checks.instance("spec", spec, dict)
    out = dict(spec)
    for part in ("data", "layout"):
        if part in spec:
            out[part] = _relabel(spec[part], None, 0)
    if isinstance(spec.get("frames"), list):
        out["frames"] = [
            dict(f, **{k: _relabel(f[k], None, 0) for k in ("data", "layout") if k in f})
            if isinstance(f, dict)
            else f
            for f in spec["frames"]
        ]
    return out
