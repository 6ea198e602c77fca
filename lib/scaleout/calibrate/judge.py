"""A log beside the book's NCCL model: per row the model's bus bandwidth, the ratio, and a
verdict per size regime with the checks that usually explain a gap.

The model is chapter 10's (:func:`scaleout.nccl.model.predict`: NCCL's own tuning model rebuilt
from one pinned release), on a machine given as a preset of ``scaleout.nccl.PRESETS``
with any field of :class:`~scaleout.nccl.topo.Topology` overridden, the log's ranks spread
over ``nodes`` servers (:meth:`~scaleout.nccl.topo.Topology.group`, as
:func:`scaleout.nccl.model.collective_seconds` does). NCCL's model is a selection heuristic, not a
performance predictor: a ratio near 1 says the machine does what NCCL itself expects of it.

Regimes are the model's own, per size: ``latency`` where the model's bus bandwidth is below
``LATENCY_FRACTION`` of its bandwidth at ``PEAK_BYTES``, ``bandwidth`` where it is
at least ``BANDWIDTH_FRACTION`` of it, ``middle`` between. Verdicts compare the median
ratio measured / model of a regime with ``RATIO_OK`` (both are the book's choices, not
fitted): inside, "as expected"; below, "low" (below ``RATIO_FAR``, "far below"); above,
"above the model". The checks name the ``NCCL_DEBUG=INFO`` lines to look for, as NCCL prints
them (``src/init.cc:486`` "Using network %s"; ``src/transport/net.cc:324-379`` channel lines
``via NET/<name>/<dev>`` ending ``/GDRDMA`` when GPUDirect RDMA is used;
``src/transport/p2p.cc:416-437`` ``via P2P/...``; ``src/transport/shm.cc:116`` ``via
SHM/direct``; ``src/transport/nvls.cc:279`` "NVLS multicast support is [not] available";
``src/graph/tuning.cc:455,460`` "NCCL_PROTO/NCCL_ALGO set by environment"; NVIDIA/nccl at
5067397), and the log's own ``NCCL INFO`` lines are searched for them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import checks, costmodel, nccl
from .. import machine as M
from .records import Log

REGIMES = ("latency", "middle", "bandwidth")
LATENCY_FRACTION = 0.1
BANDWIDTH_FRACTION = 0.5
PEAK_BYTES = 2.0**34
RATIO_OK = (0.8, 1.25)
RATIO_FAR = 0.5

#: What usually explains a low ratio, per regime; machine-specific checks are added.
CHECKS = {
    "latency": (
        "kernel launch and proxy overheads: compare with `-G 1` (CUDA graphs) and look for "
        "'NCCL_PROTO set by environment' (a forced Simple protocol loses LL's latency)",
        "the path: 'Channel ... via SHM/direct' or 'via NET/Socket' instead of P2P/NVLink "
        "or NET/IB adds microseconds per step",
    ),
    "middle": (
        "the protocol switch: 'NCCL_PROTO set by environment' or 'NCCL_ALGO set by "
        "environment' pinning a choice the model would not make",
        "too few channels: the 'Channel xx/yy' count in the INFO lines (NCCL_MIN_NCHANNELS)",
    ),
    "bandwidth": (
        "the links: PCIe generation and width (`nvidia-smi -q | grep -A3 'Link Width'`, "
        "`lspci -vv` LnkSta), NVLink state (`nvidia-smi nvlink -s`)",
    ),
}


def _topology(machine, nodes, overrides) -> nccl.Topology:
    if not isinstance(machine, str):
        base = M.as_topology(machine)
        return base.with_(**overrides) if overrides else base
    checks.choice("machine", machine, tuple(nccl.PRESETS))
    return nccl.topology(machine, nodes=1, **overrides)


def machine_topology(machine, ranks: int, nodes: int = 1, **overrides) -> nccl.Topology:
    """The topology a log of ``ranks`` ranks on ``nodes`` servers of ``machine`` (a preset
    name, a Topology or a :class:`scaleout.machine.Machine`, with ``overrides`` of its
    fields) runs on."""
    ranks = checks.integer("ranks", ranks, 1, nccl.topo.MAX_RANKS)
    nodes = checks.integer("nodes", nodes, 1, nccl.topo.MAX_RANKS)
    base = _topology(machine, nodes, overrides)
    if ranks % nodes:
        raise checks.fail("nodes", f"a divisor of ranks={ranks}", nodes)
    per = ranks // nodes
    if per > base.gpus_per_node:
        raise checks.fail("nodes", f"at least {-(-ranks // base.gpus_per_node)} servers of "
                          f"{base.gpus_per_node} GPUs for {ranks} ranks", nodes)  # fmt: skip
    return base.group(per, 1).with_(nodes=nodes)


@dataclass(frozen=True)
class Comparison:
    """A log beside the model: per timed row (sorted by size) ``nbytes``, measured and
    model ``busbw`` (GB/s), ``ratio`` (measured / model), the model's ``algorithm`` and
    ``protocol``, and ``regime``; ``topology`` the machine priced; ``evidence`` what the
    log's INFO lines say about it."""

    collective: str
    topology: nccl.Topology
    nbytes: np.ndarray
    measured_gb_per_s: np.ndarray
    model_gb_per_s: np.ndarray
    algorithm: tuple
    protocol: tuple
    regime: tuple
    evidence: tuple

    def __post_init__(self):
        checks.choice("collective", self.collective, nccl.ALL_COLLECTIVES)
        checks.instance("topology", self.topology, nccl.Topology)
        n = checks.array("nbytes", self.nbytes, ndim=1, low=0.0, low_open=True, max_size=2**20)
        for name in ("measured_gb_per_s", "model_gb_per_s"):
            arr = checks.array(name, getattr(self, name), ndim=1, low=0.0, max_size=2**20)
            if arr.shape != n.shape:
                raise checks.fail(name, f"{n.size} values, one per size", arr.size)
        if np.any(self.model_gb_per_s <= 0):
            raise checks.fail("model_gb_per_s", "positive bandwidths", self.model_gb_per_s)
        for name, allowed in (("algorithm", (*nccl.ALGORITHMS, "p2p")),
                              ("protocol", nccl.PROTOCOLS), ("regime", REGIMES)):  # fmt: skip
            value = getattr(self, name)
            if not isinstance(value, tuple) or len(value) != n.size:
                raise checks.fail(name, f"a tuple of {n.size} names", value)
            for v in value:
                checks.choice(name, v, allowed)
        ev = self.evidence
        if not isinstance(ev, tuple) or not all(isinstance(e, str) for e in ev):
            raise checks.fail("evidence", "a tuple of strings", self.evidence)

    @property
    def ratio(self) -> np.ndarray:
        return self.measured_gb_per_s / self.model_gb_per_s

    def verdicts(self) -> dict:
        """Per regime present: (median ratio, verdict, checks)."""
        out = {}
        for reg in REGIMES:
            sel = np.array([r == reg for r in self.regime])
            if not sel.any():
                continue
            med = float(np.median(self.ratio[sel]))
            if med < RATIO_FAR:
                word = "far below the model"
            elif med < RATIO_OK[0]:
                word = "low"
            elif med > RATIO_OK[1]:
                word = "above the model"
            else:
                word = "as expected"
            out[reg] = (med, word, self.checks(reg) if word != "as expected" else ())
        return out

    def checks(self, regime: str) -> tuple:
        """What to look at when ``regime`` is off (general, then this machine's)."""
        checks.choice("regime", regime, REGIMES)
        t = self.topology
        items = list(CHECKS[regime])
        if regime != "latency" and t.nvls and self.collective == "allreduce":
            items.append("NVLS: 'NVLS multicast support is not available' in the INFO lines "
                         "(fabric manager, NCCL_NVLS_ENABLE=0) drops all-reduce from NVLS "
                         "to ring/tree")  # fmt: skip
        if regime != "latency" and t.nodes > 1:
            items.append(f"the NICs: {t.nics_per_node} x {t.nic_gbps:g} Gb/s per server "
                         "expected; 'NET/IB : Using [0]mlx5_0:1/IB ...' lists the ones NCCL "
                         "found, `ibstat` their rate")  # fmt: skip
            items.append(
                "GPUDirect RDMA: channel lines 'via NET/IB/<n>/GDRDMA'; without "
                "'/GDRDMA' data bounces through host memory (nvidia-peermem, ACS)"
            )
            items.append("'Using network Socket' means TCP, not InfiniBand or RoCE")
        if regime != "latency" and t.nvlink_links == 0:
            items.append(f"PCIe Gen{t.pcie_gen} x16 expected between GPUs; 'via SHM' means "
                         "P2P is off (IOMMU/ACS, NCCL_P2P_DISABLE)")  # fmt: skip
        return tuple(items)


_EVIDENCE = (
    ("Using network Socket", "NCCL ran over TCP sockets (init.cc: 'Using network Socket')"),
    ("/GDRDMA", "GPUDirect RDMA in use on some channels ('/GDRDMA')"),
    (
        "multicast support is not available",
        "NVLS unavailable ('NVLS multicast support is not available')",
    ),
    ("via SHM", "some channels go through host shared memory ('via SHM'): no P2P there"),
    ("NCCL_PROTO set by environment", "the protocol was forced (NCCL_PROTO)"),
    ("NCCL_ALGO set by environment", "the algorithm was forced (NCCL_ALGO)"),
    ("via P2P", "GPUs talk peer to peer ('via P2P')"),
)


def evidence(log: Log) -> tuple:
    """What ``log``'s NCCL INFO lines say about the path (see the module docstring)."""
    checks.instance("log", log, Log)
    found = []
    for needle, meaning in _EVIDENCE:
        if any(needle in line for line in log.info):
            found.append(meaning)
    net = [line for line in log.info if "via NET/" in line]
    if net and not any("/GDRDMA" in line for line in net):
        found.append("network channels without '/GDRDMA': GPUDirect RDMA is off")
    return tuple(found)


def _regimes(collective, nbytes, topo):
    peak = float(nccl.predict(collective, PEAK_BYTES, machine=topo).busbw_gb_per_s)
    pred = nccl.predict(collective, nbytes, machine=topo)
    frac = np.asarray(pred.busbw_gb_per_s) / peak
    reg = tuple("latency" if f < LATENCY_FRACTION else "bandwidth" if f >= BANDWIDTH_FRACTION
                else "middle" for f in frac)  # fmt: skip
    return pred, reg


def compare(log: Log, nodes: int = 1, *, collective: str | None = None, ranks: int | None = None,
            machine="dgx-h100", **overrides) -> Comparison:  # fmt: skip
    """``log`` beside chapter 10's NCCL model on ``nodes`` servers of ``machine`` (a preset
    name, a Topology or a :class:`scaleout.machine.Machine`; ``overrides`` change its
    fields). ``collective`` and ``ranks``
    replace what the log says (or supply what it does not). Measured bus bandwidth is the
    out-of-place one (in-place where the log has only that), recomputed from the time with
    nccl-tests' factor so that rounded columns do not matter."""
    checks.instance("log", log, Log)
    name = collective if collective is not None else log.collective
    if name is None:
        raise checks.fail("collective", "given when the log does not name it", None)
    checks.choice("collective", name, nccl.ALL_COLLECTIVES)
    checks.optional_integer("ranks", ranks, 1, nccl.topo.MAX_RANKS)
    p = ranks if ranks is not None else log.ranks
    if p is None:
        raise checks.fail("ranks", "given when the log has no device list", None)
    if p < 2:
        raise checks.fail("ranks", "at least 2 (the log's device list may be partial: pass "
                          "ranks=)", p)  # fmt: skip
    topo = machine_topology(machine, p, nodes, **overrides)
    rows = sorted(log.timed(), key=lambda r: r.nbytes)
    if not rows:
        raise checks.fail("log", "a log with timed rows of positive size", len(log.rows))
    n = np.array([r.nbytes for r in rows], dtype=float)
    t = np.array([r.seconds for r in rows], dtype=float)
    factor = costmodel.busbw_factor(name, topo.ranks)
    measured = n / t / 1e9 * factor
    pred, reg = _regimes(name, n, topo)
    model = np.asarray(pred.busbw_gb_per_s, dtype=float).reshape(n.shape)
    if np.any(model <= 0):
        raise ValueError(f"the model gives no bandwidth for {name} on {topo.name}")
    alg = tuple(np.asarray(pred.algorithm, dtype=object).reshape(-1).tolist())
    proto = tuple(np.asarray(pred.protocol, dtype=object).reshape(-1).tolist())
    return Comparison(name, topo, n, measured, model, alg, proto, reg, evidence(log))
