"""Step 1 of the batched engine: putting a run of packets on the wire.

The path in both directions, as queues of *items* rather than packets: ``fast`` holds
on-time stretches of consecutive transmissions (``[arrival of the first, k0, psn0,
count]``, one packet every ``tx`` ps), ``slow`` the late packets one by one (``(arrival,
k, psn)``), and ``feedback`` the receiver's answers on their way back (``[time of the
first, count, k0, psn0, cum0, step, is_nak]``: ``count`` answers one ``tx`` apart, whose
cumulative ACK starts at ``cum0`` and climbs by ``step`` per answer). Lost packets are not
queued at all.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import deque

from ..channel import Fates
from ..config import SimConfig


class Wire:
    def __init__(self, cfg: SimConfig, fates: Fates):
        self.fates = fates
        self.inter = fates.interesting_list  # lost or late transmissions, in order
        self.n, self.tx, self.tx_last = cfg.n_packets, cfg.tx_ps, cfg.tx_last_ps
        self.fwd = cfg.rtt_ps // 2
        self.back = cfg.rtt_ps - self.fwd
        self.delay = cfg.delay_ps
        self.fast: deque = deque()
        self.slow: deque = deque()
        self.feedback: deque = deque()

    def launch(self, k0: int, psn0: int, m: int, t: int) -> None:
        """Transmissions k0 .. k0+m-1 (PSNs psn0 ..) leave back to back from time t: the
        run is split at every lost or late packet; each on-time stretch travels as one
        item, each late packet on its own, a short last packet of the message on its own."""
        tx, fwd, n = self.tx, self.fwd, self.n
        k_end = k0 + m
        short_last = psn0 + m == n and self.tx_last != tx
        inter = self.inter
        i0 = bisect_left(inter, k0)
        i1 = bisect_left(inter, k_end, i0)
        delayed = self.fates.delayed
        start = 0
        for k in inter[i0:i1] + [k_end]:
            i = k - k0
            stop = m - 1 if short_last and i == m else i
            if stop > start:
                self.fast.append([t + (start + 1) * tx + fwd, k0 + start, psn0 + start,
                                  stop - start])  # fmt: skip
            if short_last and i == m and start <= m - 1:  # the short last packet on its own
                s = t + (m - 1) * tx
                self.fast.append([s + self.tx_last + fwd, k0 + m - 1, psn0 + m - 1, 1])
            if i < m and delayed[k]:
                size = self.tx_last if psn0 + i == n - 1 else tx
                self.slow.append((t + i * tx + size + fwd + self.delay, k, psn0 + i))
            start = i + 1

    def next_arrival(self) -> int | None:
        """When the next packet in flight reaches the receiver (None if none is)."""
        heads = [q[0][0] for q in (self.fast, self.slow) if q]
        return min(heads) if heads else None
