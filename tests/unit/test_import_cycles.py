"""No import cycle among the library's modules (issue 24): the module-level imports of every
``lib/scaleout`` module, read from its source, form a graph without a cycle.

An import of a package (``from .. import planner``) runs the package's ``__init__``, which
imports its submodules, so an edge goes to the package and from the package to what its
``__init__`` imports. Imports inside functions are not counted: they run late, by design.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2] / "lib" / "scaleout"


def _name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_name(p): p for p in ROOT.rglob("*.py")}


def _top_level_imports(tree: ast.Module):
    for node in tree.body:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            continue
        for n in node.body if isinstance(node, ast.Try) else [node]:
            if isinstance(n, ast.Import | ast.ImportFrom):
                yield n


def imports(module: str) -> set[str]:
    """The library modules ``module`` imports at module level."""
    path = MODULES[module]
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    found = set()
    for n in _top_level_imports(ast.parse(path.read_text())):
        if isinstance(n, ast.Import):
            found |= {a.name for a in n.names}
            continue
        if n.level:
            base = package[: len(package) - (n.level - 1)]
            target = ".".join(base + ([n.module] if n.module else []))
        else:
            target = n.module or ""
        for a in n.names:
            sub = f"{target}.{a.name}"
            found.add(sub if sub in MODULES else target)
    return {m for m in found if m in MODULES and m != module}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index, low, on, stack, out, counter = {}, {}, set(), [], [], 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on.add(start)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def test_the_library_has_no_import_cycle():
    graph = {m: imports(m) for m in MODULES}
    assert len(graph) > 150 and sum(map(len, graph.values())) > 300  # the graph was read
    found = cycles(graph)
    assert not found, f"import cycles among module-level imports: {found}"


@pytest.mark.parametrize(
    "graph, want",
    [
        ({"a": {"b"}, "b": {"c"}, "c": set()}, []),
        ({"a": {"b"}, "b": {"a"}, "c": {"a"}}, [["a", "b"]]),
        ({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"d"} - {"d"}}, [["a", "b", "c"]]),
    ],
)
def test_cycles_finds_them(graph, want):
    assert cycles(graph) == want


def test_imports_reads_relative_and_package_imports():
    # planner.fit imports planner.published and planner.step (relative, module level)
    assert {"scaleout.planner.published", "scaleout.planner.step"} <= imports(
        "scaleout.planner.fit"
    )
    # the package imports its submodules; a submodule importing `from .. import checks`
    assert "scaleout.planner.fit" in imports("scaleout.planner")
    assert "scaleout.checks" in imports("scaleout.planner.fit")
