"""Static checks of the chapters (no execution): layout, check cells, portable outputs.

The conventions (``tools/notebook.py``): visible cells teach, check cells (folded) hold
the asserts of the numbers the prose states; outputs are the same bytes on every CPU;
explorers work without a kernel.
"""

from __future__ import annotations

import json
import re
import sys

import pytest
import yaml
from repo_paths import ROOT, TOOLS

sys.path.insert(0, str(TOOLS))
import notebook as N  # noqa: E402

CHAPTERS = N.chapter_paths(ROOT)
TOPICS = (
    "collectives data_parallel model_parallel tensor_parallel pipeline_parallel zero "
    "double_binary_tree nvlink_topology rdma planner "
    "nccl compute expert_parallel context_parallel"
).split()


def code_cells(path):
    return [c for c in N.load(path).cells if c.cell_type == "code"]


def test_chapter_files_are_numbered_in_reading_order_and_all_in_the_toc():
    numbers = [int(p.name[:2]) for p in CHAPTERS]
    assert numbers == list(range(1, len(CHAPTERS) + 1)), [p.name for p in CHAPTERS]
    topics = [p.stem[3:] for p in CHAPTERS]
    assert set(TOPICS) <= set(topics), "an existing chapter's topic part changed"
    toc = (ROOT / "_toc.yml").read_text()
    listed = re.findall(r"file: (chapters/\S+)", toc)
    assert listed == [f"chapters/{p.stem}" for p in CHAPTERS]
    intro = (ROOT / "intro.md").read_text()
    for k, path in enumerate(CHAPTERS, start=1):
        assert re.search(rf"^\| {k} \| \[[^]]+\]\(chapters/{path.name}\)", intro, re.M), (
            f"intro.md's chapter map lacks row {k} -> {path.name}"
        )


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_visible_cells_teach_and_check_cells_are_folded(path):
    checks = 0
    for i, cell in enumerate(code_cells(path)):
        lines = N.top_level_checks(cell.source)
        if N.is_check_cell(cell):
            assert cell.metadata["mystnb"]["code_prompt_show"] == N.CHECK_PROMPT_SHOW
            assert cell.metadata.get("jupyter", {}).get("source_hidden") is True
            assert N.count_checks(cell.source), f"{path.name} code cell {i}: folded, no check"
            checks += 1
        else:
            assert not lines, (
                f"{path.name} code cell {i}: asserts at lines {lines} belong in a folded "
                "check cell after it (tools/notebook.py)"
            )
    assert checks, f"{path.name} has no check cell"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_outputs_are_portable_and_explorers_static(path):
    blob = json.dumps([o for c in code_cells(path) for o in c.get("outputs", [])])
    f8 = blob.count('\\"dtype\\": \\"f8\\"') + blob.count('"dtype": "f8"')
    assert not f8, f"{path.name}: {f8} base64 float64 arrays in outputs (not portable)"
    long_floats = re.findall(r"\d\.\d{12,}", blob)
    assert not long_floats, f"{path.name}: unrounded floats in outputs, e.g. {long_floats[:3]}"
    assert "needs a live kernel" not in blob
    assert not re.search(r"/(?:root|work|home|tmp)/[\w.-]+", blob), "a local path in outputs"
    for cell in code_cells(path):
        if "Explorer(" in cell.source:
            html = "".join(
                "".join(o.get("data", {}).get("text/html", "")) for o in cell.get("outputs", [])
            )
            assert "scaleout-explorer-data" in html, f"{path.name}: explorer without states"


def test_every_chapter_has_a_kernelspec_and_no_execution_counts_leak():
    for path in CHAPTERS:
        nb = N.load(path)
        assert nb.metadata.get("kernelspec", {}).get("name") == "python3", path.name


def test_toc_parses():
    assert yaml.safe_load((ROOT / "_toc.yml").read_text())["format"] == "jb-book"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_chapter_mentions_are_links_that_resolve(path):
    """Every "chapter N" of the prose links to that chapter's notebook (tools/link_chapters.py
    adds them), and every link to a chapter notebook names a file that exists."""
    import link_chapters as L

    files = {int(p.name[:2]): p.name for p in CHAPTERS}
    own = int(path.name[:2])
    for cell in N.load(path).cells:
        if cell.cell_type != "markdown":
            continue
        _, unlinked = L.link_markdown(cell.source, files, own)
        assert unlinked == 0, f"{path.name}: plain chapter mention in {cell.source[:80]!r}"
        for target in re.findall(r"\]\((\d\d_[a-z_]+\.ipynb)[)#]", cell.source):
            assert target in files.values(), f"{path.name}: link to missing {target}"
