"""A switch port with priority flow control (IEEE 802.1Qbb): pauses, headroom, pause
propagation, and the head-of-line blocking of a victim flow.

The setting (time-stepped fluid, one priority class):

* Switch S has ingress port 0, fed by upstream switch U over one cable, and ingress ports
  1..n-1, each fed directly by an incast sender. Egress port X goes to the incast's
  receiver; egress port A to the victim's receiver, which nobody else uses.
* U carries two flows to S: the victim (host V to A) and incast sender 0 (to X). U's
  egress to S serves its two queues in turn at line rate.
* S counts buffer per ingress port. When port 0's bytes reach ``xoff_bytes`` S sends PAUSE
  to U; when they fall to ``xon_bytes`` it sends RESUME. A pause takes effect one cable
  delay later (plus ``response_s``), so bytes keep arriving: the port needs **headroom**,
  2 x line rate x cable delay + the response time's bytes + 2 MTU (one frame being sent at
  each end), above XOFF (:func:`headroom_bytes`). U does the same to its hosts: **pause
  propagation**.
* While U is paused, the victim cannot move either, although A is idle: PFC pauses a
  whole priority on a link, not a flow. That is head-of-line blocking of a victim flow.

Egress X serves the ingress ports with bytes for it in turn (round robin), so the incast
shares X and the buffer at port 0 grows whenever U sends faster than port 0's share of X.
Storms and deadlocks, and the watchdog that breaks them, are in the chapter's text: a NIC
that keeps sending PAUSE (a storm) freezes every upstream port; pause dependencies around a
loop (routing loops, or up-down-up paths after a failure) deadlock; a PFC watchdog ignores
pauses on a queue paused longer than its timer and drops its packets instead.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import checks

LIGHT_IN_CABLE_M_PER_S = 2e8  # about 5 ns per metre in fibre or copper (assumed)
MAX_STEPS = 50_000
MAX_POINTS = 2000


def headroom_bytes(line_gbps: float, cable_m: float, mtu_bytes: float = 4096,
                   response_s: float = 1e-6) -> float:  # fmt: skip
    """Bytes that can still arrive after XOFF: the cable's round trip at line rate, the
    receiver's and sender's response time, and a maximum frame in flight at each end."""
    rate = checks.real("line_gbps", line_gbps, 0.1, 3200.0) * 1e9 / 8
    cable = checks.real("cable_m", cable_m, 0.0, 100_000.0)
    mtu = checks.real("mtu_bytes", mtu_bytes, 64.0, 65536.0)
    response = checks.nonnegative("response_s", response_s, 1e-3)
    return 2 * rate * cable / LIGHT_IN_CABLE_M_PER_S + rate * response + 2 * mtu


@dataclass(frozen=True)
class PFCResult:
    """Time series (``t_s``) of the victim's and the incast's delivered throughput (Gb/s),
    S's port-0 buffer and U's buffer (bytes), and whether U (``paused_u``) and the victim's
    host (``paused_host``) were paused; with the thresholds used."""

    t_s: np.ndarray
    victim_gbps: np.ndarray
    incast_gbps: np.ndarray
    port0_bytes: np.ndarray
    upstream_bytes: np.ndarray
    paused_u: np.ndarray
    paused_host: np.ndarray
    xoff_bytes: float
    xon_bytes: float
    headroom_bytes: float

    def mean_victim_gbps(self, t0: float, t1: float) -> float:
        """The victim's mean throughput between ``t0`` and ``t1`` seconds."""
        t0, t1 = checks.real("t0", t0), checks.real("t1", t1)
        keep = (self.t_s >= t0) & (self.t_s < t1)
        if not keep.any():
            raise checks.fail("t0, t1", "a window holding at least one sample", (t0, t1))
        return float(self.victim_gbps[keep].mean())


def pfc(
    n_incast: int = 4,
    line_gbps: float = 100.0,
    duration_s: float = 300e-6,
    *,
    incast_start_s: float = 50e-6,
    incast_stop_s: float = 200e-6,
    cable_m: float = 100.0,
    xoff_bytes: float = 60e3,
    xon_bytes: float | None = None,
    mtu_bytes: float = 4096,
    response_s: float = 1e-6,
    dt_s: float = 50e-9,
) -> PFCResult:
    """Simulate the port of the module docstring: ``n_incast`` senders (one of them behind
    U, beside the victim) send to X from ``incast_start_s`` to ``incast_stop_s``; the victim
    sends to A all the time. ``xon_bytes`` defaults to XOFF - 2 MTU. Limits: 2..256 incast
    senders, at most 50,000 steps of ``dt_s``. The defaults (100 Gb/s, 100 m of cable, XOFF
    60 KB, 1 us response) are illustrative, not a particular switch's configuration."""
    n = checks.integer("n_incast", n_incast, 2, 256)
    line = checks.real("line_gbps", line_gbps, 0.1, 3200.0)
    duration = checks.positive("duration_s", duration_s, 1.0)
    t_on = checks.real("incast_start_s", incast_start_s, 0.0, duration)
    t_off = checks.real("incast_stop_s", incast_stop_s, t_on, duration)
    cable = checks.real("cable_m", cable_m, 0.0, 100_000.0)
    mtu = checks.real("mtu_bytes", mtu_bytes, 64.0, 65536.0)
    xoff = checks.real("xoff_bytes", xoff_bytes, 2 * mtu + 1, 1e9)
    xon = xoff - 2 * mtu if xon_bytes is None else checks.real("xon_bytes", xon_bytes, 0.0, xoff)
    response = checks.nonnegative("response_s", response_s, 1e-3)
    dt = checks.real("dt_s", dt_s, 1e-9, 1e-6)
    steps = int(round(duration / dt))
    if steps > MAX_STEPS:
        raise checks.fail("duration_s / dt_s", f"at most {MAX_STEPS} steps", steps)
    per_step = line * 1e9 / 8 * dt  # bytes a link moves in one step
    lag = max(1, int(round((cable / LIGHT_IN_CABLE_M_PER_S + response) / dt)))
    room = headroom_bytes(line, cable, mtu, response)
    u_victim = u_incast = 0.0  # U's queues (bytes)
    s_victim = 0.0  # victim bytes in S's port 0 (drain to A at once, up to line rate)
    s_incast = np.zeros(n)  # incast bytes at S per ingress port (port 0 = via U)
    pause_u_sent = np.zeros(lag + 1, dtype=bool)  # S -> U, as sent (delayed by lag)
    pause_h_sent = np.zeros(lag + 1, dtype=bool)  # U -> victim host and U's incast host
    pause_d_sent = np.zeros((lag + 1, n), dtype=bool)  # S -> direct incast hosts
    paused_u_state = paused_h_state = False
    paused_d_state = np.zeros(n, dtype=bool)
    every = max(1, steps // MAX_POINTS)
    rec = {k: [] for k in ("t", "v", "i", "p0", "u", "pu", "ph")}
    acc_v = acc_i = 0.0
    for k in range(steps):
        t = k * dt
        incast_on = t_on <= t < t_off
        slot, seen = k % (lag + 1), (k + 1) % (lag + 1)
        u_paused, h_paused = pause_u_sent[seen], pause_h_sent[seen]
        d_paused = pause_d_sent[seen]
        # Hosts into U (line rate each unless paused), U into S.
        if not h_paused:
            u_victim += per_step
            if incast_on:
                u_incast += per_step
        sent_v = sent_i = 0.0
        if not u_paused:
            budget = per_step
            if u_incast > 0 and u_victim > 0:
                sent_v, sent_i = min(u_victim, budget / 2), min(u_incast, budget / 2)
                spare = budget - sent_v - sent_i
                sent_v += min(u_victim - sent_v, spare)
                sent_i += min(u_incast - sent_i, budget - sent_v - sent_i)
            else:
                sent_v = min(u_victim, budget)
                sent_i = min(u_incast, budget - sent_v)
        u_victim -= sent_v
        u_incast -= sent_i
        s_victim += sent_v
        s_incast[0] += sent_i
        if incast_on:
            s_incast[1:] += np.where(d_paused[1:], 0.0, per_step)
        out_v = min(s_victim, per_step)  # egress A: the victim alone
        s_victim -= out_v
        waiting = s_incast > 1e-9  # egress X: round robin over backlogged ports
        out_i = 0.0
        if waiting.any():
            share = per_step / waiting.sum()
            take = np.where(waiting, np.minimum(s_incast, share), 0.0)
            s_incast -= take
            out_i = float(take.sum())
        port0 = s_victim + s_incast[0]
        if port0 >= xoff:
            paused_u_state = True
        elif port0 <= xon:
            paused_u_state = False
        u_occ = max(u_victim, u_incast)
        if u_occ >= xoff:
            paused_h_state = True
        elif u_occ <= xon:
            paused_h_state = False
        paused_d_state = np.where(s_incast >= xoff, True, np.where(s_incast <= xon, False,
                                                                   paused_d_state))  # fmt: skip
        pause_u_sent[slot], pause_h_sent[slot], pause_d_sent[slot] = (
            paused_u_state, paused_h_state, paused_d_state)  # fmt: skip
        acc_v += out_v
        acc_i += out_i
        if (k + 1) % every == 0:
            span = every * dt
            rec["t"].append(t)
            rec["v"].append(acc_v * 8 / span / 1e9)
            rec["i"].append(acc_i * 8 / span / 1e9)
            rec["p0"].append(port0)
            rec["u"].append(u_victim + u_incast)
            rec["pu"].append(bool(u_paused))
            rec["ph"].append(bool(h_paused))
            acc_v = acc_i = 0.0
    return PFCResult(
        np.array(rec["t"]), np.array(rec["v"]), np.array(rec["i"]), np.array(rec["p0"]),
        np.array(rec["u"]), np.array(rec["pu"]), np.array(rec["ph"]), xoff, xon, room,
    )  # fmt: skip
