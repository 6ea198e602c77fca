"""Steps 2 to 4 of the batched engine: the sender reads its feedback and commits runs.

The sender's state is the per-packet loop's (:func:`~scaleout.rdma.simulate_reference`):
cumulative ACK ``una``, next new PSN ``nxt``, the last transmission and send time of each
PSN, selective ACKs, the queue of detected losses, the retransmission timer and the
transport retry counter. What is new is that feedback is read a run at a time:
``Sender.consume`` takes as many answers of a feedback item at once as it can without
stepping over an event that may change the sender's plan (``Sender.special``), a timer, or
the time the engine has reached.
"""

from __future__ import annotations

import heapq

import numpy as np

from ..channel import Fates
from ..config import (
    MAX_TIME_PS,
    MAX_TRANSMISSIONS,
    RETRY_EXCEEDED,
    SUCCESS,
    SimConfig,
    _too_late,
    _too_many_transmissions,
)
from ..results import _Recorder
from .wire import Wire

INF = 1 << 62


class Sender:
    def __init__(self, cfg: SimConfig, wire: Wire, fates: Fates, rec: _Recorder, ar: np.ndarray):
        self.cfg, self.wire, self.fates, self.rec, self.ar = cfg, wire, fates, rec, ar
        n = self.n = cfg.n_packets
        self.W, self.tx, self.tx_last = cfg.window, cfg.tx_ps, cfg.tx_last_ps
        self.rtt, self.rto, self.reo = cfg.rtt_ps, cfg.rto_ps, cfg.reorder_window_ps
        self.min_tx = min(self.tx, self.tx_last)
        self.gbn = cfg.strategy == "go-back-n"
        self.ooo = cfg.strategy == "ooo-bitmap"
        self.fb = wire.feedback
        self.inter = fates.interesting_list
        self.una = self.nxt = self.hi = self.k_next = 0
        self.last_tx = np.full(n, -1, np.int64)
        self.last_send = np.zeros(n, np.int64)
        self.psn_of = np.zeros(1024, np.int64)
        self.sacked = np.zeros(n, bool)
        self.queued = np.zeros(n, bool)
        self.retx_heap, self.loss_heap, self.seq = [], [], 0
        self.maxk, self.t_adv, self.fired, self.ev_ptr = -1, 0, None, 0
        self.cand = INF  # smallest lost/late transmission sent and not yet judged
        self.done_t, self.status, self.retries = None, SUCCESS, 0
        self.retx = self.timeouts = 0

    # ------------------------------------------------------------------ sending
    def commit(self, psn0: int, m: int, t: int) -> int:
        """Put PSNs psn0 .. psn0+m-1 on the wire back to back from time t; return the end."""
        tx = self.tx
        k0, hi_before = self.k_next, self.hi
        k_end = self.k_next = k0 + m
        if k_end > MAX_TRANSMISSIONS:
            raise _too_many_transmissions(self.cfg)
        if t + (m - 1) * tx > MAX_TIME_PS:
            raise _too_late(self.cfg)
        if self.fates.size < k_end:
            self.fates.ensure(k_end)
        if k_end > len(self.psn_of):
            grow = max(len(self.psn_of), k_end)
            self.psn_of = np.concatenate([self.psn_of, np.zeros(grow, np.int64)])
        if psn0 < hi_before:
            self.retx += min(psn0 + m, hi_before) - psn0
        if m == 1:
            self.psn_of[k0] = psn0
            self.last_tx[psn0] = k0
            self.last_send[psn0] = t
        else:
            j = self.ar[:m]
            self.psn_of[k0:k_end] = j + psn0
            self.last_tx[psn0 : psn0 + m] = j + k0
            self.last_send[psn0 : psn0 + m] = j * tx + t
        if psn0 + m > hi_before:
            self.hi = psn0 + m
        if self.rec.on:
            j = self.ar[:m]
            self.rec.ensure(k_end)
            c = self.rec.cols
            c["psn"][k0:k_end] = psn0 + j
            c["send"][k0:k_end] = t + j * tx
            c["retx"][k0:k_end] = psn0 + j < hi_before
        self.wire.launch(k0, psn0, m, t)
        if self.cand == INF and not self.gbn:
            self.refresh_cand()
        return t + (m - 1) * tx + (self.tx_last if psn0 + m == self.n else tx)

    def next_retransmission(self) -> int | None:
        """The lowest PSN queued for retransmission that still needs one, or None."""
        heap = self.retx_heap
        while heap and (heap[0] < self.una or self.sacked[heap[0]]):
            self.queued[heapq.heappop(heap)] = False
        if not heap:
            return None
        h = heapq.heappop(heap)
        self.queued[h] = False
        return h

    def refresh_cand(self) -> None:
        p, inter = self.ev_ptr, self.inter
        self.cand = inter[p] if p < len(inter) and inter[p] < self.k_next else INF

    # ------------------------------------------------------------------ timers
    def rto_deadline(self) -> int:
        una = self.una
        if una >= self.hi or una >= self.n:
            return INF
        f = self.fired
        last = self.last_tx[una]
        if f is not None and f[0] == una and f[1] == last and f[2] == self.t_adv:
            return INF
        ls = int(self.last_send[una])
        return (ls if ls > self.t_adv else self.t_adv) + self.rto

    def retry(self, t: int) -> bool:
        """One more retry (a timeout, or a go-back-N rewind on a NAK); False, and the write
        fails with IBV_WC_RETRY_EXC_ERR, once the counter has run out."""
        self.retries += 1
        if self.retries <= self.cfg.retry_cnt:
            return True
        self.done_t, self.status = t, RETRY_EXCEEDED
        self.rec.events.append((t, "retry-exceeded", self.una))
        return False

    def fire_rto(self, t: int) -> None:
        una = self.una
        self.fired = (una, self.last_tx[una], self.t_adv)
        self.timeouts += 1
        self.rec.events.append((t, "timeout", una))
        if not self.retry(t):
            return
        if self.gbn:
            self.nxt = una
        elif not self.sacked[una] and not self.queued[una]:
            self.queued[una] = True
            heapq.heappush(self.retx_heap, una)

    # ------------------------------------------------------------------ feedback
    def special(self, item) -> int:
        """First answer of a feedback item at which the sender's plan may change."""
        if item[6]:  # a NAK
            return 0
        m, k0, cum0 = item[1], item[2], item[4]
        best = m
        if item[5]:
            if cum0 + m - 1 >= self.n:
                best = max(0, self.n - cum0)
        elif cum0 >= self.n:
            return 0
        j = self.cand
        if not self.gbn and j < INF and k0 + m - 1 > j:  # a later packet is acked: judge j
            i = j + 1 - k0
            best = min(best, i if i > 0 else 0)
        return best

    def consume(self, tau: int) -> None:
        """Process feedback and timers up to time tau, in the reference's order."""
        fb, tx = self.fb, self.tx
        while self.done_t is None:
            fbt = fb[0][0] if fb else INF
            rto = self.rto_deadline()
            lt = self.loss_heap[0][0] if self.loss_heap else INF
            if fbt > tau and rto > tau and lt > tau:
                return
            if fbt <= rto and fbt <= lt:
                item = fb[0]
                f0, m = item[0], item[1]
                limit = min(tau, rto, lt)
                cnt = min(m, (limit - f0) // tx + 1, self.special(item) + 1)
                self.take(item, cnt)
                if cnt == m:
                    fb.popleft()
                else:
                    item[0] += cnt * tx
                    item[1] -= cnt
                    item[2] += cnt
                    item[3] += cnt
                    item[4] += cnt * item[5]
            elif rto <= lt:
                self.fire_rto(rto)
            else:
                _, _, j = heapq.heappop(self.loss_heap)
                h = int(self.psn_of[j])
                if self.last_tx[h] == j and h >= self.una and not self.sacked[h]:
                    if not self.queued[h]:
                        self.queue(h, lt)

    def take(self, item, cnt: int) -> None:
        """The first ``cnt`` answers of a feedback item reach the sender."""
        f0, m, k0, p0, cum0, step, nak = item
        last = cnt - 1
        cum = cum0 + last * step
        if cum > self.una:  # progress: the retry counter starts again
            self.una, self.retries = cum, 0
            self.t_adv = f0 + last * step * self.tx
            if cum >= self.n:
                first = max(0, self.n - cum0) if step else 0
                self.done_t = f0 + first * self.tx
                return
        if self.gbn:
            if self.una > self.nxt:
                self.nxt = self.una
            if nak and self.last_tx[cum0] < k0:
                if not self.retry(f0):
                    return
                self.nxt = cum0
                self.rec.events.append((f0, "rewind", cum0))
            return
        if cnt == 1:
            self.sacked[p0] = True
        else:
            self.sacked[p0 : p0 + cnt] = True
        if k0 + last > self.maxk:
            self.maxk = k0 + last
        t = f0 + last * self.tx
        while self.cand < self.maxk:
            j = self.cand
            self.ev_ptr += 1
            self.refresh_cand()
            h = int(self.psn_of[j])
            if self.last_tx[h] != j or h < self.una or self.sacked[h] or self.queued[h]:
                continue
            if self.ooo:
                size = self.tx_last if h == self.n - 1 else self.tx
                due = int(self.last_send[h]) + size + self.rtt + self.reo
                self.seq += 1
                heapq.heappush(self.loss_heap, (due if due > t else t, self.seq, j))
            else:
                self.queue(h, t)

    def queue(self, h: int, t: int) -> None:
        self.queued[h] = True
        heapq.heappush(self.retx_heap, h)
        self.rec.events.append((t, "loss-detected", h))
