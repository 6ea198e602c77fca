"""NVLink, NVSwitch, systems, PCIe and NICs: the tables behind chapter 11, each row with its
source; rows not confirmed in a primary source are marked ``secondary``.
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import checks
from .links import _YEARS, MAX_LINKS, _note, _same, _source
from .units import Bandwidth

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
