"""The packet-level model of one RDMA write: its parameters and limits (chapter 12).

A write of ``message_bytes`` is cut into ``n = ceil(message_bytes / mtu_bytes)`` packets
with consecutive packet sequence numbers (PSNs); a message shorter than one MTU is one
short packet. The sender puts one packet on the wire at a time (serialisation ``mtu*8/bw``
seconds; the last packet is shorter). Every transmission has a fate drawn from the channel
(:class:`scaleout.rdma.Fates`): lost, delayed by ``reorder_delay_s`` (it took a
longer path, as adaptive routing does) or on time. A delivered packet reaches the receiver
``rtt_s/2`` after its last bit left; the receiver's answer (ACK, NACK or selective ACK)
reaches the sender another ``rtt_s/2`` later and is never lost. Times are integer
picoseconds, so that two engines can be compared exactly.

The three strategies (receiver rule / sender rule):

* ``"go-back-n"`` -- the InfiniBand RC responder, which RoCEv2 inherits (InfiniBand
  Architecture Specification vol. 1, ch. 9; RoCEv2 = its Annex A17): accept only the
  expected PSN; on the first packet beyond it send one NAK (PSN sequence error) and silently
  discard new packets until the expected PSN arrives. The sender, on a NAK for PSN e,
  resends everything from e on -- unless e was already resent after the packet that
  triggered the NAK was sent (a stale NAK).
* ``"selective-repeat"`` -- IRN (Mittal et al., SIGCOMM 2018, sec. 3.1): the receiver keeps
  out-of-order packets (bitmap of ``window_packets``) and answers each with a NACK that
  carries the cumulative ACK and the PSN that arrived; the sender resends a missing PSN as
  soon as a packet sent after it has been acknowledged.
* ``"ooo-bitmap"`` -- out-of-order placement (NVIDIA ConnectX-5 and later, "Out-of-Order
  (OOO) Data Placement"): the receiver places every packet of its ``window_packets``-wide
  bitmap straight into memory, and a missing PSN counts as lost only once a packet sent
  after it was acknowledged *and* it has been outstanding ``rtt + reorder_window_s``
  (time-based loss detection, RACK, RFC 8985, whose default window is RTT/4). How a NIC
  tells a late packet from a lost one is not published; this rule is the model's.

All three: at most ``window_packets`` PSNs beyond the oldest unacknowledged one (IRN's
BDP-FC; default one bandwidth-delay product plus one packet, the least that keeps the link
busy), and a retransmission timeout ``rto_s`` (restarted when the cumulative ACK advances
or the oldest packet is resent, as in RFC 6298) that resends the oldest unacknowledged PSN
(go-back-N: everything from it). The transport retry counter: every timeout, and every
go-back-N rewind on a NAK, is a retry; the counter restarts when the cumulative ACK
advances, and the retry after ``retry_cnt`` of them fails the write with
``IBV_WC_RETRY_EXC_ERR`` instead (the QP goes to ERR), as a real RC requester does
(InfiniBand spec, the transport's retry count; NCCL's default ``retry_cnt`` is 7).

Limits (each raises ``ValueError`` beyond): ``MAX_PACKETS`` packets per write (four
times the book's one-million-packet benchmark), ``MAX_TRANSMISSIONS`` packets put on
the wire by one simulation, ``MAX_TIMELINE_TRANSMISSIONS`` of them recorded in a
timeline, windows of at most ``MAX_WINDOW`` PSNs (2**23: the half of the 24-bit PSN
space that IB can tell apart), simulated time up to ``MAX_TIME_S``.
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import checks
from .qp import NCCL_IB_RETRY_CNT, local_ack_timeout_s

STRATEGIES = ("go-back-n", "selective-repeat", "ooo-bitmap")
LOSS_MODELS = ("independent", "bursty")
PS = 1e-12  # seconds per picosecond: the simulators' time unit
DEFAULT_RTO_S = local_ack_timeout_s(5)  # QP TIMEOUT attribute 5: 131 us
MAX_PACKETS = 2**22
MAX_TRANSMISSIONS = 2**24
MAX_TIMELINE_TRANSMISSIONS = 2**21
MAX_WINDOW = 2**23
MAX_TIME_S = 1e6  # 11.6 days: every time in ps stays far below 2**63
MAX_TIME_PS = round(MAX_TIME_S / PS)
# Receiver outcome per transmission (Timeline.rx) and feedback kind (Timeline.fb).
RX_LOST, RX_IN_ORDER, RX_PLACED, RX_DISCARDED, RX_DUPLICATE = 0, 1, 2, 3, 4
FB_NONE, FB_ACK, FB_NACK = 0, 1, 2
# Completion status of the write (the requester's work completion).
SUCCESS, RETRY_EXCEEDED = "IBV_WC_SUCCESS", "IBV_WC_RETRY_EXC_ERR"


@dataclass(frozen=True)
class SimConfig:
    """Validated parameters of one simulated RDMA write (seconds, bytes, Gb/s).

    ``window_packets=None`` means one bandwidth-delay product plus one packet
    (:attr:`~scaleout.rdma.SimConfig.min_full_rate_window`); ``reorder_window_s=None``
    means ``rtt_s / 4`` (RACK's default, RFC 8985 sec. 6.2). ``retry_cnt`` (0..7): retries
    before the write fails. Raises ``ValueError`` for anything out of range.
    """

    message_bytes: int
    mtu_bytes: int = 4096
    bandwidth_gbps: float = 400.0
    rtt_s: float = 8e-6
    loss: float = 0.0
    loss_model: str = "independent"
    burst_packets: float = 4.0
    reorder: float = 0.0
    reorder_delay_s: float = 1e-6
    rto_s: float = DEFAULT_RTO_S
    strategy: str = "go-back-n"
    window_packets: int | None = None
    reorder_window_s: float | None = None
    seed: int = 0
    retry_cnt: int = NCCL_IB_RETRY_CNT

    def __post_init__(self):
        checks.integer("mtu_bytes", self.mtu_bytes, 1, 2**16)
        checks.integer("message_bytes", self.message_bytes, 1, MAX_PACKETS * self.mtu_bytes)
        checks.real("bandwidth_gbps", self.bandwidth_gbps, 1e-3, 1e6)
        checks.real("rtt_s", self.rtt_s, 0.0, 1.0)
        checks.fraction("loss", self.loss, open_high=True)
        checks.choice("loss_model", self.loss_model, LOSS_MODELS)
        checks.real("burst_packets", self.burst_packets, 1.0, 1e9)
        most = self.burst_packets / (1 + self.burst_packets)
        if self.loss_model == "bursty" and self.loss > most:
            raise ValueError(
                f"loss must be <= burst_packets/(burst_packets+1) = {most:.3g} for bursty losses "
                f"(good stretches average at least one packet), got {self.loss}"
            )
        checks.fraction("reorder", self.reorder, open_high=True)
        checks.real("reorder_delay_s", self.reorder_delay_s, 0.0, 1.0)
        checks.real("rto_s", self.rto_s, 0.0, 100.0, low_open=True)
        if self.rto_ps < self.rtt_ps + self.tx_ps:
            least = (self.rtt_ps + self.tx_ps) * PS
            raise checks.fail("rto_s", f">= rtt_s + one packet's serialisation ({least:.4g} s)",
                              self.rto_s)  # fmt: skip
        checks.choice("strategy", self.strategy, STRATEGIES)
        checks.optional_integer("window_packets", self.window_packets, 1, MAX_WINDOW)
        if self.window_packets is None and self.min_full_rate_window > MAX_WINDOW:
            raise checks.fail("rtt_s", f"short enough for a default window of at most "
                              f"{MAX_WINDOW} packets (one BDP + 1)", self.rtt_s)  # fmt: skip
        if self.reorder_window_s is not None:
            checks.real("reorder_window_s", self.reorder_window_s, 0.0, 1.0)
        checks.integer("seed", self.seed, 0, 2**63 - 1)
        checks.integer("retry_cnt", self.retry_cnt, 0, 7)

    # Derived quantities, in packets and integer picoseconds.
    @property
    def n_packets(self) -> int:
        return -(-self.message_bytes // self.mtu_bytes)

    @property
    def tx_ps(self) -> int:
        """Serialisation time of one full packet, mtu_bytes * 8 / bandwidth, in ps (>= 1)."""
        return max(1, round(self.mtu_bytes * 8 / self.bandwidth_gbps * 1e3))

    @property
    def tx_last_ps(self) -> int:
        """Serialisation time of the last (possibly short) packet, in ps (>= 1)."""
        last = self.message_bytes - (self.n_packets - 1) * self.mtu_bytes
        return max(1, round(last * 8 / self.bandwidth_gbps * 1e3))

    @property
    def rtt_ps(self) -> int:
        return round(self.rtt_s / PS)

    @property
    def rto_ps(self) -> int:
        return round(self.rto_s / PS)

    @property
    def bdp_packets(self) -> int:
        """The bandwidth-delay product in packets, ceil(rtt / serialisation time)."""
        return -(-self.rtt_ps // self.tx_ps)

    @property
    def min_full_rate_window(self) -> int:
        """The smallest window that keeps the link busy with no loss, bdp_packets + 1."""
        return self.bdp_packets + 1

    @property
    def window(self) -> int:
        return self.min_full_rate_window if self.window_packets is None else self.window_packets

    @property
    def reorder_window_ps(self) -> int:
        s = self.rtt_s / 4 if self.reorder_window_s is None else self.reorder_window_s
        return round(s / PS)

    @property
    def delay_ps(self) -> int:
        """The extra delay of a late packet, in ps."""
        return round(self.reorder_delay_s / PS)

    def tx_of(self, psn: int) -> int:
        return self.tx_last_ps if psn == self.n_packets - 1 else self.tx_ps

    def ideal_completion_ps(self) -> int:
        """Completion with nothing lost or late: all packets back to back, plus one RTT."""
        return (self.n_packets - 1) * self.tx_ps + self.tx_last_ps + self.rtt_ps


def _too_many_transmissions(config: SimConfig) -> ValueError:
    """The error of a write that needs more than ``MAX_TRANSMISSIONS`` transmissions."""
    return ValueError(
        f"the write must complete within MAX_TRANSMISSIONS = {MAX_TRANSMISSIONS} transmissions"
        f", got more ({config.n_packets} packets, loss {config.loss:g}, window "
        f"{config.window}): lower the loss, the window or the message size"
    )


def _too_late(config: SimConfig) -> ValueError:
    """The error of a write still running after ``MAX_TIME_S`` simulated seconds."""
    return ValueError(
        f"the write must complete within MAX_TIME_S = {MAX_TIME_S:g} simulated seconds, got "
        f"longer (rto_s {config.rto_s:g}, loss {config.loss:g}): shorten rto_s or lower the loss"
    )
