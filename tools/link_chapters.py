"""Turn the chapters' plain "chapter N" mentions into links to that chapter's notebook.

Markdown cells only; never inside code spans, math, existing links, headings or fence and
directive-option lines; a chapter's mentions of itself stay plain.
``python tools/link_chapters.py [--check]`` edits the notebooks in place (``--check``: only
lists what it would link, and exits 1 if anything).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import notebook as N  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
# Protected spans: code, math, links/images (and their targets), roles, html tags.
PROTECT = re.compile(
    r"(`[^`]*`|\$\$.*?\$\$|\$[^$\n]*\$|!?\[[^\]]*\]\([^)]*\)|\{[a-z:]+\}`[^`]*`|<[^>]+>)",
    re.S,
)
MENTION = re.compile(r"\b([Cc]hapters?)(\s+)(\d{1,2}(?:(?:\s*(?:,|and|or|–|-|to)\s*)\d{1,2})*)\b")
NUMBER = re.compile(r"\d{1,2}")


def link_text(text: str, files: dict[int, str], own: int) -> tuple[str, int]:
    count = 0

    def replace_numbers(m):
        nonlocal count
        word, space, numbers = m.groups()

        def one(n):
            nonlocal count
            k = int(n.group(0))
            if k not in files or k == own:
                return n.group(0)
            count += 1
            return f"[{n.group(0)}]({files[k]})"

        linked = NUMBER.sub(one, numbers)
        if linked == numbers:
            return m.group(0)
        # "chapter 4" reads best with the word inside the link when there is one number.
        if NUMBER.fullmatch(numbers) and numbers != linked:
            return f"[{word}{space}{numbers}]({files[int(numbers)]})"
        return f"{word}{space}{linked}"

    out, last = [], 0
    for m in PROTECT.finditer(text):
        out.append(MENTION.sub(replace_numbers, text[last : m.start()]))
        out.append(m.group(0))
        last = m.end()
    out.append(MENTION.sub(replace_numbers, text[last:]))
    return "".join(out), count


def link_markdown(source: str, files: dict[int, str], own: int) -> tuple[str, int]:
    lines, total = [], 0
    for line in source.split("\n"):
        if line.lstrip().startswith(("```", ":::", "#")):
            lines.append(line)  # a fence or directive line, or a heading (the toc shows it)
            continue
        if re.match(r"\s*:[a-z-]+:", line):  # a directive option line
            lines.append(line)
            continue
        new, n = link_text(line, files, own)
        lines.append(new)
        total += n
    return "\n".join(lines), total


def main(argv) -> int:
    check = "--check" in argv
    paths = N.chapter_paths(ROOT)
    files = {int(p.name[:2]): p.name for p in paths}
    found = 0
    for path in paths:
        nb = N.load(path)
        own, changed = int(path.name[:2]), 0
        for cell in nb.cells:
            if cell.cell_type != "markdown":
                continue
            new, n = link_markdown(cell.source, files, own)
            if n:
                changed += n
                cell.source = new
        if changed:
            found += changed
            print(f"{path.name}: {changed} mention(s) {'to link' if check else 'linked'}")
            if not check:
                N.save(nb, path)
    return 1 if (check and found) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
