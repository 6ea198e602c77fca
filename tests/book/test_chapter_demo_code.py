"""Where a chapter cell and a torchrun demo share code, the two are the same code.

A chapter shows the distributed code it runs in a cell; the same function often lives in
``scaleout.demos`` too, where ``torchrun`` runs it (and the integration tests check it). The
two copies must not drift apart: each pair below is compared as Python syntax trees, after
removing what does not change what runs (docstrings, comments, formatting, type
annotations) and applying the pair's declared renames (a demo's private ``_sp_block`` is the
chapter's ``block``). A demo's device plumbing (``device=``, ``.to(dev)``: demos also run
under NCCL on GPUs, chapters on CPU processes) is removed only where a pair says so.

Pairs that differ in what they compute are not listed: they are two programs, not two
copies (chapter 4's ``CopyToTP``/``ReduceFromTP`` and the demo's ``CopyToTensorParallel``/
``ReduceFromTensorParallel`` count calls in different records; chapter 8's ``ring_pass`` and
the demo's ``_ring_pass`` differ by the demo's message counter; chapter 6's ZeRO-3 backward
counts traffic, the demo's does not).
"""

from __future__ import annotations

import ast
import json

import pytest
from repo_paths import CHAPTERS, ROOT

DEMOS = ROOT / "lib" / "scaleout" / "demos"

#: (chapter topic (its file name without the number: chapters are renumbered), name in the
#: chapter, demo module, name in the demo, renames demo -> chapter, strip the demo's device
#: plumbing)
PAIRS = [
    ("data_parallel", "logging_allreduce", "data_parallel", "logging_allreduce", {}, False),
    ("data_parallel", "keep_buffer", "data_parallel", "keep_buffer", {}, False),
    ("expert_parallel", "AllToAll", "moe", "AllToAll", {}, False),
    ("context_parallel", "block", "context_parallel", "_sp_block", {"_sp_block": "block"},
     False),
    ("planner", "train_3d", "planner", "train_3d", {}, True),
]  # fmt: skip


def _definition(source: str, name: str, where: str) -> ast.AST:
    found = [n for n in ast.walk(ast.parse(source))
             if isinstance(n, ast.FunctionDef | ast.ClassDef) and n.name == name]  # fmt: skip
    assert len(found) == 1, f"{where}: {len(found)} definitions of {name}"
    return found[0]


def _chapter_definition(topic: str, name: str) -> ast.AST:
    paths = sorted(CHAPTERS.glob(f"[0-9][0-9]_{topic}.ipynb"))
    assert len(paths) == 1, f"{len(paths)} chapters on {topic}: {paths}"
    path = paths[0]
    cells = [
        "".join(c["source"])
        for c in json.loads(path.read_text())["cells"]
        if c["cell_type"] == "code"
    ]
    defining = [s for s in cells if f"def {name}(" in s or f"class {name}(" in s]
    assert len(defining) == 1, f"{path.name}: {len(defining)} cells define {name}"
    return _definition(defining[0], name, path.name)


class _Normalize(ast.NodeTransformer):
    """Docstrings and annotations out, names renamed, and (``strip_device``) the demo's
    device plumbing out: the ``device`` argument, ``dev = ...``, ``x = x.to(dev)``-style
    statements, ``device=dev`` keywords."""

    def __init__(self, renames: dict[str, str], strip_device: bool):
        self.renames, self.strip_device = renames, strip_device

    def _body(self, node):
        body = node.body
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            if isinstance(body[0].value.value, str):
                body = body[1:] or [ast.Pass()]
        node.body = body
        return node

    def visit_FunctionDef(self, node):
        node.name = self.renames.get(node.name, node.name)
        node.returns = None
        args = node.args
        for a in args.posonlyargs + args.args + args.kwonlyargs:
            a.annotation = None
        if self.strip_device:
            keep = [i for i, a in enumerate(args.args) if a.arg != "device"]
            offset = len(args.args) - len(args.defaults)
            args.defaults = [d for i, d in enumerate(args.defaults) if offset + i in keep]
            args.args = [args.args[i] for i in keep]
        return self.generic_visit(self._body(node))

    def visit_ClassDef(self, node):
        node.name = self.renames.get(node.name, node.name)
        return self.generic_visit(self._body(node))

    def visit_Name(self, node):
        node.id = self.renames.get(node.id, node.id)
        return node

    def visit_Assign(self, node):
        if self.strip_device and _uses_dev(node):
            return None  # dev = ..., w = [w.to(dev) ...], x, y = x.to(dev), y.to(dev)
        return self.generic_visit(node)

    def visit_keyword(self, node):
        if self.strip_device and node.arg == "device":
            return None
        return self.generic_visit(node)


def _uses_dev(node: ast.Assign) -> bool:
    targets = {n.id for t in node.targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    calls = [n for n in ast.walk(node.value) if isinstance(n, ast.Call)]
    to_dev = any(
        isinstance(c.func, ast.Attribute)
        and c.func.attr == "to"
        and any(isinstance(a, ast.Name) and a.id == "dev" for a in c.args)
        for c in calls
    )
    return targets == {"dev"} or to_dev


def _normal(node: ast.AST, renames=None, strip_device=False) -> str:
    tree = _Normalize(renames or {}, strip_device).visit(node)
    return ast.dump(ast.fix_missing_locations(tree), annotate_fields=False)


@pytest.mark.parametrize("pair", PAIRS, ids=lambda p: f"{p[0]}:{p[1]}")
def test_the_chapter_cell_and_the_demo_are_the_same_code(pair):
    chapter, name, demo, demo_name, renames, strip_device = pair
    source = (DEMOS / f"{demo}.py").read_text()
    ours = _normal(_definition(source, demo_name, f"demos/{demo}.py"), renames, strip_device)
    theirs = _normal(_chapter_definition(chapter, name))
    if ours != theirs:
        shown = ast.unparse(ast.parse(ast.unparse(_chapter_definition(chapter, name))))
        pytest.fail(
            f"{chapter}'s {name} and scaleout.demos.{demo}.{demo_name} differ; the chapter's:\n"
            f"{shown}\n\nthe demo's (normalized):\n"
            + ast.unparse(
                _Normalize(renames, strip_device).visit(_definition(source, demo_name, demo))
            )  # fmt: skip
        )


def test_the_comparison_sees_a_change():
    """The normalization keeps what runs: one changed operator is a difference."""
    source = (DEMOS / "moe.py").read_text()
    node = _definition(source, "AllToAll", "demos/moe.py")
    changed = ast.parse(ast.unparse(node).replace("recv", "send", 1)).body[0]
    assert _normal(changed) != _normal(_chapter_definition("expert_parallel", "AllToAll"))
    plain = _definition(source, "AllToAll", "demos/moe.py")
    assert _normal(plain) == _normal(_chapter_definition("expert_parallel", "AllToAll"))
