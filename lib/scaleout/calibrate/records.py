"""The records a parsed nccl-tests log is made of: :class:`Result`, :class:`Row`, :class:`Log`.

One :class:`Row` per line of the table nccl-tests prints, one :class:`Result` for each of its
out-of-place and in-place halves (nccl-tests ``src/util.cu``, ``writeBenchmarkLinePreamble``
and ``writeBenchmarkLineBody``; ``src/common.cu`` in releases before 2.17). Units are the
table's: bytes, microseconds, GB/s (1e9 bytes per second).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .. import checks

#: The most rows one log may hold, and the most characters of text the parser reads.
MAX_ROWS = 100_000
MAX_CHARS = 2**25
#: The most ``NCCL INFO``/``WARN`` lines a log keeps (the first ones; the rest are counted).
MAX_INFO = 5000
#: The book's names of the collectives nccl-tests' binaries run (``<name>_perf``).
BINARIES = {
    "all_reduce": "allreduce",
    "all_gather": "allgather",
    "reduce_scatter": "reducescatter",
    "broadcast": "broadcast",
    "reduce": "reduce",
    "alltoall": "alltoall",
    "alltoallv": "alltoallv",
    "sendrecv": "sendrecv",
    "gather": "gather",
    "scatter": "scatter",
    "hypercube": "hypercube",
}
COLLECTIVES = tuple(BINARIES.values())


def _optional_real(name, value, low=0.0):
    return None if value is None else checks.real(name, value, low)


@dataclass(frozen=True)
class Result:
    """One half of a row (out-of-place or in-place): ``time_us`` (microseconds),
    ``algbw_gb_per_s`` and ``busbw_gb_per_s`` (GB/s) and ``wrong`` (the ``#wrong`` count,
    or the ``error`` value of layouts before 2.13); ``None`` where the log printed ``N/A``
    or a non-number (``nan``, ``inf``). ``flagged``: RCCL's asterisk after an error above
    its threshold."""

    time_us: float | None
    algbw_gb_per_s: float | None
    busbw_gb_per_s: float | None
    wrong: float | None = None
    flagged: bool = False

    def __post_init__(self):
        for name in ("time_us", "algbw_gb_per_s", "busbw_gb_per_s"):
            value = getattr(self, name)
            if value is not None:
                object.__setattr__(self, name, checks.nonnegative(name, value))
        if self.wrong is not None:
            object.__setattr__(self, "wrong", checks.real("wrong", self.wrong))
        checks.boolean("flagged", self.flagged)


@dataclass(frozen=True)
class Row:
    """One size of the table: ``nbytes`` (the ``size`` column), ``count`` (elements),
    ``dtype``, ``redop`` and ``root`` (``None`` where the layout has no such column), and
    the ``out_of_place`` and ``in_place`` results (``None`` where the layout has no such
    half: RCCL's in-place-only table, nccl-tests' trace replay)."""

    nbytes: int
    count: int | None
    dtype: str | None
    redop: str | None
    root: int | None
    out_of_place: Result | None
    in_place: Result | None

    def __post_init__(self):
        checks.integer("nbytes", self.nbytes, 0, 2**62)
        checks.optional_integer("count", self.count, 0, 2**62)
        for name in ("dtype", "redop"):
            if getattr(self, name) is not None:
                checks.text(name, getattr(self, name), 40)
        checks.optional_integer("root", self.root, -1, 2**31)
        for name in ("out_of_place", "in_place"):
            value = getattr(self, name)
            if value is not None:
                checks.instance(name, value, Result)
        if self.out_of_place is None and self.in_place is None:
            raise checks.fail("out_of_place", "a Result when in_place is None", None)

    @property
    def result(self) -> Result:
        """The out-of-place result, or the in-place one where the log has only that."""
        return self.out_of_place if self.out_of_place is not None else self.in_place

    @property
    def seconds(self) -> float | None:
        """The :attr:`result`'s time in seconds (``None`` where the log has none)."""
        t = self.result.time_us
        return None if t is None else t * 1e-6


@dataclass(frozen=True)
class Log:
    """One nccl-tests table: ``collective`` (a name of ``COLLECTIVES``, from ``#
    Collective test starting:`` or the binary's name, else ``None``), ``ranks`` (from the
    device list, else from NCCL's ``nranks``, else ``None``), ``devices`` (one line per rank,
    as printed), ``avg_busbw_gb_per_s`` (``# Avg bus bandwidth``, else ``None``), ``rows``;
    ``layout`` names the columns found, ``info`` keeps the ``NCCL INFO``/``WARN`` lines
    around the table, ``skipped`` the numbered lines that looked like rows but were
    incomplete (a paste cut mid-line)."""

    collective: str | None
    ranks: int | None
    devices: tuple
    avg_busbw_gb_per_s: float | None
    rows: tuple
    layout: str = ""
    info: tuple = ()
    skipped: tuple = ()

    def __post_init__(self):
        if self.collective is not None:
            checks.choice("collective", self.collective, COLLECTIVES)
        checks.optional_integer("ranks", self.ranks, 1, 2**24)
        for name, limit in (("devices", 2**24), ("rows", MAX_ROWS), ("info", MAX_INFO + 1),
                            ("skipped", MAX_ROWS)):  # fmt: skip
            value = getattr(self, name)
            if not isinstance(value, tuple) or len(value) > limit:
                raise checks.fail(name, f"a tuple of at most {limit} items", value)
        for d in self.devices + self.info:
            if not isinstance(d, str):
                raise checks.fail("devices", "strings", d)
        for r in self.rows:
            checks.instance("rows", r, Row)
        if self.avg_busbw_gb_per_s is not None:
            checks.nonnegative("avg_busbw_gb_per_s", self.avg_busbw_gb_per_s)
        if not isinstance(self.layout, str) or len(self.layout) > 400:
            raise checks.fail("layout", "a string of at most 400 characters", self.layout)

    def sizes(self):
        """The rows' sizes (bytes) in order."""
        return [r.nbytes for r in self.rows]

    def timed(self) -> tuple:
        """The rows with a positive size and a time (out-of-place, else in-place)."""
        return tuple(r for r in self.rows if r.nbytes > 0 and r.seconds and r.seconds > 0)


def finite_or_none(x: float) -> float | None:
    """``x`` if finite, else ``None`` (nccl-tests prints ``nan``/``inf`` for a 0-us time)."""
    x = checks.real("x", x, finite=False)
    return x if math.isfinite(x) else None
