"""The RDMA-write simulator of :mod:`scaleout.rdma.config`, in batches: the same result as
the per-packet reference loop (:func:`scaleout.rdma.simulate_reference`), fast
enough for a million packets.

The reference moves one packet per event. Here the sender puts a *run* of consecutive PSNs
on the wire in one step, the receiver takes a run of on-time packets in one step, and the
sender reads a run of ACKs in one step, so the work grows with the number of losses, late
packets and round trips, not with the number of packets. One turn of the loop in
``_Engine.run``:

1. the receiver takes every packet that has arrived (:mod:`~scaleout.rdma.engine.receiver`;
   the packets travel as items on :mod:`~scaleout.rdma.engine.wire`);
2. the sender reads the ACKs and NAKs that have come back and fires its timers, in the
   reference's order (:mod:`~scaleout.rdma.engine.sender`);
3. if a loss was detected, it resends that PSN;
4. otherwise it sends as long a run of new PSNs as the per-packet loop would
   (``run_length``);
5. or, if it may send nothing, it sleeps until something could change
   (``wake``).

The tests compare both engines transmission by transmission on random configurations.
"""

from __future__ import annotations

import numpy as np

from ... import checks
from ..channel import Fates
from ..config import SimConfig
from ..results import SimResult, _Recorder, _result
from .plan import run_length, wake
from .receiver import Receiver
from .sender import Sender
from .wire import Wire


class _Engine:
    def __init__(self, cfg: SimConfig, timeline: bool):
        self.cfg = cfg
        self.fates, self.rec = Fates(cfg), _Recorder(cfg.n_packets, timeline)
        ar = np.arange(cfg.n_packets + 1, dtype=np.int64)
        self.wire = Wire(cfg, self.fates)
        self.receiver = Receiver(cfg, self.wire, self.rec, ar)
        self.sender = Sender(cfg, self.wire, self.fates, self.rec, ar)

    def run(self) -> SimResult:
        s, rx, wire = self.sender, self.receiver, self.wire
        lead = s.min_tx + wire.fwd - 1  # nothing sent from t on can arrive before t + lead
        t = 0
        while True:
            rx.deliver_until(t + lead)  # 1
            s.consume(t)  # 2
            if s.done_t is not None:
                break
            h = s.next_retransmission()  # 3
            if h is not None:
                t = s.commit(h, 1, t)
                continue
            m = run_length(s, t) if s.nxt < s.n and s.nxt < s.una + s.W else 0  # 4
            if m > 0:
                p = s.nxt
                s.nxt += m
                t = s.commit(p, m, t)
            else:
                t = wake(s, wire, t)  # 5
        return self._finish()

    def _finish(self) -> SimResult:
        rec, s = self.rec, self.sender
        done = s.done_t
        if rec.on:  # the reference stops at completion: forget later arrivals
            c, m = rec.cols, s.k_next
            late = c["arrive"][:m] > done
            for key, fill in (("arrive", -1), ("rx", 0), ("fb", 0), ("fb_t", -1)):
                c[key][:m][late] = fill
            rec.placed[rec.placed > done] = -1
        delivered = self.receiver.delivered_t
        if delivered is not None and delivered > done:
            delivered = None
        counts = {"retx": s.retx, "timeouts": s.timeouts}
        return _result(self.cfg, done, delivered, s.k_next, counts, self.fates, rec, s.status)


def simulate_fast(config: SimConfig, timeline: bool = False) -> SimResult:
    """Same model and result as :func:`scaleout.rdma.simulate_reference`, batched."""
    config = checks.instance("config", config, SimConfig)
    return _Engine(config, checks.boolean("timeline", timeline)).run()
