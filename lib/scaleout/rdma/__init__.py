"""RDMA between GPU servers: queue pairs, one RDMA write, lost packets (chapter 12).

The package, in reading order:

* :mod:`~scaleout.rdma.qp` -- the RC queue pair's state machine (every state of the
  kernel's transition table, SQD and SQE included), its timers, and NCCL's settings.
* :mod:`~scaleout.rdma.packets` -- one RDMA write on the wire (PSNs, opcodes, RETH,
  immediate data) and the two receiver rules.
* :mod:`~scaleout.rdma.datapath` -- GPUDirect RDMA against a copy staged in host memory.
* :mod:`~scaleout.rdma.nccl_ib` -- the work requests NCCL posts for one message (adaptive
  routing splits off the immediate) and when its receiver flushes (Ampere and earlier).
* The packet-level simulator of one write over a lossy path:

  - :mod:`~scaleout.rdma.config` -- the model and its parameters
    (:class:`~scaleout.rdma.SimConfig`),
  - :mod:`~scaleout.rdma.channel` -- the channel's fates (lost, late, on time),
  - :mod:`~scaleout.rdma.results` -- what a run returns (:class:`~scaleout.rdma.SimResult`,
    :class:`~scaleout.rdma.Timeline`),
  - :mod:`~scaleout.rdma.reference` -- the per-packet reference loop that *defines* the
    model (:func:`~scaleout.rdma.simulate_reference`),
  - :mod:`~scaleout.rdma.engine` -- the batched engine, same result, fast enough for a
    million packets (:func:`~scaleout.rdma.simulate_fast`),
  - :mod:`~scaleout.rdma.experiments` -- :func:`~scaleout.rdma.simulate` and
    :func:`~scaleout.rdma.sweep`,
  - :mod:`~scaleout.rdma.closed_form` -- closed forms to check it against,
  - :mod:`~scaleout.rdma.published` -- published goodput under loss beside it.
"""

from .channel import Fates
from .closed_form import gbn_goodput_fraction, ideal_completion_s
from .config import (
    DEFAULT_RTO_S,
    LOSS_MODELS,
    MAX_PACKETS,
    MAX_TIMELINE_TRANSMISSIONS,
    MAX_TRANSMISSIONS,
    MAX_WINDOW,
    RETRY_EXCEEDED,
    STRATEGIES,
    SUCCESS,
    SimConfig,
)
from .datapath import data_path_times
from .engine import simulate_fast
from .experiments import Sweep, simulate, sweep
from .nccl_ib import (
    NCCL_IB_AR_THRESHOLD,
    adaptive_routing_default,
    message_work_requests,
    needs_flush,
)
from .packets import (
    MAX_MESSAGE_BYTES,
    WritePacket,
    rdma_write_steps,
    responder_go_back_n,
    responder_ooo,
    write_packets,
)
from .qp import (
    ACCESS,
    ATTRIBUTES,
    NCCL_IB_RETRY_CNT,
    NCCL_IB_RNR_RETRY,
    NCCL_IB_TIMEOUT,
    PATH_MTUS,
    PSN_MODULUS,
    STATES,
    TRANSITIONS,
    QueuePair,
    connect_rc,
    local_ack_timeout_s,
    retry_exhausted_s,
    rnr_retries,
)
from .reference import simulate_reference
from .results import SimResult, Timeline

__all__ = [
    "ACCESS", "ATTRIBUTES", "DEFAULT_RTO_S", "LOSS_MODELS", "MAX_MESSAGE_BYTES", "MAX_PACKETS",
    "MAX_TIMELINE_TRANSMISSIONS", "MAX_TRANSMISSIONS", "MAX_WINDOW", "NCCL_IB_AR_THRESHOLD",
    "NCCL_IB_RETRY_CNT",
    "NCCL_IB_RNR_RETRY", "NCCL_IB_TIMEOUT", "PATH_MTUS", "PSN_MODULUS", "RETRY_EXCEEDED",
    "STATES", "STRATEGIES", "SUCCESS", "TRANSITIONS", "Fates", "QueuePair", "SimConfig",
    "SimResult", "Sweep", "Timeline", "WritePacket", "adaptive_routing_default", "connect_rc",
    "data_path_times", "message_work_requests", "needs_flush",
    "gbn_goodput_fraction", "ideal_completion_s", "local_ack_timeout_s", "rdma_write_steps",
    "responder_go_back_n", "responder_ooo", "retry_exhausted_s", "rnr_retries", "simulate",
    "simulate_fast", "simulate_reference", "sweep", "write_packets",
]  # fmt: skip
