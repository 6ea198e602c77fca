"""Every static explorer control with fewer than N stops, read from the chapters' saved outputs.

    python tools/explorer_stops.py [--min 3] [chapters/NN_x.ipynb ...]

Prints one line per control: chapter, explorer, control label, widget, its stops. A slider
with two stops in the static book jumps between two figures; the issue asks for three or more.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_DATA = re.compile(
    r'data-explorer="([^"]+)".*?<script type="application/json" '
    r'class="scaleout-explorer-data">(.*?)</script>',
    re.S,
)


def explorers(path: Path):
    """(explorer name, payload, html length) for every explorer in a notebook's outputs."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    for cell in nb["cells"]:
        for out in cell.get("outputs", []):
            html = out.get("data", {}).get("text/html")
            if html is None:
                continue
            html = "".join(html) if isinstance(html, list) else html
            for m in _DATA.finditer(html):
                text = m.group(2).replace("<\\/", "</").replace("<\\!--", "<!--")
                yield m.group(1), json.loads(text), len(html)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--min", type=int, default=3, help="fewest stops a slider should have")
    ap.add_argument("notebooks", nargs="*", type=Path)
    args = ap.parse_args(argv)
    paths = args.notebooks or sorted((ROOT / "chapters").glob("[0-9][0-9]_*.ipynb"))
    found = 0
    for path in paths:
        for name, payload, size in explorers(path):
            for c in payload["controls"]:
                n = len(c["options"])
                if c["widget"] == "range" and n < args.min or n == 1:
                    found += 1
                    print(
                        f"{path.stem}\t{name}\t{c['label']}\t{c['widget']}\t{n}\t"
                        f"{c['options']}\t{size} B"
                    )
    print(f"{found} controls with fewer than {args.min} stops", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
