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
import re
import shutil
import sys
from importlib import resources
from pathlib import Path
from urllib.parse import quote, urlencode, urlparse

from . import checks

PLOTLY_JS = "plotly.min.js"  # the name the pages load it under
PLOTLY_BUNDLE = "plotly-cartesian.min.js"
EXPLORER_JS = "scaleout-explorer.js"
SCREENS_JS = "scaleout-screens.js"  # phones, print, keyboard: on every page, after plotly.js
SEARCH_SCORER_JS = "scaleout-search-scorer.js"
BOOK_CSS = "scaleout.css"
MATHJAX_DIR = "mathjax"
MATHJAX_ENTRY = f"{MATHJAX_DIR}/tex-chtml.js"
# Parts of MathJax's es5 tree that tex-chtml.js loads at run time (speech rule engine left out:
# it is only fetched when a reader turns on the accessibility explorer).
_MATHJAX_PARTS = ("tex-chtml.js", "input", "output/chtml", "a11y", "ui", "adaptors")
FIGURE_MARKER = 'class="scaleout-figure'
EXPLORER_MARKER = 'class="scaleout-explorer"'
REPORT_CLASS = "scaleout-report"
STATIC_FILES = (EXPLORER_JS, BOOK_CSS, SCREENS_JS, SEARCH_SCORER_JS)


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
    for name in STATIC_FILES:
        static_path(name)


# Scripts the theme (pydata-sphinx-theme) puts in every page's <head> for its search-as-you-
# type, which this book leaves off (`search_as_you_type` is False): the search index (332 KB)
# is then needed on the search page only, which loads it itself.
_SEARCH_ONLY_SCRIPTS = ("_static/searchtools.js", "_static/language_data.js", "searchindex.js")
# The theme's Font Awesome in JavaScript (1.5 MB, 540 KB gzipped) turns <i class="fa-...">
# into inline SVG; its own stylesheet already draws the same icons from Font Awesome's web
# fonts (about 160 KB), so the script only doubles them.
_FONTAWESOME_JS = re.compile(
    r'\s*<script defer src="(?:\.\./)*_static/scripts/fontawesome\.js(?:\?[^"]*)?"></script>'
)


def lighter_page(page: str, prefix: str, search_page: bool = False) -> str:
    """``page`` (one built HTML page) without the scripts a reader does not need there:
    the search index and its tools (except on the search page), Font Awesome's script.
    ``prefix`` is the page's relative path to the site root ("" or "../")."""
    checks.instance("page", page, str)
    if not search_page:
        for src in _SEARCH_ONLY_SCRIPTS:
            page = page.replace(f'    <script src="{prefix}{src}"></script>\n', "", 1)
    return _FONTAWESOME_JS.sub("", page, count=1)


def _lighten_pages(app) -> None:
    if (app.config.html_theme_options or {}).get("search_as_you_type"):
        return
    out = Path(app.outdir)
    for path in out.rglob("*.html"):
        parts = path.relative_to(out).parts
        if "_static" in parts or "_sources" in parts:
            continue
        text = path.read_text(encoding="utf-8")
        new = lighter_page(text, "../" * (len(parts) - 1), path == out / "search.html")
        if new != text:
            path.write_text(new, encoding="utf-8")


def _copy_static(app, exception) -> None:
    if exception is not None or app.builder.format != "html":
        return
    _lighten_pages(app)
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


#: MathJax's menu settings: formulas are not tab stops (a page of 287 formulas took 287 Tab
#: presses to cross); the contextual menu stays on right-click.
MATHJAX_OPTIONS = {"menuOptions": {"settings": {"inTabOrder": False}}}


def _set_mathjax(app, config) -> None:
    config.mathjax_path = MATHJAX_ENTRY
    settings = dict(config.mathjax3_config or {})
    options = dict(settings.get("options") or {})
    menu = dict(options.get("menuOptions") or {})
    menu["settings"] = dict(menu.get("settings") or {}, inTabOrder=False)
    options["menuOptions"] = menu
    settings["options"] = options
    config.mathjax3_config = settings
    # Search: chapters rank above API entries (Sphinx's Scorer, overridden in this file).
    if not getattr(config, "html_search_scorer", ""):
        config.html_search_scorer = str(static_path(SEARCH_SCORER_JS))


def setup(app):
    app.connect("config-inited", _set_mathjax, priority=900)
    app.connect("builder-inited", _check_assets)
    app.connect("html-page-context", _add_scripts_where_needed)
    app.connect("html-page-context", _add_report_link)
    app.connect("html-page-context", _drop_duplicate_scripts, priority=900)
    app.connect("build-finished", _copy_static)
    app.add_css_file(BOOK_CSS)
    # Every page, in <head> right after plotly.js (priority 100, pages with figures): it lays
    # each figure out for the reader's screen before it is drawn.
    app.add_js_file(SCREENS_JS, priority=101)
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
