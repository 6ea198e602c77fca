"""The model of :mod:`scaleout.rdma.config` as a plain event loop, one packet at a time.

This is the definition of what the simulator does (chapter 12): slow, but every rule is one
line. The batched engine :mod:`scaleout.rdma.engine` must, and is tested to, produce exactly
the same transmissions, arrivals, feedback and times.
"""

from __future__ import annotations

import heapq

import numpy as np

from .. import checks
from .channel import Fates
from .config import (
    FB_ACK,
    FB_NACK,
    FB_NONE,
    MAX_TIME_PS,
    MAX_TRANSMISSIONS,
    RETRY_EXCEEDED,
    RX_DISCARDED,
    RX_DUPLICATE,
    RX_IN_ORDER,
    RX_PLACED,
    SUCCESS,
    SimConfig,
    _too_late,
    _too_many_transmissions,
)
from .results import SimResult, _Recorder, _result


def simulate_reference(config: SimConfig, timeline: bool = False) -> SimResult:
    """The model as a plain event loop, one packet at a time (slow; the definition).

    Events at the same time run in this order: arrivals at the receiver, feedback at the
    sender, the retransmission timeout, OOO loss timers, then the sender's next send.
    """
    cfg = checks.instance("config", config, SimConfig)
    timeline = checks.boolean("timeline", timeline)
    n, W, rtt = cfg.n_packets, cfg.window, cfg.rtt_ps
    fwd = rtt // 2
    back = rtt - fwd
    gbn, ooo = cfg.strategy == "go-back-n", cfg.strategy == "ooo-bitmap"
    fates, rec = Fates(cfg), _Recorder(n, timeline)
    heap, seq = [], [0]

    def push(t, prio, *payload):
        seq[0] += 1
        heapq.heappush(heap, (t, prio, seq[0], payload))

    # sender state
    una, nxt, hi, k_next, wire_free = 0, 0, 0, 0, 0
    last_tx = np.full(n, -1, np.int64)
    last_send = np.zeros(n, np.int64)
    psn_of = []
    sacked = np.zeros(n, bool)
    queued = np.zeros(n, bool)
    retx_heap = []
    maxk = -1
    t_adv = 0
    fired_key = None
    send_scheduled = [False]
    done_t, status = None, SUCCESS
    retries = 0  # the transport retry counter: retries since the cumulative ACK advanced
    counts = {"retx": 0, "timeouts": 0}
    ev_ptr = 0  # candidates (lost/delayed transmissions) below maxk already judged
    # receiver state
    epsn, nak = 0, False
    received = np.zeros(n + 1, bool)
    delivered_t = None

    def rto_deadline():
        if una >= n or una >= hi or fired_key == (una, int(last_tx[una]), t_adv):
            return None
        return max(t_adv, int(last_send[una])) + cfg.rto_ps

    def arm():
        d = rto_deadline()
        if d is not None:
            push(d, 2, "rto", (una, int(last_tx[una]), t_adv))

    def wake(t):
        if not send_scheduled[0]:
            send_scheduled[0] = True
            push(max(t, wire_free), 4, "send")

    def retry(t):
        """One more retry (a timeout or a go-back-N rewind); False if the counter ran out."""
        nonlocal retries, done_t, status
        retries += 1
        if retries <= cfg.retry_cnt:
            return True
        done_t, status = t, RETRY_EXCEEDED
        rec.events.append((t, "retry-exceeded", una))
        return False

    def judge(j, t):
        """Transmission j is a candidate: a later-sent packet has been acknowledged."""
        h = psn_of[j]
        if last_tx[h] != j or h < una or sacked[h] or queued[h]:
            return
        if ooo:
            due = int(last_send[h]) + cfg.tx_of(h) + rtt + cfg.reorder_window_ps
            push(max(t, due), 3, "loss", j)
        else:
            queue(h, t)

    def queue(h, t):
        queued[h] = True
        heapq.heappush(retx_heap, h)
        rec.events.append((t, "loss-detected", h))

    def transmit(psn, t):
        nonlocal k_next, hi
        k = k_next
        if k + 1 > MAX_TRANSMISSIONS:
            raise _too_many_transmissions(cfg)
        if t > MAX_TIME_PS:
            raise _too_late(cfg)
        k_next += 1
        fates.ensure(k + 1)
        rec.ensure(k + 1)
        psn_of.append(psn)
        retx = last_tx[psn] >= 0
        counts["retx"] += int(retx)
        last_tx[psn], last_send[psn] = k, t
        hi = max(hi, psn + 1)
        end = t + cfg.tx_of(psn)
        if rec.on:
            c = rec.cols
            c["psn"][k], c["send"][k], c["retx"][k] = psn, t, int(retx)
        if not fates.lost[k]:
            arrive = end + fwd + (cfg.delay_ps if fates.delayed[k] else 0)
            push(arrive, 0, "arrive", k, psn)
        return end

    def receive(t, k, q):
        nonlocal epsn, nak, delivered_t
        fb, rx, cum = FB_NONE, RX_DUPLICATE, epsn
        if gbn:
            if q == epsn:
                epsn, nak, rx, fb = epsn + 1, False, RX_IN_ORDER, FB_ACK
            elif q > epsn:
                rx = RX_DISCARDED
                if not nak:
                    nak, fb = True, FB_NACK
            else:
                fb = FB_ACK
            cum = epsn
            if fb == FB_NACK or rx == RX_IN_ORDER:
                push(t + back, 1, "fb", k, q, cum, fb == FB_NACK)
        else:
            if q >= epsn and not received[q]:
                received[q] = True
                if q == epsn:
                    while received[epsn]:
                        epsn += 1
                    rx = RX_IN_ORDER
                else:
                    rx = RX_PLACED
            cum = epsn
            fb = FB_ACK if q < epsn else FB_NACK
            push(t + back, 1, "fb", k, q, cum, False)
        if rec.on:
            c = rec.cols
            c["arrive"][k], c["rx"][k], c["fb"][k] = t, rx, fb
            if fb != FB_NONE:
                c["fb_t"][k] = t + back
            if rx in (RX_IN_ORDER, RX_PLACED) and rec.placed[q] < 0:
                rec.placed[q] = t
        if epsn >= n and delivered_t is None:
            delivered_t = t

    def feedback(t, k, q, cum, is_nak):
        nonlocal una, nxt, t_adv, maxk, ev_ptr, done_t, retries
        if cum > una:
            una, t_adv, retries = cum, t, 0
            if gbn:
                nxt = max(nxt, una)
        if una >= n:
            done_t = t
            return
        if gbn:
            if is_nak and last_tx[cum] < k:
                if not retry(t):
                    return
                nxt = cum
                rec.events.append((t, "rewind", cum))
        else:
            sacked[q] = True
            maxk = max(maxk, k)
            fates.ensure(k_next)
            cand = fates.interesting
            while ev_ptr < len(cand) and cand[ev_ptr] < maxk:
                judge(int(cand[ev_ptr]), t)
                ev_ptr += 1
        arm()
        wake(t)

    wake(0)
    while heap and done_t is None:
        t, _, _, payload = heapq.heappop(heap)
        kind = payload[0]
        if kind == "arrive":
            receive(t, payload[1], payload[2])
        elif kind == "fb":
            feedback(t, *payload[1:])
        elif kind == "rto":
            key = (una, int(last_tx[una]), t_adv) if una < n else None
            if payload[1] == key and key != fired_key:
                fired_key = payload[1]
                counts["timeouts"] += 1
                rec.events.append((t, "timeout", una))
                if not retry(t):
                    break
                if gbn:
                    nxt = una
                elif not sacked[una] and not queued[una]:
                    queued[una] = True
                    heapq.heappush(retx_heap, una)
                wake(t)
        elif kind == "loss":
            judge_due = payload[1]
            h = psn_of[judge_due]
            if last_tx[h] == judge_due and h >= una and not sacked[h] and not queued[h]:
                queue(h, t)
                wake(t)
        else:  # send
            send_scheduled[0] = False
            while retx_heap and (retx_heap[0] < una or sacked[retx_heap[0]]):
                queued[heapq.heappop(retx_heap)] = False
            if retx_heap:
                h = heapq.heappop(retx_heap)
                queued[h] = False
                wire_free = transmit(h, t)
            elif nxt < n and nxt < una + W:
                wire_free = transmit(nxt, t)
                nxt += 1
            else:
                continue
            arm()
            wake(wire_free)
    if done_t is None:
        raise RuntimeError("simulation ended before the write completed (model error)")
    return _result(cfg, done_t, delivered_t, k_next, counts, fates, rec, status)
