"""How NCCL's network transport posts one message and when it flushes (chapter 12).

Read from NCCL release 2.27.3 (tag v2.27.3-1; bibliography key ``ncclnetib2273``):

* ``src/transport/net_ib.cc`` line 122: ``NCCL_PARAM(IbArThreshold, "IB_AR_THRESHOLD", 8192)``;
  lines 711-714: adaptive routing is on by default when the port's link layer is InfiniBand
  and off for RoCE (Ethernet), and ``NCCL_IB_ADAPTIVE_ROUTING`` overrides both;
  lines 2000-2033 (``ncclIbMultiSend``): a single receive whose message is at most the
  threshold, or any message with adaptive routing off, is one RDMA_WRITE_WITH_IMM whose
  immediate (the size) rides on the last packet; with adaptive routing on and a larger
  message, or with several receives grouped into one send, the data go as plain RDMA_WRITEs
  and a separate RDMA_WRITE_WITH_IMM (0 bytes, or the receives' sizes) follows "to trigger a
  remote completion"; lines 850-853: a Data Direct NIC (mlx5 ``dataDirect``) forces a flush.
* ``src/graph/paths.cc`` lines 478-502 (``ncclTopoNeedFlush``): a flush is needed by default,
  always when the NIC asks for it or ``NCCL_NET_FORCE_FLUSH=1``; not from compute capability
  9.0 (Hopper) on ("Flush is required on Ampere and earlier"); again when the NIC sits at most
  a PCIe switch away (``PATH_PXB``) while the GPU reaches its CPU over C2C (Grace), because
  data and completion then take different paths.
* ``src/transport/net.cc`` line 1414 (``recvProxyProgress``): the receiving proxy flushes only
  for the Simple protocol, only when data arrived, and only when the buffer is GPU memory
  written by GPUDirect RDMA. LL and LL128 carry a flag inside every line of data, so the GPU
  polls the data itself and needs no flush.
"""

from __future__ import annotations

from .. import checks
from ..nccl import constants as _nccl


def ib_defaults() -> dict[str, int]:
    """NCCL's InfiniBand defaults, constants of :mod:`scaleout.nccl.constants` (rows of
    ``data/nccl_constants.csv``, release 2.27.7, ``src/transport/net_ib.cc``, where 2.27.3
    holds the same values): ``ib-timeout``, ``ib-retry-cnt``, ``ib-rnr-retry`` and
    ``ib-ar-threshold`` (bytes), as ints."""
    names = ("ib_timeout", "ib_retry_cnt", "ib_rnr_retry", "ib_ar_threshold")
    return {n.replace("_", "-"): int(_nccl.CONSTANTS[n].value) for n in names}


#: Bytes above which, with adaptive routing on, NCCL writes a message as plain RDMA writes
#: and a separate write with immediate (``NCCL_IB_AR_THRESHOLD``, a constant of
#: :mod:`scaleout.nccl.constants`).
NCCL_IB_AR_THRESHOLD = ib_defaults()["ib-ar-threshold"]
LINK_LAYERS = ("infiniband", "roce")
PROTOCOLS = ("simple", "ll", "ll128")
MAX_RECVS = 8  # NCCL_NET_IB_MAX_RECVS, net_ib.cc:833 (v2.27.3-1)
MAX_MESSAGE_BYTES = 2**31 - 1  # the immediate is 32-bit; NCCL's steps are far smaller


def adaptive_routing_default(link_layer: str) -> bool:
    """Whether NCCL turns adaptive routing on for a port of this link layer by default
    (net_ib.cc lines 711-714): on for InfiniBand, off for RoCE."""
    return checks.choice("link_layer", link_layer, LINK_LAYERS) == "infiniband"


def message_work_requests(
    sizes_bytes, *, link_layer: str = "infiniband", adaptive_routing: bool | None = None
) -> list[tuple[str, int]]:
    """The work requests ``ncclIbMultiSend`` posts for one send, as (opcode, bytes) pairs.

    ``sizes_bytes``: the message size, or a list of sizes when several receives are grouped
    (at most 8). ``adaptive_routing``: None for NCCL's default for ``link_layer``.
    """
    if checks.is_real(sizes_bytes):
        sizes = [sizes_bytes]
    elif isinstance(sizes_bytes, list | tuple) and 1 <= len(sizes_bytes) <= MAX_RECVS:
        sizes = list(sizes_bytes)
    else:
        raise checks.fail("sizes_bytes", f"a size or a list of 1 to {MAX_RECVS} sizes", sizes_bytes)
    sizes = [checks.integer("sizes_bytes", s, 0, MAX_MESSAGE_BYTES) for s in sizes]
    ar = adaptive_routing_default(link_layer) if adaptive_routing is None else adaptive_routing
    ar = checks.boolean("adaptive_routing", ar)
    if len(sizes) == 1 and not (ar and sizes[0] > NCCL_IB_AR_THRESHOLD):
        return [("RDMA_WRITE_WITH_IMM", sizes[0])]
    tail = 0 if len(sizes) == 1 else 4 * len(sizes)  # the receives' sizes, one int each
    return [("RDMA_WRITE", s) for s in sizes] + [("RDMA_WRITE_WITH_IMM", tail)]


def needs_flush(
    compute_capability: float,
    *,
    protocol: str = "simple",
    gpudirect: bool = True,
    bytes_received: int = 1,
    grace_c2c: bool = False,
    data_direct_nic: bool = False,
    force: bool = False,
) -> bool:
    """Whether NCCL's receiving proxy flushes (a 1-byte RDMA READ of the GPU buffer through a
    loopback QP, ``ncclIbIflush``) before it tells the GPU that data arrived.

    ``grace_c2c``: the GPU reaches its CPU over NVLink-C2C while the NIC is behind a PCIe
    switch (``ncclTopoNeedFlush``'s C2C case); ``data_direct_nic``: an mlx5 Data Direct NIC;
    ``force``: ``NCCL_NET_FORCE_FLUSH=1``.
    """
    cc = checks.real("compute_capability", compute_capability, 1.0, 20.0)
    protocol = checks.choice("protocol", protocol, PROTOCOLS)
    flags = {
        "gpudirect": gpudirect,
        "grace_c2c": grace_c2c,
        "data_direct_nic": data_direct_nic,
        "force": force,
    }
    flags = {k: checks.boolean(k, v) for k, v in flags.items()}
    size = checks.integer("bytes_received", bytes_received, 0, 2**63 - 1)
    topo = flags["data_direct_nic"] or flags["force"] or cc < 9.0 or flags["grace_c2c"]
    return topo and flags["gpudirect"] and protocol == "simple" and size > 0
