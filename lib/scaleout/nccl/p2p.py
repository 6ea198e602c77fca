"""Point-to-point and all-to-all: a documented model, not NCCL's (NCCL does not price them).

``tuning.cc`` prices only the five collectives; NCCL runs send/recv and all-to-all (a
group of ``n - 1`` sends and ``n - 1`` receives per rank) on its p2p channels without a
model. The expert- and context-parallel chapters need a time for them, so this module
states one, built from the same machine and the same constants:

* **Bandwidth.** Inside a node a GPU sends over NVLink at what NCCL's own ring search
  grants one GPU there (channels x per-channel speed of the single-node ring, e.g. 240
  GB/s on an A100, 360 GB/s on an H100: the ~80 % of the link that NCCL's protocols
  reach). Across nodes each GPU sends through the NICs on its rail: ``min(PCIe, NIC)``
  per NIC, the node's NICs shared by its GPUs. Maintainers' statements this matches:
  all-to-all "cannot aggregate the bandwidth of multiple NICs" per GPU, and its bus
  bandwidth is about ``N / (N - 1)`` times the per-GPU network bandwidth on N nodes
  (NVIDIA/nccl-tests issues 130 and 267); a ConnectX-7 at 400 Gb/s gives 48-49 GB/s.
* **PXN.** NCCL sends to a remote GPU through the local GPU on the destination's rail
  (PCI x NVLink, ``paths.cc``), so inter-node bytes also cross NVLink once inside the
  sending node: ``(g - 1) / g`` of them when every GPU has its own NIC.
* **Latency.** One base latency and one hop (``baseLat`` and ``hwLat`` of Ring/Simple,
  the protocol NCCL's p2p uses for large messages; LL below ``P2P_LL_THRESHOLD`` = 16 KiB
  per peer), plus the proxy thread's post overhead (``getNetOverhead``, 1-2 us) once per
  remote peer: peers are served in parallel over the channels, but one CPU thread posts
  every network message.

``time = latency + max(NVLink bytes / NVLink bandwidth, network bytes / network
bandwidth)``: NVLink and the network run concurrently. The model ignores congestion in
the network core, incast, the p2p channel schedule and message-rate limits of the NICs.
"""

from __future__ import annotations

import numpy as np

from .. import checks
from . import constants as C
from .search import compute
from .topo import Topology, _as_topology

P2P_LL_THRESHOLD = int(C.value("p2p_ll_threshold"))  # bytes per peer (enqueue.cc:783)


def nvlink_gb_per_s(*, machine) -> float:
    """What one GPU of ``machine`` (a Topology, a Machine or a preset name) pushes to its
    node's peers: the single-node ring's channels x speed."""
    topo = _as_topology(machine)
    one = topo.with_(nodes=1, gpus_per_node=max(topo.gpus_per_node, 2), nics_per_node=0,
                     nvls=False, collnet=False, switch_gpus=1)  # fmt: skip
    ring = compute(one, "ring", 1, int(C.value("max_channels")) // 2)
    return float(ring.channels * ring.bw_intra)


def network_gb_per_s(concurrent: bool = True, *, machine) -> float:
    """What one GPU of ``machine`` sends across nodes: ``min(PCIe, NIC)`` per NIC on its
    rail (the node's NICs shared by its GPUs when they all send at once)."""
    topo = _as_topology(machine)
    checks.boolean("concurrent", concurrent)
    k, g = topo.nics_per_node, topo.gpus_per_node
    if k == 0:
        return 0.0
    per_nic = min(topo.pcie_bw, topo.nic_bw)
    nics = k / g if concurrent else max(1.0, k / g)
    return float(min(topo.pcie_bw, per_nic * nics))


def _latency_us(topo: Topology, per_peer_bytes: np.ndarray, remote_peers: int) -> np.ndarray:
    proto = np.where(per_peer_bytes <= P2P_LL_THRESHOLD, C.LL, C.SIMPLE)
    lat = C.BASE_LAT[C.RING, proto] + C.HW_LAT[C.HW_NVLINK, C.RING, proto]
    if remote_peers:
        lat = lat + C.HW_LAT[C.HW_NET, C.RING, proto]
        lat = lat + remote_peers * C.value("net_overhead_us")[C.CPU_INDEX[topo.cpu]]
    return lat


def sendrecv_us(nbytes: np.ndarray, same_node: bool, *, machine) -> np.ndarray:
    """One send of ``nbytes`` from one GPU of ``machine`` to another, inside a node or
    across nodes."""
    topo = _as_topology(machine)
    nbytes = _bytes(nbytes)
    if not checks.boolean("same_node", same_node) and topo.nics_per_node == 0:
        raise checks.fail("same_node", "True on a machine without NICs", same_node)
    bw = (nvlink_gb_per_s(machine=topo) if same_node
          else network_gb_per_s(concurrent=False, machine=topo))  # fmt: skip
    lat = _latency_us(topo, nbytes, 0 if same_node else 1)
    factor = np.where(nbytes <= P2P_LL_THRESHOLD, 1 / C.value("ring_ll_factor"), 1.0)
    return lat + nbytes * factor / (1000 * bw)


def alltoall_us(nbytes: np.ndarray, *, machine) -> np.ndarray:
    """All-to-all where each of the ``n`` ranks of ``machine`` sends ``nbytes`` in total
    (``nbytes / n`` to each rank, itself included), as nccl-tests' alltoall_perf counts
    size."""
    topo = _as_topology(machine)
    nbytes = _bytes(nbytes)
    g, n = topo.gpus_per_node, topo.ranks
    if n == 1:
        return np.zeros(nbytes.shape)
    share = nbytes / n
    remote = n - g
    if remote and topo.nics_per_node == 0:  # no path off the node: not a finite time
        raise checks.fail("machine", "a multi-node topology with NICs (an all-to-all crosses "
                          "nodes)", f"{topo.name} with nics_per_node=0")  # fmt: skip
    inter = share * remote
    pxn = (g - 1) / g if topo.nics_per_node >= g else 0.0
    intra = share * (g - 1) + inter * pxn
    factor = np.where(share <= P2P_LL_THRESHOLD, 1 / C.value("ring_ll_factor"), 1.0)
    t_nvl = intra * factor / (1000 * nvlink_gb_per_s(machine=topo)) if g > 1 else 0.0 * nbytes
    t_net = inter * factor / (1000 * network_gb_per_s(machine=topo)) if remote else 0.0 * nbytes
    return checks.finite_result("alltoall_us", _latency_us(topo, share, remote)
                                + np.maximum(t_nvl, t_net))  # fmt: skip


def _bytes(nbytes) -> np.ndarray:
    return checks.array("nbytes", nbytes, low=0.0, high=2.0**50, low_open=True)
