"""The build-time parts of "the book on every screen" (issue 30), without a browser:
lighter pages, MathJax's formulas out of the tab order, the search scorer, the Colab cell,
and the JavaScript's own wrapping and naming (under node, when it is installed)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import nbformat
import pytest

from scaleout import sphinxext as X

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
import colab_cell  # noqa: E402

PAGE = """<head>
    <script src="../_static/searchtools.js"></script>
    <script src="../_static/language_data.js"></script>
    <script src="../searchindex.js"></script>
  <script defer src="../_static/scripts/fontawesome.js?digest=55c26ed414f5f8a31ebb"></script>
  <script defer src="../_static/scripts/bootstrap.js?digest=55c26ed414f5f8a31ebb"></script>
</head>"""


def test_pages_drop_the_search_index_and_fontawesome_script():
    out = X.lighter_page(PAGE, "../")
    assert "searchindex.js" not in out and "searchtools.js" not in out
    assert "language_data.js" not in out and "fontawesome.js" not in out
    assert "bootstrap.js" in out  # nothing else goes


def test_the_search_page_keeps_its_index():
    out = X.lighter_page(PAGE, "../", search_page=True)
    assert "searchindex.js" in out and "searchtools.js" in out
    assert "fontawesome.js" not in out


def test_a_page_at_the_root_uses_its_own_prefix():
    root_page = PAGE.replace("../", "")
    out = X.lighter_page(root_page, "")
    assert "searchindex.js" not in out and "fontawesome.js" not in out
    assert X.lighter_page(root_page, "../").count("searchindex.js") == 1  # wrong prefix: kept


def test_pages_are_lightened_in_a_built_tree(tmp_path):
    (tmp_path / "chapters").mkdir()
    (tmp_path / "chapters" / "a.html").write_text(PAGE)
    (tmp_path / "search.html").write_text(PAGE.replace("../", ""))
    app = SimpleNamespace(outdir=str(tmp_path), config=SimpleNamespace(html_theme_options={}))
    X._lighten_pages(app)
    assert "searchindex.js" not in (tmp_path / "chapters" / "a.html").read_text()
    assert "searchindex.js" in (tmp_path / "search.html").read_text()
    app.config.html_theme_options = {"search_as_you_type": True}
    (tmp_path / "chapters" / "b.html").write_text(PAGE)
    X._lighten_pages(app)
    assert "searchindex.js" in (tmp_path / "chapters" / "b.html").read_text()


def test_formulas_leave_the_tab_order_and_other_mathjax_settings_stay():
    config = SimpleNamespace(
        mathjax_path="",
        mathjax3_config={"tex": {"macros": {"R": "\\mathbb{R}"}}},
        html_search_scorer="",
    )
    X._set_mathjax(None, config)
    assert config.mathjax_path == X.MATHJAX_ENTRY
    assert config.mathjax3_config["tex"] == {"macros": {"R": "\\mathbb{R}"}}
    settings = config.mathjax3_config["options"]["menuOptions"]["settings"]
    assert settings["inTabOrder"] is False
    assert Path(config.html_search_scorer).is_file()
    assert "chapters" in Path(config.html_search_scorer).read_text()


def test_every_static_file_ships():
    for name in X.STATIC_FILES:
        assert X.static_path(name).is_file()


def test_colab_cell_goes_before_the_first_code_cell_once():
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# T"), nbformat.v4.new_code_cell("x = 1")]
    url = "https://github.com/o/r"
    assert colab_cell.with_cell(nb, url)
    assert [c.get("id") for c in nb.cells][1] == colab_cell.CELL_ID
    cell = nb.cells[1]
    assert "google.colab" in cell.source and f"git+{url}" in cell.source
    assert cell.metadata["tags"] == ["remove-cell"]
    assert not colab_cell.with_cell(nb, url)  # idempotent
    assert colab_cell.with_cell(nb, "https://github.com/o/other")  # updated in place
    assert sum(c.get("id") == colab_cell.CELL_ID for c in nb.cells) == 1


def test_colab_cell_does_nothing_outside_colab():
    code = colab_cell.source("https://github.com/o/r").replace("%pip", "raise SystemExit #")
    namespace: dict = {}
    exec(compile(code, "<cell>", "exec"), namespace)  # no google.colab here: nothing runs


def test_colab_cell_rejects_a_repository_that_is_not_a_url(tmp_path):
    bad = tmp_path / "_config.yml"
    bad.write_text("repository:\n  url: not-a-url\n")
    with pytest.raises(ValueError, match="repository.url"):
        colab_cell.repository_url(bad)


NODE_SCRIPT = """
global.window = {addEventListener() {}, matchMedia() { return {addEventListener() {}}; }};
global.document = {readyState: "complete", querySelectorAll() { return []; },
                   querySelector() { return null; },
                   addEventListener() {}};
require(process.argv[1]);
const S = window.ScaleoutScreens;
const cases = JSON.parse(process.argv[2]);
console.log(JSON.stringify({
  wrapped: cases.wrap.map(([t, w, s]) => S.wrap(t, w, s)),
  human: cases.human.map(t => S.human(t)),
}));
"""


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_titles_wrap_balanced_and_identifiers_read_as_names():
    cases = {
        "wrap": [
            [
                "Tensor-parallel communication per layer<br><sup>NVLink 4 inside a server, "
                "400 Gb/s NIC per GPU<br>fixed: 8 GPUs per server</sup>",
                200,
                15,
            ],
            ["time (units of t<sub>f</sub>, one micro-batch's forward)", 150, 13],
            ["short", 300, 15],
        ],
        "human": [
            "nvlink4-h100",
            "dgx-h100",
            "rabenseifner",
            "zb-h1",
            "E_p = 4",
            "NCCL's choice on dgx-a100",
            "t_f",
            "max_len",
        ],
    }
    script = X.static_path(X.SCREENS_JS)
    out = subprocess.run(
        ["node", "-e", NODE_SCRIPT, str(script), json.dumps(cases)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    got = json.loads(out.stdout)
    for lines, (text, width, size) in zip(got["wrapped"], cases["wrap"], strict=True):
        assert len(lines) >= 1
        for line in lines:
            for tag in ("sub", "sup"):
                assert line.count(f"<{tag}>") == line.count(f"</{tag}>"), line
            plain = line
            for t in ("<sub>", "</sub>", "<sup>", "</sup>"):
                plain = plain.replace(t, "")
            px = size * 0.75 if line.startswith(("<sub>", "<sup>")) else size
            assert len(plain) * px * 0.56 <= width or " " not in plain, line
        joined = " ".join(lines)
        for t in ("<sub>", "</sub>", "<sup>", "</sup>", "<br>"):
            joined = joined.replace(t, " " if t == "<br>" else "")
        original = text
        for t in ("<sub>", "</sub>", "<sup>", "</sup>", "<br>"):
            original = original.replace(t, " " if t == "<br>" else "")
        assert joined.split() == original.split()  # no word lost or added
    assert got["human"] == [
        "NVLink 4 (H100)",
        "DGX H100",
        "Rabenseifner",
        "ZB-H1",
        "E<sub>p</sub> = 4",
        "NCCL's choice on DGX A100",
        "t<sub>f</sub>",
        "max_len",
    ]
