"""What context parallelism's transfers cost on a cluster, priced with the NCCL model.

Every time this package gives a transfer comes from
:func:`~scaleout.context_parallel.transfer_seconds`, which asks chapter 10's model of NCCL
(:mod:`scaleout.nccl`): :func:`scaleout.nccl.model.collective_seconds` for the all-to-all (its
documented p2p model, :mod:`scaleout.nccl.p2p`: NVLink inside a server, each GPU's rail across,
PXN) and for the all-gather and reduce-scatter (NCCL's own tuning model, the algorithm and protocol
it would pick), and :func:`scaleout.nccl.p2p.sendrecv_us` for one send of a ring step.

The machine (:data:`~scaleout.context_parallel.network.NETWORKS`) is one of NCCL's presets
(:func:`scaleout.nccl.topo.topology`). A context-parallel group of ``cp`` ranks takes every
``stride``-th GPU (``stride`` = the tensor-parallel size: Megatron-LM orders tensor
parallelism innermost, then context parallelism, ``megatron/core/parallel_state.py``), so
:func:`~scaleout.context_parallel.ranks_per_node` of its ranks share a server, the same
number on every server it spans, and the rest are reached through the NICs. NCCL sees the
group as :meth:`scaleout.nccl.topo.Topology.group` of those GPUs, with their NICs.

* ``"p2p"`` (a ring step): every rank sends ``nbytes`` to its neighbour at once; the step
  lasts as long as the slowest hop, a NIC as soon as the group spans servers.
* ``"alltoall"``: ``nbytes`` is each rank's send buffer (nbytes / cp to every rank).
* ``"allgather"`` / ``"reducescatter"``: ``nbytes`` is the gathered output / the reduced
  input (nccl-tests' size).

What the NCCL model leaves out applies here too (chapter 10): congestion in the network core,
incast, the p2p channel schedule.
"""

from __future__ import annotations

import numpy as np

from .. import checks, nccl
from .. import machine as M
from ..nccl import p2p
from ..nccl.topo import Topology
from .ring import MAX_CP

__all__ = ["NETWORKS", "TRANSFERS", "cluster", "ranks_per_node", "transfer_seconds"]

#: The transfers priced (module docstring).
TRANSFERS = ("p2p", "alltoall", "allgather", "reducescatter")
#: Largest transfer priced, in bytes (the NCCL model's limit, 2**50).
MAX_BYTES = 2.0**50

#: The machines this chapter prices, three of chapter 10's NCCL presets (one server each; a
#: group adds servers as it needs them).
NETWORKS: dict[str, Topology] = {
    name: nccl.topology(name) for name in ("dgx-a100", "dgx-h100", "gb200-nvl72")
}


def cluster(name) -> Topology:
    """An NCCL :class:`~scaleout.nccl.topo.Topology` given itself or by name: a key of
    :data:`~scaleout.context_parallel.network.NETWORKS` or any preset of
    :func:`scaleout.nccl.topo.topology`, or a :class:`scaleout.machine.Machine`
    (:func:`scaleout.machine.as_topology`)."""
    return M.as_topology(name, name="machine")


def ranks_per_node(cp, stride=1, *, machine="dgx-h100") -> int:
    """How many of a context-parallel group's ``cp`` ranks share one server when the group
    takes every ``stride``-th GPU: the largest divisor of cp that is at most
    gpus_per_node // stride (at least 1), so every server holds the same number, on
    ``machine`` (a Topology, a Machine or a preset name: :func:`cluster`)."""
    cp = checks.integer("cp", cp, 1, MAX_CP)
    net = cluster(machine)
    stride = checks.integer("stride", stride, 1, 1024)
    room = max(1, net.gpus_per_node // stride)
    return max(d for d in range(1, min(cp, room) + 1) if cp % d == 0)


def transfer_seconds(kind, nbytes, cp, stride=1, *, machine="dgx-h100") -> float:
    """Seconds for one context-parallel transfer of ``kind``
    (:data:`~scaleout.context_parallel.network.TRANSFERS`) among ``cp`` ranks on ``machine``,
    ``nbytes`` as the module docstring defines it for each kind, from the NCCL model.
    Zero when cp = 1 or nbytes = 0."""
    kind = checks.choice("kind", kind, TRANSFERS)
    n = checks.nonnegative("nbytes", nbytes, MAX_BYTES)
    net = cluster(machine)
    local = ranks_per_node(cp, stride, machine=net)
    cp = int(cp)
    if cp == 1 or n == 0:
        return 0.0
    nodes = cp // local
    if kind == "p2p":
        group = net.with_(nodes=max(nodes, net.nodes)).group(local, nodes)
        return float(np.asarray(p2p.sendrecv_us(n, same_node=nodes == 1, machine=group)) * 1e-6)
    seconds = nccl.collective_seconds(kind, n, local, nodes, machine=net)
    return float(checks.finite_result("seconds", np.float64(seconds)))
