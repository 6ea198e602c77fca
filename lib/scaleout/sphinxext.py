"""Sphinx extension that makes the built book work offline.

Added to the book through ``_config.yml`` (``sphinx.extra_extensions``). It serves, from the
book's own ``_static`` folder, everything a page needs at read time:

* ``plotly.min.js`` from the installed ``plotly`` package, loaded once by every page that
  holds a figure made by :mod:`scaleout.viz` (pages without figures do not pay for it);
* MathJax 3 (the ``tex-chtml`` component, its fonts and TeX extensions) from the
  ``django-static-mathjax`` package, so equations render with no CDN.

Nothing is committed to the repository: the files come from pinned packages at build time.
"""

from __future__ import annotations

import shutil
from importlib import resources
from pathlib import Path

PLOTLY_JS = "plotly.min.js"
MATHJAX_DIR = "mathjax"
MATHJAX_ENTRY = f"{MATHJAX_DIR}/tex-chtml.js"
# Parts of MathJax's es5 tree that tex-chtml.js loads at run time (speech rule engine left out:
# it is only fetched when a reader turns on the accessibility explorer).
_MATHJAX_PARTS = ("tex-chtml.js", "input", "output/chtml", "a11y", "ui", "adaptors")
FIGURE_MARKER = 'class="scaleout-figure'


def plotly_js_path() -> Path:
    """Path of plotly.js shipped inside the installed plotly package."""
    path = Path(str(resources.files("plotly") / "package_data" / PLOTLY_JS))
    if not path.is_file():
        raise FileNotFoundError(f"plotly.js not found at {path}; reinstall plotly")
    return path


def mathjax_es5_path() -> Path:
    """Path of MathJax 3's es5 build inside the django-static-mathjax package."""
    path = Path(str(resources.files("mathjax") / "static" / "mathjax" / "es5"))
    if not (path / "tex-chtml.js").is_file():
        raise FileNotFoundError(f"MathJax not found at {path}; pip install django-static-mathjax")
    return path


def _copy_static(app, exception) -> None:
    if exception is not None or app.builder.format != "html":
        return
    static = Path(app.outdir) / "_static"
    static.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(plotly_js_path(), static / PLOTLY_JS)
    src = mathjax_es5_path()
    dst = static / MATHJAX_DIR
    for part in _MATHJAX_PARTS:
        if (src / part).is_dir():
            shutil.copytree(src / part, dst / part, dirs_exist_ok=True)
        else:
            dst.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src / part, dst / part)


def _add_plotly_where_needed(app, pagename, templatename, context, doctree) -> None:
    body = context.get("body", "")
    if FIGURE_MARKER in body:
        # Loaded in <head>, before the inline scripts of the figures run.
        app.add_js_file(PLOTLY_JS, priority=100)


def _drop_duplicate_scripts(app, pagename, templatename, context, doctree) -> None:
    """Keep one copy of each script: sphinx-thebe's inline config can be registered twice,
    and a second ``const THEBE_JS_URL`` is a SyntaxError in the reader's browser."""
    scripts = context.get("script_files")
    if not scripts:
        return
    seen, unique = set(), []
    for js in scripts:
        attributes = getattr(js, "attributes", {}) or {}
        filename = getattr(js, "filename", None) or ""  # None or "" after a reload
        key = (filename, tuple(sorted(map(str, attributes.items()))))
        if key not in seen:
            seen.add(key)
            unique.append(js)
    scripts[:] = unique


def _set_mathjax(app, config) -> None:
    config.mathjax_path = MATHJAX_ENTRY


def setup(app):
    app.connect("config-inited", _set_mathjax, priority=900)
    app.connect("html-page-context", _add_plotly_where_needed)
    app.connect("html-page-context", _drop_duplicate_scripts, priority=900)
    app.connect("build-finished", _copy_static)
    return {"version": "0.1", "parallel_read_safe": True, "parallel_write_safe": True}


class PlotlyMimeRenderer:
    """MyST-NB mime plugin (entry point ``myst_nb.mime_renderers``) for plotly's JSON.

    Each figure output carries plotly's JSON (for JupyterLab) and an HTML rendering (for
    the book). The book shows the HTML one; this plugin tells MyST-NB that the JSON copy
    needs no rendering, instead of warning that the mime type is unknown.
    """

    mime_priority_overrides = (("*", "application/vnd.plotly.v1+json", None),)

    @staticmethod
    def handle_mime(renderer, data, inline):
        if data.mime_type == "application/vnd.plotly.v1+json":
            return []
        return None
