"""Queue pairs per connection: how NCCL spreads one connection over several QPs.

On RoCEv2 every queue pair is its own UDP flow (its own source port), so a switch hashing
the 5-tuple sees each QP as a separate flow: more QPs, more entropy for ECMP. NCCL's IB/RoCE
transport (release :data:`scaleout.nccl.constants.RELEASE`, ``src/transport/net_ib.cc``)
does this as follows; every line is in :data:`SOURCES` and a test reads them in a checkout
of that tag when one is on the machine:

* ``NCCL_IB_QPS_PER_CONNECTION`` (default 1) QPs per connection and NIC: a connection opens
  ``nqps = QPS_PER_CONNECTION x max(local NICs, remote NICs)`` QPs (merged NICs count each).
* ``NCCL_IB_SPLIT_DATA_ON_QPS`` (default 0): with 0, each message is posted on
  ``nDataQps = max(local NICs, remote NICs)`` QPs (one, for a single NIC) and the next
  message goes to the next QP, round robin over all ``nqps``; with 1, every message is cut
  into ``nqps`` chunks, one per QP. Chunks are rounded up to 128 bytes (so that the LL and
  LL128 protocols still work).
* Adaptive routing: on by default on InfiniBand, off on RoCE (``NCCL_IB_ADAPTIVE_ROUTING``);
  with it, a message above ``NCCL_IB_AR_THRESHOLD`` (8192 bytes) is written first and its
  completion signalled by a separate zero-byte write with immediate.

:func:`qp_bytes` replays ``ncclIbMultiSend``'s loop over messages. Either way, over many
messages a connection's bytes end up split evenly over its QPs, which is how
:mod:`scaleout.congestion.collective` models them (each QP 1/q of the bytes, its own hash).
"""

from __future__ import annotations

import numpy as np

from .. import checks
from ..nccl.constants import CONSTANTS as _NCCL
from ..nccl.constants import Source

#: Multi-QP writes are cut into multiples of this many bytes, a constant of
#: :mod:`scaleout.nccl.constants` (``net_ib.cc`` line 2041).
ALIGN_BYTES = _NCCL["ib_chunk_align"].value
MAX_MESSAGES = 1 << 20
MAX_QPS = 256
MAX_POSTS = 1 << 22

#: name -> (value, source, the text of the cited line that holds it); the numbers are constants
#: of :mod:`scaleout.nccl.constants` (rows of ``data/nccl_constants.csv``).
SOURCES = {
    "IB_QPS_PER_CONNECTION": (_NCCL["ib_qps_per_connection"].value,
                              _NCCL["ib_qps_per_connection"].source,
                              'NCCL_PARAM(IbQpsPerConn, "IB_QPS_PER_CONNECTION", 1)'),
    "nqps": ("QPS_PER_CONNECTION x max(local, remote NICs)",
             Source("src/transport/net_ib.cc", 1340, 1342),
             "ncclParamIbQpsPerConn() * comm->base.vProps.ndevs"),
    "nDataQps": ("max(local, remote NICs)", Source("src/transport/net_ib.cc", 1510, 1510),
                 "comm->base.nDataQps = std::max(comm->base.vProps.ndevs, comm->base.nRemDevs)"),
    "IB_SPLIT_DATA_ON_QPS": (_NCCL["ib_split_data_on_qps"].value,
                             _NCCL["ib_split_data_on_qps"].source,
                             'NCCL_PARAM(IbSplitDataOnQps, "IB_SPLIT_DATA_ON_QPS", 0)'),
    "chunk": ("DIVUP(DIVUP(size, nqps), 128) * 128", Source("src/transport/net_ib.cc", 2054, 2054),
              "DIVUP(DIVUP(reqs[r]->send.size, nqps), align) * align"),
    "round_robin": ("qpIndex = (qpIndex + 1) % nqps", Source("src/transport/net_ib.cc", 2105, 2105),
                    "comm->base.qpIndex = (comm->base.qpIndex+1) % comm->base.nqps"),
    "IB_AR_THRESHOLD": (_NCCL["ib_ar_threshold"].value, _NCCL["ib_ar_threshold"].source,
                        'NCCL_PARAM(IbArThreshold, "IB_AR_THRESHOLD", 8192)'),
    "adaptive_routing_default": ("1 on InfiniBand, 0 on RoCE",
                                 Source("src/transport/net_ib.cc", 722, 722),
                                 "(portAttr.link_layer == IBV_LINK_LAYER_INFINIBAND) ? 1 : 0"),
}  # fmt: skip


def qp_bytes(
    message_bytes: int,
    qps_per_connection: int = 1,
    *,
    split_data_on_qps: bool = False,
    local_nics: int = 1,
    remote_nics: int = 1,
    messages: int = 1,
) -> np.ndarray:
    """Bytes each QP of one connection carries after ``messages`` messages of
    ``message_bytes``, as ``ncclIbMultiSend`` posts them (see the module docstring): an int
    array of length ``nqps``. Limits: at most 2**20 messages, 256 QPs, 2**22 posts."""
    size = checks.integer("message_bytes", message_bytes, 0, 1 << 40)
    q = checks.integer("qps_per_connection", qps_per_connection, 1, 64)
    split = checks.boolean("split_data_on_qps", split_data_on_qps)
    local = checks.integer("local_nics", local_nics, 1, 4)
    remote = checks.integer("remote_nics", remote_nics, 1, 4)
    m = checks.integer("messages", messages, 1, MAX_MESSAGES)
    nqps = q * max(local, remote)
    data_qps = max(local, remote)
    per_message = nqps if split else data_qps
    if m * per_message > MAX_POSTS:
        raise checks.fail("messages x QPs a message uses", f"at most {MAX_POSTS}", m * per_message)
    per_post = -(-size // per_message)  # DIVUP(size, nqps)
    chunk = -(-per_post // ALIGN_BYTES) * ALIGN_BYTES  # DIVUP(..., 128) * 128
    lengths = np.array([max(0, min(chunk, size - i * chunk)) for i in range(per_message)])
    out = np.zeros(nqps, dtype=np.int64)
    # Message j's i-th post goes to QP (j * per_message + i) mod nqps.
    posts = (np.arange(m)[:, None] * per_message + np.arange(per_message)[None, :]) % nqps
    np.add.at(out, posts.ravel(), np.tile(lengths, m))
    return out
