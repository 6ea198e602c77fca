"""Sphinx extension that makes the built book work offline and respond without a kernel.

Added to the book through ``_config.yml`` (``sphinx.extra_extensions``). It serves, from the
book's own ``_static`` folder, everything a page needs at read time:

* plotly.js, as plotly's published *cartesian* partial bundle (scatter, bar, heatmap and a
  few more; the book uses no other trace type), fetched once by ``make setup``
  (``tools/fetch_plotly.py``, integrity-checked) and loaded by every page that holds a
  figure made by :mod:`scaleout.viz` (pages without figures do not pay for it);
* ``scaleout-explorer.js``, which drives the explorers of :mod:`scaleout.widgets` from
  their precomputed figures, on pages that hold one; ``scaleout.css`` on every page;
* MathJax 3 (the ``tex-chtml`` component, its fonts and TeX extensions) from the
  ``django-static-mathjax`` package, so equations render with no CDN.

It also ends every page with a "report an error on this page" link: a pre-filled new issue
of the repository named by ``repository.url`` in ``_config.yml``, carrying the page's path
(the reader's browser opens it; the page loads nothing from that site).

Nothing is committed to the repository: the files come from pinned packages at build time.
"""

from __future__ import annotations

import html
import shutil
import sys
from importlib import resources
from pathlib import Path
from urllib.parse import quote, urlencode, urlparse

from . import checks

PLOTLY_JS = "plotly.min.js"  # the name the pages load it under
PLOTLY_BUNDLE = "plotly-cartesian.min.js"
EXPLORER_JS = "scaleout-explorer.js"
BOOK_CSS = "scaleout.css"
MATHJAX_DIR = "mathjax"
MATHJAX_ENTRY = f"{MATHJAX_DIR}/tex-chtml.js"
# Parts of MathJax's es5 tree that tex-chtml.js loads at run time (speech rule engine left out:
# it is only fetched when a reader turns on the accessibility explorer).
_MATHJAX_PARTS = ("tex-chtml.js", "input", "output/chtml", "a11y", "ui", "adaptors")
FIGURE_MARKER = 'class="scaleout-figure'
EXPLORER_MARKER = 'class="scaleout-explorer"'
REPORT_CLASS = "scaleout-report"
STATIC_FILES = (EXPLORER_JS, BOOK_CSS)


def plotly_js_path() -> Path:
    """Path of the partial plotly.js bundle fetched by ``tools/fetch_plotly.py``."""
    path = Path(sys.prefix) / "share" / "scaleout" / PLOTLY_BUNDLE
    if not path.is_file():
        raise FileNotFoundError(
            f"plotly.js bundle not found at {path}: run `make setup` "
            "(or `python tools/fetch_plotly.py` in this environment)"
        )
    return path


def static_path(name: str) -> Path:
    """Path of one of the library's own static files (``scaleout/static``)."""
    checks.choice("name", name, STATIC_FILES)
    path = Path(str(resources.files("scaleout") / "static" / name))
    if not path.is_file():
        raise FileNotFoundError(f"{name} not found at {path}; reinstall scaleout")
    return path


def mathjax_es5_path() -> Path:
    """Path of MathJax 3's es5 build inside the django-static-mathjax package."""
    path = Path(str(resources.files("mathjax") / "static" / "mathjax" / "es5"))
    if not (path / "tex-chtml.js").is_file():
        raise FileNotFoundError(f"MathJax not found at {path}; pip install django-static-mathjax")
    return path


def _check_assets(app) -> None:
    plotly_js_path()  # fail at the start of a build, not after every page has run
    static_path(EXPLORER_JS)
    static_path(BOOK_CSS)


def _copy_static(app, exception) -> None:
    if exception is not None or app.builder.format != "html":
        return
    static = Path(app.outdir) / "_static"
    static.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(plotly_js_path(), static / PLOTLY_JS)
    shutil.copyfile(plotly_js_path().with_name("plotly-LICENSE"), static / "plotly-LICENSE.txt")
    for name in STATIC_FILES:
        shutil.copyfile(static_path(name), static / name)
    src = mathjax_es5_path()
    dst = static / MATHJAX_DIR
    for part in _MATHJAX_PARTS:
        if (src / part).is_dir():
            shutil.copytree(src / part, dst / part, dirs_exist_ok=True)
        else:
            dst.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src / part, dst / part)


def _add_scripts_where_needed(app, pagename, templatename, context, doctree) -> None:
    body = context.get("body", "")
    if FIGURE_MARKER in body:
        # Loaded in <head>, before the inline scripts of the figures run.
        app.add_js_file(PLOTLY_JS, priority=100)
    if EXPLORER_MARKER in body:
        app.add_js_file(EXPLORER_JS, priority=110)


# Kept for callers of the earlier name.
_add_plotly_where_needed = _add_scripts_where_needed


def issue_url(repository_url: str, pagename: str, source_suffix: str = "") -> str:
    """A new-issue link for ``repository_url`` (GitHub), pre-filled for one page."""
    checks.text("repository_url", repository_url, 500)
    if urlparse(repository_url).scheme not in ("http", "https"):
        raise checks.fail("repository_url", "an http(s) URL", repository_url)
    checks.text("pagename", pagename, 500)
    if source_suffix != "":
        checks.text("source_suffix", source_suffix, 20)
    base = repository_url.rstrip("/")
    if base.endswith(".git"):
        base = base[:-4]
    title = f"Error on page {pagename}"
    body = (
        f"Page: `{pagename}{source_suffix}`\n\n"
        "What is wrong (quote the sentence, number or figure):\n\n"
        "What it should say, and your source:\n"
    )
    return f"{base}/issues/new?{urlencode({'title': title, 'body': body}, quote_via=quote)}"


def _add_report_link(app, pagename, templatename, context, doctree) -> None:
    if doctree is None or "body" not in context:
        return
    url = (app.config.html_theme_options or {}).get("repository_url") or ""
    if not url:
        return
    suffix = context.get("page_source_suffix", "") or ""
    link = issue_url(url, pagename, suffix)
    context["body"] += (
        f'<p class="{REPORT_CLASS}">Found an error, or something unclear? '
        f'<a href="{html.escape(link)}" rel="noopener" target="_blank" '
        f'data-page="{html.escape(pagename)}">Report it on this page</a> '
        "(opens a pre-filled issue in the book's repository).</p>"
    )


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
    app.connect("builder-inited", _check_assets)
    app.connect("html-page-context", _add_scripts_where_needed)
    app.connect("html-page-context", _add_report_link)
    app.connect("html-page-context", _drop_duplicate_scripts, priority=900)
    app.connect("build-finished", _copy_static)
    app.add_css_file(BOOK_CSS)
    return {"version": "0.2", "parallel_read_safe": True, "parallel_write_safe": True}


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
