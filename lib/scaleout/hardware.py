"""Link presets: PCIe, NVLink and NIC bandwidths per GPU, each with its source.

Units: GB = 1e9 bytes and Gb = 1e9 bits. ``gb_per_s`` is always *per direction*
(unidirectional); vendor NVLink figures are bidirectional (both directions added), so
the table stores half of them. NIC speeds such as 400 Gb/s are already per direction.
The ``alpha_s`` latencies are order-of-magnitude assumptions for the cost model, not
measurements; each preset's ``note`` says so.

Chapter 11 adds :class:`Bandwidth` (one value, read back only by naming unit *and*
direction) and the tables ``NVLINK_GENERATIONS``, ``NVSWITCH_GENERATIONS``, ``SYSTEMS``,
``PCIE_GENERATIONS`` and ``NIC_SPEEDS``; every row carries its source, and rows not
confirmed in a primary source are marked ``secondary``.

Every record checks its fields when it is built (:mod:`scaleout.checks`): a preset with
0 GB/s or a row whose per-GPU figure is not links x per link raises ``ValueError`` at
once, not a ``ZeroDivisionError`` later.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass

from . import checks

BITS_PER_BYTE = 8
KINDS = ("pcie", "nvlink", "nic")
MAX_LINKS = 64  # NVLink links per GPU (18 on H100 and B200)
MAX_ALPHA_S = 1.0  # a per-message latency above a second is not a link
_YEARS = (1990, 2100)
_SOURCE_CHARS = 1000


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


def _pcie(gen: int, version: str, gt_per_s: int, gb_per_s: float) -> LinkPreset:
    return LinkPreset(
        f"pcie{gen}-x16", "pcie", gb_per_s, 1e-6,
        _PCIE_SRC.format(v=version, gt=gt_per_s),
        f"x16, per direction: {gt_per_s} GT/s x 16 lanes x 128/130 / 8 bits. "
        + _ALPHA_NOTE.format(a=1e-6),
    )  # fmt: skip


def _nvlink(gen: int, gpu: str, links: int, per_link: float, secondary: bool) -> LinkPreset:
    total = links * per_link  # bidirectional, GB/s
    note = f"{total:g} GB/s bidirectional per GPU, stored as {total / 2:g} GB/s per direction. "
    if secondary:
        note += (
            "A secondary figure: NVIDIA's specification, read only in third-party copies "
            "(Microway's P100 page, Dell EMC's V100 reference guide; chapter 11), not in "
            "the whitepaper. "
        )
    return LinkPreset(
        f"nvlink{gen}-{gpu.lower()}", "nvlink", total / 2, 1e-6,
        _NV_SRC.format(gpu=gpu, links=links, per=f"{per_link:g}", tot=f"{total:g}"),
        note + _ALPHA_NOTE.format(a=1e-6), links,
    )  # fmt: skip


def _nic(gbit: int, std: str) -> LinkPreset:
    return LinkPreset(
        f"nic-{gbit}g", "nic", gbit / BITS_PER_BYTE, 3e-6,
        _NIC_SRC.format(std=std, gbit=gbit),
        f"{gbit} Gb/s = {gbit / BITS_PER_BYTE:g} GB/s per direction (InfiniBand or RoCE). "
        + _ALPHA_NOTE.format(a=3e-6) + " Typical RDMA latencies are ~2-5 us.",
    )  # fmt: skip


LINKS: dict[str, LinkPreset] = {
    preset.name: preset
    for preset in (
        _pcie(3, "3.0", 8, 15.75),
        _pcie(4, "4.0", 16, 31.5),
        _pcie(5, "5.0", 32, 63.0),
        _nvlink(1, "P100", 4, 40.0, secondary=True),
        _nvlink(2, "V100", 6, 50.0, secondary=True),
        _nvlink(3, "A100", 12, 50.0, secondary=False),
        _nvlink(4, "H100", 18, 50.0, secondary=False),
        _nvlink(5, "B200", 18, 100.0, secondary=False),
        _nic(100, "EDR / 100GbE"),
        _nic(200, "HDR / 200GbE"),
        _nic(400, "NDR / 400GbE"),
    )
}


def link(name: str) -> LinkPreset:
    """The preset called ``name`` (a key of ``LINKS``)."""
    return LINKS[checks.choice("name", name, sorted(LINKS))]


# --- Units: one stored quantity, so GB and Gb, per direction and both, never mix --------

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


# --- NVLink, NVSwitch, systems, PCIe and NICs: the tables behind chapter 11 --------------
# Vendor NVLink and NVSwitch figures are bidirectional; each row keeps the vendor's own
# numbers (so the tests can check them against each other) and converts through Bandwidth.

_P100 = "NVIDIA, Tesla P100 whitepaper (2016), NVLink section"
_V100 = "NVIDIA, Tesla V100 GPU Architecture whitepaper (2017), NVLink section"
_A100 = "NVIDIA, A100 Tensor Core GPU Architecture whitepaper (2020), NVLink/NVSwitch section"
_H100 = "NVIDIA, H100 Tensor Core GPU Architecture whitepaper (2022), NVLink section"
_B200 = "NVIDIA, Blackwell Architecture Technical Brief (2024); NVIDIA NVLink product page"
_NVS1 = "NVIDIA, NVSwitch Technical Overview whitepaper (2018): 18 ports x 50 GB/s = 900 GB/s"
_NVS3 = (
    "NVIDIA developer blog, 'Upgrading Multi-GPU Interconnectivity with the Third-Generation"
    " NVIDIA NVSwitch' (2022); Ishii & Wells, Hot Chips 34 (2022)"
)
_NVS4 = (
    "NVIDIA NVLink product page: NVLink Switch tray, 144 ports, 14.4 TB/s, 2 chips; "
    "GB200 NVL72 130 TB/s; DGX SuperPOD GB200 reference architecture (18 switch chips)"
)
_GH200 = (
    "NVIDIA developer blog, 'Announcing NVIDIA DGX GH200: The First 100 Terabyte GPU Memory "
    "System' (2023): up to 256 GPUs over the NVLink Switch System, 144 TB of memory over NVLink"
)
_NVSS = (
    "NVIDIA, H100 Tensor Core GPU Architecture whitepaper (2022), NVLink Switch System: up to "
    "256 H100 GPUs, 57.6 TB/s all-to-all bandwidth (announced at GTC 2022)"
)


@dataclass(frozen=True)
class NVLinkGeneration:
    """One NVLink generation as one GPU sees it. Bandwidth fields are the vendor's
    bidirectional GB/s; read them through :attr:`per_link` and :attr:`per_gpu`, both a
    :class:`Bandwidth`."""

    generation: int
    gpu: str
    year: int
    links: int  # NVLink links per GPU
    link_gb_per_s_bidirectional: float  # one link, both directions added
    gpu_gb_per_s_bidirectional: float  # all links of one GPU, as the vendor quotes it
    source: str
    secondary: bool = False  # figure not confirmed in the primary source (facts.md)

    def __post_init__(self):
        checks.integer("generation", self.generation, 1, 20)
        checks.text("gpu", self.gpu, 40)
        checks.integer("year", self.year, *_YEARS)
        links = checks.integer("links", self.links, 1, MAX_LINKS)
        per_link = checks.positive("link_gb_per_s_bidirectional", self.link_gb_per_s_bidirectional)
        per_gpu = checks.positive("gpu_gb_per_s_bidirectional", self.gpu_gb_per_s_bidirectional)
        _same("gpu_gb_per_s_bidirectional", per_gpu, links * per_link, "links x per link")
        _source("source", self.source)
        checks.boolean("secondary", self.secondary)

    @property
    def per_link(self) -> Bandwidth:
        """Bandwidth of one link."""
        return Bandwidth.of(self.link_gb_per_s_bidirectional, "GB/s", "bidirectional")

    @property
    def per_gpu(self) -> Bandwidth:
        """Bandwidth of all the GPU's links together (the vendor's per-GPU figure)."""
        return Bandwidth.of(self.gpu_gb_per_s_bidirectional, "GB/s", "bidirectional")

    @property
    def preset(self) -> str:
        """Name of the matching ``LINKS`` preset."""
        return f"nvlink{self.generation}-{self.gpu.lower()}"


NVLINK_GENERATIONS: tuple[NVLinkGeneration, ...] = (
    NVLinkGeneration(1, "P100", 2016, 4, 40.0, 160.0, _P100, secondary=True),
    NVLinkGeneration(2, "V100", 2017, 6, 50.0, 300.0, _V100, secondary=True),
    NVLinkGeneration(3, "A100", 2020, 12, 50.0, 600.0, _A100),
    NVLinkGeneration(4, "H100", 2022, 18, 50.0, 900.0, _H100),
    NVLinkGeneration(5, "B200", 2024, 18, 100.0, 1800.0, _B200),
)


@dataclass(frozen=True)
class NVSwitchGeneration:
    """One NVSwitch generation: the chip, the system it first shipped in, its domains."""

    generation: int
    year: int
    nvlink_generation: int
    ports: int  # NVLink ports per switch chip
    port_gb_per_s_bidirectional: float
    chip_gb_per_s_bidirectional: float  # the vendor's aggregate figure for one chip
    system: str  # first system built on it
    chips_per_system: int
    gpus_per_system: int  # GPUs in that system's NVLink domain
    max_gpus_per_domain: int  # largest NVLink domain built with this generation
    max_domain_system: str
    in_switch_reduction: bool  # SHARP all-reduce inside the switch
    source: str
    secondary: bool = False
    note: str = ""

    def __post_init__(self):
        checks.integer("generation", self.generation, 1, 20)
        checks.integer("year", self.year, *_YEARS)
        checks.integer("nvlink_generation", self.nvlink_generation, 1, 20)
        ports = checks.integer("ports", self.ports, 1, 4096)
        port = checks.positive("port_gb_per_s_bidirectional", self.port_gb_per_s_bidirectional)
        chip = checks.positive("chip_gb_per_s_bidirectional", self.chip_gb_per_s_bidirectional)
        _same("chip_gb_per_s_bidirectional", chip, ports * port, "ports x per port")
        checks.text("system", self.system, 80)
        checks.integer("chips_per_system", self.chips_per_system, 1, 4096)
        gpus = checks.integer("gpus_per_system", self.gpus_per_system, 1, 100_000)
        checks.integer("max_gpus_per_domain", self.max_gpus_per_domain, gpus, 100_000)
        checks.text("max_domain_system", self.max_domain_system, 80)
        checks.boolean("in_switch_reduction", self.in_switch_reduction)
        _source("source", self.source)
        checks.boolean("secondary", self.secondary)
        _note(self.note)

    @property
    def per_port(self) -> Bandwidth:
        """Bandwidth of one switch port (one NVLink link)."""
        return Bandwidth.of(self.port_gb_per_s_bidirectional, "GB/s", "bidirectional")

    @property
    def per_chip(self) -> Bandwidth:
        """Bandwidth of one switch chip, all ports (the vendor's aggregate figure)."""
        return Bandwidth.of(self.chip_gb_per_s_bidirectional, "GB/s", "bidirectional")


NVSWITCH_GENERATIONS: tuple[NVSwitchGeneration, ...] = (
    NVSwitchGeneration(1, 2018, 2, 18, 50.0, 900.0, "DGX-2", 12, 16, 16, "DGX-2", False, _NVS1),
    NVSwitchGeneration(
        2, 2020, 3, 36, 50.0, 1800.0, "DGX A100", 6, 8, 8, "DGX A100", False, _A100,
        secondary=True,
        note="36 ports per chip is from secondary reports; the A100 whitepaper gives six "
        "switches, 600 GB/s per GPU and 4.8 TB/s in total.",
    ),
    NVSwitchGeneration(
        3, 2022, 4, 64, 50.0, 3200.0, "DGX H100", 4, 8, 256, "DGX GH200", True,
        f"{_NVS3}; {_GH200}",
        note="NVIDIA announced an NVLink Switch System of 256 H100 GPUs (32 DGX H100) in 2022; "
        "DGX GH200 (2023) joins 256 Grace Hopper GPUs with a second tier of NVSwitches.",
    ),
    NVSwitchGeneration(
        4, 2024, 5, 72, 100.0, 7200.0, "GB200 NVL72", 18, 72, 576, "NVLink 5 Switch System",
        True, _NVS4,
        note="NVIDIA quotes the NVLink Switch tray: 144 ports and 14.4 TB/s over 2 chips, "
        "i.e. 72 ports and 7.2 TB/s per chip; NVLink 5 domains reach 576 GPUs.",
    ),
)  # fmt: skip


@dataclass(frozen=True)
class System:
    """A GPU system: its NVLink domain and, for servers, its NICs (None where the row is
    an NVLink domain spanning servers). ``all_to_all_tb_per_s`` is the all-to-all
    bandwidth a vendor quotes for an NVLink domain spanning servers (the direction is not
    stated); ``memory_tb`` the memory its GPUs reach over NVLink, where quoted."""

    name: str
    year: int
    gpu: str
    nvlink_generation: int
    nvswitch_generation: int  # 0: no NVSwitch (point-to-point NVLink mesh)
    gpus_per_nvlink_domain: int
    gpus_per_server: int | None
    nics_per_server: int | None
    nic_gbit_per_s: float | None  # per NIC port, per direction
    source: str
    all_to_all_tb_per_s: float | None = None  # as quoted, for multi-server NVLink domains
    memory_tb: float | None = None  # memory reachable over NVLink, as quoted
    note: str = ""

    def __post_init__(self):
        checks.text("name", self.name, 80)
        checks.integer("year", self.year, *_YEARS)
        checks.text("gpu", self.gpu, 40)
        generations = tuple(row.generation for row in NVLINK_GENERATIONS)
        checks.choice("nvlink_generation", self.nvlink_generation, generations)
        checks.integer("nvswitch_generation", self.nvswitch_generation, 0, 20)
        domain = checks.integer("gpus_per_nvlink_domain", self.gpus_per_nvlink_domain, 1, 100_000)
        if self.gpus_per_server is not None:
            checks.integer("gpus_per_server", self.gpus_per_server, 1, domain)
        if (self.nics_per_server is None) != (self.nic_gbit_per_s is None):
            raise checks.fail(
                "nics_per_server and nic_gbit_per_s",
                "both None or both given",
                self.nics_per_server,
            )
        if self.nics_per_server is not None:
            if self.gpus_per_server is None:
                raise checks.fail("gpus_per_server", "given when nics_per_server is", None)
            checks.integer("nics_per_server", self.nics_per_server, 1, 1024)
            checks.positive("nic_gbit_per_s", self.nic_gbit_per_s, 1e6)
        _source("source", self.source)
        if self.all_to_all_tb_per_s is not None:
            checks.positive("all_to_all_tb_per_s", self.all_to_all_tb_per_s, 1e6)
        if self.memory_tb is not None:
            checks.positive("memory_tb", self.memory_tb, 1e6)
        _note(self.note)

    @property
    def nvlink_per_gpu(self) -> Bandwidth:
        """NVLink bandwidth of one of the system's GPUs."""
        return nvlink_generation(self.nvlink_generation).per_gpu

    @property
    def nic_per_gpu(self) -> Bandwidth | None:
        """Network bandwidth one GPU gets (the server's NICs shared by its GPUs)."""
        if self.nics_per_server is None:
            return None
        total = Bandwidth.of(self.nic_gbit_per_s, "Gb/s", "per direction") * self.nics_per_server
        return total / self.gpus_per_server

    @property
    def nvlink_to_network_ratio(self) -> float | None:
        """NVLink per GPU over network per GPU, like with like (the seed texts' "9x")."""
        nic = self.nic_per_gpu
        return None if nic is None else self.nvlink_per_gpu / nic


SYSTEMS: tuple[System, ...] = (
    System("DGX-1 (V100)", 2017, "V100", 2, 0, 8, 8, 4, 100,
           "NVIDIA, DGX-1 with Tesla V100 System Architecture whitepaper (2017): 4x EDR IB"),
    System("DGX-2", 2018, "V100", 2, 1, 16, 16, 8, 100, f"NVIDIA DGX-2 datasheet; {_NVS1}"),
    System("DGX A100", 2020, "A100", 3, 2, 8, 8, 8, 200,
           "NVIDIA DGX A100 user guide: 8x ConnectX-6 200 Gb/s HDR (compute)"),
    System("DGX H100", 2022, "H100", 4, 3, 8, 8, 8, 400,
           "NVIDIA DGX H100 user guide: 8x ConnectX-7 400 Gb/s (4 OSFP ports)"),
    System("H100 NVLink Switch System", 2022, "H100", 4, 3, 256, 8, None, None, _NVSS,
           all_to_all_tb_per_s=57.6,
           note="32 DGX H100 servers joined by external NVLink switches; announced, not "
           "the DGX GH200"),
    System("DGX GH200", 2023, "GH200", 4, 3, 256, None, None, None, _GH200, memory_tb=144.0,
           note="each GPU reaches every other at its full NVLink bandwidth through a "
           "two-level NVLink Switch System"),
    System("DGX B200", 2024, "B200", 5, 4, 8, 8, 8, 400,
           "NVIDIA DGX B200 datasheet: 8x ConnectX-7 400 Gb/s"),
    System("GB200 NVL72", 2024, "B200", 5, 4, 72, None, None, None, _NVS4),
)  # fmt: skip


@dataclass(frozen=True)
class PCIeGeneration:
    """A PCIe generation: line rate per lane and encoding (PCI-SIG base specifications)."""

    generation: int
    year: int  # year the PCI-SIG base specification was released
    gt_per_s: float  # transfers per second per lane (one bit each), per direction
    encoding: tuple[int, int]  # payload bits, line bits (8b/10b -> (8, 10))
    source: str
    note: str = ""

    def __post_init__(self):
        checks.integer("generation", self.generation, 1, 20)
        checks.integer("year", self.year, *_YEARS)
        checks.positive("gt_per_s", self.gt_per_s, 1e4)
        what = "a (payload bits, line bits) pair of integers with payload <= line"
        enc = self.encoding
        if not isinstance(enc, tuple) or len(enc) != 2:
            raise checks.fail("encoding", what, enc)
        payload = checks.integer("encoding", enc[0], 1, 4096)
        checks.integer("encoding", enc[1], payload, 4096)
        _source("source", self.source)
        _note(self.note)

    def x(self, lanes: int = 16) -> Bandwidth:
        """Bandwidth of a ``lanes``-wide link: GT/s x lanes x encoding / 8, per direction."""
        lanes = checks.choice("lanes", lanes, (1, 2, 4, 8, 16))
        payload, line = self.encoding
        return Bandwidth.of(self.gt_per_s * lanes * payload / line, "Gb/s", "per direction")


_PCIE = "PCI-SIG, PCI Express Base Specification Revision {}"
PCIE_GENERATIONS: tuple[PCIeGeneration, ...] = (
    PCIeGeneration(1, 2003, 2.5, (8, 10), _PCIE.format("1.0a")),
    PCIeGeneration(2, 2007, 5.0, (8, 10), _PCIE.format("2.0")),
    PCIeGeneration(3, 2010, 8.0, (128, 130), _PCIE.format("3.0")),
    PCIeGeneration(4, 2017, 16.0, (128, 130), _PCIE.format("4.0")),
    PCIeGeneration(5, 2019, 32.0, (128, 130), _PCIE.format("5.0")),
    PCIeGeneration(6, 2022, 64.0, (1, 1), _PCIE.format("6.0"),
                   "PAM4 signalling in FLIT mode; FEC and CRC overhead not counted"),
)  # fmt: skip


@dataclass(frozen=True)
class NICSpeed:
    """A NIC port speed (per direction): lanes x lane rate, its InfiniBand and Ethernet
    names, and the NVIDIA ConnectX generation that introduced it."""

    adapter: str
    gbit_per_s: float  # per port, per direction
    lanes: int
    lane_gbit_per_s: float
    infiniband: str
    ethernet: str
    source: str

    def __post_init__(self):
        checks.text("adapter", self.adapter, 80)
        gbit = checks.positive("gbit_per_s", self.gbit_per_s, 1e6)
        lanes = checks.integer("lanes", self.lanes, 1, 64)
        lane = checks.positive("lane_gbit_per_s", self.lane_gbit_per_s, 1e6)
        _same("gbit_per_s", gbit, lanes * lane, "lanes x lane_gbit_per_s")
        checks.text("infiniband", self.infiniband, 40)
        checks.text("ethernet", self.ethernet, 40)
        _source("source", self.source)

    @property
    def bandwidth(self) -> Bandwidth:
        """The port's line rate."""
        return Bandwidth.of(self.gbit_per_s, "Gb/s", "per direction")


_NIC = "NVIDIA {} adapter datasheet; InfiniBand Trade Association roadmap ({} = {} x {} Gb/s)"
NIC_SPEEDS: tuple[NICSpeed, ...] = tuple(
    NICSpeed(adapter, gbit, 4, gbit / 4, ib, eth, _NIC.format(adapter, ib, 4, gbit // 4))
    for adapter, gbit, ib, eth in (
        ("ConnectX-5", 100, "EDR", "100GbE"),
        ("ConnectX-6", 200, "HDR", "200GbE"),
        ("ConnectX-7", 400, "NDR", "400GbE"),
        ("ConnectX-8", 800, "XDR", "800GbE"),
    )
)


def nvlink_generation(generation: int) -> NVLinkGeneration:
    """The row of ``NVLINK_GENERATIONS`` for NVLink ``generation`` (1..5)."""
    rows = {row.generation: row for row in NVLINK_GENERATIONS}
    return rows[checks.choice("generation", generation, tuple(rows))]


def system(name: str) -> System:
    """The row of ``SYSTEMS`` called ``name``."""
    rows = {row.name: row for row in SYSTEMS}
    return rows[checks.choice("name", name, tuple(rows))]


# --- GPUs: one row per GPU, the book's one place for GPU facts (chapter 14) ---------------
# Dense peaks, memory, SMs, L2 and NVLink per GPU. NVIDIA's datasheets quote the Tensor Core
# figures of Hopper and Blackwell "with sparsity" (2:4 structured sparsity doubles them);
# dense matrices run at half of those, and the table stores the dense figure only. Each row
# names its primary documents; ``secondary`` lists the fields that no primary document
# states (or that this book could only confirm in secondary copies), and ``note`` says
# where they come from. The NVLink figure is never stored twice: a GPU names its NVLink
# generation and link count, and the bandwidth comes from ``NVLINK_GENERATIONS``.
# The figures of the named documents were checked against copies quoted elsewhere (the ML
# Engineering Open Book's TFLOPS and cache tables; G. Lockwood's processor notes), not
# against the PDFs themselves, which could not be opened where this table was written.

GPU_DTYPES = ("fp32", "tf32", "bf16", "fp16", "fp8")
GPU_FIELDS = (
    "fp32_tflops", "tf32_tflops", "bf16_tflops", "fp16_tflops", "fp8_tflops", "memory_gb",
    "hbm_tb_per_s", "sms", "l2_mb", "nvlink_links", "tdp_w",
)  # fmt: skip
MAX_TFLOPS = 1e6  # dense TFLOP/s of one GPU; a million is a thousand times any GPU's
MAX_SMS = 4096


def _optional_tflops(name: str, value):
    return None if value is None else checks.positive(name, value, MAX_TFLOPS)


@dataclass(frozen=True)
class GPU:
    """One GPU: dense peak FLOP/s per data type, HBM, SMs, L2 and NVLink, with sources.

    Peaks are *dense* Tensor Core (or, for fp32, CUDA core) teraFLOP/s; ``None`` where the
    GPU has no such data type. ``memory_gb`` is the capacity as the vendor quotes it;
    ``hbm_tb_per_s`` the peak HBM bandwidth in TB/s (1e12 bytes/s). ``nvlink_generation``
    (a row of ``NVLINK_GENERATIONS``, or None) and ``nvlink_links`` give the NVLink
    bandwidth (:attr:`nvlink`). ``secondary`` names the fields not confirmed in a primary
    document (see ``note``).
    """

    name: str
    architecture: str
    year: int
    form_factor: str
    fp32_tflops: float
    tf32_tflops: float | None
    bf16_tflops: float | None
    fp16_tflops: float | None
    fp8_tflops: float | None
    memory_gb: float
    hbm_tb_per_s: float
    sms: int
    l2_mb: float | None  # None: not disclosed
    nvlink_generation: int | None
    nvlink_links: int
    tdp_w: float
    source: str
    secondary: tuple[str, ...] = ()
    note: str = ""

    def __post_init__(self):
        checks.text("name", self.name, 40)
        checks.text("architecture", self.architecture, 40)
        checks.integer("year", self.year, *_YEARS)
        checks.choice("form_factor", self.form_factor, ("SXM", "PCIe", "superchip"))
        checks.positive("fp32_tflops", self.fp32_tflops, MAX_TFLOPS)
        for key in ("tf32_tflops", "bf16_tflops", "fp16_tflops", "fp8_tflops"):
            _optional_tflops(key, getattr(self, key))
        checks.positive("memory_gb", self.memory_gb, 1e6)
        checks.positive("hbm_tb_per_s", self.hbm_tb_per_s, 1e4)
        checks.integer("sms", self.sms, 1, MAX_SMS)
        if self.l2_mb is not None:
            checks.positive("l2_mb", self.l2_mb, 1e5)
        if self.nvlink_generation is None:
            checks.integer("nvlink_links", self.nvlink_links, 0, 0)
        else:
            row = nvlink_generation(self.nvlink_generation)
            checks.integer("nvlink_links", self.nvlink_links, 1, row.links)
        checks.positive("tdp_w", self.tdp_w, 1e5)
        _source("source", self.source)
        if not isinstance(self.secondary, tuple):
            what = f"a tuple of field names from {GPU_FIELDS}"
            raise checks.fail("secondary", what, self.secondary)
        for field in self.secondary:
            checks.choice("secondary", field, GPU_FIELDS)
        _note(self.note)

    @property
    def dtypes(self) -> tuple[str, ...]:
        """The data types this GPU has a dense peak for, in ``GPU_DTYPES`` order."""
        return tuple(d for d in GPU_DTYPES if getattr(self, f"{d}_tflops") is not None)

    def peak_flops(self, dtype: str = "bf16") -> float:
        """Dense peak FLOP/s for ``dtype`` (one of :attr:`dtypes`)."""
        dtype = checks.choice("dtype", dtype, self.dtypes)
        return getattr(self, f"{dtype}_tflops") * 1e12

    @property
    def hbm_bytes_per_s(self) -> float:
        """Peak HBM bandwidth in bytes/s."""
        return self.hbm_tb_per_s * 1e12

    @property
    def memory_bytes(self) -> float:
        """HBM capacity in bytes (``memory_gb`` x 1e9)."""
        return self.memory_gb * 1e9

    def ridge_intensity(self, dtype: str = "bf16") -> float:
        """FLOPs per HBM byte where the roofline's two limits meet: peak / bandwidth."""
        return self.peak_flops(dtype) / self.hbm_bytes_per_s

    @property
    def nvlink(self) -> Bandwidth | None:
        """The GPU's NVLink bandwidth, its links times the per-link figure of its
        generation in ``NVLINK_GENERATIONS`` (None without NVLink)."""
        if self.nvlink_generation is None:
            return None
        return nvlink_generation(self.nvlink_generation).per_link * self.nvlink_links


_SPARSE = "datasheet Tensor Core figures are with sparsity; the table stores half (dense)"
_V100_DOC = (
    "NVIDIA Tesla V100 datasheet (2018), V100 SXM2 column: FP32 15.7, Tensor 125 TFLOPS, "
    "32 GB HBM2, 900 GB/s, NVLink 300 GB/s, 300 W; NVIDIA Tesla V100 GPU Architecture "
    "whitepaper (2017), Table 1: 80 SMs, 6144 KB L2"
)
_A100_DOC = (
    "NVIDIA A100 Tensor Core GPU datasheet (2021), A100 {gb}GB SXM column: FP32 19.5, TF32 "
    "156, BF16/FP16 312 TFLOPS dense (312/624 with sparsity), {mem}, {bw} GB/s, NVLink "
    "600 GB/s, 400 W; NVIDIA A100 Tensor Core GPU Architecture whitepaper (2020), Table 1: "
    "108 SMs, 40 MB L2"
)
_H100_DOC = (
    "NVIDIA H100 Tensor Core GPU datasheet (2023), H100 {ff} column: FP32 {fp32}, TF32 "
    "{tf32}*, BF16/FP16 {bf16}*, FP8 {fp8}* TFLOPS (* with sparsity), 80 GB, {bw} TB/s, "
    "NVLink {nv} GB/s; NVIDIA H100 Tensor Core GPU Architecture whitepaper (2022), Table 3: "
    "{sms} SMs, 50 MB L2"
)
_H200_DOC = (
    "NVIDIA H200 Tensor Core GPU datasheet (2024), H200 SXM column: FP32 67, TF32 989*, "
    "BF16/FP16 1,979*, FP8 3,958* TFLOPS (* with sparsity), 141 GB HBM3e, 4.8 TB/s, NVLink "
    "900 GB/s, up to 700 W"
)
_B200_DOC = (
    "NVIDIA HGX B200 datasheet (2024), per 8 GPUs: FP32 600 TFLOPS, TF32 18, BF16/FP16 36, "
    "FP8 72 PFLOPS (Tensor Core, with sparsity); NVIDIA DGX B200 datasheet (2024): 8 GPUs, "
    "1,440 GB HBM3e, 64 TB/s, NVLink 5 at 1.8 TB/s per GPU; Blackwell Architecture Technical "
    "Brief (2024): up to 1,000 W"
)
_GB200_DOC = (
    "NVIDIA GB200 NVL72 specifications (2024), per 72 GPUs: TF32 180, BF16/FP16 360, FP8 "
    "720 PFLOPS (Tensor Core, with sparsity), up to 13.4 TB HBM3e, 576 TB/s, NVLink 5 at "
    "1.8 TB/s per GPU"
)
_MLE = (
    "ML Engineering Open Book (Bekman), compute/accelerator/README.md and "
    "training/performance/README.md at commit 744d01e"
)

#: Every GPU row, by name (read one with :func:`gpu`).
GPUS: dict[str, GPU] = {
    g.name: g
    for g in (
        GPU("V100-32GB", "Volta", 2018, "SXM", 15.7, None, None, 125.0, None, 32.0, 0.9, 80,
            6.0, 2, 6, 300.0, _V100_DOC, ("nvlink_links",),
            "fp16 is the Tensor Core peak; no bf16, tf32 or fp8. The NVLink 2 row is "
            "marked secondary in NVLINK_GENERATIONS."),
        GPU("A100-40GB", "Ampere", 2020, "SXM", 19.5, 156.0, 312.0, 312.0, None, 40.0, 1.555,
            108, 40.0, 3, 12, 400.0, _A100_DOC.format(gb=40, mem="40 GB HBM2", bw="1,555")),
        GPU("A100-80GB", "Ampere", 2020, "SXM", 19.5, 156.0, 312.0, 312.0, None, 80.0, 2.039,
            108, 40.0, 3, 12, 400.0, _A100_DOC.format(gb=80, mem="80 GB HBM2e", bw="2,039")),
        GPU("H100-SXM", "Hopper", 2022, "SXM", 67.0, 494.5, 989.5, 989.5, 1979.0, 80.0, 3.35,
            132, 50.0, 4, 18, 700.0,
            _H100_DOC.format(ff="SXM", fp32=67, tf32=989, bf16="1,979", fp8="3,958", bw=3.35,
                             nv=900, sms=132), note=_SPARSE),
        GPU("H100-PCIe", "Hopper", 2022, "PCIe", 51.0, 378.0, 756.5, 756.5, 1513.0, 80.0, 2.0,
            114, 50.0, 4, 12, 350.0,
            _H100_DOC.format(ff="PCIe", fp32=51, tf32=756, bf16="1,513", fp8="3,026", bw=2.0,
                             nv=600, sms=114), ("nvlink_links",),
            _SPARSE + ". NVLink 600 GB/s through the NVLink bridge: 12 NVLink 4 links "
            "(600 / 50 GB/s per link) is derived, not quoted."),
        GPU("H200", "Hopper", 2024, "SXM", 67.0, 494.5, 989.5, 989.5, 1979.0, 141.0, 4.8,
            132, 50.0, 4, 18, 700.0, _H200_DOC, ("sms", "l2_mb"),
            _SPARSE + ". The datasheet gives no SM count or L2; 132 SMs and 50 MiB L2 are the "
            f"H100 SXM's, as the cache table of the {_MLE} lists for H200 SXM."),
        GPU("B200", "Blackwell", 2024, "SXM", 75.0, 1125.0, 2250.0, 2250.0, 4500.0, 180.0, 8.0,
            148, None, 5, 18, 1000.0, _B200_DOC, ("sms",),
            _SPARSE + "; per-GPU values are the 8-GPU totals / 8. No datasheet gives the SM "
            f"count: 148 is a measured multi_processor_count quoted in the {_MLE}. L2 is not "
            "disclosed (Blackwell tuning guide)."),
        GPU("GB200", "Blackwell", 2024, "superchip", 80.0, 1250.0, 2500.0, 2500.0, 5000.0,
            186.0, 8.0, 148, None, 5, 18, 1200.0, _GB200_DOC, ("fp32_tflops", "sms", "tdp_w"),
            _SPARSE + "; per-GPU values are the 72-GPU totals / 72 (two GPUs per superchip). "
            f"FP32 80 TFLOPS is from the TFLOPS table of the {_MLE}; the SM count is assumed "
            "equal to the B200's (same silicon, not published); 1,200 W is from secondary "
            "reports of the GB200 configuration."),
    )
}  # fmt: skip


def gpu(name) -> GPU:
    """The row of ``GPUS`` called ``name`` ("A100-40GB", "A100-80GB", "H100-SXM",
    "H100-PCIe", "H200", "B200", "GB200", "V100-32GB"), or ``name`` itself if it is
    already a :class:`GPU` row."""
    if isinstance(name, GPU):
        return name
    return GPUS[checks.choice("name", name, tuple(GPUS))]
