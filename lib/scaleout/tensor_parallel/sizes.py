"""Size limits of :mod:`scaleout.tensor_parallel`, and the one check of a layer's sizes.

Every limit covers every realistic use and bounds the work a call can do (loops over t,
schedules of t^2 transfers, arrays of ``checks.MAX_ELEMENTS`` values); beyond a limit a
function raises ``ValueError`` naming it.
"""

from __future__ import annotations

from .. import checks

#: Largest tensor-parallel size t (the book's largest rank count, 65,536).
MAX_T = 65_536
#: Largest t of the step-by-step scatter-gather schedule (t^2 transfers).
MAX_SCHEDULE_T = 256
#: Largest micro-batch b, in sequences.
MAX_BATCH = 65_536
#: Largest sequence length s, in tokens (2**24: long-context runs reach a few million).
MAX_SEQ = 2**24
#: Largest hidden size h (2**20; the largest published dense models have h < 2**15).
MAX_HIDDEN = 2**20
#: Largest number of attention heads a.
MAX_HEADS = 2**16
#: Largest bytes per value (8 for float64; 16 leaves room for complex128).
MAX_DTYPE_BYTES = 16.0


def t_size(t, high: int = MAX_T) -> int:
    """The tensor-parallel size t, an integer in [1, ``high``]."""
    return checks.integer("t", t, 1, high)


def layer_sizes(b, s, h, t, dtype_bytes=2) -> tuple[int, int, int, int, float]:
    """(b, s, h, t, dtype_bytes) checked against the limits above; t must divide h."""
    b = checks.integer("b", b, 1, MAX_BATCH)
    s = checks.integer("s", s, 1, MAX_SEQ)
    h = checks.integer("h", h, 1, MAX_HIDDEN)
    t = t_size(t)
    dtype_bytes = checks.positive("dtype_bytes", dtype_bytes, MAX_DTYPE_BYTES)
    divides(t, h, "h")
    return b, s, h, t, dtype_bytes


def divides(t: int, size: int, what: str) -> None:
    """Raise unless t divides ``size`` (the dimension called ``what``)."""
    t = checks.integer("t", t, 1)
    size = checks.integer("size", size, 1)
    what = checks.text("what", what)
    if size % t:
        raise checks.fail("t", f"a divisor of {what} = {size}", t)
