"""Published goodput under loss, and what the simulator gives for comparable setups.

Every :class:`LossResult` is a number a source states for go-back-N or selective repeat at a
given loss rate. Sources, and what they say about their setup:

* Wang, Liu, Tian, Bai and Zhang, "Error Recovery of RDMA Packets in Data Center Networks"
  (ICCCN 2019, doi 10.1109/ICCCN.2019.8846946), abstract: with RoCEv2's go-back-N "the
  relative throughput will drop to nearly zero when the packet loss rate exceeds 1%",
  which they trace to "the improper triggering mechanism of generating NAK"; their
  improved go-back-N "can improve the relative throughput to about 60% when the packet loss
  rate increases to 1%".
* Zhang, Guo and Sun, "RoSR: A Novel Selective Retransmission FPGA Architecture for RDMA
  NICs" (IEEE Computer Architecture Letters 24(2), 2025, doi 10.1109/LCA.2025.3594110),
  abstract, measured on FPGAs: "Under 1% packet loss, RoSR achieves up to 13.5x (RDMA
  Write) ... higher throughput than Xilinx ERNIC" (a go-back-N RDMA NIC).
* Mittal et al., IRN (SIGCOMM 2018): selective repeat with BDP-FC beats go-back-N RoCE;
  its evaluation reports flow completion times of workloads under congestion losses in a
  simulated fat tree, not goodput under random loss, so it enters as a ranking only.

What the sources leave out (link rate, RTT, MTU, window, timeout) is exactly what sets the
simulator's numbers, so the simulator is not run "at the source's setup": it is run over a
box of data-centre setups, :data:`BOX` (100 and 400 Gb/s, RTT 2 and 16 us, MTU 4096, a window
and bitmap of two BDPs, RTO 131 us), and each published number is reported inside, below or
above the simulated range (:func:`compare`). Nothing is fitted.

The numbers are rows of ``scaleout/data/rdma.csv`` (the book's long format, loaded by
:mod:`scaleout.data`): for each result (setting ``result``, ``system``, ``strategy``) its value
(``quantity`` "goodput_fraction" or "sr_over_gbn") and its ``loss rate``, each with its
references.bib key and locator; the value's note starts with the source's qualifier
("nearly: ...").
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from .. import checks, data
from .config import STRATEGIES, SimConfig
from .experiments import simulate

QUANTITIES = ("goodput_fraction", "sr_over_gbn")
#: The box of setups the simulator runs at (link rates in Gb/s, RTTs in s, message bytes, seed).
BOX = {"bandwidth_gbps": (100.0, 400.0), "rtt_s": (2e-6, 16e-6), "message_bytes": 16 * 2**20,
       "seed": 1}  # fmt: skip


@dataclass(frozen=True)
class LossResult:
    """One published number: ``quantity`` "goodput_fraction" (goodput over the loss-free
    rate) of ``strategy``, or "sr_over_gbn" (selective repeat's throughput over
    go-back-N's), at loss rate ``loss``; ``qualifier`` how the source states it ("about",
    "nearly", "up to")."""

    key: str
    source: str
    system: str
    loss: float
    quantity: str
    value: float
    qualifier: str
    strategy: str | None = None
    note: str = ""

    def __post_init__(self):
        checks.text("key", self.key, 40)
        checks.text("source", self.source, 300)
        checks.text("system", self.system, 120)
        checks.real("loss", self.loss, 0.0, 1.0, low_open=True, high_open=True)
        checks.choice("quantity", self.quantity, QUANTITIES)
        checks.nonnegative("value", self.value, 1e6)
        checks.choice("qualifier", self.qualifier, ("about", "nearly", "up to"))
        if self.quantity == "goodput_fraction":
            checks.choice("strategy", self.strategy, STRATEGIES)
        elif self.strategy is not None:
            raise checks.fail("strategy", "None for a ratio of two strategies", self.strategy)
        if self.note:
            checks.text("note", self.note, 300)


#: How a record names each source (references.bib key -> short citation; the locator follows).
CITATIONS = {"wang2019gbnerror": "Wang et al., ICCCN 2019",
             "zhang2025rosr": "Zhang, Guo and Sun, IEEE CAL 2025"}  # fmt: skip


def _results() -> tuple[LossResult, ...]:
    rows = data.load("rdma")
    loss = {v.get("result"): v.value for v in rows if v.get("quantity") == "loss rate"}
    out = []
    for v in rows:
        if v.get("quantity") not in QUANTITIES:  # loss rates, and IRN's rows (IRN below)
            continue
        qualifier, _, note = v.note.partition(": ")
        out.append(LossResult(v.get("result"), f"{CITATIONS[v.source]} ({v.locator})",
                              v.get("system"), loss[v.get("result")], v.get("quantity"), v.value,
                              qualifier, v.get("strategy") or None, note))  # fmt: skip
    return tuple(out)


#: The published numbers, in the order the chapter lists them.
RESULTS: tuple[LossResult, ...] = _results()

_IRN = {v.get("quantity"): v.value for v in data.load("rdma") if v.get("result") == "irn2018"}
#: IRN's abstract (Mittal et al., SIGCOMM 2018), in percent. Without PFC it outperforms RoCE
#: with PFC by 6 to 83 % in their simulations, at about 3 to 10 % more NIC resources.
IRN_GAIN_OVER_PFC_PERCENT = (_IRN["gain over PFC (low)"], _IRN["gain over PFC (high)"])
IRN_NIC_OVERHEAD_PERCENT = (
    _IRN["NIC resource overhead (low)"],
    _IRN["NIC resource overhead (high)"],
)


@functools.lru_cache(maxsize=64)
def _goodput(strategy: str, loss: float, bandwidth_gbps: float, rtt_s: float) -> float:
    cfg = SimConfig(BOX["message_bytes"], bandwidth_gbps=bandwidth_gbps, rtt_s=rtt_s)
    r = simulate(BOX["message_bytes"], strategy=strategy, loss=loss, seed=BOX["seed"],
                 bandwidth_gbps=bandwidth_gbps, rtt_s=rtt_s,
                 window_packets=2 * cfg.bdp_packets + 1)  # fmt: skip
    return float(r.goodput_fraction)


def simulated(quantity: str, loss: float, strategy: str | None = None) -> list[float]:
    """The simulator's value of ``quantity`` at ``loss`` at every setup of :data:`BOX`
    (link rate major, RTT minor)."""
    quantity = checks.choice("quantity", quantity, QUANTITIES)
    loss = checks.real("loss", loss, 0.0, 0.5, high_open=True)
    if quantity == "goodput_fraction":
        strategy = checks.choice("strategy", strategy, STRATEGIES)
    out = []
    for bw in BOX["bandwidth_gbps"]:
        for rtt in BOX["rtt_s"]:
            if quantity == "goodput_fraction":
                out.append(_goodput(strategy, loss, bw, rtt))
            else:
                gbn = _goodput("go-back-n", loss, bw, rtt)
                sr = _goodput("selective-repeat", loss, bw, rtt)
                out.append(sr / gbn if gbn > 0 else float("inf"))
    return out


@dataclass(frozen=True)
class Comparison:
    """A :class:`LossResult` beside the simulator's range over :data:`BOX`: ``verdict``
    "inside", "below" or "above" it."""

    result: LossResult
    low: float
    high: float
    verdict: str

    def __post_init__(self):
        checks.instance("result", self.result, LossResult)
        checks.nonnegative("low", self.low, 1e6)
        checks.real("high", self.high, self.low, 1e6)
        checks.choice("verdict", self.verdict, ("inside", "below", "above"))


def compare() -> list[Comparison]:
    """Each of :data:`RESULTS` beside the simulated range."""
    out = []
    for r in RESULTS:
        values = simulated(r.quantity, r.loss, r.strategy)
        lo, hi = min(values), max(values)
        verdict = "below" if r.value < lo else "above" if r.value > hi else "inside"
        out.append(Comparison(r, lo, hi, verdict))
    return out
