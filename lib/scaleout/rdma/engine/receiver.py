"""Step 2 of the batched engine: the receiver takes what has arrived, a run at a time.

The receiver's rule of :mod:`scaleout.rdma.config` (go-back-N, or selective repeat and
out-of-order placement, which accept the same packets and differ only at the sender),
applied to a whole stretch of packets that arrive one ``tx`` apart; it answers with
feedback items on the wire's way back.
"""

from __future__ import annotations

import numpy as np

from ..config import (
    FB_ACK,
    FB_NACK,
    FB_NONE,
    RX_DISCARDED,
    RX_DUPLICATE,
    RX_IN_ORDER,
    RX_PLACED,
    SimConfig,
)
from ..results import _Recorder
from .wire import Wire


class Receiver:
    def __init__(self, cfg: SimConfig, wire: Wire, rec: _Recorder, ar: np.ndarray):
        self.wire, self.rec, self.ar = wire, rec, ar
        self.n, self.W, self.tx, self.back = cfg.n_packets, cfg.window, cfg.tx_ps, wire.back
        self.gbn = cfg.strategy == "go-back-n"
        self.epsn, self.nak, self.delivered_t = 0, False, None
        self.received = np.zeros(self.n + 1, bool)

    def deliver_until(self, bound: int) -> None:
        """Take every packet that arrives at or before ``bound``, in arrival order (a late
        packet and an on-time stretch interleave exactly as their times say)."""
        fast, slow, tx = self.wire.fast, self.wire.slow, self.tx
        while fast or slow:
            fh = fast[0] if fast else None
            sh = slow[0] if slow else None
            if sh is not None and (fh is None or (sh[0], sh[1]) < (fh[0], fh[1])):
                if sh[0] > bound:
                    return
                slow.popleft()
                self.take(sh[0], sh[1], sh[2], 1)
                continue
            a0, k0, p0, m = fh
            if a0 > bound:
                return
            cnt = min(m, (bound - a0) // tx + 1)
            if sh is not None:  # stop before the next late packet
                gap = sh[0] - a0
                lim = -(-gap // tx)
                if gap % tx == 0 and k0 + gap // tx < sh[1]:
                    lim += 1
                cnt = min(cnt, lim)
            self.take(a0, k0, p0, cnt)
            if cnt == m:
                fast.popleft()
            else:
                fh[0], fh[1], fh[2], fh[3] = a0 + cnt * tx, k0 + cnt, p0 + cnt, m - cnt

    def take(self, a0: int, k0: int, p0: int, m: int) -> None:
        """Packets k0.. (PSNs p0..) arrive at a0, a0+tx, ...: the receiver's rule, in bulk."""
        tx, back, e, fb = self.tx, self.back, self.epsn, self.wire.feedback
        on = self.rec.on
        rx = np.full(m, RX_DUPLICATE, np.int64) if on else None
        fbk = np.full(m, FB_NONE, np.int64) if on else None
        if self.gbn:
            if p0 + m <= e:  # all duplicates: acknowledged again, nothing new
                if on:
                    fbk[:] = FB_ACK
            elif p0 <= e:  # duplicates, then the expected PSN and the rest in order
                j0 = e - p0
                fb.append([a0 + j0 * tx + back, m - j0, k0 + j0, e, e + 1, 1, False])
                self.epsn, self.nak = p0 + m, False
                if on:
                    fbk[:] = FB_ACK
                    rx[j0:] = RX_IN_ORDER
            else:  # beyond the expected PSN: discard; NAK the first one only
                if on:
                    rx[:] = RX_DISCARDED
                if not self.nak:
                    self.nak = True
                    fb.append([a0 + back, 1, k0, p0, e, 0, True])
                    if on:
                        fbk[0] = FB_NACK
        elif m > 1:  # a run of fresh PSNs (first transmissions, in order)
            self.received[p0 : p0 + m] = True
            if p0 == e:
                self.epsn = p0 + m
                fb.append([a0 + back, m, k0, p0, p0 + 1, 1, False])
            else:
                fb.append([a0 + back, m, k0, p0, e, 0, False])
            if on:
                rx[:] = RX_IN_ORDER if p0 == e else RX_PLACED
                fbk[:] = FB_ACK if p0 == e else FB_NACK
        else:  # one packet: in order, a duplicate, or above a hole
            q = p0
            if q >= e and not self.received[q]:
                self.received[q] = True
                if q == e:
                    window = self.received[q + 1 : q + self.W + 2]
                    self.epsn = q + 1 + int(window.argmin())
                    if on:
                        rx[0] = RX_IN_ORDER
                elif on:
                    rx[0] = RX_PLACED
            fb.append([a0 + back, 1, k0, q, self.epsn, 0, False])
            if on:
                fbk[0] = FB_ACK if q < self.epsn else FB_NACK
        if on:
            self._record(a0, k0, p0, m, rx, fbk)
        if self.epsn >= self.n and self.delivered_t is None:
            self.delivered_t = a0 + (m - 1) * tx

    def _record(self, a0, k0, p0, m, rx, fbk) -> None:
        c, ks = self.rec.cols, slice(k0, k0 + m)
        arrive = a0 + self.ar[:m] * self.tx
        c["arrive"][ks], c["rx"][ks], c["fb"][ks] = arrive, rx, fbk
        c["fb_t"][ks] = np.where(fbk != FB_NONE, arrive + self.back, -1)
        placed = self.rec.placed
        for i in np.flatnonzero((rx == RX_IN_ORDER) | (rx == RX_PLACED)).tolist():
            if placed[p0 + i] < 0:
                placed[p0 + i] = a0 + i * self.tx
