"""Renumber chapters: rename the files and fix every reference to them.

``python tools/renumber_chapters.py 13_compute=14_compute 14_planner=15_planner`` renames
``chapters/13_compute.ipynb`` to ``chapters/14_compute.ipynb`` (with ``git mv``) and so on,
then rewrites, in every chapter's cells (sources only, never outputs), in the library, the
tests, the tools and the top-level Markdown and YAML files:

- file stems (``13_compute`` -> ``14_compute``), in links, toc entries and docstrings;
- "chapter N" mentions whose N is a renamed chapter's old number (``chapter 13`` ->
  ``chapter 14``), linked or not;
- the number inside a link's text so that it names the chapter it links to
  (``[chapter 13](14_compute.ipynb)`` -> ``[chapter 14](14_compute.ipynb)``), and the number
  column of the chapter table in ``intro.md``.

Run again after merging a branch that still names the old files: the renames are done, the
references are fixed. A topic part never changes (the developers' guide):
``13_compute=14_planner`` is refused.
Run ``tools/link_chapters.py`` afterwards to link any new plain mentions.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import notebook as N  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
STEM = re.compile(r"\b(\d\d)_([a-z][a-z_]*[a-z])\b")
MENTION = re.compile(r"\b([Cc]hapters?)(\s+)(\d{1,2}(?:(?:\s*(?:,|and|or|–|-|to)\s*)\d{1,2})*)\b")
NUMBER = re.compile(r"\d{1,2}")
TABLE_ROW = re.compile(r"^\| (\d{1,2}) \| \[([^\]]*)\]\(chapters/(\d\d)_", re.M)
LINK_NUMBER = re.compile(r"\[([Cc]hapters?\s+)?(\d{1,2})\]\(((?:\.\./)?(?:chapters/)?)(\d\d)_")
TEXT_FILES = ("*.md", "*.yml", "lib/**/*.py", "tests/**/*.py", "tools/*.py", "bench/*.py")


def parse(argv: list[str]) -> dict[str, str]:
    mapping = {}
    for arg in argv:
        old, sep, new = arg.partition("=")
        mo, mn = STEM.fullmatch(old), STEM.fullmatch(new)
        if not sep or not mo or not mn:
            raise SystemExit(
                f"renumber_chapters: expected OLD=NEW stems like 13_compute=14_compute, got {arg!r}"
            )
        if mo.group(2) != mn.group(2):
            raise SystemExit(
                f"renumber_chapters: {arg!r} changes the topic part; only the number may change"
            )
        if (
            not (ROOT / "chapters" / f"{old}.ipynb").exists()
            and not (ROOT / "chapters" / f"{new}.ipynb").exists()
        ):
            raise SystemExit(f"renumber_chapters: neither chapters/{old}.ipynb nor {new} exists")
        mapping[old] = new
    return mapping


def rewrite(text: str, stems: dict[str, str], numbers: dict[int, int], own: bool = True) -> str:
    """Apply the renumbering to one text (see the module docstring)."""

    def mention(m):
        word, space, nums = m.groups()

        def one(n):
            k = int(n.group(0))
            return str(numbers.get(k, k))

        return word + space + NUMBER.sub(one, nums)

    text = MENTION.sub(mention, text)
    text = STEM.sub(lambda m: stems.get(m.group(0), m.group(0)), text)
    text = TABLE_ROW.sub(
        lambda m: f"| {int(m.group(3))} | [{m.group(2)}](chapters/{m.group(3)}_", text
    )
    return LINK_NUMBER.sub(
        lambda m: f"[{m.group(1) or ''}{int(m.group(4))}]({m.group(3)}{m.group(4)}_", text
    )


def main(argv: list[str]) -> int:
    stems = parse(argv)
    if not stems:
        print(__doc__)
        return 2
    numbers = {int(o[:2]): int(n[:2]) for o, n in stems.items()}
    for old, new in stems.items():
        if not (ROOT / "chapters" / f"{old}.ipynb").exists():
            continue  # already renamed (say, by a merge): only the references are fixed
        subprocess.run(
            ["git", "mv", f"chapters/{old}.ipynb", f"chapters/{new}.ipynb"], cwd=ROOT, check=True
        )
    for path in N.chapter_paths(ROOT):
        nb = N.load(path)
        changed = False
        for cell in nb.cells:
            new = rewrite(cell.source, stems, numbers)
            if new != cell.source:
                cell.source, changed = new, True
        if changed:
            N.save(nb, path)
            print(f"{path.relative_to(ROOT)}: rewritten")
    for pattern in TEXT_FILES:
        for path in sorted(ROOT.glob(pattern)):
            if ".venv" in path.parts or path.name == Path(__file__).name:
                continue
            text = path.read_text()
            new = rewrite(text, stems, numbers)
            if new != text:
                path.write_text(new)
                print(f"{path.relative_to(ROOT)}: rewritten")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
