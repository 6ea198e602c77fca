"""NCCL's cost model (``ncclTopoTuneModel``, ``ncclTopoGetAlgoTime``) and its choice.

For a communicator, NCCL computes once, for every (collective, algorithm, protocol), a
latency in microseconds and an algorithm bandwidth in GB/s (``src/graph/tuning.cc:213-
551``, constants in :mod:`scaleout.nccl.constants`); for every call it prices each
enabled pair as ``latency + bytes / (1000 x bandwidth)`` microseconds, with a size-
dependent correction for the tree and a plateau factor for multi-node rings
(``tuning.cc:561-578``), and runs the cheapest (``enqueue.cc:1788-1807``). This module
re-expresses those two functions in numpy, from the channel graphs of
:mod:`scaleout.nccl.search`. Inputs NCCL reads that the book fixes: one data type of 4
bytes with sum (no fp8 reordering, every reduction supported by CollNet), one operation
per call (no aggregation), IB network plugin (``latencyInter = 0``), no tuner plugin, no
user-registered buffers or symmetric kernels, no NCCL_ALGO/NCCL_PROTO unless forced.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from .. import checks
from . import constants as C
from .search import PATH_TYPES, Graph, compute
from .topo import Topology, check_topology


@dataclass(frozen=True)
class Comm:
    """What ``ncclTopoTuneModel`` reads of a communicator: graphs per algorithm and the
    channel counts set up around them (``init.cc:848-1020``, ``connect.cc:452-495``)."""

    topo: Topology
    graphs: tuple  # Graph | None per algorithm (NCCL's order)
    nchannels: int  # comm->nChannels after duplication (coll channels)
    nvls_channels: int
    nvls_support: bool
    collnet_support: bool
    same_channels: bool

    def __post_init__(self):
        check_topology("topo", self.topo)
        if (
            not isinstance(self.graphs, tuple)
            or len(self.graphs) != 7
            or not all(g is None or isinstance(g, Graph) for g in self.graphs)
        ):
            raise checks.fail("graphs", "a tuple of 7 Graph or None (NCCL's algorithms)",
                              self.graphs)  # fmt: skip
        if self.graphs[C.RING] is None or self.graphs[C.TREE] is None:
            raise checks.fail("graphs", "a ring and a tree graph", self.graphs)
        checks.integer("nchannels", self.nchannels, 1, 64)
        checks.integer("nvls_channels", self.nvls_channels, 0, 64)
        checks.boolean("nvls_support", self.nvls_support)
        checks.boolean("collnet_support", self.collnet_support)
        checks.boolean("same_channels", self.same_channels)


def build_comm(topo: Topology) -> Comm:
    """The graphs NCCL searches for ``topo`` and the channels it sets up from them."""
    topo = check_topology("topo", topo)
    g, multi, cc = topo.gpus_per_node, topo.nodes > 1, topo.compute_capability
    half = int(C.value("max_channels")) // 2  # ring maxChannels = MAXCHANNELS/2 (init.cc:851)
    ring = compute(topo, "ring", 1, half)
    tree = compute(topo, "balanced_tree", ring.channels, ring.channels)  # init.cc:858-859
    chain = direct = nvls = None
    if topo.collnet and multi:
        chain = compute(topo, "collnet_chain", ring.channels, ring.channels)
        if topo.nvlink_links:  # CollNetDirect needs NVSwitches (tuning.cc:450)
            arity = int(C.value("max_direct_arity")) + 1
            direct = compute(topo, "collnet_direct", 1, min(arity, g))
    if topo.nvls and g > int(C.value("nvls_min_gpus")):  # nvls.cc:160
        nvls = compute(topo, "nvls", 1, min(int(C.value("max_nvls_arity")), g))
    n = min(ring.channels, tree.channels)  # init.cc:1020
    ring = Graph(ring.pattern, n, ring.bw_intra, ring.bw_inter, ring.type_intra, ring.type_inter)
    tree = Graph(tree.pattern, n, tree.bw_intra, tree.bw_inter, tree.type_intra, tree.type_inter)
    collnet = (
        chain is not None
        and chain.channels > 0
        and topo.nodes >= int(C.value("collnet_node_threshold"))
    )
    nvls_ok = nvls is not None and nvls.channels > 0
    top, _, _ = C.CONSTANTS["coll_channel_doubling"].value
    coll = min(int(C.value("max_channels")), top * n)  # connect.cc:452
    if collnet and chain.bw_intra > chain.bw_inter and topo.ranks > topo.nodes:
        coll = min(int(C.value("max_channels")), coll + coll // 2)  # connect.cc:456-460
    if cc >= 90 and multi and ring.bw_intra > 45.0 and coll < 16:
        coll *= 2  # connect.cc:466
    hopper, bw_multi, bw_nvl = (int(x) for x in C.value("nvls_channels"))
    nvls_channels = (hopper if cc < 100 else bw_multi if multi else bw_nvl) if nvls_ok else 0
    coll = max(coll, nvls_channels)  # connect.cc:493-494
    graphs = (tree, ring, direct, chain, nvls, nvls, tree)  # init.cc:687
    return Comm(topo, graphs, coll, nvls_channels, nvls_ok, collnet, not multi)


def _log2i(n: int) -> int:
    return int(n).bit_length() - 1 if n > 0 else -1


def _log2_array(n: np.ndarray) -> np.ndarray:
    """:func:`_log2i` of every element of an int64 array below 2**53 (frexp's exponent is
    the bit length, exactly, for integers a float64 holds exactly)."""
    exponent = np.frexp(n.astype(np.float64))[1]
    return np.where(n > 0, exponent - 1, -1).astype(np.int64)


def _bandwidth(comm: Comm, coll: int, a: int, p: int) -> float:
    """Algorithm bandwidth (GB/s) NCCL stores for (collective, algorithm, protocol)."""
    topo, graph = comm.topo, comm.graphs[a]
    nranks, nnodes, cc = topo.ranks, topo.nodes, topo.compute_capability
    if graph is None or graph.channels == 0:
        return 0.0
    gpu = 3 if cc >= 100 else 2 if cc >= 90 else 1 if cc >= 80 else 0  # tuning.cc:232
    nodes = nnodes - 1 if nnodes <= 2 else 2  # tuning.cc:233
    cpu = gpu if nnodes == 1 else (1 if topo.cpu == "amd" else 0)  # tuning.cc:235-236
    ll_max = C.LL_MAX_BW[cpu, nodes]
    ppn = nranks / nnodes
    agrs = coll in (C.ALLGATHER, C.REDUCESCATTER)
    collnet = a in (C.COLLNET_DIRECT, C.COLLNET_CHAIN)
    bw = graph.bw_intra if nnodes <= 2 or collnet else graph.bw_inter  # tuning.cc:266
    if a == C.NVLS:  # tuning.cc:267-274
        bw = (min(graph.bw_intra, graph.bw_inter) if coll == C.ALLREDUCE else
              min(graph.bw_intra * (ppn - 1) / ppn, graph.bw_inter * 0.9))  # fmt: skip
    if a == C.NVLS_TREE:
        bw = min(graph.bw_intra, graph.bw_inter if nnodes <= 2 else graph.bw_inter / 2)
    bus = graph.channels * bw
    k = C.value  # refinements, tuning.cc:279-298
    if a == C.RING and p == C.LL:
        bus = min(ll_max, bus * k("ring_ll_factor"))
    if a == C.RING and p == C.LL128:
        bus = min(bus * k("ring_ll128_factor"), graph.channels * C.PER_CH_RING_LL128[gpu, nodes])
    if a == C.TREE and coll == C.ALLREDUCE:
        bus = min(bus * k("tree_allreduce_factor"), graph.channels * C.PER_CH_TREE[gpu, nodes])
    if a == C.TREE and p == C.LL:
        bus = min(bus / k("tree_ll_divisor"), ll_max)
    if a == C.TREE and p == C.LL128:
        one, many = k("tree_ll128_factor")
        bus = min(bus * (one if nnodes == 1 else many),
                  graph.channels * C.PER_CH_TREE_LL128[gpu, nodes])  # fmt: skip
    if a == C.TREE and comm.graphs[C.TREE].pattern == "tree":
        bus *= k("tree_pattern_factor")
    if a == C.PAT:
        bus *= k("pat_factor")
    if collnet and p != C.SIMPLE:
        bus = 0.0
    if a == C.COLLNET_DIRECT and p == C.SIMPLE:
        if agrs:
            bus = ppn * min(graph.bw_intra, graph.bw_inter * k("collnet_agrs_inter_factor"))
        else:
            factor = ppn / graph.channels  # GPUs per NIC
            bus /= factor - (factor - 1) / 2
            bus *= k("collnet_hopper_factor") if cc >= 90 else 1.0
    if a in (C.NVLS, C.COLLNET_DIRECT) and agrs and nnodes > 1:
        bus = 0.0  # needs a CollNet plugin with iallgather/ireducescatter (tuning.cc:301-318)
    if not (a != C.RING and agrs):  # bus to algorithm bandwidth, tuning.cc:321-327
        nsteps = {C.ALLREDUCE: 2 * (nranks - 1), C.ALLGATHER: nranks - 1,
                  C.REDUCESCATTER: nranks - 1}.get(coll, nranks)  # fmt: skip
        if a == C.RING:
            bus *= nranks / nsteps
        elif a in (C.NVLS, C.NVLS_TREE):
            bus *= k("nvls_busbw_ratio")
        else:
            bus *= k("tree_busbw_ratio")
    return float(bus)


def _latency(comm: Comm, coll: int, a: int, p: int) -> float:
    """Latency (us) NCCL stores for (collective, algorithm, protocol), tuning.cc:328-378."""
    topo, graph = comm.topo, comm.graphs[a]
    nranks, nnodes = topo.ranks, topo.nodes
    ppn = nranks / nnodes
    local = nranks // nnodes
    intra_hw = C.HW_NVLINK if graph is not None and graph.type_intra == "NVL" else C.HW_PCI
    hw = intra_hw if nnodes == 1 else C.HW_NET
    lat = float(C.BASE_LAT[a, p])
    intra = float(C.HW_LAT[intra_hw, a, p])
    inter = float(C.HW_LAT[C.HW_NET, C.TREE if ppn == 1 else a, p])  # + latencyInter (0)
    if a == C.RING:
        step = float(C.HW_LAT[hw, a, p])
        nsteps = {C.ALLREDUCE: 2 * (nranks - 1), C.ALLGATHER: nranks - 1,
                  C.REDUCESCATTER: nranks - 1}.get(coll, nranks)  # fmt: skip
        if coll in (C.BROADCAST, C.REDUCE):
            if comm.same_channels:
                return lat + step
            if p == C.SIMPLE:
                step = float(C.HW_LAT[hw, C.TREE, p])
            return lat + nsteps * step
        overhead = 0.0
        if nnodes > 1:
            overhead = float(C.value("net_overhead_us")[C.CPU_INDEX[topo.cpu]])
            overhead *= float(C.value("simple_net_overhead_factor")) if p == C.SIMPLE else 1.0
        intra = max(intra, overhead)
        n_inter = 0 if nnodes == 1 else 2 * (nnodes - 1) if coll == C.ALLREDUCE else nnodes - 1
        return lat + (nsteps - n_inter) * intra + n_inter * inter
    log_nodes = _log2i(nnodes)
    if a == C.TREE:
        return lat + (2 * ((local - 1) * intra + log_nodes * inter) if coll == C.ALLREDUCE else 0)
    if a == C.COLLNET_DIRECT:
        arity = float(C.value("collnet_arity_latency_us"))
        return lat + 2 * (min(1, local - 1) * intra + (local - 1) * arity) + inter
    if a == C.COLLNET_CHAIN:
        return lat + 2 * (local - 1) * intra + inter
    if a == C.NVLS:
        return intra + (inter if nnodes > 1 else 0.0)
    if a == C.NVLS_TREE:
        return lat + intra + 2 * log_nodes * inter
    base, divisor, per_rank = (float(x) for x in C.value("pat_latency_us"))
    if coll in (C.ALLGATHER, C.REDUCESCATTER):
        return base + log_nodes * (inter / divisor) + nranks * per_rank
    return lat


def _computed(comm: Comm, coll: int, a: int, p: int) -> bool:
    """Whether ncclTopoTuneModel prices (coll, a, p) at all (tuning.cc:255-264)."""
    if coll in (C.BROADCAST, C.REDUCE) and a != C.RING:
        return False
    if coll in (C.ALLGATHER, C.REDUCESCATTER) and a not in (C.PAT, C.RING, C.NVLS,
                                                              C.COLLNET_DIRECT):  # fmt: skip
        return False
    if coll == C.ALLREDUCE and a == C.PAT:
        return False
    if a in (C.NVLS, C.NVLS_TREE) and p != C.SIMPLE:
        return False
    if a == C.PAT and (p != C.SIMPLE or not pat_enabled(comm.topo)):
        return False
    return True


def pat_enabled(topo: Topology) -> bool:
    """``ncclPatEnable`` (tuning.cc:192-199): one GPU per node, host network device."""
    topo = check_topology("topo", topo)
    return topo.compute_capability >= 60 and topo.nodes == topo.ranks


def _enabled(comm: Comm, coll: int, a: int, p: int) -> bool:
    """Protocol and algorithm enables (tuning.cc:385-474) and the per-call filters
    (enqueue.cc:1762-1770)."""
    topo, graph = comm.topo, comm.graphs[a]
    if a == C.NVLS_TREE and topo.nodes == 1:
        return False
    if not comm.collnet_support and (a in (C.COLLNET_DIRECT, C.COLLNET_CHAIN) or (
            a == C.NVLS and topo.nodes > 1)):  # fmt: skip
        return False
    if a == C.COLLNET_DIRECT and (topo.nvlink_links == 0 or topo.gpus_per_node > 8):
        return False
    if a in (C.NVLS, C.NVLS_TREE) and (
        not comm.nvls_support
        or (coll != C.ALLREDUCE and topo.gpus_per_node > int(C.value("max_nvls_arity")))
    ):
        return False
    if p == C.LL128 and graph is not None:  # tuning.cc:457-471 (LL128 default rules)
        # NCCL_LL128_C2C=1 (its default, tuning.cc:211): Hopper and later allow NICs up to
        # P2C and PXN; earlier GPUs up to PXB. One GPU generation per topology, so
        # minCompCap == maxCompCap holds.
        limit = "PXN" if topo.compute_capability >= 90 else "PXB"
        ok = graph.path_rank("inter") <= PATH_TYPES.index(limit)
        ok = ok and graph.path_rank("intra") <= PATH_TYPES.index("NVB")
        if not ok or topo.compute_capability < 70:
            return False
    return True


@dataclass(frozen=True)
class Table:
    """The model for one communicator: ``latency_us[coll, algo, proto]`` and
    ``algbw_gb_per_s[...]`` (0 where NCCL does not run that pair), ``max_threads[algo,
    proto]``, and the :class:`Comm` they came from."""

    comm: Comm
    latency_us: np.ndarray
    algbw_gb_per_s: np.ndarray
    max_threads: np.ndarray

    def __post_init__(self):
        checks.instance("comm", self.comm, Comm)
        for name in ("latency_us", "algbw_gb_per_s"):
            arr = checks.array(name, getattr(self, name), ndim=3, low=0.0)
            if arr.shape != (5, 7, 3):
                raise checks.fail(name, "an array of shape (5, 7, 3)", arr.shape)
        arr = checks.array("max_threads", self.max_threads, ndim=2, low=0, integer=True)
        if arr.shape != (7, 3):
            raise checks.fail("max_threads", "an array of shape (7, 3)", arr.shape)


def tune_model(topo: Topology) -> Table:
    """``ncclTopoTuneModel`` for ``topo`` (every collective, algorithm and protocol)."""
    topo = check_topology("topo", topo)
    comm = build_comm(topo)
    lat = np.zeros((5, 7, 3))
    bw = np.zeros((5, 7, 3))
    if topo.ranks > 1:
        for coll in range(5):
            for a in range(7):
                for p in range(3):
                    if not _computed(comm, coll, a, p):
                        continue
                    lat[coll, a, p] = _latency(comm, coll, a, p)
                    if _enabled(comm, coll, a, p):
                        bw[coll, a, p] = _bandwidth(comm, coll, a, p)
    return Table(comm, lat, bw, _threads(comm))


def _threads(comm: Comm) -> np.ndarray:
    """Max threads per block (tuning.cc:214-226)."""
    most, simple, ll, ll128 = (int(x) for x in C.value("max_threads"))
    ring = comm.graphs[C.RING]
    t = np.zeros((7, 3), dtype=np.int64)
    t[C.RING, C.SIMPLE] = 256 if ring.bw_intra * ring.channels <= C.value("pci_bw") else simple
    t[C.TREE, C.SIMPLE] = simple
    t[[C.COLLNET_DIRECT, C.COLLNET_CHAIN, C.NVLS, C.NVLS_TREE], C.SIMPLE] = most
    t[[C.RING, C.TREE], C.LL] = ll
    t[[C.RING, C.TREE], C.LL128] = ll128
    return t


def algo_time_us(table: Table, coll: int, a: int, p: int, nbytes: np.ndarray) -> np.ndarray:
    """``ncclTopoGetAlgoTime``: microseconds for ``nbytes`` (vector), or -1 if not run."""
    table, coll, a, p = _check_call(table, coll, a, p)
    nbytes = _bytes(nbytes)
    bw = table.algbw_gb_per_s[coll, a, p]
    lat = table.latency_us[coll, a, p]
    comm = table.comm
    if bw == 0:
        return np.full(nbytes.shape, -1.0)
    bws = np.full(nbytes.shape, bw)
    if a == C.TREE and coll == C.ALLREDUCE:
        log = _log2_array(nbytes.astype(np.int64) >> 6)  # vectorised: no Python loop
        inside = (log >= 0) & (log < C.TREE_CORRECTION.shape[1])
        bws[inside] *= C.TREE_CORRECTION[p, log[inside]]
    lats = np.full(nbytes.shape, lat)
    if a == C.RING and p == C.SIMPLE and comm.topo.nodes > 1 and coll == C.ALLREDUCE:
        old, new = C.value("ring_plateau_factor")
        plateau = np.floor(nbytes / (comm.nchannels * comm.topo.ranks)) >= 64
        lats[plateau] *= old if comm.topo.compute_capability < 80 else new
    return lats + nbytes / (1000 * bws)


def fastest(table: Table, coll: int, nbytes: np.ndarray, algorithms, protocols):
    """``topoGetAlgoInfo``: (algorithm index, protocol index, microseconds) per size, the
    first minimum in NCCL's order among the allowed pairs; -1 where none can run."""
    table, coll, _, _ = _check_call(table, coll, 0, 0)
    nbytes = _bytes(nbytes)
    algorithms = _indices("algorithms", algorithms, 7)
    protocols = _indices("protocols", protocols, 3)
    best_t = np.full(nbytes.shape, np.inf)
    best_a = np.full(nbytes.shape, -1)
    best_p = np.full(nbytes.shape, -1)
    if table.comm.topo.ranks == 1:
        return (
            np.full(nbytes.shape, C.RING),
            np.full(nbytes.shape, C.SIMPLE),
            np.zeros_like(nbytes, dtype=float),
        )
    for a in algorithms:
        for p in protocols:
            t = algo_time_us(table, coll, a, p, nbytes)
            take = (t >= 0) & (t < best_t)
            best_t[take], best_a[take], best_p[take] = t[take], a, p
    return best_a, best_p, best_t


def _check_call(table, coll, a, p):
    checks.instance("table", table, Table)
    return (table, checks.integer("coll", coll, 0, 4), checks.integer("a", a, 0, 6),
            checks.integer("p", p, 0, 2))  # fmt: skip


#: Most message sizes one :func:`algo_time_us` or :func:`fastest` call prices (each size
#: costs a few float64 temporaries; fastest prices up to 21 algorithm-protocol pairs).
MAX_SIZES = 2**20


def _bytes(nbytes) -> np.ndarray:
    return checks.array("nbytes", nbytes, low=0.0, high=2.0**50, low_open=True,
                        max_size=MAX_SIZES)  # fmt: skip


_MAX_INDICES = 64  # entries an algorithms/protocols argument may list (duplicates included)


def _indices(name: str, values, n: int) -> tuple[int, ...]:
    try:  # never more than the limit: a range(10**9) must not be materialised
        values = tuple(itertools.islice(values, _MAX_INDICES + 1))
    except TypeError:
        raise checks.fail(name, f"a tuple of indices in [0, {n - 1}]", values) from None
    if not values or len(values) > _MAX_INDICES:
        raise checks.fail(name, f"a non-empty tuple of at most {_MAX_INDICES} indices in "
                          f"[0, {n - 1}]", values)  # fmt: skip
    return tuple(checks.integer(name, v, 0, n - 1) for v in values)
