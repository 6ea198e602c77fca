"""Published numbers of the congestion chapter, from ``scaleout/data/congestion.csv``.

One number a row (long format): ``value``, ``unit``, ``source`` (a key of references.bib),
``locator`` (section, table, figure or file and line), ``kind`` (measured, read-off, stated,
assumed), ``uncertainty``, ``note`` and the setting (``system``, ``setting``), keyed by
``key``. :func:`rows` loads them; :func:`value` looks one up.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

from .. import checks

KINDS = ("measured", "read-off", "stated", "assumed")
COLUMNS = ("key", "quantity", "value", "unit", "source", "locator", "kind", "uncertainty",
           "note", "system", "setting")  # fmt: skip


@dataclass(frozen=True)
class Row:
    """One published (or assumed) number with its provenance."""

    key: str
    quantity: str
    value: float
    unit: str
    source: str
    locator: str
    kind: str
    uncertainty: str
    note: str
    system: str
    setting: str


@lru_cache(maxsize=1)
def _load() -> tuple[Row, ...]:
    text = resources.files("scaleout").joinpath("data/congestion.csv").read_text("utf-8")
    reader = csv.DictReader(text.splitlines())
    if tuple(reader.fieldnames or ()) != COLUMNS:
        raise ValueError(f"congestion.csv must have the columns {COLUMNS}")
    out = []
    for raw in reader:
        kind = checks.choice("kind", raw["kind"], KINDS)
        out.append(Row(**{**raw, "value": float(raw["value"]), "kind": kind}))
    keys = [r.key for r in out]
    if len(set(keys)) != len(keys):
        raise ValueError("congestion.csv: every key must appear once")
    return tuple(out)


def rows(system: str | None = None) -> list[Row]:
    """Every row, or those of ``system`` (e.g. "DCQCN", "Alibaba HPN")."""
    data = _load()
    if system is None:
        return list(data)
    system = checks.choice("system", system, sorted({r.system for r in data}))
    return [r for r in data if r.system == system]


def value(key: str) -> float:
    """The ``value`` of the row ``key``."""
    data = {r.key: r for r in _load()}
    return data[checks.choice("key", key, sorted(data))].value
