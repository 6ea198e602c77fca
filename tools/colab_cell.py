"""Gives every chapter a first code cell that installs the book's library on Colab only.

A chapter launched on Colab (the rocket button) runs in a bare environment: its first
``from scaleout import ...`` fails. This cell, placed before the first code cell, installs the
library from the book's repository (``repository.url`` in ``_config.yml``) when it runs on
Colab, and does nothing anywhere else (JupyterLab, Binder, the book's build, nbval): it prints
nothing, so committed outputs are unchanged. The built book does not show it (tag
``remove-cell``). Idempotent: run again, it updates the cell in place.

Usage: ``python tools/colab_cell.py [--check] [chapters/NN_x.ipynb ...]`` (all chapters by
default); ``--check`` exits 1 listing the chapters whose cell is missing or stale.
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
import yaml

ROOT = Path(__file__).resolve().parents[1]
CELL_ID = "colab-install"
TAGS = ["remove-cell"]


def repository_url(config: Path = ROOT / "_config.yml") -> str:
    url = (yaml.safe_load(config.read_text()).get("repository") or {}).get("url") or ""
    if not url.startswith(("https://", "http://")):
        raise ValueError(f"repository.url in {config} must be an http(s) URL, got {url!r}")
    return url.rstrip("/").removesuffix(".git")


def source(url: str) -> str:
    return (
        "# On Colab only: install the book's library (elsewhere this cell does nothing).\n"
        "import sys\n"
        "\n"
        'if "google.colab" in sys.modules:\n'
        f'    %pip install --quiet "scaleout @ git+{url}"\n'
    )


def with_cell(nb: nbformat.NotebookNode, url: str) -> bool:
    """Puts the install cell before ``nb``'s first code cell (or updates it); True if changed."""
    text = source(url)
    for cell in nb.cells:
        if cell.get("id") == CELL_ID:
            if cell.source == text and cell.metadata.get("tags") == TAGS:
                return False
            cell.source = text
            cell.metadata["tags"] = list(TAGS)
            return True
    cell = nbformat.v4.new_code_cell(text, metadata={"tags": list(TAGS)})
    cell["id"] = CELL_ID
    first = next((i for i, c in enumerate(nb.cells) if c.cell_type == "code"), len(nb.cells))
    nb.cells.insert(first, cell)
    return True


def main(argv: list[str]) -> int:
    check = "--check" in argv
    paths = [Path(a) for a in argv if a != "--check"] or sorted(ROOT.glob("chapters/*.ipynb"))
    url = repository_url()
    stale = []
    for path in paths:
        nb = nbformat.read(str(path), as_version=4)
        if with_cell(nb, url):
            stale.append(str(path))
            if not check:
                nbformat.write(nb, str(path))
    if check and stale:
        print("no current Colab install cell in: " + ", ".join(stale))
        return 1
    if not check:
        print(f"updated {len(stale)} of {len(paths)} chapters")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
