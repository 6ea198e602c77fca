"""The public model: NCCL's tuning table, its choice per size, and the predicted time.

* :func:`tune` - the latency (us) and algorithm bandwidth (GB/s) of every (algorithm,
  protocol) for one collective, the table NCCL prints with ``NCCL_DEBUG=INFO
  NCCL_DEBUG_SUBSYS=TUNING`` (:func:`tuning_text` prints it the same way).
* :func:`predict` - for each size, the pair NCCL runs and its time, algorithm and bus
  bandwidths (nccl-tests' definitions), vectorised over sizes; ``algorithm``/``protocol``
  force a choice as ``NCCL_ALGO``/``NCCL_PROTO`` do. ``"alltoall"`` uses the p2p model of
  :mod:`scaleout.nccl.p2p` (not NCCL's: NCCL has none).
* :func:`collective_seconds` - the one call other chapters need: seconds for a
  collective of ``nbytes`` over ``gpus_per_node`` GPUs on each of ``nodes`` servers.

Sizes are nccl-tests' ``size`` column: the whole buffer for all-reduce, broadcast and
reduce, the full output of all-gather, the full input of reduce-scatter, each rank's send
buffer for all-to-all. Limits: sizes in (0, 2**50] bytes, at most 2**20 of them per call.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from .. import checks, costmodel
from . import constants as C
from . import p2p
from .topo import Topology, _as_topology
from .tuning import Table, fastest, tune_model

COLLECTIVES = ("allreduce", "allgather", "reducescatter", "broadcast", "reduce")
ALL_COLLECTIVES = (*COLLECTIVES, "alltoall")
ALGORITHMS = ("tree", "ring", "collnet_direct", "collnet_chain", "nvls", "nvls_tree", "pat")
PROTOCOLS = ("ll", "ll128", "simple")
_FUNC = {"broadcast": C.BROADCAST, "reduce": C.REDUCE, "allgather": C.ALLGATHER,
         "reducescatter": C.REDUCESCATTER, "allreduce": C.ALLREDUCE}  # fmt: skip
MAX_BYTES = 2.0**50
MAX_SIZES = 2**20


def _topo(machine) -> Topology:
    return _as_topology(machine)


def table(*, machine) -> Table:
    """NCCL's model for ``machine`` (a Topology, a Machine or a preset name; cached:
    topologies are immutable)."""
    return _table(_topo(machine))


@functools.lru_cache(maxsize=512)
def _table(topo: Topology) -> Table:
    return tune_model(topo)


@dataclass(frozen=True)
class Tuning:
    """One collective's row of NCCL's tuning table: ``latency_us[a, p]`` and
    ``algbw_gb_per_s[a, p]`` for algorithm ``ALGORITHMS[a]``, protocol ``PROTOCOLS[p]``;
    a bandwidth of 0 means NCCL will not run that pair here."""

    collective: str
    topo: Topology
    latency_us: np.ndarray
    algbw_gb_per_s: np.ndarray
    channels: int
    graphs: tuple

    def __post_init__(self):
        checks.choice("collective", self.collective, COLLECTIVES)
        checks.instance("topo", self.topo, Topology)
        for name in ("latency_us", "algbw_gb_per_s"):
            arr = checks.array(name, getattr(self, name), ndim=2, low=0.0)
            if arr.shape != (7, 3):
                raise checks.fail(name, "an array of shape (7, 3)", arr.shape)
        checks.integer("channels", self.channels, 1, 64)
        if not isinstance(self.graphs, tuple) or len(self.graphs) != 7:
            raise checks.fail("graphs", "a tuple of 7 graphs (NCCL's algorithms)", self.graphs)

    def entry(self, algorithm: str, protocol: str) -> tuple[float, float]:
        """(latency in us, algorithm bandwidth in GB/s) of one pair."""
        a = ALGORITHMS.index(checks.choice("algorithm", algorithm, ALGORITHMS))
        p = PROTOCOLS.index(checks.choice("protocol", protocol, PROTOCOLS))
        return float(self.latency_us[a, p]), float(self.algbw_gb_per_s[a, p])


def tune(collective: str, *, machine) -> Tuning:
    """NCCL's latency and bandwidth of every (algorithm, protocol) for ``collective`` on
    ``machine`` (a Topology, a Machine or a preset name)."""
    checks.choice("collective", collective, COLLECTIVES)
    t = table(machine=machine)
    f = _FUNC[collective]
    return Tuning(collective, t.comm.topo, t.latency_us[f].copy(), t.algbw_gb_per_s[f].copy(),
                  t.comm.nchannels, t.comm.graphs)  # fmt: skip


def tuning_text(*, machine) -> str:
    """The tuning table of ``machine`` as NCCL prints it (``tuning.cc:476-516``), one line
    per row."""
    t = table(machine=machine)
    lines = []
    for block in range(3):
        algos = [a for a in range(3 * block, 3 * block + 3) if a < 7]
        lines.append(
            "  Algorithm   |"
            + "".join(f" {'':>14}   {C.ALGORITHMS[a]:>14}   {'':>14} |" for a in algos)
        )
        lines.append("  Protocol    |" + "".join(f" {p:>14} |" for p in C.PROTOCOLS * 3))
        lines.append(
            " Max NThreads |"
            + "".join(f" {t.max_threads[a, p]:>14d} |" for a in algos for p in range(3))
        )
        for f in range(5):
            lines.append(f"{C.FUNCTIONS[f]:>13} |" + "".join(
                f"{t.latency_us[f, a, p]:8.1f}/{t.algbw_gb_per_s[f, a, p]:6.1f} |"
                for a in algos for p in range(3)))  # fmt: skip
    return "\n".join(lines)


@dataclass(frozen=True)
class Prediction:
    """Per size: the ``algorithm`` and ``protocol`` NCCL runs, ``seconds``, and nccl-tests'
    ``algbw`` (size / time) and ``busbw`` (algbw x the collective's factor), in GB/s.
    Arrays for an array of sizes, scalars for one size."""

    collective: str
    nbytes: object
    algorithm: object
    protocol: object
    seconds: object
    algbw_gb_per_s: object
    busbw_gb_per_s: object

    def __post_init__(self):
        checks.choice("collective", self.collective, ALL_COLLECTIVES)
        sizes = _sizes(self.nbytes)
        for name in ("seconds", "algbw_gb_per_s", "busbw_gb_per_s"):
            arr = checks.array(name, getattr(self, name), low=0.0)
            if arr.shape != sizes.shape:
                raise checks.fail(name, f"an array of the shape of nbytes {sizes.shape}",
                                  arr.shape)  # fmt: skip
        for name, allowed in (("algorithm", (*ALGORITHMS, "p2p")), ("protocol", PROTOCOLS)):
            values = np.asarray(getattr(self, name), dtype=object)
            if values.shape != sizes.shape or not all(
                isinstance(v, str) and v in allowed for v in values.ravel()
            ):
                raise checks.fail(name, f"names from {allowed}, shaped like nbytes",
                                  getattr(self, name))  # fmt: skip


def _sizes(nbytes) -> np.ndarray:
    return checks.array("nbytes", nbytes, low=0.0, high=MAX_BYTES, low_open=True,
                        max_size=MAX_SIZES)  # fmt: skip


def _names(names, allowed, what):
    if names is None:
        return tuple(range(len(allowed)))
    if isinstance(names, str):
        names = (names,)
    try:
        names = tuple(names)
    except TypeError:
        raise checks.fail(what, f"None, one of {allowed}, or a tuple of them", names) from None
    if not names:
        raise checks.fail(what, f"None, one of {allowed}, or a tuple of them", names)
    return tuple(allowed.index(checks.choice(what, n, allowed)) for n in names)


def predict(collective: str, nbytes, algorithm=None, protocol=None, *, machine) -> Prediction:
    """What NCCL does with ``nbytes`` (a size or an array of sizes) on ``machine`` (a
    :class:`~scaleout.nccl.topo.Topology`, a :class:`scaleout.machine.Machine` or a preset
    name); ``algorithm`` and ``protocol`` (a name or a tuple of names) restrict the choice
    like NCCL_ALGO and NCCL_PROTO."""
    checks.choice("collective", collective, ALL_COLLECTIVES)
    topo = _topo(machine)
    sizes = _sizes(nbytes)
    flat = sizes.ravel()
    if collective == "alltoall":
        if algorithm is not None or protocol is not None:
            raise checks.fail("algorithm", "None for alltoall (NCCL has no choice)", algorithm)
        us = p2p.alltoall_us(flat, machine=topo)
        alg = np.full(flat.shape, "p2p", dtype=object)
        proto = np.where(flat / topo.ranks <= p2p.P2P_LL_THRESHOLD, "ll", "simple").astype(object)
    else:
        algos = _names(algorithm, ALGORITHMS, "algorithm")
        protos = _names(protocol, PROTOCOLS, "protocol")
        a, p, us = fastest(table(machine=topo), _FUNC[collective], flat, algos, protos)
        if np.any(a < 0):
            raise ValueError(
                f"no algorithm/protocol among {algorithm or 'all'}/{protocol or 'all'} can "
                f"run {collective} on {topo.name} with {topo.ranks} ranks (NCCL would fail)"
            )
        alg = np.array([ALGORITHMS[i] for i in a], dtype=object)
        proto = np.array([PROTOCOLS[i] for i in p], dtype=object)
    seconds = us * 1e-6
    with np.errstate(divide="ignore"):
        algbw = np.where(seconds > 0, flat / np.where(seconds > 0, seconds, 1) / 1e9, 0.0)
    busbw = algbw * costmodel.busbw_factor(collective, topo.ranks)
    shape = sizes.shape

    def out(x):
        x = np.asarray(x).reshape(shape)
        return x.item() if x.ndim == 0 else x

    return Prediction(collective, out(flat), out(alg), out(proto), out(seconds), out(algbw),
                      out(busbw))  # fmt: skip


def collective_seconds(collective: str, nbytes, gpus_per_node: int, nodes: int, *,
                       machine="dgx-h100"):  # fmt: skip
    """Seconds NCCL takes for ``collective`` of ``nbytes`` (vectorised) over a group of
    ``gpus_per_node`` GPUs on each of ``nodes`` servers of ``machine`` (a preset name, a
    Machine or a Topology whose ``nodes`` is at least ``nodes``). The group keeps the servers' links
    and the NICs of its GPUs (:meth:`~scaleout.nccl.topo.Topology.group`)."""
    checks.choice("collective", collective, ALL_COLLECTIVES)
    base = _topo(machine)
    checks.integer("nodes", nodes, 1, 65536)
    # group on one node, then place it on ``nodes``: the group's GPUs, not the servers'
    # (a group of one GPU per server on 16,384 DGX servers is 16,384 ranks, not 131,072)
    group = base.group(gpus_per_node, 1).with_(nodes=nodes)
    return predict(collective, nbytes, machine=group).seconds
