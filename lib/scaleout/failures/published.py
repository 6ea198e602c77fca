"""Published failure statistics (``scaleout/data/failures.csv``) and what follows from them.

Taught in chapter 17 (``chapters/17_failures.ipynb``). The CSV is in the book's long format
(``scaleout.data``, which loads it), one number per row: ``key`` (unique), the setting
``run``, ``quantity`` and ``category`` (the root-cause category of Llama 3's Table 5),
``value``, ``unit``, ``source`` (a key of ``references.bib``; for an assumed value, the
document the assumption leans on), ``locator`` (table, section, file), ``kind`` (measured,
read-off, stated, assumed), ``uncertainty`` (a number in the value's unit, or None) and
``note`` (for an assumed value: why it is assumed). The range of an assumed value is two
rows of its own, ``<quantity>, low end`` and ``<quantity>, high end``.

Rows: Llama 3 405B's 54-day snapshot of interruptions and its root causes (Dubey et al.
2024, Sec. 3.3.4 and Table 5) and storage (Sec. 3.3.1); BLOOM-176B's checkpoint size, time
and interval (Bekman, ML Engineering Open Book) with its shape (model card, training
script); OPT-175B's restarts (Zhang et al. 2022, Sec. 2.5); the book's assumptions, with
their ranges.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from .. import checks, data

KINDS = data.KINDS
HOURS_PER_DAY = 24.0


@dataclass(frozen=True)
class Row:
    """One published (or assumed) number with its source."""

    key: str
    run: str
    quantity: str
    category: str
    value: float
    unit: str
    source: str
    locator: str
    kind: str
    uncertainty: float | None
    note: str


@functools.cache
def rows() -> tuple[Row, ...]:
    """Every row of ``failures.csv``, checked by ``scaleout.data.load`` (columns, kinds,
    units, numbers, unique keys, a note for every assumed value)."""
    return tuple(
        Row(v.key, v.get("run"), v.get("quantity"), v.get("category"), v.value, v.unit,
            v.source, v.locator, v.kind, v.uncertainty, v.note)
        for v in data.load("failures")
    )  # fmt: skip


def runs() -> tuple[str, ...]:
    """The runs in the file, in order."""
    return tuple(dict.fromkeys(r.run for r in rows()))


def value(run: str, quantity: str) -> float:
    """The value of ``quantity`` for ``run`` (in the row's unit)."""
    checks.choice("run", run, runs())
    found = {r.quantity: r for r in rows() if r.run == run}
    checks.choice("quantity", quantity, tuple(found))
    return found[quantity].value


def row(run: str, quantity: str) -> Row:
    """The whole :class:`Row` of ``quantity`` for ``run``."""
    value(run, quantity)
    return next(r for r in rows() if r.run == run and r.quantity == quantity)


def assumed_range(quantity: str) -> tuple[float, float]:
    """(low, high) of an assumed value, from its rows ``<quantity>, low end`` and
    ``<quantity>, high end`` (in the value's unit)."""
    r = row("assumed", quantity)
    ends = {r.quantity: r for r in rows() if r.run == "assumed"}
    names = (f"{quantity}, low end", f"{quantity}, high end")
    if not all(name in ends for name in names):
        raise ValueError(f"assumed {quantity!r} has no rows {names[0]!r} and {names[1]!r}")
    if any(ends[name].unit != r.unit for name in names):
        raise ValueError(f"assumed {quantity!r}: its range is not in its unit {r.unit!r}")
    low, high = (ends[name].value for name in names)
    if not low <= r.value <= high:
        raise ValueError(f"assumed {quantity!r}: {r.value} lies outside its range {low}..{high}")
    return low, high


def per_component_rates() -> dict[str, float]:
    """Llama 3's unexpected interruptions per GPU-hour, per component of Table 5 (count over
    GPUs x hours of the 54-day snapshot): the input of
    :func:`scaleout.failures.renewal.job_mtbf_s`."""
    n = value("llama3-405b", "gpus")
    hours = value("llama3-405b", "snapshot period") * HOURS_PER_DAY
    return {name: count / (n * hours) for name, (_, count, _) in llama3_causes().items()}


def llama3_causes() -> dict[str, tuple[str, int, float]]:
    """Llama 3's Table 5: {component: (category, interruptions, share in % as printed)}."""
    out = {}
    for r in rows():
        if r.run == "llama3-405b" and r.quantity.startswith("unexpected: "):
            name = r.quantity.removeprefix("unexpected: ")
            share = value("llama3-405b", f"unexpected share: {name}")
            out[name] = (r.category, int(r.value), share)
    return out


@dataclass(frozen=True)
class Observed:
    """A run's interruptions turned into rates: the job's mean time between interruptions
    (seconds) and the per-GPU rate (interruptions per GPU-hour)."""

    run: str
    interruptions: float
    gpus: int
    hours: float
    job_mtbf_s: float
    per_gpu_hour: float


def observed(run: str, which: str = "unexpected") -> Observed:
    """Interruption rates of ``run`` ("llama3-405b": ``which`` = "all" or "unexpected"
    interruptions in the 54 days; "opt-175b": manual plus automatic restarts in about two
    months, lower bounds)."""
    checks.choice("run", run, ("llama3-405b", "opt-175b"))
    if run == "llama3-405b":
        checks.choice("which", which, ("all", "unexpected"))
        count = value(run, "interruptions" if which == "all" else "unexpected interruptions")
        hours = value(run, "snapshot period") * HOURS_PER_DAY
    else:
        count = value(run, "manual restarts") + value(run, "automatic restarts")
        hours = value(run, "period") * HOURS_PER_DAY
    gpus = int(value(run, "gpus"))
    return Observed(run, count, gpus, hours, hours * 3600.0 / count, count / (gpus * hours))
