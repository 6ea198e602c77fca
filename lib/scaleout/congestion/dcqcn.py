"""DCQCN's fluid model: N senders into one bottleneck, rates, queue and marking over time.

DCQCN (Zhu et al., "Congestion Control for Large-Scale RDMA Deployments", SIGCOMM 2015)
is the congestion control of RoCEv2 NICs. The switch (congestion point) marks packets
with ECN with a probability that rises linearly from 0 at queue ``Kmin`` to ``Pmax`` at
``Kmax`` (RED) and is 1 above; the receiver (notification point) returns at most one
congestion notification packet (CNP) per ``tau`` per flow; the sender (reaction point) cuts
its current rate R_C by alpha/2 on a CNP, keeps alpha as a moving average (gain ``g``,
updated every ``tau_prime``) of whether CNPs came, and recovers towards its target rate R_T
(``F`` fast-recovery steps, then additive increase ``R_AI``) each time its byte counter
``B`` or its timer ``T`` expires.

The fluid model is the paper's (sec. 5), in the per-flow form of Zhu et al., "ECN or
Delay: Lessons Learnt from Analysis of DCQCN and TIMELY" (CoNEXT 2016, Figure 3), with
feedback delayed by the control loop delay ``tau_star``; p is per packet, so rates are
counted in packets of ``packet_bytes``. Integrated with explicit Euler steps of ``dt_s``;
rates are clipped to [``min_rate``, line rate] (as the authors' own fluid-model code
does), which keeps every rate at or below the line. Every default parameter is the
paper's (``data/congestion.csv``, source ``zhu2015dcqcn`` via the co-author's model code);
``packet_bytes``, ``tau_star`` and the start times are assumptions (stated there too).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import checks
from . import published as _published

MAX_SENDERS = 1024
MAX_STEPS = 100_000
MAX_WORK = 1 << 24  # senders x steps
MAX_DURATION_S = 0.25
MAX_POINTS = 2000

_ROWS = {r.quantity: r.value for r in _published.rows("DCQCN")}
#: The paper's parameters (names as in the paper; units in the names), the DCQCN rows of
#: ``data/congestion.csv``: the marking thresholds Kmin, Kmax and Pmax, the gain g, the CNP
#: interval tau, the alpha update interval tau', the rate-increase timer T, the byte
#: counter B, the fast-recovery steps F and the additive increase R_AI.
DEFAULTS = {
    name: int(_ROWS[name]) if name == "F" else _ROWS[name]
    for name in ("Kmin_bytes", "Kmax_bytes", "Pmax", "g", "tau_s", "tau_prime_s", "T_s",
                 "B_bytes", "F", "R_AI_gbps")
}  # fmt: skip
#: Assumptions of the book's model, not the paper's, the packet size and the control loop's
#: delay (rows of data/congestion.csv, kind "assumed") and the integration step ``dt_s``.
ASSUMED = {"packet_bytes": _ROWS["packet_bytes"], "tau_star_s": _ROWS["tau_star_s"],
           "dt_s": 5e-6}  # fmt: skip


@dataclass(frozen=True)
class DCQCNResult:
    """Sampled trajectories: ``t_s`` (points), ``rates_gbps`` (points, senders),
    ``queue_bytes`` and ``marking`` (probability) at the bottleneck."""

    t_s: np.ndarray
    rates_gbps: np.ndarray
    queue_bytes: np.ndarray
    marking: np.ndarray
    line_gbps: float

    def final_rates_gbps(self, window_s: float = 1e-3) -> np.ndarray:
        """Mean rate of each sender over the last ``window_s`` seconds."""
        window_s = checks.positive("window_s", window_s)
        keep = self.t_s >= self.t_s[-1] - window_s
        return self.rates_gbps[keep].mean(axis=0)


def _params(params: dict) -> dict:
    allowed = {**DEFAULTS, **ASSUMED}
    unknown = sorted(set(params) - set(allowed))
    if unknown:
        raise checks.fail("params", f"parameters among {sorted(allowed)}", unknown)
    out = {**allowed, **params}
    for name in ("Kmin_bytes", "Kmax_bytes", "tau_s", "tau_prime_s", "T_s", "B_bytes",
                 "R_AI_gbps", "packet_bytes", "dt_s"):  # fmt: skip
        out[name] = checks.positive(name, out[name], 1e12)
    out["Pmax"] = checks.fraction("Pmax", out["Pmax"], open_low=True)
    out["g"] = checks.fraction("g", out["g"], open_low=True)
    out["F"] = checks.integer("F", out["F"], 0, 1000)
    out["tau_star_s"] = checks.nonnegative("tau_star_s", out["tau_star_s"], 1.0)
    if out["Kmax_bytes"] <= out["Kmin_bytes"]:
        raise checks.fail("Kmax_bytes", f"more than Kmin_bytes = {out['Kmin_bytes']}",
                          out["Kmax_bytes"])  # fmt: skip
    if out["dt_s"] > 0.2 * min(out["tau_s"], out["tau_prime_s"], out["T_s"]):
        raise checks.fail("dt_s", "at most a fifth of tau_s, tau_prime_s and T_s", out["dt_s"])
    return out


def _terms(p, rc, tau, B, T, F):
    """The per-flow factors of the fluid model for marking p (scalar) and delayed rates rc
    (packets/s): a = P(CNP in tau), b, c (byte counter), d, e (timer)."""
    if p <= 0.0:
        b = np.full_like(rc, 1.0 / B)
        d = np.where(rc > 0, 1.0 / (T * np.maximum(rc, 1e-300)), 0.0)
        return np.zeros_like(rc), b, b, d, d
    if p >= 1.0:
        z = np.zeros_like(rc)
        return np.ones_like(rc), z, z, z, z
    log1p = np.log1p(-p)
    a = -np.expm1(tau * rc * log1p)
    b = p / np.expm1(-B * log1p)
    c = b * np.exp(F * B * log1p)
    tr = np.maximum(T * rc, 1e-12)
    d = p / np.expm1(-tr * log1p)
    e = d * np.exp(F * tr * log1p)
    return a, np.full_like(rc, b), np.full_like(rc, c), d, e


def dcqcn(
    n_senders: int,
    line_gbps: float,
    duration_s: float,
    *,
    start_s=None,
    min_rate_gbps: float = 0.01,
    **params,
) -> DCQCNResult:
    """DCQCN's fluid model for ``n_senders`` senders at ``line_gbps`` into one receiver
    link of the same speed, for ``duration_s`` seconds (see the module docstring).

    ``start_s``: each sender's start time (default: sender i starts at i x 0.5 ms, so that
    the flows meet at different rates and the model has to bring them together); every
    sender starts at line rate, as DCQCN specifies. ``params``: any of :data:`DEFAULTS`
    (the paper's names) or :data:`ASSUMED`. Limits: 1..1024 senders, ``duration_s`` at most
    0.25 s, at most 100,000 steps (``duration_s / dt_s``) and 2**24 sender-steps; at most
    2000 points are returned."""
    n = checks.integer("n_senders", n_senders, 1, MAX_SENDERS)
    line = checks.real("line_gbps", line_gbps, 0.1, 3200.0)
    duration = checks.positive("duration_s", duration_s, MAX_DURATION_S)
    floor = checks.real("min_rate_gbps", min_rate_gbps, 0.0, line, low_open=True)
    P = _params(params)
    dt = P["dt_s"]
    steps = int(round(duration / dt))
    if steps > MAX_STEPS or steps < 1:
        raise checks.fail("duration_s / dt_s", f"1..{MAX_STEPS} steps", steps)
    if steps * n > MAX_WORK:
        raise checks.fail("n_senders x steps", f"at most {MAX_WORK}", steps * n)
    if start_s is None:
        start = np.arange(n) * 0.5e-3
    else:
        start = checks.array("start_s", start_s, ndim=1, low=0.0, high=duration)
        if start.shape[0] != n:
            raise checks.fail("start_s", f"one start time per sender ({n})", start.shape[0])
    pkt_bits = 8 * P["packet_bytes"]
    C = line * 1e9 / pkt_bits  # packets/s
    rai = P["R_AI_gbps"] * 1e9 / pkt_bits
    lo = floor * 1e9 / pkt_bits
    B = P["B_bytes"] / P["packet_bytes"]
    kmin, kmax = P["Kmin_bytes"] / P["packet_bytes"], P["Kmax_bytes"] / P["packet_bytes"]
    tau, taup, T, F, g, pmax = P["tau_s"], P["tau_prime_s"], P["T_s"], P["F"], P["g"], P["Pmax"]
    lag = int(round(P["tau_star_s"] / dt))
    rc, rt, alpha = np.full(n, C), np.full(n, C), np.ones(n)
    q = 0.0
    hist_rc = np.tile(rc, (lag + 1, 1))
    hist_p = np.zeros(lag + 1)
    every = max(1, steps // MAX_POINTS)
    ts, rates, queue, marks = [], [], [], []
    for k in range(steps):
        t = k * dt
        on = start <= t
        p_now = 0.0 if q <= kmin else (1.0 if q > kmax else (q - kmin) / (kmax - kmin) * pmax)
        slot = k % (lag + 1)
        hist_rc[slot], hist_p[slot] = rc, p_now
        old = (k + 1) % (lag + 1) if k >= lag else 0
        p_d, rc_d = hist_p[old], hist_rc[old]
        a, b, c, d, e = _terms(p_d, rc_d, tau, B, T, F)
        drt = -(rt - rc) / tau * a + rai * rc_d * c + rai * rc_d * e
        drc = -rc * alpha / (2 * tau) * a + (rt - rc) / 2 * rc_d * b + (rt - rc) / 2 * rc_d * d
        dalpha = g / taup * (-np.expm1(taup * rc_d * np.log1p(-min(p_d, 1 - 1e-12))) - alpha)
        rc = np.where(on, np.clip(rc + dt * drc, lo, C), rc)
        rt = np.where(on, np.clip(rt + dt * drt, lo, C), rt)
        alpha = np.where(on, np.clip(alpha + dt * dalpha, 0.0, 1.0), alpha)
        q = max(0.0, q + dt * (float(rc[on].sum()) - C))
        if k % every == 0:
            ts.append(t)
            rates.append(np.where(on, rc, 0.0) * pkt_bits / 1e9)
            queue.append(q * P["packet_bytes"])
            marks.append(p_now)
    return DCQCNResult(np.array(ts), np.array(rates), np.array(queue), np.array(marks), line)
