"""One RDMA write over one lossy path, packet by packet: the model and its reference loop.

Defined in chapter 12 ("RDMA, RoCEv2 and lost packets"). A write of ``message_bytes`` is cut
into ``n = ceil(message_bytes / mtu_bytes)`` packets with consecutive packet sequence
numbers (PSNs). The sender puts one packet on the wire at a time (serialisation ``mtu*8/bw``
seconds; the last packet is shorter). Every transmission has a fate drawn from the channel
(:class:`Fates`): lost, delayed by ``reorder_delay_s`` (it took a longer path, as adaptive
routing does) or on time. A delivered packet reaches the receiver ``rtt_s/2`` after its last
bit left; the receiver's answer (ACK, NACK or selective ACK) reaches the sender another
``rtt_s/2`` later and is never lost. Times are integer picoseconds, so that two engines can
be compared exactly.

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
(go-back-N: everything from it). :func:`scaleout.rdma_reference.simulate_reference` is the
readable per-packet event loop that defines this behaviour; :mod:`scaleout.rdma_fast`
computes the same result in batches, fast enough for a million packets.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field

import numpy as np

STRATEGIES = ("go-back-n", "selective-repeat", "ooo-bitmap")
LOSS_MODELS = ("independent", "bursty")
PS = 1e-12  # seconds per picosecond: the simulators' time unit
DEFAULT_RTO_S = 4.096e-6 * 2**5  # QP timeout attribute 5 (see rdma.local_ack_timeout_s)
# Receiver outcome per transmission (Timeline.rx) and feedback kind (Timeline.fb).
RX_LOST, RX_IN_ORDER, RX_PLACED, RX_DISCARDED, RX_DUPLICATE = 0, 1, 2, 3, 4
FB_NONE, FB_ACK, FB_NACK = 0, 1, 2


def _check_real(name, value, low, high, low_open=False, high_open=False):
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    bad_low = value <= low if low_open else value < low
    bad_high = value >= high if high_open else value > high
    if bad_low or bad_high:
        lo, hi = "(" if low_open else "[", ")" if high_open else "]"
        raise ValueError(f"{name} must be in {lo}{low:g}, {high:g}{hi}, got {value!r}")
    return float(value)


def _check_int(name, value, low, high=2**62):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    if not low <= value <= high:
        raise ValueError(f"{name} must be in [{low}, {high}], got {value!r}")
    return int(value)


@dataclass(frozen=True)
class SimConfig:
    """Validated parameters of one simulated RDMA write (seconds, bytes, Gb/s).

    ``window_packets=None`` means one bandwidth-delay product plus one packet
    (:attr:`min_full_rate_window`); ``reorder_window_s=None`` means ``rtt_s / 4`` (RACK's
    default, RFC 8985 sec. 6.2). Raises ``ValueError`` for anything out of range.
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

    def __post_init__(self):
        _check_int("message_bytes", self.message_bytes, 1)
        _check_int("mtu_bytes", self.mtu_bytes, 1)
        if self.mtu_bytes > self.message_bytes:
            raise ValueError(
                f"mtu_bytes must be <= message_bytes ({self.message_bytes}), got {self.mtu_bytes}"
            )
        _check_real("bandwidth_gbps", self.bandwidth_gbps, 0.0, 1e6, low_open=True)
        _check_real("rtt_s", self.rtt_s, 0.0, 1.0)
        _check_real("loss", self.loss, 0.0, 1.0, high_open=True)
        if self.loss_model not in LOSS_MODELS:
            raise ValueError(f"loss_model must be one of {LOSS_MODELS}, got {self.loss_model!r}")
        _check_real("burst_packets", self.burst_packets, 1.0, 1e9)
        most = self.burst_packets / (1 + self.burst_packets)
        if self.loss_model == "bursty" and self.loss > most:
            raise ValueError(
                f"loss must be <= burst_packets/(burst_packets+1) = {most:.3g} for bursty losses "
                f"(good stretches average at least one packet), got {self.loss}"
            )
        _check_real("reorder", self.reorder, 0.0, 1.0, high_open=True)
        _check_real("reorder_delay_s", self.reorder_delay_s, 0.0, 1.0)
        _check_real("rto_s", self.rto_s, 0.0, 100.0, low_open=True)
        if self.rto_ps < self.rtt_ps + self.tx_ps:
            raise ValueError(
                f"rto_s must be >= rtt_s + one packet's serialisation "
                f"({(self.rtt_ps + self.tx_ps) * PS:.4g} s), got {self.rto_s}"
            )
        if self.strategy not in STRATEGIES:
            raise ValueError(f"strategy must be one of {STRATEGIES}, got {self.strategy!r}")
        if self.window_packets is not None:
            _check_int("window_packets", self.window_packets, 1)
        if self.reorder_window_s is not None:
            _check_real("reorder_window_s", self.reorder_window_s, 0.0, 1.0)
        _check_int("seed", self.seed, 0)

    # Derived quantities, in packets and integer picoseconds.
    @property
    def n_packets(self) -> int:
        return -(-self.message_bytes // self.mtu_bytes)

    @property
    def tx_ps(self) -> int:
        """The serialisation time of one full packet, mtu_bytes * 8 / bandwidth, in ps (>= 1)."""
        return max(1, round(self.mtu_bytes * 8 / self.bandwidth_gbps * 1e3))

    @property
    def tx_last_ps(self) -> int:
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

    def tx_of(self, psn: int) -> int:
        return self.tx_last_ps if psn == self.n_packets - 1 else self.tx_ps

    def ideal_completion_ps(self) -> int:
        """Completion with nothing lost or late: all packets back to back, plus one RTT."""
        return (self.n_packets - 1) * self.tx_ps + self.tx_last_ps + self.rtt_ps


class Fates:
    """What the channel does to transmission k (the k-th packet put on the wire).

    ``lost[k]``, ``delayed[k]`` (never both): drawn in fixed chunks from two independent
    streams of ``numpy.random.default_rng(seed)``'s seed sequence, so the k-th transmission
    meets the same fate whatever the strategy (common random numbers) and the same fate
    for every run with the same seed. Losses are independent (probability ``loss``) or
    bursty: a Gilbert-Elliott chain whose bad state loses every packet, with mean burst
    ``burst_packets`` and the same long-run loss rate ``loss`` (Gilbert 1960, Elliott 1963).
    """

    CHUNK = 1 << 16

    def __init__(self, config: SimConfig):
        self.cfg = config
        loss_seq, reorder_seq = np.random.SeedSequence(config.seed).spawn(2)
        self._loss_rng = np.random.default_rng(loss_seq)
        self._reorder_rng = np.random.default_rng(reorder_seq)
        self.lost = np.zeros(0, bool)
        self.delayed = np.zeros(0, bool)
        self.interesting = np.zeros(0, np.int64)  # indices that are lost or delayed
        self.interesting_list: list[int] = []  # the same, for fast scalar access
        self._bad, self._left = None, 0  # Gilbert-Elliott state carried across chunks

    def ensure(self, k: int) -> None:
        """Draw fates until transmission index k - 1 has one."""
        while len(self.lost) < k:
            lost = self._draw_losses(self.CHUNK)
            delayed = (self._reorder_rng.random(self.CHUNK) < self.cfg.reorder) & ~lost
            start = len(self.lost)
            self.lost = np.concatenate([self.lost, lost])
            self.delayed = np.concatenate([self.delayed, delayed])
            new = np.flatnonzero(lost | delayed) + start
            self.interesting = np.concatenate([self.interesting, new])
            self.interesting_list.extend(new.tolist())

    def _draw_losses(self, size: int) -> np.ndarray:
        cfg, rng = self.cfg, self._loss_rng
        if cfg.loss == 0.0:
            return np.zeros(size, bool)
        if cfg.loss_model == "independent":
            return rng.random(size) < cfg.loss
        mean_bad = cfg.burst_packets
        mean_good = mean_bad * (1 - cfg.loss) / cfg.loss
        if self._bad is None:  # start in the stationary distribution
            self._bad = bool(rng.random() < cfg.loss)
            self._left = int(rng.geometric(1 / (mean_bad if self._bad else mean_good)))
        out = np.zeros(size, bool)
        pos = 0
        while pos < size:
            take = min(self._left, size - pos)
            out[pos : pos + take] = self._bad
            pos += take
            self._left -= take
            if self._left == 0:
                self._bad = not self._bad
                self._left = int(rng.geometric(1 / (mean_bad if self._bad else mean_good)))
        return out


@dataclass
class Timeline:
    """Per-transmission record for drawing: index k is the k-th packet put on the wire.

    Times in seconds (NaN where there is none); ``rx`` is the receiver's outcome (RX_*
    constants: lost, accepted in order, placed out of order, discarded, duplicate) and
    ``fb`` the feedback it sent (FB_NONE, FB_ACK, FB_NACK: a NAK or a NACK/selective ACK
    above a hole). ``placed_s[psn]`` is when each PSN's data first landed in memory;
    ``events`` lists (time_s, kind, psn) for "rewind", "timeout" and "loss-detected".
    """

    psn: np.ndarray
    send_s: np.ndarray
    lost: np.ndarray
    delayed: np.ndarray
    retransmission: np.ndarray
    arrive_s: np.ndarray
    rx: np.ndarray
    fb: np.ndarray
    fb_s: np.ndarray
    placed_s: np.ndarray
    events: list = field(default_factory=list)


@dataclass
class SimResult:
    """Outcome of one simulated write. Times in seconds, rates in Gb/s (1e9 bits/s)."""

    config: SimConfig
    completion_s: float  # the sender has the ACK of the last PSN (the write's completion)
    delivered_s: float  # the receiver has every byte in memory
    packets: int  # PSNs in the message
    sent: int  # transmissions, first ones and retransmissions
    retransmitted: int  # transmissions of a PSN sent before
    lost: int  # transmissions the network dropped
    reordered: int  # transmissions that arrived late
    timeouts: int
    timeline: Timeline | None = None

    @property
    def goodput_gbps(self) -> float:
        """Message bits over completion time."""
        return self.config.message_bytes * 8 / self.completion_s / 1e9

    @property
    def goodput_fraction(self) -> float:
        """Goodput as a fraction of the link bandwidth."""
        return self.goodput_gbps / self.config.bandwidth_gbps


class _Recorder:
    """Grows per-transmission arrays; shared by both engines."""

    def __init__(self, n_psn: int, on: bool):
        self.on = on
        self.size = 0
        self.cols = {}
        if on:
            self._grow(max(64, 2 * n_psn))
        self.placed = np.full(n_psn, -1, np.int64) if on else None
        self.events = []

    def _grow(self, size):
        spec = {"psn": -1, "send": -1, "lost": 0, "delayed": 0, "retx": 0,
                "arrive": -1, "rx": 0, "fb": 0, "fb_t": -1}  # fmt: skip
        for key, fill in spec.items():
            old = self.cols.get(key)
            col = np.full(size, fill, np.int64)
            if old is not None:
                col[: len(old)] = old
            self.cols[key] = col

    def ensure(self, k):
        if self.on and k > len(self.cols["psn"]):
            self._grow(max(k, 2 * len(self.cols["psn"])))
        self.size = max(self.size, k)

    def timeline(self, fates: Fates) -> Timeline | None:
        if not self.on:
            return None
        c, m = self.cols, self.size

        def sec(a):
            out = a[:m].astype(float) * PS
            out[a[:m] < 0] = np.nan
            return out

        placed = self.placed.astype(float) * PS
        placed[self.placed < 0] = np.nan
        return Timeline(
            c["psn"][:m].copy(), sec(c["send"]), fates.lost[:m].copy(), fates.delayed[:m].copy(),
            c["retx"][:m].astype(bool), sec(c["arrive"]), c["rx"][:m].copy(),
            c["fb"][:m].copy(), sec(c["fb_t"]), placed,
            [(t * PS, kind, psn) for t, kind, psn in self.events],
        )  # fmt: skip


def _result(cfg, done_t, delivered_t, sent, counts, fates, rec) -> SimResult:
    return SimResult(
        config=cfg,
        completion_s=done_t * PS,
        delivered_s=delivered_t * PS,
        packets=cfg.n_packets,
        sent=sent,
        retransmitted=counts["retx"],
        lost=int(fates.lost[:sent].sum()),
        reordered=int(fates.delayed[:sent].sum()),
        timeouts=counts["timeouts"],
        timeline=rec.timeline(fates),
    )
