"""Bandwidth as one stored quantity (bytes per second in each direction), read back only by
naming unit *and* direction, so GB and Gb, per direction and both, never mix (chapter 11).
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import checks
from .links import BITS_PER_BYTE

UNITS: dict[str, float] = {  # bytes per second in one unit
    "B/s": 1.0,
    "GB/s": 1e9,
    "TB/s": 1e12,
    "Gb/s": 1e9 / BITS_PER_BYTE,
    "Tb/s": 1e12 / BITS_PER_BYTE,
}
DIRECTIONS = ("per direction", "bidirectional")


@dataclass(frozen=True, order=True)
class Bandwidth:
    """A bandwidth, stored once as bytes per second *in each direction*.

    Build one with :meth:`of` (``Bandwidth.of(400, "Gb/s", "per direction")``) and read it
    with :meth:`to` or :meth:`label`; both require the unit *and* the direction, so a
    number never leaves without saying what it is. Bidirectional figures (how NVIDIA
    quotes NVLink) are twice the per-direction figure; ``Gb/s`` is bits, ``GB/s`` bytes
    (8 bits each). Arithmetic stays consistent: ``k * bw`` is k links together, and
    ``bw_a / bw_b`` is a plain ratio of like with like (per direction against per
    direction, bytes against bytes).
    """

    bytes_per_s: float  # per direction

    def __post_init__(self):
        object.__setattr__(self, "bytes_per_s", checks.nonnegative("bytes_per_s", self.bytes_per_s))

    @classmethod
    def of(cls, value: float, unit: str, direction: str) -> Bandwidth:
        """``value`` in ``unit`` (one of ``UNITS``) counted ``direction`` (``DIRECTIONS``)."""
        unit = checks.choice("unit", unit, tuple(UNITS))
        direction = checks.choice("direction", direction, DIRECTIONS)
        per_direction = checks.nonnegative("value", value) * UNITS[unit]
        if direction == "bidirectional":
            per_direction /= 2
        return cls(checks.finite_result("bytes_per_s", per_direction))

    def to(self, unit: str, direction: str) -> float:
        """This bandwidth as a number of ``unit`` counted ``direction``."""
        unit = checks.choice("unit", unit, tuple(UNITS))
        direction = checks.choice("direction", direction, DIRECTIONS)
        factor = 2.0 if direction == "bidirectional" else 1.0
        return checks.finite_result("bandwidth", self.bytes_per_s * factor / UNITS[unit])

    def label(self, unit: str = "GB/s", direction: str = "per direction", scope: str = "") -> str:
        """E.g. ``"450 GB/s per direction, per GPU"`` (four significant digits)."""
        text = f"{self.to(unit, direction):.4g} {unit} {direction}"
        if scope == "":
            return text
        return f"{text}, {checks.text('scope', scope)}"

    def __mul__(self, k) -> Bandwidth:
        product = self.bytes_per_s * checks.nonnegative("k", k)
        return Bandwidth(checks.finite_result("bytes_per_s", product))

    __rmul__ = __mul__

    def __add__(self, other: Bandwidth) -> Bandwidth:
        if not isinstance(other, Bandwidth):
            return NotImplemented
        return Bandwidth(checks.finite_result("bytes_per_s", self.bytes_per_s + other.bytes_per_s))

    def __truediv__(self, other):
        if isinstance(other, Bandwidth):
            if other.bytes_per_s == 0:
                raise ValueError("cannot divide by a zero bandwidth")
            return checks.finite_result("ratio", self.bytes_per_s / other.bytes_per_s)
        k = checks.positive("k", other)
        return Bandwidth(checks.finite_result("bytes_per_s", self.bytes_per_s / k))
