"""The public nccl-tests logs the chapter reads and judges, and the numbers it quotes.

Each log is a file of ``lib/scaleout/data/nccl_logs/`` whose first line names the thread it
was pasted in (an excerpt as pasted: truncated tails stay, and the parser reports them as
skipped lines). ``logs.csv`` in the same folder holds, in the data folder's long format
(:data:`scaleout.data.COLUMNS`: value, unit, ``source`` = a references.bib key, locator, kind,
uncertainty, note; then the setting's columns: log, quantity, machine preset, GPU, ranks,
nodes, collective), what each thread states about its machine and the numbers the chapter
quotes. Units and kinds are :mod:`scaleout.data`'s (:data:`~scaleout.data.UNITS`,
:data:`~scaleout.data.KINDS`), an uncertainty is a number in the value's unit or empty, and
``tests/unit/test_data.py`` checks the rows by the same rules as the files
:func:`scaleout.data.load` reads. It is not one of them (a row may have no value: a log
whose machine the thread describes without a number), so it is read here.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

from .. import checks, data

DATA = Path(__file__).resolve().parent.parent / "data" / "nccl_logs"
#: The columns of logs.csv: the setting's first two, the data folder's seven, the rest.
SETTING = ("log", "quantity", "machine", "gpu", "ranks", "nodes", "collective")
COLUMNS = (*SETTING[:2], *data.COLUMNS, *SETTING[2:])
KINDS = data.KINDS
UNITS = data.UNITS


@dataclass(frozen=True)
class Entry:
    """One row of ``logs.csv`` (empty fields are ``None``)."""

    log: str
    quantity: str
    value: float | None
    unit: str
    source: str
    locator: str
    kind: str
    uncertainty: float | None
    note: str
    machine: str | None
    gpu: str | None
    ranks: int | None
    nodes: int | None
    collective: str | None

    def __post_init__(self):
        for name in ("log", "quantity", "unit", "source", "locator", "kind"):
            checks.text(name, getattr(self, name), 200)
        checks.choice("kind", self.kind, KINDS)
        checks.choice("unit", self.unit, UNITS)
        if self.value is not None:
            checks.real("value", self.value)
        checks.optional_integer("ranks", self.ranks, 1, 2**24)
        checks.optional_integer("nodes", self.nodes, 1, 2**24)
        if self.uncertainty is not None:
            checks.nonnegative("uncertainty", self.uncertainty)
        if self.kind == "assumed" and not self.note.strip():
            raise checks.fail("note", "a reason why the value is assumed", self.note)
        for name in ("machine", "gpu", "collective"):
            v = getattr(self, name)
            if v is not None:
                checks.text(name, v, 200)
        if not isinstance(self.note, str) or len(self.note) > 1000:
            raise checks.fail("note", "a string of at most 1000 characters", self.note)


def entries() -> tuple[Entry, ...]:
    """Every row of ``logs.csv``."""
    out = []
    with open(DATA / "logs.csv", newline="", encoding="utf-8") as f:
        for line, r in enumerate(csv.DictReader(f), start=2):
            if tuple(r) != COLUMNS:
                raise ValueError(f"logs.csv columns must be {COLUMNS}, got {tuple(r)}")
            g = {k: (v if v != "" else None) for k, v in r.items()}
            checks.choice("kind", g["kind"], KINDS)
            checks.choice("unit", g["unit"], UNITS)
            out.append(Entry(
                g["log"], g["quantity"], None if g["value"] is None else float(g["value"]),
                g["unit"], g["source"], g["locator"], g["kind"],
                _uncertainty(line, g["uncertainty"]), g["note"] or "", g["machine"], g["gpu"],
                None if g["ranks"] is None else int(g["ranks"]),
                None if g["nodes"] is None else int(g["nodes"]), g["collective"]))  # fmt: skip
    return tuple(out)


def _uncertainty(line: int, text: str | None) -> float | None:
    if text is None:
        return None
    try:
        return float(text)
    except ValueError:
        raise ValueError(
            f"logs.csv line {line}: uncertainty must be a number in the value's unit or "
            f"empty (words such as 'approximate' belong in the note), got {text!r}"
        ) from None


def log_files() -> tuple[str, ...]:
    """The committed log files, by name."""
    return tuple(sorted(p.name for p in DATA.glob("*.txt")))


def log_text(name: str) -> str:
    """The text of one committed log."""
    checks.choice("name", name, log_files())
    return (DATA / name).read_text(encoding="utf-8")


def source_url(name: str) -> str:
    """The thread a committed log was pasted in (its first line)."""
    first = log_text(name).splitlines()[0]
    return first.split("source:", 1)[1].split()[0]


def setting(name: str) -> Entry:
    """The row of ``logs.csv`` that describes the machine of log ``name``."""
    checks.choice("name", name, log_files())
    rows = [e for e in entries() if e.log == name]
    return rows[0]
