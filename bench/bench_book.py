"""Benchmark: clean full build time of the book, and the HTML weight of every page.

Builds the whole book from clean (every chapter executed) into a temporary folder, so the
working tree's _build is left alone, then prints a table: each page's own HTML (without the
shared static files, which a browser downloads once and caches), and the static files
(plotly.js, MathJax, the theme). Targets: a clean build in under 6 minutes on 2 cores, every
page under 1.5 MB with its explorers' precomputed figures. ``bench/bench_explorers.py``
measures how fast those explorers redraw.

    .venv/bin/python bench/bench_book.py
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def folder_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def main() -> int:
    jb = Path(sys.executable).with_name("jupyter-book")
    with tempfile.TemporaryDirectory(prefix="scaleout-bench-book-") as out:
        start = time.perf_counter()
        build = subprocess.run(
            [str(jb), "build", "--warningiserror", "--nitpick", "--path-output", out, str(ROOT)],
            capture_output=True,
            text=True,
        )
        seconds = time.perf_counter() - start
        if build.returncode != 0:
            print(build.stdout[-3000:], build.stderr[-3000:], sep="\n")
            print(f"build FAILED after {seconds:.1f} s")
            return 1
        html = Path(out) / "_build" / "html"
        pages = sorted(p for p in html.rglob("*.html") if "_static" not in p.parts)
        print(f"clean full build (every chapter executed): {seconds:.1f} s (target < 360 s)")
        print()
        print(f"{'page':45s} {'own HTML':>12s}")
        for page in pages:
            size = page.stat().st_size
            flag = "" if size < 1_500_000 else "  OVER 1.5 MB"
            print(f"{str(page.relative_to(html)):45s} {size / 1e3:9.1f} KB{flag}")
        static = html / "_static"
        print(f"{'_static/ (shared, cached once)':45s} {folder_bytes(static) / 1e6:9.2f} MB")
        for name in ("plotly.min.js", "mathjax"):
            path = static / name
            size = path.stat().st_size if path.is_file() else folder_bytes(path)
            print(f"{'  of which ' + name:45s} {size / 1e6:9.2f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
