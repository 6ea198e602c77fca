"""Closed forms to check the simulator against (chapter 12)."""

from __future__ import annotations

from .. import checks
from .config import SimConfig


def ideal_completion_s(config: SimConfig) -> float:
    """No loss, no reordering: (n-1) full packets + the last one back to back, plus one RTT."""
    return checks.instance("config", config, SimConfig).ideal_completion_ps() * 1e-12


def gbn_goodput_fraction(loss, rtt_s: float, tx_s: float, rto_s: float):
    """Go-back-N's long-run goodput over link bandwidth with independent losses ``loss``
    (a number or an array).

    Renewal argument on this model: a stream restarts at the lost PSN; it delivers X packets
    before the next loss, X ~ Geometric (mean (1-p)/p). If X >= 1 the NAK comes back
    (X + G + 2) tx + rtt after the restart (G further losses in a row, mean p/(1-p)); if
    the resent packet itself is lost (X = 0) the responder stays silent and the timeout
    fires rto after it. So (1-p) / (1 + p(1-p)(1 + rtt/tx) + p^2 rto/tx). Ignores message
    ends, window stalls and the retry limit; requires a window of at least one BDP.
    Seconds: ``rtt_s`` in [0, 1], ``tx_s`` in [1e-12, 1], ``rto_s`` in (0, 100].
    """
    p = checks.array("loss", loss, low=0.0, high=1.0, high_open=True)
    rtt_s = checks.real("rtt_s", rtt_s, 0.0, 1.0)
    tx_s = checks.real("tx_s", tx_s, 1e-12, 1.0)
    rto_s = checks.real("rto_s", rto_s, 0.0, 100.0, low_open=True)
    out = (1 - p) / (1 + p * (1 - p) * (1 + rtt_s / tx_s) + p**2 * rto_s / tx_s)
    return checks.as_output(checks.finite_result("gbn_goodput_fraction", out))
