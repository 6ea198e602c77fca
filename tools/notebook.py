"""Authoring helpers for the chapters (notebooks): the check-cell convention in one place.

Every number a chapter's prose states is computed in a visible cell and checked with
``assert`` in a *check cell* right after it: a code cell whose input is folded in the built
book (tag ``hide-input``, with a label saying what it holds) and collapsed in JupyterLab
(``jupyter.source_hidden``). The build and nbval still execute it. Visible cells hold the
code that teaches; they carry no top-level ``assert`` (asserts inside a function that runs
on every rank are part of that code). ``tests/test_chapters.py`` enforces this.

Use from a script (``sys.path`` must include ``tools/``)::

    import notebook as N
    nb = N.load("chapters/01_collectives.ipynb")
    nb.cells.insert(8, N.check_cell("assert total == 14"))
    N.save(nb, "chapters/01_collectives.ipynb")
"""

from __future__ import annotations

import ast
import copy
from pathlib import Path

import nbformat

CHECK_TAG = "hide-input"
CHECK_PROMPT_SHOW = "Show the checks of the numbers in the text"
CHECK_PROMPT_HIDE = "Hide the checks"
CHECK_METADATA = {
    "tags": [CHECK_TAG],
    "mystnb": {"code_prompt_show": CHECK_PROMPT_SHOW, "code_prompt_hide": CHECK_PROMPT_HIDE},
    "jupyter": {"source_hidden": True},
}


def load(path) -> nbformat.NotebookNode:
    return nbformat.read(str(path), as_version=4)


def save(nb: nbformat.NotebookNode, path) -> None:
    nbformat.validate(nb)
    nbformat.write(nb, str(path))


def check_cell(source: str) -> nbformat.NotebookNode:
    """A new check cell holding ``source`` (asserts of the numbers the prose states)."""
    cell = nbformat.v4.new_code_cell(source.strip("\n"))
    cell.metadata = copy.deepcopy(CHECK_METADATA)
    return cell


def make_check_cell(cell: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """Turn an existing code cell into a check cell (its metadata, tags kept)."""
    tags = list(dict.fromkeys([*cell.metadata.get("tags", []), CHECK_TAG]))
    cell.metadata.update(copy.deepcopy(CHECK_METADATA))
    cell.metadata["tags"] = tags
    return cell


def is_check_cell(cell) -> bool:
    return cell.get("cell_type") == "code" and CHECK_TAG in cell.get("metadata", {}).get("tags", [])


def _python(source: str) -> str:
    """Cell source with IPython magics and shell escapes replaced by ``pass`` at their
    indentation (so ast can parse it, also where one is a block's only statement)."""
    return "\n".join(
        line[: len(line) - len(line.lstrip())] + "pass"
        if line.lstrip().startswith(("%", "!"))
        else line
        for line in source.splitlines()
    )


def _is_check_call(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute | ast.Name)
        and (getattr(node.func, "attr", None) or getattr(node.func, "id", "")).startswith("assert_")
    )


def top_level_checks(source: str) -> list[int]:
    """Line numbers of asserts (and ``assert_*()`` calls) outside any function or class."""
    tree = ast.parse(_python(source))
    lines = []

    def visit(node, inside):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef):
            inside = True
        if not inside and (isinstance(node, ast.Assert) or _is_check_call(node)):
            lines.append(node.lineno)
        for child in ast.iter_child_nodes(node):
            visit(child, inside)

    visit(tree, False)
    return lines


def count_checks(source: str) -> int:
    """Every assert and ``assert_*()`` call in a cell, inside functions too."""
    tree = ast.parse(_python(source))
    return sum(isinstance(n, ast.Assert) or _is_check_call(n) for n in ast.walk(tree))


def chapter_paths(root=".") -> list[Path]:
    return sorted(Path(root).glob("chapters/[0-9][0-9]_*.ipynb"))
