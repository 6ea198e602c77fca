"""The RDMA-write simulator of :mod:`scaleout.rdma_sim`, in batches: same result, much faster.

:func:`scaleout.rdma_reference.simulate_reference` moves one packet per event. Here the sender
puts a *run* of consecutive PSNs on the wire in one step, the receiver takes a run of
on-time packets in one step, and the sender reads a run of ACKs in one step, so the work
grows with the number of losses, late packets and round trips, not with the number of
packets. A run is cut wherever the per-packet loop could decide differently:

* it never extends past ``t + min_tx + rtt`` (nothing the run itself causes, and nothing
  the receiver has not yet seen, can reach the sender earlier), nor past the first known
  event that may change the sender's plan (a NAK, an acknowledgement that exposes a hole,
  a timer, the last ACK);
* each packet of it passes the window test against the cumulative ACKs already on their
  way back.

Cutting a run early only costs time: the next step continues at the same instant. The
tests compare both engines transmission by transmission on random configurations.
"""

from __future__ import annotations

import heapq
from bisect import bisect_left
from collections import deque

import numpy as np

from .rdma_sim import (
    FB_ACK,
    FB_NACK,
    FB_NONE,
    PS,
    RX_DISCARDED,
    RX_DUPLICATE,
    RX_IN_ORDER,
    RX_PLACED,
    Fates,
    SimConfig,
    SimResult,
    _Recorder,
    _result,
)  # fmt: skip

INF = 1 << 62


class _Engine:
    def __init__(self, cfg: SimConfig, timeline: bool):
        self.cfg = cfg
        n = self.n = cfg.n_packets
        self.W, self.tx, self.tx_last = cfg.window, cfg.tx_ps, cfg.tx_last_ps
        self.rtt, self.rto, self.reo = cfg.rtt_ps, cfg.rto_ps, cfg.reorder_window_ps
        self.fwd = self.rtt // 2
        self.back = self.rtt - self.fwd
        self.min_tx = min(self.tx, self.tx_last)
        self.delay = round(cfg.reorder_delay_s / PS)
        self.gbn = cfg.strategy == "go-back-n"
        self.ooo = cfg.strategy == "ooo-bitmap"
        self.fates, self.rec = Fates(cfg), _Recorder(n, timeline)
        self.inter = self.fates.interesting_list
        self.ar = np.arange(n + 1, dtype=np.int64)
        # sender
        self.una = self.nxt = self.hi = self.k_next = 0
        self.last_tx = np.full(n, -1, np.int64)
        self.last_send = np.zeros(n, np.int64)
        self.psn_of = np.zeros(1024, np.int64)
        self.sacked = np.zeros(n, bool)
        self.queued = np.zeros(n, bool)
        self.retx_heap, self.loss_heap, self.seq = [], [], 0
        self.maxk, self.t_adv, self.fired, self.ev_ptr = -1, 0, None, 0
        self.cand = INF  # smallest lost/late transmission sent and not yet judged
        self.done_t, self.retx, self.timeouts = None, 0, 0
        # channel and receiver
        self.fast, self.slow, self.fb = deque(), deque(), deque()
        self.epsn, self.nak, self.delivered_t = 0, False, None
        self.received = np.zeros(n + 1, bool)

    def _refresh_cand(self) -> None:
        p = self.ev_ptr
        inter = self.inter
        self.cand = inter[p] if p < len(inter) and inter[p] < self.k_next else INF

    # ----------------------------------------------------------------- sender: sending
    def _commit(self, psn0: int, m: int, t: int) -> int:
        """Put PSNs psn0 .. psn0+m-1 on the wire back to back from time t; return end."""
        fates, tx, fwd = self.fates, self.tx, self.fwd
        k0, hi_before = self.k_next, self.hi
        k_end = self.k_next = k0 + m
        if len(fates.lost) < k_end:
            fates.ensure(k_end)
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
        # Split the run at lost and late packets: each on-time stretch travels as one item.
        short_last = psn0 + m == self.n and self.tx_last != tx
        inter = self.inter
        i0 = bisect_left(inter, k0)
        i1 = bisect_left(inter, k_end, i0)
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
            if i < m and fates.delayed[k]:
                size = self.tx_last if psn0 + i == self.n - 1 else tx
                self.slow.append((t + i * tx + size + fwd + self.delay, k, psn0 + i))
            start = i + 1
        if self.cand == INF and not self.gbn:
            self._refresh_cand()
        return t + (m - 1) * tx + (self.tx_last if psn0 + m == self.n else tx)

    # ----------------------------------------------------------------- receiver
    def _rx_until(self, bound: int) -> None:
        fast, slow, tx = self.fast, self.slow, self.tx
        while fast or slow:
            fh = fast[0] if fast else None
            sh = slow[0] if slow else None
            if sh is not None and (fh is None or (sh[0], sh[1]) < (fh[0], fh[1])):
                if sh[0] > bound:
                    return
                slow.popleft()
                self._rx(sh[0], sh[1], sh[2], 1)
                continue
            a0, k0, p0, m = fh
            if a0 > bound:
                return
            cnt = min(m, (bound - a0) // tx + 1)
            if sh is not None:
                gap = sh[0] - a0
                lim = -(-gap // tx)
                if gap % tx == 0 and k0 + gap // tx < sh[1]:
                    lim += 1
                cnt = min(cnt, lim)
            self._rx(a0, k0, p0, cnt)
            if cnt == m:
                fast.popleft()
            else:
                fh[0], fh[1], fh[2], fh[3] = a0 + cnt * tx, k0 + cnt, p0 + cnt, m - cnt

    def _rx(self, a0: int, k0: int, p0: int, m: int) -> None:
        """Packets k0.. (PSNs p0..) arrive at a0, a0+tx, ...: the receiver's rule, in bulk."""
        tx, back, e = self.tx, self.back, self.epsn
        on = self.rec.on
        rx = np.full(m, RX_DUPLICATE, np.int64) if on else None
        fbk = np.full(m, FB_NONE, np.int64) if on else None
        if self.gbn:
            if p0 + m <= e:  # all duplicates: acknowledged again, nothing new
                if on:
                    fbk[:] = FB_ACK
            elif p0 <= e:  # duplicates, then the expected PSN and the rest in order
                j0 = e - p0
                self.fb.append([a0 + j0 * tx + back, m - j0, k0 + j0, e, e + 1, 1, False])
                self.epsn, self.nak = p0 + m, False
                if on:
                    fbk[:] = FB_ACK
                    rx[j0:] = RX_IN_ORDER
            else:  # beyond the expected PSN: discard; NAK the first one only
                if on:
                    rx[:] = RX_DISCARDED
                if not self.nak:
                    self.nak = True
                    self.fb.append([a0 + back, 1, k0, p0, e, 0, True])
                    if on:
                        fbk[0] = FB_NACK
        elif m > 1:  # a run of fresh PSNs (first transmissions, in order)
            self.received[p0 : p0 + m] = True
            if p0 == e:
                self.epsn = p0 + m
                self.fb.append([a0 + back, m, k0, p0, p0 + 1, 1, False])
            else:
                self.fb.append([a0 + back, m, k0, p0, e, 0, False])
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
            self.fb.append([a0 + back, 1, k0, q, self.epsn, 0, False])
            if on:
                fbk[0] = FB_ACK if q < self.epsn else FB_NACK
        if on:
            c, ks = self.rec.cols, slice(k0, k0 + m)
            arrive = a0 + self.ar[:m] * tx
            c["arrive"][ks], c["rx"][ks], c["fb"][ks] = arrive, rx, fbk
            c["fb_t"][ks] = np.where(fbk != FB_NONE, arrive + back, -1)
            placed = self.rec.placed
            for i in np.flatnonzero((rx == RX_IN_ORDER) | (rx == RX_PLACED)).tolist():
                if placed[p0 + i] < 0:
                    placed[p0 + i] = a0 + i * tx
        if self.epsn >= self.n and self.delivered_t is None:
            self.delivered_t = a0 + (m - 1) * tx

    # ----------------------------------------------------------------- sender: feedback
    def _rto_deadline(self) -> int:
        una = self.una
        if una >= self.hi or una >= self.n:
            return INF
        f = self.fired
        last = self.last_tx[una]
        if f is not None and f[0] == una and f[1] == last and f[2] == self.t_adv:
            return INF
        ls = int(self.last_send[una])
        return (ls if ls > self.t_adv else self.t_adv) + self.rto

    def _special(self, item) -> int:
        """First element of a feedback item at which the sender's plan may change."""
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

    def _consume(self, tau: int) -> None:
        """Process feedback and timers up to time tau, in the reference's order."""
        fb, tx = self.fb, self.tx
        while self.done_t is None:
            fbt = fb[0][0] if fb else INF
            rto = self._rto_deadline()
            lt = self.loss_heap[0][0] if self.loss_heap else INF
            if fbt > tau and rto > tau and lt > tau:
                return
            if fbt <= rto and fbt <= lt:
                item = fb[0]
                f0, m = item[0], item[1]
                limit = min(tau, rto, lt)
                cnt = min(m, (limit - f0) // tx + 1, self._special(item) + 1)
                self._take(item, cnt)
                if cnt == m:
                    fb.popleft()
                else:
                    item[0] += cnt * tx
                    item[1] -= cnt
                    item[2] += cnt
                    item[3] += cnt
                    item[4] += cnt * item[5]
            elif rto <= lt:
                self._fire_rto(rto)
            else:
                _, _, j = heapq.heappop(self.loss_heap)
                h = int(self.psn_of[j])
                if self.last_tx[h] == j and h >= self.una and not self.sacked[h]:
                    if not self.queued[h]:
                        self._queue(h, lt)

    def _take(self, item, cnt: int) -> None:
        f0, m, k0, p0, cum0, step, nak = item
        last = cnt - 1
        cum = cum0 + last * step
        if cum > self.una:
            self.una = cum
            self.t_adv = f0 + last * step * self.tx
            if cum >= self.n:
                first = max(0, self.n - cum0) if step else 0
                self.done_t = f0 + first * self.tx
                return
        if self.gbn:
            if self.una > self.nxt:
                self.nxt = self.una
            if nak and self.last_tx[cum0] < k0:
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
            self._refresh_cand()
            h = int(self.psn_of[j])
            if self.last_tx[h] != j or h < self.una or self.sacked[h] or self.queued[h]:
                continue
            if self.ooo:
                size = self.tx_last if h == self.n - 1 else self.tx
                due = int(self.last_send[h]) + size + self.rtt + self.reo
                self.seq += 1
                heapq.heappush(self.loss_heap, (due if due > t else t, self.seq, j))
            else:
                self._queue(h, t)

    def _queue(self, h: int, t: int) -> None:
        self.queued[h] = True
        heapq.heappush(self.retx_heap, h)
        self.rec.events.append((t, "loss-detected", h))

    def _fire_rto(self, t: int) -> None:
        una = self.una
        self.fired = (una, self.last_tx[una], self.t_adv)
        self.timeouts += 1
        self.rec.events.append((t, "timeout", una))
        if self.gbn:
            self.nxt = una
        elif not self.sacked[una] and not self.queued[una]:
            self.queued[una] = True
            heapq.heappush(self.retx_heap, una)

    # ----------------------------------------------------------------- sender: planning
    def _run_length(self, t: int) -> int:
        """How many PSNs from nxt the per-packet loop would send back to back from t."""
        tx, P, W, gbn, n = self.tx, self.nxt, self.W, self.gbn, self.n
        horizon = min(t + self.min_tx + self.rtt, self._rto_deadline())
        if self.loss_heap and self.loss_heap[0][0] < horizon:
            horizon = self.loss_heap[0][0]
        # Pieces of the cumulative ACK the sender will have seen at send j, as
        # (first j, cum at that j, +1 per j?, length); cums only ever grow.
        pieces = []
        for item in self.fb:
            f0, m = item[0], item[1]
            if f0 >= horizon:
                break
            special = self._special(item)
            if special < m and f0 + special * tx < horizon:
                horizon = f0 + special * tx
            pieces.append((-(-(f0 - t) // tx), item[4], item[5], m))
        jmax = min(n - P, -(-(horizon - t) // tx))
        if jmax <= 0:
            return 0
        una = self.una
        if P + jmax - 1 < una + W and not (gbn and pieces):
            return jmax

        def first_bad(a, b, u, step):
            """First j in [a, b) failing the test when the newest cumulative ACK seen at
            send j is u (step 0) or u + (j - a) (step 1); b if none fails."""
            if a >= b:
                return b
            if not step or u + (b - 1 - a) <= una:  # flat: max(una, u) throughout
                cum = u if u > una else una
                bad = b if cum + W - P >= b else max(a, cum + W - P)
                return a if gbn and cum > P + a else bad
            x = a + max(0, una - u + 1)  # from x on, the climbing ACK exceeds una
            bad = first_bad(a, x, una, 0)
            if bad < x:
                return bad
            return x if P - u + a >= W or (gbn and u - a > P) else b

        start, cum = 0, una
        for idx, (c, cum0, step, m) in enumerate(pieces):
            c = min(c, jmax)
            bad = first_bad(start, c, cum, 0)  # before this item's first ACK is seen
            if bad < c or c == jmax:
                return bad
            end = jmax if idx + 1 == len(pieces) else min(max(pieces[idx + 1][0], c), jmax)
            if step:  # the ACK climbs by one per send for m sends, then stays
                climb_end = min(end, c + m)
                bad = first_bad(c, climb_end, cum0, 1)
                if bad < climb_end:
                    return bad
                start, cum = climb_end, max(cum0 + m - 1, una)
            else:
                start, cum = c, max(cum0, una)
        return first_bad(start, jmax, cum, 0)

    def _wake(self, t: int) -> int:
        """Idle sender: the next instant at which something could become sendable."""
        tx, wake = self.tx, self._rto_deadline()
        if self.loss_heap:
            wake = min(wake, self.loss_heap[0][0])
        need = self.nxt - self.W + 1 if self.nxt < self.n else INF
        for item in self.fb:
            f0, m, k0, p0, cum0, step, nak = item
            if f0 >= wake:
                break
            special = self._special(item)
            if step:  # cumulative ACK climbs by one per element
                opens = max(0, need - cum0)
                if self.gbn:
                    opens = min(opens, max(0, self.nxt + 1 - cum0))
            else:
                jumps = cum0 >= need or (self.gbn and cum0 > self.nxt)
                opens = 0 if jumps else m
            i = min(special, opens)
            if i < m:
                wake = min(wake, f0 + i * tx)
                break
        pending = [q[0][0] for q in (self.fast, self.slow) if q]
        if pending:
            wake = min(wake, min(pending) + self.back)
        if wake >= INF:
            raise RuntimeError("sender idle with nothing in flight (model error)")
        return max(t, wake)

    def run(self) -> SimResult:
        t = 0
        n, W, heap = self.n, self.W, self.retx_heap
        while True:
            self._rx_until(t + self.min_tx + self.fwd - 1)
            self._consume(t)
            if self.done_t is not None:
                break
            while heap and (heap[0] < self.una or self.sacked[heap[0]]):
                self.queued[heapq.heappop(heap)] = False
            if heap:
                h = heapq.heappop(heap)
                self.queued[h] = False
                t = self._commit(h, 1, t)
                continue
            m = 0
            if self.nxt < n and self.nxt < self.una + W:
                m = self._run_length(t)
            if m > 0:
                p = self.nxt
                self.nxt += m
                t = self._commit(p, m, t)
            else:
                t = self._wake(t)
        return self._finish()

    def _finish(self) -> SimResult:
        rec = self.rec
        if rec.on:  # the reference stops at completion: forget later arrivals
            c, m = rec.cols, self.k_next
            late = c["arrive"][:m] > self.done_t
            for key, fill in (("arrive", -1), ("rx", 0), ("fb", 0), ("fb_t", -1)):
                c[key][:m][late] = fill
        counts = {"retx": self.retx, "timeouts": self.timeouts}
        return _result(self.cfg, self.done_t, self.delivered_t, self.k_next, counts,
                       self.fates, rec)  # fmt: skip


def simulate_fast(config: SimConfig, timeline: bool = False) -> SimResult:
    """Same model and result as :func:`scaleout.rdma_reference.simulate_reference`, batched."""
    return _Engine(config, timeline).run()
