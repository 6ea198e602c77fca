"""What context parallelism's transfers cost on a cluster: the ONE pricing function to switch.

**Stand-in for the book's NCCL model.** Chapter 10's ``scaleout.nccl`` (NCCL's own cost
model, with all-to-all and point-to-point on NVLink and the rails) was not yet part of the
library when this chapter was written. Every time this package gives a transfer is computed
here, from the alpha-beta links of :mod:`scaleout.hardware` and the formulas of
:mod:`scaleout.costmodel`; :func:`~scaleout.context_parallel.transfer_seconds` is the single entry
point, so switching to ``nccl.predict(...)`` (``"alltoall"``, ``"allgather"``, ``"reducescatter"``)
and NCCL's p2p model changes this file only.

The machine (:data:`~scaleout.context_parallel.NETWORKS`): servers of ``gpus_per_node`` GPUs on
NVLink (the ``intra`` link preset, per direction) with one NIC per GPU (the ``inter`` preset). A
context-parallel group of ``cp`` ranks takes every ``stride``-th GPU (``stride`` = the
tensor-parallel size: Megatron-LM orders tensor parallelism innermost, then context parallelism,
``megatron/core/parallel_state.py``), so ``min(cp, gpus_per_node // stride)`` of its ranks
share a server and the rest are on other servers, reached through the NICs (one rail).

* ``"p2p"`` (a ring step): every rank sends ``nbytes`` to its neighbour at once; the step
  lasts as long as the slowest hop, a NIC as soon as the group spans servers:
  alpha + n beta.
* ``"alltoall"`` (pairwise exchange, ``nbytes`` = each rank's send buffer, n/cp per peer):
  (cp - 1) alpha + max(NVLink bytes / NVLink rate, NIC bytes / NIC rate): the peers in the
  server over NVLink, the others over the NIC, both at once.
* ``"allgather"`` / ``"reducescatter"`` (ring, ``nbytes`` = the gathered output / the
  reduced input): (cp - 1) alpha + ((cp - 1)/cp) n beta, beta of the NIC once the ring
  leaves the server (the one-NIC flat ring of chapter 4).

What it leaves out (NCCL does better or worse): NCCL's protocols and channel counts (it
reaches about 80 % of NVLink, chapter 10), several rings striped over the rails, PXN,
congestion. The alphas are the presets' order-of-magnitude assumptions.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import checks
from .. import costmodel as M
from .. import hardware as H
from .ring import MAX_CP

__all__ = ["NETWORKS", "TRANSFERS", "Network", "network", "ranks_per_node", "transfer_seconds"]

#: The transfers priced (module docstring).
TRANSFERS = ("p2p", "alltoall", "allgather", "reducescatter")
#: Largest transfer priced, in bytes (1 PB).
MAX_BYTES = 1e15


@dataclass(frozen=True)
class Network:
    """A cluster of servers: ``gpus_per_node`` GPUs per NVLink domain on the ``intra`` link
    preset, one ``inter`` NIC preset per GPU (names of :data:`scaleout.hardware.LINKS`)."""

    name: str
    gpus_per_node: int
    intra: str
    inter: str
    source: str

    def __post_init__(self):
        checks.text("name", self.name, 60)
        checks.integer("gpus_per_node", self.gpus_per_node, 1, 1024)
        if H.link(self.intra).kind != "nvlink":
            raise checks.fail("intra", "an NVLink preset", self.intra)
        if H.link(self.inter).kind != "nic":
            raise checks.fail("inter", "a NIC preset", self.inter)
        checks.text("source", self.source, 400)


def _server(name: str, system: str) -> Network:
    row = H.system(system)
    gen = H.nvlink_generation(row.nvlink_generation)
    nic = f"nic-{int(row.nic_gbit_per_s)}g" if row.nic_gbit_per_s else "nic-400g"
    source = f"{row.source}; NVLink {gen.generation} of the {gen.gpu}"
    if not row.nic_gbit_per_s:
        source += "; one 400 Gb/s NIC per GPU (DGX GB200 user guide, as in chapter 10)"
    return Network(name, row.gpus_per_nvlink_domain, f"nvlink{gen.generation}-{gen.gpu.lower()}",
                   nic, source)  # fmt: skip


#: The machines of chapter 10's presets, from the systems table of :mod:`scaleout.hardware`.
NETWORKS: dict[str, Network] = {
    "dgx-a100": _server("dgx-a100", "DGX A100"),
    "dgx-h100": _server("dgx-h100", "DGX H100"),
    "gb200-nvl72": _server("gb200-nvl72", "GB200 NVL72"),
}


def network(name) -> Network:
    """A :class:`~scaleout.context_parallel.Network` given itself or by preset name (a key of
    :data:`~scaleout.context_parallel.NETWORKS`)."""
    if isinstance(name, Network):
        return name
    return NETWORKS[checks.choice("network", name, tuple(NETWORKS))]


def ranks_per_node(cp, net="dgx-h100", stride=1) -> int:
    """How many of a context-parallel group's ``cp`` ranks share one server when the group
    takes every ``stride``-th GPU: min(cp, gpus_per_node // stride), at least 1."""
    cp = checks.integer("cp", cp, 1, MAX_CP)
    net = network(net)
    stride = checks.integer("stride", stride, 1, 1024)
    return max(1, min(cp, net.gpus_per_node // stride))


def transfer_seconds(kind, nbytes, cp, net="dgx-h100", stride=1) -> float:
    """Seconds for one context-parallel transfer of ``kind``
    (:data:`~scaleout.context_parallel.TRANSFERS`) among ``cp`` ranks on ``net``, ``nbytes`` as the
    module docstring defines it for each kind. Zero when cp = 1 or nbytes = 0."""
    kind = checks.choice("kind", kind, TRANSFERS)
    n = checks.nonnegative("nbytes", nbytes, MAX_BYTES)
    net = network(net)
    local = ranks_per_node(cp, net, stride)
    cp = int(cp)
    if cp == 1 or n == 0:
        return 0.0
    nv, nic = H.link(net.intra), H.link(net.inter)
    spans = local < cp
    slow = nic if spans else nv
    if kind == "p2p":
        return float(slow.alpha_s + n * slow.beta_s_per_byte)
    if kind == "alltoall":
        share = n / cp
        intra, inter = share * (local - 1), share * (cp - local)
        alpha = max(nv.alpha_s, nic.alpha_s if spans else 0.0)
        return float(
            (cp - 1) * alpha + max(intra * nv.beta_s_per_byte, inter * nic.beta_s_per_byte)
        )
    seconds = M.collective_time(kind, "ring", n, cp, slow.alpha_s, slow.beta_s_per_byte)
    return float(checks.finite_result("seconds", np.float64(seconds)))
