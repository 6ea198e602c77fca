"""Published numbers of the congestion chapter, from ``scaleout/data/congestion.csv``.

The file is in the book's long format (``scaleout.data``, which loads it): one number a
row, ``value``, ``unit``, ``source`` (a key of references.bib), ``locator`` (section, table,
figure or file and line), ``kind`` (measured, read-off, stated, assumed), ``uncertainty`` (a
number in the value's unit, or None), ``note`` and the setting (``quantity``, ``system``,
``setting``; ``range_end`` marks the two ends of a stated range, whose keys say so too),
named by ``key``. :func:`rows` returns them as :class:`Row` records;
:func:`value` looks one up.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from .. import checks, data

KINDS = data.KINDS


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
    uncertainty: float | None
    note: str
    system: str
    setting: str


@lru_cache(maxsize=1)
def _load() -> tuple[Row, ...]:
    return tuple(
        Row(v.key, v.get("quantity"), v.value, v.unit, v.source, v.locator, v.kind,
            v.uncertainty, v.note, v.get("system"), v.get("setting"))
        for v in data.load("congestion")
    )  # fmt: skip


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
