"""Link presets: PCIe, NVLink and NIC bandwidths per GPU, each with its source, and the
unit conversions between Gb and GB. See :mod:`scaleout.hardware` for the units.
"""

from __future__ import annotations

import functools
import math
import sys
from dataclasses import dataclass

from .. import checks, data

BITS_PER_BYTE = 8
KINDS = ("pcie", "nvlink", "nic")
MAX_LINKS = 64  # NVLink links per GPU (18 on H100 and B200)
MAX_ALPHA_S = 1.0  # a per-message latency above a second is not a link
_YEARS = (1990, 2100)
_SOURCE_CHARS = 1000


#: Fields whose whole values are kept as ``int`` (the NIC line rates, in Gb/s).
_WHOLE = ("gbit_per_s", "nic_gbit_per_s")


@functools.lru_cache(maxsize=64)
def _table(table: str) -> dict:
    out: dict = {}
    for v in data.load("interconnect"):
        if v.get("table") == table:
            value = v.value
            if v.get("field") in _WHOLE and float(value).is_integer():
                value = int(value)
            out.setdefault(v.get("row"), {})[v.get("field")] = value
    return out


def table_fields(table: str, row) -> dict:
    """The numbers of row ``row`` of table ``table`` (nvlink, nvswitch, system, pcie, nic,
    link) of ``data/interconnect.csv``, by field name (a copy)."""
    rows = _table(checks.choice("table", table, ("nvlink", "nvswitch", "system", "pcie", "nic",
                                                 "link")))  # fmt: skip
    return dict(rows[checks.choice("row", str(row), tuple(rows))])


def gbit_per_s_to_gbyte_per_s(x):
    """Gb/s (1e9 bits/s) to GB/s (1e9 bytes/s): divide by 8. Vectorised."""
    return checks.as_output(checks.array("x", x, low=0.0) / BITS_PER_BYTE)


def gbyte_per_s_to_gbit_per_s(x):
    """GB/s (1e9 bytes/s) to Gb/s (1e9 bits/s): multiply by 8. Vectorised."""
    largest = sys.float_info.max / BITS_PER_BYTE  # larger values overflow float64 in bits
    return checks.as_output(checks.array("x", x, low=0.0, high=largest) * BITS_PER_BYTE)


def _source(name: str, value) -> str:
    return checks.text(name, value, _SOURCE_CHARS)


def _note(value) -> str:
    if not isinstance(value, str) or len(value) > _SOURCE_CHARS:
        raise checks.fail("note", f"a string of at most {_SOURCE_CHARS} characters", value)
    return value


def _same(name: str, value: float, expected: float, what: str) -> None:
    if not math.isclose(value, expected, rel_tol=1e-9):
        raise checks.fail(name, f"{what} = {expected:g}", value)


@dataclass(frozen=True)
class LinkPreset:
    """One link type, as seen by one GPU."""

    name: str
    kind: str  # "pcie" | "nvlink" | "nic"
    gb_per_s: float  # GB/s (1e9 bytes/s) per direction, per GPU (NVLink: all links together)
    alpha_s: float  # per-message latency in seconds (order of magnitude; see note)
    source: str  # where the bandwidth comes from
    note: str = ""
    links: int = 1  # NVLink links per GPU (1 for PCIe slots and NIC ports)

    def __post_init__(self):
        values = dict(
            name=checks.text("name", self.name),
            kind=checks.choice("kind", self.kind, KINDS),
            gb_per_s=checks.positive("gb_per_s", self.gb_per_s),
            alpha_s=checks.nonnegative("alpha_s", self.alpha_s, MAX_ALPHA_S),
            source=_source("source", self.source),
            note=_note(self.note),
            links=checks.integer("links", self.links, 1, MAX_LINKS),
        )
        for key, value in values.items():
            object.__setattr__(self, key, value)

    @property
    def beta_s_per_byte(self) -> float:
        """Seconds per byte, 1 / (gb_per_s * 1e9), for the alpha-beta cost model."""
        return 1.0 / (self.gb_per_s * 1e9)

    @property
    def gb_per_s_bidirectional(self) -> float:
        """GB/s with both directions added (2 * gb_per_s), as vendors quote NVLink."""
        return 2.0 * self.gb_per_s


_ALPHA_NOTE = "alpha_s = {a:g} s is an order-of-magnitude assumption, not a measurement."
_PCIE_SRC = "PCI-SIG PCI Express Base Specification {v}: {gt} GT/s per lane, 128b/130b encoding"
_NV_SRC = "NVIDIA NVLink page and {gpu} datasheet: {links} links x {per} GB/s = {tot} GB/s bidir."
_NIC_SRC = "IEEE 802.3 / InfiniBand {std} line rate {gbit} Gb/s per direction"


def _alpha(kind: str) -> float:
    return table_fields("link", kind)["alpha_s"]


def _pcie(gen: int, version: str) -> LinkPreset:
    gt_per_s = int(table_fields("pcie", gen)["gt_per_s"])
    a = _alpha("pcie")
    return LinkPreset(
        f"pcie{gen}-x16", "pcie", table_fields("link", f"pcie{gen}-x16")["gb_per_s"], a,
        _PCIE_SRC.format(v=version, gt=gt_per_s),
        f"x16, per direction: {gt_per_s} GT/s x 16 lanes x 128/130 / 8 bits. "
        + _ALPHA_NOTE.format(a=a),
    )  # fmt: skip


def _nvlink(gen: int, gpu: str, secondary: bool) -> LinkPreset:
    row = table_fields("nvlink", gen)
    links, per_link = row["links"], row["link_gb_per_s_bidirectional"]
    total = links * per_link  # bidirectional, GB/s
    note = f"{total:g} GB/s bidirectional per GPU, stored as {total / 2:g} GB/s per direction. "
    if secondary:
        note += (
            "A secondary figure: NVIDIA's specification, read only in third-party copies "
            "(Microway's P100 page, Dell EMC's V100 reference guide; chapter 11), not in "
            "the whitepaper. "
        )
    a = _alpha("nvlink")
    return LinkPreset(
        f"nvlink{gen}-{gpu.lower()}", "nvlink", total / 2, a,
        _NV_SRC.format(gpu=gpu, links=links, per=f"{per_link:g}", tot=f"{total:g}"),
        note + _ALPHA_NOTE.format(a=a), links,
    )  # fmt: skip


def _nic(adapter: str, std: str) -> LinkPreset:
    gbit = table_fields("nic", adapter)["gbit_per_s"]
    a = _alpha("nic")
    return LinkPreset(
        f"nic-{gbit}g", "nic", gbit / BITS_PER_BYTE, a,
        _NIC_SRC.format(std=std, gbit=gbit),
        f"{gbit} Gb/s = {gbit / BITS_PER_BYTE:g} GB/s per direction (InfiniBand or RoCE). "
        + _ALPHA_NOTE.format(a=a) + " Typical RDMA latencies are ~2-5 us.",
    )  # fmt: skip


#: The link presets; their numbers are rows of ``data/interconnect.csv`` (PCIe x16 rates and
#: the assumed latencies in ``table = link``, NVLink links and rates in ``table = nvlink``,
#: NIC line rates in ``table = nic``).
LINKS: dict[str, LinkPreset] = {
    preset.name: preset
    for preset in (
        _pcie(3, "3.0"),
        _pcie(4, "4.0"),
        _pcie(5, "5.0"),
        _nvlink(1, "P100", secondary=True),
        _nvlink(2, "V100", secondary=True),
        _nvlink(3, "A100", secondary=False),
        _nvlink(4, "H100", secondary=False),
        _nvlink(5, "B200", secondary=False),
        _nic("ConnectX-5", "EDR / 100GbE"),
        _nic("ConnectX-6", "HDR / 200GbE"),
        _nic("ConnectX-7", "NDR / 400GbE"),
    )
}


def link(name: str) -> LinkPreset:
    """The preset called ``name`` (a key of ``LINKS``)."""
    return LINKS[checks.choice("name", name, sorted(LINKS))]
