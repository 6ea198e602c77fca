"""What one simulated RDMA write returns: :class:`~scaleout.rdma.SimResult` and, on
request, a per-packet :class:`~scaleout.rdma.Timeline`; the recorder both engines fill."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .. import checks
from .channel import Fates
from .config import (
    MAX_TIME_S,
    MAX_TIMELINE_TRANSMISSIONS,
    MAX_TRANSMISSIONS,
    PS,
    RETRY_EXCEEDED,
    SUCCESS,
    SimConfig,
)

_COLUMNS = {  # Timeline field -> numpy dtype kind it must have
    "psn": "iu", "send_s": "f", "lost": "b", "delayed": "b", "retransmission": "b",
    "arrive_s": "f", "rx": "iu", "fb": "iu", "fb_s": "f",
}  # fmt: skip
EVENT_KINDS = ("rewind", "timeout", "loss-detected", "retry-exceeded")


@dataclass
class Timeline:
    """Per-transmission record for drawing: index k is the k-th packet put on the wire.

    Times in seconds (NaN where there is none); ``rx`` is the receiver's outcome (RX_*
    constants: lost, accepted in order, placed out of order, discarded, duplicate) and
    ``fb`` the feedback it sent (FB_NONE, FB_ACK, FB_NACK: a NAK or a NACK/selective ACK
    above a hole). ``placed_s[psn]`` is when each PSN's data first landed in memory;
    ``events`` lists (time_s, kind, psn) for "rewind", "timeout", "loss-detected" and
    "retry-exceeded".
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

    def __post_init__(self):
        length = None
        for name, kinds in _COLUMNS.items():
            value = getattr(self, name)
            if (
                not isinstance(value, np.ndarray)
                or value.ndim != 1
                or value.dtype.kind not in kinds
            ):
                raise checks.fail(name, f"a 1-D numpy array of dtype kind {kinds!r}", value)
            if length is None:
                length = len(value)
            elif len(value) != length:
                raise checks.fail(name, f"an array of {length} transmissions like psn", value)
        placed = self.placed_s
        if not isinstance(placed, np.ndarray) or placed.ndim != 1 or placed.dtype.kind != "f":
            raise checks.fail("placed_s", "a 1-D float array (seconds per PSN)", placed)
        checks.instance("events", self.events, list)
        for event in self.events:
            ok = isinstance(event, tuple) and len(event) == 3 and checks.is_real(event[0])
            if not ok or event[1] not in EVENT_KINDS or not checks.is_integer(event[2]):
                raise checks.fail("events", f"a list of (time_s, kind in {EVENT_KINDS}, psn)",
                                  event)  # fmt: skip


@dataclass
class SimResult:
    """Outcome of one simulated write. Times in seconds, rates in Gb/s (1e9 bits/s).

    ``status`` is the requester's work completion: ``"IBV_WC_SUCCESS"``, or
    ``"IBV_WC_RETRY_EXC_ERR"`` when the retry counter ran out (the QP is then in ERR, and
    ``completion_s`` is when the error completion was written). ``delivered_s`` is when the
    receiver had every byte in place -- the moment its NIC can generate the message's
    completion (None if it never did).
    """

    config: SimConfig
    completion_s: float  # the sender has the ACK of the last PSN (or gives up)
    delivered_s: float | None  # the receiver has every byte in memory
    packets: int  # PSNs in the message
    sent: int  # transmissions, first ones and retransmissions
    retransmitted: int  # transmissions of a PSN sent before
    lost: int  # transmissions the network dropped
    reordered: int  # transmissions that arrived late
    timeouts: int
    timeline: Timeline | None = None
    status: str = SUCCESS

    def __post_init__(self):
        cfg = checks.instance("config", self.config, SimConfig)
        checks.real("completion_s", self.completion_s, 0.0, 2 * MAX_TIME_S, low_open=True)
        if self.delivered_s is not None:
            checks.real("delivered_s", self.delivered_s, 0.0, self.completion_s)
        checks.integer("packets", self.packets, cfg.n_packets, cfg.n_packets)
        sent = checks.integer("sent", self.sent, 1, MAX_TRANSMISSIONS)
        for name in ("retransmitted", "lost", "reordered"):
            checks.integer(name, getattr(self, name), 0, sent)
        checks.integer("timeouts", self.timeouts, 0, MAX_TRANSMISSIONS)
        if self.timeline is not None:
            checks.instance("timeline", self.timeline, Timeline)
        checks.choice("status", self.status, (SUCCESS, RETRY_EXCEEDED))

    @property
    def ok(self) -> bool:
        """True if the write completed (IBV_WC_SUCCESS)."""
        return self.status == SUCCESS

    @property
    def qp_state(self) -> str:
        """RTS after a successful write, ERR after a failed one (the requester QP's state)."""
        return "RTS" if self.ok else "ERR"

    @property
    def goodput_gbps(self) -> float:
        """Message bits over completion time (0 for a failed write)."""
        if not self.ok:
            return 0.0
        return self.config.message_bytes * 8 / self.completion_s / 1e9

    @property
    def goodput_fraction(self) -> float:
        """Goodput as a fraction of the link bandwidth."""
        return self.goodput_gbps / self.config.bandwidth_gbps


class _Recorder:
    """Grows per-transmission arrays (integer ps; -1 = none); shared by both engines."""

    _SPEC = {"psn": -1, "send": -1, "lost": 0, "delayed": 0, "retx": 0,
             "arrive": -1, "rx": 0, "fb": 0, "fb_t": -1}  # fmt: skip

    def __init__(self, n_psn: int, on: bool):
        self.on = on
        self.size = 0
        self.cols = {}
        if on:
            self._grow(min(max(64, 2 * n_psn), MAX_TIMELINE_TRANSMISSIONS))
        self.placed = np.full(n_psn, -1, np.int64) if on else None
        self.events = []

    def _grow(self, size):
        for key, fill in self._SPEC.items():
            old = self.cols.get(key)
            col = np.full(size, fill, np.int64)
            if old is not None:
                col[: len(old)] = old
            self.cols[key] = col

    def ensure(self, k):
        if self.on and k > len(self.cols["psn"]):
            if k > MAX_TIMELINE_TRANSMISSIONS:
                raise checks.fail("timeline", "False for a write of more than "
                                  f"MAX_TIMELINE_TRANSMISSIONS = {MAX_TIMELINE_TRANSMISSIONS} "
                                  "transmissions", True)  # fmt: skip
            self._grow(min(max(k, 2 * len(self.cols["psn"])), MAX_TIMELINE_TRANSMISSIONS))
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


def _result(cfg, done_t, delivered_t, sent, counts, fates, rec, status=SUCCESS) -> SimResult:
    return SimResult(
        config=cfg,
        completion_s=done_t * PS,
        delivered_s=None if delivered_t is None else delivered_t * PS,
        packets=cfg.n_packets,
        sent=sent,
        retransmitted=counts["retx"],
        lost=int(fates.lost[:sent].sum()),
        reordered=int(fates.delayed[:sent].sum()),
        timeouts=counts["timeouts"],
        timeline=rec.timeline(fates),
        status=status,
    )
