"""NVLink, NVSwitch, systems, PCIe and NICs: the tables behind chapter 11, each row with its
source; rows not confirmed in a primary source are marked ``secondary``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .. import checks
from .links import _YEARS, MAX_LINKS, _note, _same, _source, table_fields
from .units import Bandwidth

_PCIE = "PCI-SIG, PCI Express Base Specification Revision {}"
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


#: NVLink generation -> (GPU, the row's text source, secondary); the numbers are the rows
#: ``table = nvlink`` of ``data/interconnect.csv``.
_NVLINK_ROWS = {1: ("P100", _P100, True), 2: ("V100", _V100, True), 3: ("A100", _A100, False),
                4: ("H100", _H100, False), 5: ("B200", _B200, False)}  # fmt: skip
NVLINK_GENERATIONS: tuple[NVLinkGeneration, ...] = tuple(
    NVLinkGeneration(g, gpu, source=src, secondary=sec, **table_fields("nvlink", g))
    for g, (gpu, src, sec) in _NVLINK_ROWS.items()
)


@dataclass(frozen=True)
class NVSwitchGeneration:
    """One NVSwitch generation: the chip, the system it first shipped in, its domains;
    ``chips_per_tray`` the switch chips of one NVLink Switch tray, where NVIDIA states it
    (kept out of the record's repr and equality)."""

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
    chips_per_tray: int | None = field(default=None, repr=False, compare=False)

    def __post_init__(self):
        checks.integer("generation", self.generation, 1, 20)
        checks.integer("year", self.year, *_YEARS)
        checks.integer("nvlink_generation", self.nvlink_generation, 1, 20)
        if self.chips_per_tray is not None:
            checks.integer("chips_per_tray", self.chips_per_tray, 1, 64)
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


#: NVSwitch generation -> its text fields; the numbers are the rows ``table = nvswitch`` of
#: ``data/interconnect.csv``.
_NVSWITCH_ROWS = {
    1: dict(system="DGX-2", max_domain_system="DGX-2", in_switch_reduction=False, source=_NVS1),
    2: dict(system="DGX A100", max_domain_system="DGX A100", in_switch_reduction=False,
            source=_A100, secondary=True,
            note="36 ports per chip is from secondary reports; the A100 whitepaper gives six "
            "switches, 600 GB/s per GPU and 4.8 TB/s in total."),
    3: dict(system="DGX H100", max_domain_system="DGX GH200", in_switch_reduction=True,
            source=f"{_NVS3}; {_GH200}",
            note="NVIDIA announced an NVLink Switch System of 256 H100 GPUs (32 DGX H100) in "
            "2022; DGX GH200 (2023) joins 256 Grace Hopper GPUs with a second tier of "
            "NVSwitches."),
    4: dict(system="GB200 NVL72", max_domain_system="NVLink 5 Switch System",
            in_switch_reduction=True, source=_NVS4,
            note="NVIDIA quotes the NVLink Switch tray: 144 ports and 14.4 TB/s over 2 chips, "
            "i.e. 72 ports and 7.2 TB/s per chip; NVLink 5 domains reach 576 GPUs."),
}  # fmt: skip
NVSWITCH_GENERATIONS: tuple[NVSwitchGeneration, ...] = tuple(
    NVSwitchGeneration(generation=g, **text, **table_fields("nvswitch", g))
    for g, text in _NVSWITCH_ROWS.items()
)


@dataclass(frozen=True)
class System:
    """A GPU system: its NVLink domain and, for servers, its NICs (None where the row is
    an NVLink domain spanning servers). ``all_to_all_tb_per_s`` is the all-to-all
    bandwidth a vendor quotes for an NVLink domain spanning servers (the direction is not
    stated); ``memory_tb`` the memory its GPUs reach over NVLink, where quoted;
    ``quoted_nvlink_tb_per_s`` the domain's aggregate NVLink bandwidth as the vendor rounds
    it (GB200 NVL72's 130 TB/s for 72 x 1.8 TB/s; kept out of the record's repr and
    equality)."""

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
    quoted_nvlink_tb_per_s: float | None = field(default=None, repr=False, compare=False)

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
        if self.quoted_nvlink_tb_per_s is not None:
            checks.positive("quoted_nvlink_tb_per_s", self.quoted_nvlink_tb_per_s, 1e6)

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


#: System -> its text fields; the numbers (None where a field has no row) are the rows
#: ``table = system`` of ``data/interconnect.csv``.
_SYSTEM_ROWS = {
    "DGX-1 (V100)": dict(gpu="V100", source="NVIDIA, DGX-1 with Tesla V100 System Architecture "
                         "whitepaper (2017): 4x EDR IB"),
    "DGX-2": dict(gpu="V100", source=f"NVIDIA DGX-2 datasheet; {_NVS1}"),
    "DGX A100": dict(gpu="A100", source="NVIDIA DGX A100 user guide: 8x ConnectX-6 200 Gb/s "
                     "HDR (compute)"),
    "DGX H100": dict(gpu="H100", source="NVIDIA DGX H100 user guide: 8x ConnectX-7 400 Gb/s "
                     "(4 OSFP ports)"),
    "H100 NVLink Switch System": dict(
        gpu="H100", source=_NVSS,
        note="32 DGX H100 servers joined by external NVLink switches; announced, not the DGX "
        "GH200"),
    "DGX GH200": dict(gpu="GH200", source=_GH200,
                      note="each GPU reaches every other at its full NVLink bandwidth through a "
                      "two-level NVLink Switch System"),
    "DGX B200": dict(gpu="B200", source="NVIDIA DGX B200 datasheet: 8x ConnectX-7 400 Gb/s"),
    "GB200 NVL72": dict(gpu="B200", source=_NVS4),
}  # fmt: skip
_SYSTEM_OPTIONAL = ("gpus_per_server", "nics_per_server", "nic_gbit_per_s")
SYSTEMS: tuple[System, ...] = tuple(
    System(name, **text, **{**dict.fromkeys(_SYSTEM_OPTIONAL), **table_fields("system", name)})
    for name, text in _SYSTEM_ROWS.items()
)


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


_PCIE_VERSIONS = {1: "1.0a", 2: "2.0", 3: "3.0", 4: "4.0", 5: "5.0", 6: "6.0"}
_PCIE_NOTES = {6: "PAM4 signalling in FLIT mode; FEC and CRC overhead not counted"}


def _pcie(generation: int) -> PCIeGeneration:
    f = table_fields("pcie", generation)
    return PCIeGeneration(
        generation, f["year"], f["gt_per_s"],
        (f["encoding_payload_bits"], f["encoding_line_bits"]),
        _PCIE.format(_PCIE_VERSIONS[generation]), _PCIE_NOTES.get(generation, ""),
    )  # fmt: skip


#: The rows ``table = pcie`` of ``data/interconnect.csv``.
PCIE_GENERATIONS: tuple[PCIeGeneration, ...] = tuple(_pcie(g) for g in _PCIE_VERSIONS)


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
#: The rows ``table = nic`` of ``data/interconnect.csv`` (the adapter, its InfiniBand and
#: Ethernet names here).
_NIC_ROWS = (("ConnectX-5", "EDR", "100GbE"), ("ConnectX-6", "HDR", "200GbE"),
             ("ConnectX-7", "NDR", "400GbE"), ("ConnectX-8", "XDR", "800GbE"))  # fmt: skip


def _nic_speed(adapter: str, ib: str, eth: str) -> NICSpeed:
    f = table_fields("nic", adapter)
    gbit, lanes = f["gbit_per_s"], f["lanes"]
    return NICSpeed(adapter, gbit, lanes, gbit / lanes, ib, eth,
                    _NIC.format(adapter, ib, lanes, int(gbit // lanes)))  # fmt: skip


NIC_SPEEDS: tuple[NICSpeed, ...] = tuple(_nic_speed(*row) for row in _NIC_ROWS)


def nvlink_generation(generation: int) -> NVLinkGeneration:
    """The row of ``NVLINK_GENERATIONS`` for NVLink ``generation`` (1..5)."""
    rows = {row.generation: row for row in NVLINK_GENERATIONS}
    return rows[checks.choice("generation", generation, tuple(rows))]


def system(name: str) -> System:
    """The row of ``SYSTEMS`` called ``name``."""
    rows = {row.name: row for row in SYSTEMS}
    return rows[checks.choice("name", name, tuple(rows))]
