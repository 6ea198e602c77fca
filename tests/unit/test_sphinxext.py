"""The Sphinx extension that serves the book's JavaScript from its own static files."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from scaleout import sphinxext


def test_assets_come_from_installed_packages():
    assert sphinxext.plotly_js_path().stat().st_size > 1_000_000
    es5 = sphinxext.mathjax_es5_path()
    assert (es5 / "tex-chtml.js").is_file()
    assert any((es5 / "output" / "chtml" / "fonts" / "woff-v2").iterdir())


def test_plotly_json_is_handled_silently_and_nothing_else():
    plugin = sphinxext.PlotlyMimeRenderer
    plotly = SimpleNamespace(mime_type="application/vnd.plotly.v1+json")
    html = SimpleNamespace(mime_type="text/html")
    assert plugin.handle_mime(None, plotly, False) == []
    assert plugin.handle_mime(None, html, False) is None
    assert ("*", "application/vnd.plotly.v1+json", None) in plugin.mime_priority_overrides


class Script:
    def __init__(self, filename, **attributes):
        self.filename, self.attributes = filename, attributes


def test_duplicate_inline_scripts_are_dropped_once():
    body = {"body": "const THEBE_JS_URL = 1"}
    scripts = [Script(None, **body), Script("a.js"), Script("", **body), Script("a.js", defer="1")]
    context = {"script_files": scripts}
    sphinxext._drop_duplicate_scripts(None, "page", "page.html", context, None)
    kept = [(s.filename, s.attributes) for s in context["script_files"]]
    assert kept == [(None, body), ("a.js", {}), ("a.js", {"defer": "1"})]


def test_plotly_is_added_only_to_pages_with_figures():
    added = []
    app = SimpleNamespace(add_js_file=lambda name, **kw: added.append(name))
    sphinxext._add_plotly_where_needed(app, "intro", "page.html", {"body": "<p>text</p>"}, None)
    assert added == []
    body = '<div class="scaleout-figure" id="x"></div>'
    sphinxext._add_plotly_where_needed(app, "ch", "page.html", {"body": body}, None)
    assert added == ["plotly.min.js"]


def test_explorer_script_only_where_an_explorer_is():
    added = []
    app = SimpleNamespace(add_js_file=lambda name, **kw: added.append(name))
    body = '<div class="scaleout-explorer" id="x-explorer"><div class="scaleout-figure"></div>'
    sphinxext._add_scripts_where_needed(app, "ch", "page.html", {"body": body}, None)
    assert added == ["plotly.min.js", "scaleout-explorer.js"]
    assert "Plotly.react(" in sphinxext.static_path("scaleout-explorer.js").read_text()


def test_the_partial_bundle_is_the_pinned_plotly_release():
    import plotly

    bundle = sphinxext.plotly_js_path().read_text()[:200]
    full = (Path(plotly.__file__).parent / "package_data" / "plotly.min.js").read_text()[:60]
    assert "cartesian" in bundle
    assert full.split("plotly.js ")[1].split()[0] in bundle  # same version as plotly.py's


def test_report_link_is_a_prefilled_issue_for_the_page():
    url = sphinxext.issue_url("https://github.com/o/book.git", "chapters/05_pipeline", ".ipynb")
    assert url.startswith("https://github.com/o/book/issues/new?title=Error%20on%20page%20")
    assert "chapters%2F05_pipeline.ipynb" in url
    repo = {"repository_url": "https://github.com/o/book"}
    app = SimpleNamespace(config=SimpleNamespace(html_theme_options=repo))
    context = {"body": "<p>x</p>", "page_source_suffix": ".ipynb"}
    sphinxext._add_report_link(app, "chapters/01_c", "page.html", context, object())
    assert (
        'class="scaleout-report"' in context["body"]
        and 'data-page="chapters/01_c"' in context["body"]
    )


@pytest.mark.parametrize("url", ["", "javascript:alert(1)", "github.com/o/book", None])
def test_report_link_needs_an_http_repository(url):
    with pytest.raises(ValueError, match="repository_url must be"):
        sphinxext.issue_url(url, "chapters/01_c")
