"""All-reduce scenarios on a cluster: the fluid bound of each pattern, the bandwidth bounds
with and without in-network reduction, and NCCL's own model beside them (chapter 10).

Taught in chapter 11, "NVLink, NVSwitch and the cluster network"
(``chapters/11_nvlink_topology.ipynb``); see :mod:`scaleout.topology` for the model.
"""

from __future__ import annotations

from .. import checks, hardware, nccl
from .. import machine as M
from .cluster import Cluster
from .loads import traffic_time
from .patterns import dp_allreduce, flat_ring_allreduce, hierarchical_allreduce, ring_allreduce
from .records import MAX_GPUS, Timing

SCENARIOS = (
    "inside one server (NVLink)",
    "across servers, on the rails",
    "across servers, through the spine",
    "all GPUs, flat rings on all NICs",
    "all GPUs, hierarchical (Horovod)",
    "all GPUs, one ring (what if one NIC)",
)


def allreduce_scenarios(
    servers: int,
    gpus_per_server: int,
    nvlink_gb_per_s: float,
    nic_gb_per_s: float,
    oversubscription: float = 1.0,
    nbytes: float = 1e9,
) -> dict[str, Timing]:
    """Time of an all-reduce of ``nbytes`` per GPU in the places named by ``SCENARIOS``:

    1. inside one server over NVLink;
    2. among the same-rank GPUs of all servers, on the rails (all servers under one rail
       leaf each; one ring per local rank, each on its GPU's own NIC);
    3. the same through an oversubscribed spine (one top-of-rack leaf per server, so every
       hop climbs to the spine);
    4. over all GPUs with NCCL's flat rings, one channel per NIC (:func:`flat_ring_allreduce`);
    5. over all GPUs with Horovod's hierarchical scheme (:func:`hierarchical_allreduce`);
    6. over all GPUs with one flat ring, one NIC per server crossing: "what if one NIC".
    """
    common = dict(
        servers=servers,
        gpus_per_server=gpus_per_server,
        nvlink_gb_per_s=nvlink_gb_per_s,
        nic_gb_per_s=nic_gb_per_s,
    )
    rails = Cluster(rail_optimized=True, servers_per_leaf=servers, **common)
    spine = Cluster(
        rail_optimized=False, servers_per_leaf=1, oversubscription=oversubscription, **common
    )
    nbytes = checks.nonnegative("nbytes", nbytes)
    one_server = [list(range(gpus_per_server))]
    patterns = (
        (rails, ring_allreduce(rails, one_server, nbytes)),
        (rails, dp_allreduce(rails, nbytes)),
        (spine, dp_allreduce(spine, nbytes)),
        (rails, flat_ring_allreduce(rails, nbytes)),
        (rails, hierarchical_allreduce(rails, nbytes)),
        (rails, flat_ring_allreduce(rails, nbytes, channels=1)),
    )
    return {name: traffic_time(c, t) for name, (c, t) in zip(SCENARIOS, patterns, strict=True)}


def allreduce_bound(gpus: int, nbytes: float, gb_per_s: float, in_network: bool = False) -> float:
    """Bandwidth lower bound, in seconds, on an all-reduce of ``nbytes`` per GPU over
    ``gpus`` GPUs, each attached to a non-blocking fabric at ``gb_per_s`` per direction
    (latency not counted).

    * ``in_network=False``, the GPUs reduce: every GPU must send and receive
      :math:`2\\frac{p-1}{p}n` bytes (Patarasuk & Yuan 2009), which the ring meets. This
      caps the bus bandwidth (nccl-tests' ``busbw``) at ``gb_per_s``.
    * ``in_network=True``, the switches reduce (NVLS in the NVSwitch, SHARP in InfiniBand
      switches; Graham et al. 2016): each GPU sends its :math:`n` bytes once and receives
      the sum once, :math:`n / B`, and the bus bandwidth can reach
      :math:`2\\frac{p-1}{p}` times ``gb_per_s``.

    One GPU has nothing to exchange: 0 s. Limits: ``gpus`` at most ``MAX_GPUS``."""
    p = checks.integer("gpus", gpus, 1, MAX_GPUS)
    n = checks.nonnegative("nbytes", nbytes)
    bw = checks.positive("gb_per_s", gb_per_s) * 1e9
    checks.boolean("in_network", in_network)
    if p == 1:
        return 0.0
    sent = n if in_network else 2 * (p - 1) / p * n
    return checks.finite_result("allreduce_bound", sent / bw)


#: The scenarios of :func:`nccl_allreduce_scenarios` (NCCL's model, chapter 10).
NCCL_SCENARIOS = (
    "across servers, on the rails: NCCL's model",
    "all GPUs: NCCL's model",
)


def nccl_machine(gpus_per_server: int, nvlink_generation: int, nic_gbit_per_s: float):
    """The :class:`scaleout.nccl.topo.Topology` of one server of ``gpus_per_server`` GPUs of
    NVLink ``nvlink_generation`` (2-5: V100 to B200; NCCL's model has no P100), one NIC of
    ``nic_gbit_per_s`` per GPU, as :func:`scaleout.tensor_parallel.network.machine` reduces
    a server to what NCCL reads (:func:`scaleout.machine.from_links`)."""
    gen = hardware.nvlink_generation(checks.integer("nvlink_generation", nvlink_generation, 2, 5))
    nic = checks.real("nic_gbit_per_s", nic_gbit_per_s, 0.0, 3200.0, low_open=True)
    return M.from_links(gpus_per_server, gen.preset, "nic-400g").topology.with_(nic_gbps=nic)


def nccl_allreduce_scenarios(servers: int, nbytes: float = 1e9, *, machine) -> dict:
    """What NCCL's cost model (:func:`scaleout.nccl.model.predict`, release
    :data:`scaleout.nccl.constants.RELEASE`) predicts for the two cross-server all-reduces of
    :func:`allreduce_scenarios` that NCCL runs, on ``servers`` servers of ``machine`` (an
    :class:`scaleout.nccl.topo.Topology`, a :class:`scaleout.machine.Machine` or a preset name;
    its ``gpus_per_node`` is g), ``nbytes``
    per GPU: label (``NCCL_SCENARIOS``) -> :class:`scaleout.nccl.model.Prediction`.

    1. "on the rails": one communicator per local rank, the same-rank GPUs of every server,
       each keeping its own GPU's NIC (:meth:`scaleout.nccl.topo.Topology.group` (1, servers));
       they run at once on different NICs, so one group's time is the scenario's;
    2. "all GPUs": one communicator of every GPU: NCCL's rings over all NICs, or its trees.

    Unlike the fluid bound these include NCCL's per-channel speeds (a channel runs below
    the link: the GPU's PCIe link caps a DGX H100's network channels at 48 GB/s), its
    protocols and latencies, and its choice of algorithm; like it, they assume a
    non-blocking fabric (no spine oversubscription, no other jobs)."""
    s = checks.integer("servers", servers, 1, MAX_GPUS)
    base = M.as_topology(machine)
    if base.gpus_per_node * s > MAX_GPUS:
        raise checks.fail("servers * gpus_per_node", f"at most {MAX_GPUS} GPUs",
                          base.gpus_per_node * s)  # fmt: skip
    if s > 1 and base.nics_per_node == 0:
        raise checks.fail("machine", "a machine with NICs when servers > 1", base.name)
    n = checks.positive("nbytes", nbytes, nccl.model.MAX_BYTES)
    cluster = base.with_(nodes=s)
    groups = (cluster.group(1, s), cluster)
    return {name: nccl.predict("allreduce", n, machine=topo)
            for name, topo in zip(NCCL_SCENARIOS, groups, strict=True)}  # fmt: skip
