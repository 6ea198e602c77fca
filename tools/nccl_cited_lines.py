"""Write the NCCL source lines that ``scaleout.nccl.constants`` and
``scaleout.congestion.qps.SOURCES`` cite to a test fixture.

``tests/unit/test_nccl.py`` checks that every number of the cost model is written at the
lines its :class:`~scaleout.nccl.constants.Source` cites in the pinned release. So that the
check runs on any machine (no NCCL checkout needed), the cited lines, and only those, are
committed in ``tests/fixtures/nccl_cited_lines.json`` with the release tag, its commit and
each line's number. After adding or moving a citation, regenerate the fixture from a clone
of https://github.com/NVIDIA/nccl (any clone that has the release's tag):

    PYTHONPATH=lib .venv/bin/python tools/nccl_cited_lines.py /path/to/nccl [--check]

``--check`` compares instead of writing and exits 1 if the fixture differs.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from scaleout.congestion import qps as Q
from scaleout.nccl import constants as C

FIXTURE = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "nccl_cited_lines.json"


def cited_lines(checkout: Path) -> dict:
    """``{"release", "commit", "repository", "files": {file: {line: text}}}`` for every line
    that a constant of :data:`scaleout.nccl.constants.CONSTANTS` cites."""

    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(checkout), *args], capture_output=True,
                              text=True, check=True).stdout  # fmt: skip

    wanted: dict[str, set[int]] = {}
    sources = [c.source for c in C.CONSTANTS.values()] + [s for _, s, _ in Q.SOURCES.values()]
    for source in sources:
        wanted.setdefault(source.file, set()).update(range(source.first, source.last + 1))
    files = {}
    for name in sorted(wanted):
        lines = git("show", f"{C.RELEASE}:{name}").splitlines()
        files[name] = {str(k): lines[k - 1] for k in sorted(wanted[name])}
    return {
        "repository": C.REPOSITORY,
        "release": C.RELEASE,
        "commit": git("rev-parse", f"{C.RELEASE}^{{commit}}").strip(),
        "note": "only the lines scaleout.nccl.constants and scaleout.congestion.qps cite; "
        "written by tools/nccl_cited_lines.py",
        "files": files,
    }


def main(argv: list[str]) -> int:
    args = [a for a in argv if a != "--check"]
    if len(args) != 1:
        print(__doc__)
        return 2
    data = cited_lines(Path(args[0]))
    text = json.dumps(data, indent=1, ensure_ascii=False) + "\n"
    if "--check" in argv:
        same = FIXTURE.is_file() and FIXTURE.read_text() == text
        print(f"{FIXTURE} {'matches' if same else 'differs from'} {args[0]} at {C.RELEASE}")
        return 0 if same else 1
    FIXTURE.write_text(text)
    lines = sum(len(v) for v in data["files"].values())
    print(f"wrote {lines} lines of {len(data['files'])} files to {FIXTURE}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
