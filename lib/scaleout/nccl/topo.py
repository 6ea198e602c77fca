"""The machine NCCL sees: a topology a reader can fill in, and five presets.

A :class:`Topology` is a regular cluster: ``nodes`` servers (NVLink domains), each with
``gpus_per_node`` GPUs of one generation, every GPU linked to NVSwitches by
``nvlink_links`` NVLink links (0: GPUs talk over PCIe only), and ``nics_per_node`` NICs of
``nic_gbps`` Gb/s each (per direction), spread evenly over the GPUs' PCIe switches (one NIC
per GPU, or one per group of GPUs, or several per GPU). ``nvls`` says the NVSwitches can
reduce (NVLink SHARP, third-generation NVSwitch and later); ``collnet`` says the
InfiniBand switches can (SHARP, NCCL's CollNet). ``cpu`` matters to NCCL's model in two
places (the LL bandwidth cap across nodes and the network post overhead).
``switch_gpus`` is the number of GPUs on each NIC's PCIe switch (1 when every NIC sits
next to one GPU; 2 in a DGX A100, whose four PCIe switches each hold two GPUs and two
NICs): NCCL's balanced tree needs two.

The bandwidths NCCL's search works with are computed as NCCL computes them
(:mod:`scaleout.nccl.constants`): NVLink ``links x`` the per-link figure of the GPU's
generation (``topo.h``), PCIe ``16 lanes x speed / 80`` (``topo.cc``), a NIC ``Mb/s /
8000`` (``topo.cc``). System figures (GPUs, links, NICs per server) come from
:mod:`scaleout.hardware` where it has them; each preset's ``source`` says where the rest
comes from.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from .. import checks, hardware
from . import constants as C

MAX_RANKS = 65536  # the book's largest communicator
MAX_GPUS_PER_NODE = 72  # NCCL_MAX_LOCAL_RANKS (src/include/device.h:88)
GPUS = {  # compute capability (NVIDIA CUDA GPUs list) and PCIe generation (datasheets)
    "V100": (70, 3),
    "A100": (80, 4),
    "H100": (90, 5),
    "H200": (90, 5),
    "H800": (90, 5),
    "B200": (100, 5),
    "GB200": (100, 5),
}
CPUS = ("intel", "amd", "arm")
PCIE_GENS = (3, 4, 5, 6)


@dataclass(frozen=True)
class Topology:
    """A regular GPU cluster as NCCL's topology search sees it (see the module docstring)."""

    name: str
    gpus_per_node: int
    nodes: int
    gpu: str
    nvlink_links: int
    pcie_gen: int
    nics_per_node: int
    nic_gbps: float
    nvls: bool = False
    collnet: bool = False
    cpu: str = "intel"
    switch_gpus: int = 1
    source: str = ""

    def __post_init__(self):
        checks.text("name", self.name, 60)
        checks.integer("gpus_per_node", self.gpus_per_node, 1, MAX_GPUS_PER_NODE)
        checks.integer("nodes", self.nodes, 1, MAX_RANKS)
        if self.gpus_per_node * self.nodes > MAX_RANKS:
            raise checks.fail("gpus_per_node * nodes", f"at most {MAX_RANKS} ranks",
                              self.gpus_per_node * self.nodes)  # fmt: skip
        checks.choice("gpu", self.gpu, tuple(GPUS))
        checks.integer("nvlink_links", self.nvlink_links, 0, 18)
        checks.choice("pcie_gen", self.pcie_gen, PCIE_GENS)
        checks.integer("nics_per_node", self.nics_per_node, 0, 4 * MAX_GPUS_PER_NODE)
        checks.real("nic_gbps", self.nic_gbps, 0.0, 3200.0, low_open=True)
        checks.boolean("nvls", self.nvls)
        checks.boolean("collnet", self.collnet)
        checks.choice("cpu", self.cpu, CPUS)
        checks.integer("switch_gpus", self.switch_gpus, 1, self.gpus_per_node)
        if self.source:
            checks.text("source", self.source, 400)
        g, k = self.gpus_per_node, self.nics_per_node
        if self.nodes > 1 and k == 0:
            raise checks.fail("nics_per_node", "at least 1 when nodes > 1", k)
        if k and g % k and k % g:
            raise checks.fail("nics_per_node", f"a divisor or a multiple of gpus_per_node={g}", k)
        if self.nvls and (self.nvlink_links == 0 or self.compute_capability < 90):
            raise checks.fail("nvls", "False unless the GPUs are Hopper or later on NVSwitch",
                              self.nvls)  # fmt: skip
        object.__setattr__(self, "nic_gbps", float(self.nic_gbps))

    @property
    def ranks(self) -> int:
        return self.gpus_per_node * self.nodes

    @property
    def nic_gpus(self) -> int:
        """GPUs that share a PCIe switch with a NIC (the only ones a channel can enter or
        leave a node through without PXN)."""
        return min(self.gpus_per_node, max(self.nics_per_node, 1) * self.switch_gpus)

    @property
    def compute_capability(self) -> int:
        return GPUS[self.gpu][0]

    @property
    def nvlink_bw(self) -> float:
        """GB/s per direction NCCL counts between one GPU and the NVSwitches (topo.h)."""
        cc = self.compute_capability
        per_link = C.value("nvlink_bw_per_link")[
            4 if cc >= 100 else 3 if cc >= 90 else 2 if cc >= 80 else 1 if cc >= 70 else 0
        ]
        return float(self.nvlink_links * per_link)

    @property
    def pcie_bw(self) -> float:
        """GB/s NCCL counts for one x16 PCIe link of this generation (topo.cc)."""
        speed = C.value("pcie_lane_speed")[PCIE_GENS.index(self.pcie_gen)]
        return float(16 * speed / C.value("pcie_lane_divisor"))

    @property
    def nic_bw(self) -> float:
        """GB/s NCCL counts for one NIC (Mb/s / 8000, topo.cc)."""
        return float(self.nic_gbps * 1000 / C.value("net_mbps_divisor"))

    def with_(self, **changes) -> Topology:
        """A copy with some fields changed (checked again)."""
        fields = {f.name for f in dataclasses.fields(self)}
        unknown = sorted(set(changes) - fields)
        if unknown:
            raise checks.fail("overrides", f"fields of Topology {sorted(fields)}", unknown)
        return dataclasses.replace(self, **changes)

    def group(self, gpus_per_node: int, nodes: int) -> Topology:
        """The topology a communicator of ``gpus_per_node`` GPUs on each of ``nodes`` of
        these servers sees: NCCL keeps only the communicator's GPUs (and their NICs; a
        group smaller than a server is assumed packed on consecutive GPUs, so it gets the
        NICs of those GPUs, at least one)."""
        g = checks.integer("gpus_per_node", gpus_per_node, 1, self.gpus_per_node)
        n = checks.integer("nodes", nodes, 1, self.nodes)
        k = self.nics_per_node
        if k >= self.gpus_per_node:
            k = k // self.gpus_per_node * g
        elif k:
            per = self.gpus_per_node // k  # GPUs sharing one NIC
            k = max(1, -(-g // per))
            while g % k and k % g:  # keep the layout regular
                k -= 1
        return self.with_(gpus_per_node=g, nodes=n, nics_per_node=k,
                          switch_gpus=min(self.switch_gpus, g))  # fmt: skip


def check_topology(name: str, value) -> Topology:
    """``value`` if it is a :class:`Topology` (the library's error otherwise)."""
    return checks.instance(name, value, Topology, "a Topology (see nccl.topology)")


def _as_topology(machine, name: str = "machine") -> Topology:
    """The topology of ``machine``: a :class:`Topology`, a name of :data:`PRESETS` or a
    :class:`scaleout.machine.Machine` (its ``topology``, read by attribute since
    :mod:`scaleout.machine` imports this package): what :func:`scaleout.machine.as_topology`
    accepts, for the functions of this package that take ``machine=``."""
    if isinstance(machine, str):
        return PRESETS[checks.choice(name, machine, tuple(PRESETS))]
    inner = getattr(machine, "topology", None)
    if isinstance(inner, Topology) and not isinstance(machine, Topology):
        return inner
    return checks.instance(name, machine, Topology, "a Topology, a Machine or a preset name")


def _system(name: str) -> hardware.System:
    return hardware.system(name)


def _links(generation: int) -> int:
    return hardware.nvlink_generation(generation).links


def _presets() -> dict[str, Topology]:
    a100, h100 = _system("DGX A100"), _system("DGX H100")
    nvl72 = _system("GB200 NVL72")
    h100_links = _links(h100.nvlink_generation)
    return {
        "dgx-a100": Topology(
            name="dgx-a100", gpus_per_node=a100.gpus_per_server, nodes=1, gpu="A100",
            nvlink_links=_links(a100.nvlink_generation), pcie_gen=4,
            nics_per_node=a100.nics_per_server, nic_gbps=float(a100.nic_gbit_per_s),
            cpu="amd", switch_gpus=2,
            source=f"{a100.source}; NVSwitch gen 2 has no in-switch reduction; AMD EPYC "
            "7742 CPUs; four PCIe switches with two GPUs and two NICs each (user guide)",
        ),
        "dgx-h100": Topology(
            name="dgx-h100", gpus_per_node=h100.gpus_per_server, nodes=1, gpu="H100",
            nvlink_links=h100_links, pcie_gen=5, nics_per_node=h100.nics_per_server,
            nic_gbps=float(h100.nic_gbit_per_s), nvls=True, cpu="intel",
            source=f"{h100.source}; NVSwitch gen 3 reduces (NVLS); Intel Xeon 8480C CPUs; "
            "one NIC beside each GPU",
        ),
        "hgx-h100-4nic": Topology(
            name="hgx-h100-4nic", gpus_per_node=h100.gpus_per_server, nodes=1, gpu="H100",
            nvlink_links=h100_links, pcie_gen=5, nics_per_node=4, nic_gbps=400.0, nvls=True,
            source="HGX H100 with 4 x 400 Gb/s NICs, each beside one GPU, the other four "
            "GPUs reaching them over NVLink (nvidia-smi topo in NVIDIA/nccl issue 1357)",
        ),
        "pcie": Topology(
            name="pcie", gpus_per_node=8, nodes=1, gpu="A100", nvlink_links=0, pcie_gen=4,
            nics_per_node=4, nic_gbps=200.0, switch_gpus=2,
            source="illustrative PCIe server: 8 A100 PCIe GPUs, no NVLink, PCIe Gen4 "
            "switches with one 200 Gb/s NIC per pair of GPUs",
        ),
        "gb200-nvl72": Topology(
            name="gb200-nvl72", gpus_per_node=nvl72.gpus_per_nvlink_domain, nodes=1,
            gpu="GB200", nvlink_links=_links(nvl72.nvlink_generation), pcie_gen=5,
            nics_per_node=nvl72.gpus_per_nvlink_domain, nic_gbps=400.0, nvls=True, cpu="arm",
            source=f"{nvl72.source}; one ConnectX-7 400 Gb/s NIC per GPU (DGX GB200 user "
            "guide); NCCL treats the NVLink domain as one node (MNNVL)",
        ),
    }  # fmt: skip


#: The preset machines, by name.
PRESETS: dict[str, Topology] = _presets()


def topology(name: str = "dgx-h100", nodes: int = 1, **overrides) -> Topology:
    """The preset ``name`` (a key of :data:`PRESETS`) on ``nodes`` servers, with any field
    of :class:`Topology` overridden, e.g.
    ``topology("dgx-a100", nodes=3, nics_per_node=4, nic_gbps=200)``."""
    checks.choice("name", name, tuple(PRESETS))
    return PRESETS[name].with_(nodes=nodes, **overrides)
