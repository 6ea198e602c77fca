"""Running the simulator: one write (:func:`scaleout.rdma.simulate`) or a sweep over one parameter
(:func:`scaleout.rdma.sweep`), with the batched engine.

Limits: one write is bounded by :class:`~scaleout.rdma.SimConfig`'s (packets, transmissions,
simulated time). A sweep runs strategies x values writes, so it is bounded jointly: strategies
x values x packets per write at most ``MAX_SWEEP_PACKETS`` (2**20, a quarter of the largest
single write), so a whole sweep costs less than one write at its limit."""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

import numpy as np

from .. import checks
from .config import STRATEGIES, SimConfig
from .engine import simulate_fast
from .results import SimResult

MAX_SWEEP_VALUES = 256
#: Most packets one sweep simulates in all (strategies x values x packets per write): a
#: quarter of the largest single write (the book's largest sweep: 720,896).
MAX_SWEEP_PACKETS = 2**20
_FIELDS = tuple(f.name for f in fields(SimConfig))
SWEEPABLE = tuple(f for f in _FIELDS if f not in ("message_bytes", "strategy", "loss_model"))
_INTEGER_FIELDS = ("mtu_bytes", "window_packets", "seed", "retry_cnt")


def _params(params: dict, allowed=_FIELDS) -> dict:
    for key in params:
        checks.choice("parameter", key, allowed)
    return params


def simulate(message_bytes: int, *, strategy: str = "go-back-n", timeline: bool = False,
             **params) -> SimResult:  # fmt: skip
    """Simulate one RDMA write (keywords: the fields of :class:`scaleout.rdma.SimConfig`)
    with the batched engine; ``timeline=True`` also records every transmission."""
    params = _params(params, tuple(f for f in _FIELDS if f not in ("message_bytes", "strategy")))
    return simulate_fast(SimConfig(message_bytes, strategy=strategy, **params), timeline)


@dataclass
class Sweep:
    """Results of :func:`scaleout.rdma.sweep`: arrays of shape (strategies, values)."""

    name: str
    values: np.ndarray
    strategies: tuple
    goodput_fraction: np.ndarray
    goodput_gbps: np.ndarray
    sent_per_packet: np.ndarray
    retransmitted_per_packet: np.ndarray
    timeouts: np.ndarray

    def __post_init__(self):
        checks.choice("name", self.name, SWEEPABLE)
        self.values = checks.array("values", self.values, ndim=1, max_size=MAX_SWEEP_VALUES)
        strategies = checks.instance("strategies", self.strategies, tuple)
        if not strategies:
            raise checks.fail("strategies", f"a non-empty tuple of {STRATEGIES}", strategies)
        for s in strategies:
            checks.choice("strategies", s, STRATEGIES)
        shape = (len(strategies), len(self.values))
        for key in ("goodput_fraction", "goodput_gbps", "sent_per_packet",
                    "retransmitted_per_packet", "timeouts"):  # fmt: skip
            arr = checks.array(key, getattr(self, key), ndim=2, low=0.0)
            if arr.shape != shape:
                raise checks.fail(key, f"an array of shape {shape} (strategies, values)",
                                  arr.shape)  # fmt: skip
            setattr(self, key, arr)


def sweep(name: str, values, strategies=STRATEGIES, **params) -> Sweep:
    """Simulate every strategy at every value of the SimConfig field ``name`` (at most
    ``MAX_SWEEP_VALUES`` values); ``params`` are the other fields, ``message_bytes``
    included."""
    name = checks.choice("name", name, SWEEPABLE)
    values = checks.array("values", values, ndim=1, max_size=MAX_SWEEP_VALUES,
                          integer=name in _INTEGER_FIELDS)  # fmt: skip
    if not isinstance(strategies, tuple | list) or not strategies:
        raise checks.fail("strategies", f"a non-empty tuple of {STRATEGIES}", strategies)
    strategies = tuple(checks.choice("strategies", s, STRATEGIES) for s in strategies)
    params = _params(params, tuple(f for f in _FIELDS if f not in ("strategy", name)))
    if "message_bytes" not in params:
        raise checks.fail("params", "keywords that include message_bytes", params)
    base = SimConfig(**params)
    mtu = int(values.min()) if name == "mtu_bytes" else base.mtu_bytes
    packets = -(-base.message_bytes // mtu) if mtu > 0 else MAX_SWEEP_PACKETS + 1
    work = len(strategies) * len(values) * packets
    if work > MAX_SWEEP_PACKETS:
        raise checks.fail("strategies x values x packets per write", f"at most "
                          f"{MAX_SWEEP_PACKETS} (a quarter of the largest single write)",
                          work)  # fmt: skip
    shape = (len(strategies), len(values))
    out = {k: np.zeros(shape) for k in ("gf", "gb", "sp", "rp", "to")}
    for i, s in enumerate(strategies):
        for j, v in enumerate(values.tolist()):
            r = simulate_fast(replace(base, strategy=s, **{name: v}))
            out["gf"][i, j], out["gb"][i, j] = r.goodput_fraction, r.goodput_gbps
            out["sp"][i, j] = r.sent / r.packets
            out["rp"][i, j] = r.retransmitted / r.packets
            out["to"][i, j] = r.timeouts
    return Sweep(name, values, strategies, out["gf"], out["gb"], out["sp"], out["rp"], out["to"])
