"""Fetch the partial plotly.js bundle the built book serves (run by `make setup`).

The book draws only scatter, bar and heatmap traces, so it serves plotly's published
"cartesian" partial bundle (1.5 MB) instead of the full one (4.8 MB). This script
downloads the pinned npm release once, checks it against the registry's sha512 integrity
hash, and writes the minified file and its MIT license to ``<prefix>/share/scaleout/``
(``<prefix>`` = this Python's ``sys.prefix``, the virtual environment), where
:mod:`scaleout.sphinxext` finds it. Nothing is fetched at read time.

The version matches the plotly.js inside the pinned Python plotly package (see
``plotly/package_data/plotly.min.js``), so figures serialize for the bundle that draws them.
"""

from __future__ import annotations

import base64
import hashlib
import io
import sys
import tarfile
import urllib.request
from pathlib import Path

PACKAGE = "plotly.js-cartesian-dist-min"
VERSION = "4.1.1"
INTEGRITY = "sha512-o8GrFeusncwBIxbBynRJpY4pkgVB6caM+JLpwrLYbbsO7dZ8FJ+SVN2Fr+L7kiG/Z6w4P5O0Jus/Qr5EefHVeg=="  # noqa: E501
URL = f"https://registry.npmjs.org/{PACKAGE}/-/{PACKAGE}-{VERSION}.tgz"
BUNDLE = "plotly-cartesian.min.js"


def target_dir() -> Path:
    return Path(sys.prefix) / "share" / "scaleout"


def main() -> int:
    out = target_dir()
    version = out / "VERSION"
    if (out / BUNDLE).is_file() and version.is_file() and version.read_text().strip() == VERSION:
        return 0
    print(f"fetching {PACKAGE}@{VERSION} from the npm registry")
    with urllib.request.urlopen(URL, timeout=120) as response:
        data = response.read()
    digest = "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode()
    if digest != INTEGRITY:
        print(f"{URL}: integrity {digest} does not match the pinned {INTEGRITY}", file=sys.stderr)
        return 1
    out.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        for member, name in ((f"package/{BUNDLE}", BUNDLE), ("package/LICENSE", "LICENSE")):
            (out / f"plotly-{name}" if name == "LICENSE" else out / name).write_bytes(
                tar.extractfile(member).read()
            )
    (out / "VERSION").write_text(VERSION + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
