"""The one front door to the network model: a machine is a GPU, a server and a server count.

A :class:`Machine` holds a GPU row of :mod:`scaleout.hardware` (its FLOP/s, memory, HBM), an
:class:`scaleout.nccl.topo.Topology` of its servers (what NCCL's search reads: NVLink, PCIe,
NICs) and how many servers there are. Build one

* from a preset server of :data:`scaleout.nccl.topo.PRESETS` with any field overridden:
  :func:`preset` (``preset("dgx-a100", servers=4, nics_per_node=4, nic_gbps=200)``), or
* from link presets of :mod:`scaleout.hardware`: :func:`from_links` (``gpus_per_server``
  GPUs on an NVLink or PCIe preset, each with one NIC of a NIC preset), a documented
  reduction of a real server to what NCCL reads:

  - the GPU generation and NVLink link count come from the NVLink preset (V100, A100, H100,
    B200; P100 has no row in NCCL's model), NVLink SHARP (NVLS) from the generation (Hopper
    and later sit on third-generation NVSwitches);
  - every other field comes from the preset server of that generation: ``dgx-a100`` for
    V100 and A100 (PCIe gen 3 for V100), ``dgx-h100`` for H100 and for B200 servers of up to
    8 GPUs (a DGX B200 has the DGX H100's eight 400 Gb/s NICs and x86 hosts),
    ``gb200-nvl72`` for B200 NVLink domains of more than 8 GPUs, ``pcie`` for PCIe-only
    servers.

**The machine argument.** A public function or method that prices communication on a
machine takes it as ``machine=``, a keyword-only argument, last (only ``**kwargs`` after
it), with its default where it has one (``machine="dgx-h100"``); no other name (``topo``,
``net``, ``network``) is used for it. Where the function needs NCCL's topology, ``machine``
may be a :class:`Machine`, an :class:`scaleout.nccl.topo.Topology` or a preset name of
:data:`scaleout.nccl.topo.PRESETS`: :func:`as_topology` and :func:`as_machine` turn any of
them into what they need (inside :mod:`scaleout.nccl`, which this module imports, the same
reading is ``nccl.topo._as_topology``). The expert-parallel model prices on its own
:class:`scaleout.moe.Network` record; its functions take that record as ``machine=``, or
anything :func:`scaleout.moe.as_network` turns into one through
:func:`scaleout.moe.nccl_network`. So::

    nccl.predict("allreduce", 2**30, machine="dgx-h100")
    moe.alltoall_seconds(pair_bytes, machine=preset("dgx-h100", servers=2))

Exceptions, each for a reason (``tests/unit/test_machine_argument.py`` holds the lists and
checks every public function and method of the library against the rule):

* functions whose subject is the machine itself take it first, positionally, as
  ``machine``: the converters :func:`as_topology`, :func:`as_machine`,
  :func:`scaleout.moe.nccl_network`, :func:`scaleout.moe.as_network`,
  :func:`scaleout.moe.rdma_only`, :func:`scaleout.congestion.collective.as_topology`,
  :func:`scaleout.congestion.collective.cluster_of` and
  :func:`scaleout.calibrate.judge.machine_topology`;
* NCCL's internals in :mod:`scaleout.nccl.search` and :mod:`scaleout.nccl.tuning` take a
  ``topo`` first, as the C functions they replay take the ``ncclTopoSystem`` (or the
  communicator) first; they are the engine under :mod:`scaleout.nccl.model`, not its
  interface;
* the planner's and the simulator's ``cluster`` (:class:`scaleout.planner.model.Cluster`, the
  job's whole hardware record: the GPU count and kind, the NCCL preset of its servers, NIC
  and datasheet overrides) stays the second positional argument of
  ``planner.predict(model, cluster, ...)`` and
  ``sim.simulate(model, cluster, global_batch, plan, ...)``, the API issue 25 fixes; it is
  a description of a training job's hardware, not a network to price one collective on;
* :mod:`scaleout.topology`'s ``cluster`` (a :class:`scaleout.topology.Cluster`, chapter 11's
  switch-level graph of servers, leaves and spines that flows are routed on) is another
  concept, not NCCL's machine, and keeps its name and place;
* records store what they were built with under their own field names
  (``nccl.model.Tuning.topo``, ``calibrate.Correction.topology``); a record's field is not
  an argument a price is computed on;
* ``topology=`` of :func:`scaleout.tensor_parallel.collective_seconds` names a cost model
  (``"nccl"``, ``"flat-ring"``, ``"two-level"``), not a machine; its machine is ``machine=``.

The GPU row of a preset is the SXM (or superchip) part of its NCCL GPU name
(:data:`GPU_ROWS`); NCCL's H800 (the export H100 SXM with fewer NVLinks) is priced with the
H100 SXM's compute row, an assumption stated here.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from . import checks, nccl
from . import hardware as H
from .nccl.topo import MAX_GPUS_PER_NODE, MAX_RANKS, Topology

#: NCCL's GPU name -> the row of :data:`scaleout.hardware.GPUS` a machine computes with.
GPU_ROWS = {"V100": "V100-32GB", "A100": "A100-80GB", "H100": "H100-SXM", "H200": "H200",
            "H800": "H100-SXM", "B200": "B200", "GB200": "GB200"}  # fmt: skip
#: NVLink presets of :mod:`scaleout.hardware` -> NCCL's GPU name.
NVLINK_GPUS = {"nvlink2-v100": "V100", "nvlink3-a100": "A100", "nvlink4-h100": "H100",
               "nvlink5-b200": "B200"}  # fmt: skip
#: Base preset of :data:`scaleout.nccl.topo.PRESETS` per GPU (gb200-nvl72 for B200 beyond 8 GPUs).
BASE_PRESETS = {"V100": "dgx-a100", "A100": "dgx-a100", "H100": "dgx-h100", "B200": "dgx-h100"}


@dataclass(frozen=True)
class Machine:
    """``servers`` servers of ``topology`` (its ``nodes`` field is ignored: the count is
    ``servers``), each GPU computing as the :class:`scaleout.hardware.GPU` row ``gpu``."""

    gpu: H.GPU
    topology: Topology
    servers: int = 1

    def __post_init__(self):
        checks.instance("gpu", self.gpu, H.GPU, "a GPU row of scaleout.hardware")
        checks.instance("topology", self.topology, Topology, "an nccl.Topology")
        n = checks.integer("servers", self.servers, 1, MAX_RANKS)
        if n * self.topology.gpus_per_node > MAX_RANKS:
            raise checks.fail("servers", f"at most {MAX_RANKS} GPUs in all",
                              n * self.topology.gpus_per_node)  # fmt: skip
        if self.topology.nodes != n:
            object.__setattr__(self, "topology", self.topology.with_(nodes=n))

    @property
    def name(self) -> str:
        return self.topology.name

    @property
    def gpus_per_server(self) -> int:
        return self.topology.gpus_per_node

    @property
    def gpus(self) -> int:
        return self.gpus_per_server * self.servers

    def topo(self, servers: int | None = None) -> Topology:
        """The topology on ``servers`` servers (default: the machine's)."""
        if servers is None:
            return self.topology
        return self.topology.with_(nodes=checks.integer("servers", servers, 1, MAX_RANKS))

    def with_(self, servers: int | None = None, gpu: str | None = None, **overrides):
        """This machine with another server count, GPU row or topology fields."""
        row = self.gpu if gpu is None else H.gpu(checks.choice("gpu", gpu, tuple(H.GPUS)))
        topo = self.topology.with_(**overrides) if overrides else self.topology
        return Machine(row, topo, self.servers if servers is None else servers)

    def group(self, per_server: int, servers: int) -> Topology:
        """The topology NCCL sees for a group of ``per_server`` GPUs on each of ``servers``
        servers, keeping the NICs of its GPUs (:meth:`scaleout.nccl.topo.Topology.group`)."""
        return self.topology.with_(nodes=max(1, servers)).group(per_server, servers)


def _gpu_row(topo: Topology, gpu):
    if gpu is None:
        return H.gpu(GPU_ROWS[topo.gpu])
    if isinstance(gpu, H.GPU):
        return gpu
    return H.gpu(checks.choice("gpu", gpu, tuple(H.GPUS)))


def preset(name: str = "dgx-h100", *, servers: int = 1, gpu=None, **overrides) -> Machine:
    """The preset server ``name`` of :data:`scaleout.nccl.topo.PRESETS` on ``servers``
    servers, with fields of :class:`scaleout.nccl.topo.Topology` overridden (``overrides``)
    and the GPU row ``gpu`` (a name of :data:`scaleout.hardware.GPUS`, default
    :data:`GPU_ROWS` of the preset's GPU)."""
    name = checks.choice("name", name, tuple(nccl.PRESETS))
    servers = checks.integer("servers", servers, 1, MAX_RANKS)
    topo = nccl.PRESETS[name].with_(**overrides) if overrides else nccl.PRESETS[name]
    return Machine(_gpu_row(topo, gpu), topo, servers)


def _link(name: str, value, kind: str) -> H.LinkPreset:
    allowed = tuple(k for k, v in H.LINKS.items() if v.kind in kind.split("|"))
    return H.link(checks.choice(name, value, allowed))


def from_links(gpus_per_server: int = 8, intra: str = "nvlink4-h100", inter: str = "nic-400g", *,
               servers: int = 1, gpu=None) -> Machine:  # fmt: skip
    """``servers`` servers of ``gpus_per_server`` GPUs linked by ``intra`` (an NVLink or
    PCIe preset of :mod:`scaleout.hardware`), each GPU with one NIC of the ``inter`` preset
    (the module docstring's reduction). Cached."""
    g = checks.integer("gpus_per_server", gpus_per_server, 1, MAX_GPUS_PER_NODE)
    nv = _link("intra", intra, "nvlink|pcie")
    nic = _link("inter", inter, "nic")
    topo = _links_topology(g, nv.name, nic.name)
    return Machine(_gpu_row(topo, gpu), topo, checks.integer("servers", servers, 1, MAX_RANKS))


@functools.lru_cache(maxsize=256)
def _links_topology(g: int, intra: str, inter: str) -> Topology:
    nv, nic = H.link(intra), H.link(inter)
    nic_gbps = float(H.gbyte_per_s_to_gbit_per_s(nic.gb_per_s))
    name = f"{intra} x{g}, {inter} per GPU"
    if nv.kind == "pcie":
        gen = int(intra[len("pcie")])
        switch = 2 if g % 2 == 0 else 1
        return nccl.PRESETS["pcie"].with_(name=name, gpus_per_node=g, pcie_gen=gen,
                                          nics_per_node=g, nic_gbps=nic_gbps,
                                          switch_gpus=switch)  # fmt: skip
    if intra not in NVLINK_GPUS:
        raise checks.fail("intra", f"an NVLink preset NCCL's model covers {tuple(NVLINK_GPUS)}"
                          " or a PCIe preset", intra)  # fmt: skip
    gpu = NVLINK_GPUS[intra]
    base = nccl.PRESETS["gb200-nvl72" if gpu == "B200" and g > 8 else BASE_PRESETS[gpu]]
    switch = min(base.switch_gpus, g) if g % base.switch_gpus == 0 else 1
    fields = dict(name=name, gpus_per_node=g, gpu=base.gpu if base.gpu == "GB200" else gpu,
                  nvlink_links=nv.links, nics_per_node=g, nic_gbps=nic_gbps,
                  nvls=nccl.topo.GPUS[gpu][0] >= 90, collnet=False, switch_gpus=switch)  # fmt: skip
    if gpu == "V100":
        fields.update(pcie_gen=3, cpu="intel")
    return base.with_(**fields)


def as_topology(machine, *, name: str = "machine") -> Topology:
    """The :class:`scaleout.nccl.topo.Topology` of ``machine``: a :class:`Machine`, a
    topology (returned as is) or a preset name of :data:`scaleout.nccl.topo.PRESETS`
    (one server). ``name`` is the argument's name in the error message."""
    if isinstance(machine, Machine):
        return machine.topology
    if isinstance(machine, Topology):
        return machine
    if isinstance(machine, str):
        return nccl.PRESETS[checks.choice(name, machine, tuple(nccl.PRESETS))]
    raise checks.fail(name, f"an nccl.Topology, a Machine or a preset name {tuple(nccl.PRESETS)}",
                      machine)  # fmt: skip


def as_machine(machine, *, name: str = "machine") -> Machine:
    """``machine`` as a :class:`Machine` (a topology keeps its ``nodes`` as servers)."""
    if isinstance(machine, Machine):
        return machine
    topo = as_topology(machine, name=name)
    return Machine(_gpu_row(topo, None), topo, topo.nodes)


__all__ = ["BASE_PRESETS", "GPU_ROWS", "NVLINK_GPUS", "Machine", "as_machine", "as_topology",
           "from_links", "preset"]  # fmt: skip
