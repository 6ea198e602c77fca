"""A GPU cluster as a graph of links: paths, transfer bandwidths and per-link loads.

Chapter 11 ("NVLink, NVSwitch and the cluster network") builds on this module. The model:

* GPUs sit in servers; the GPUs of one NVLink domain (one server, or several servers
  joined by NVLink switches as in GB200 NVL72) reach each other through a non-blocking
  NVSwitch fabric: a transfer from GPU a to GPU b loads a's NVLink port (out) and b's
  (in), each ``nvlink_gb_per_s`` per direction (all of a GPU's links together). The
  point-to-point NVLink meshes of DGX-1 are not modelled.
* Everything else leaves through NICs (``nics_per_server``, GPUs share them evenly) to
  leaf switches and, between leaves, through a spine. The spine is one non-blocking
  aggregate (ECMP assumed perfectly balanced); a leaf's uplink to it carries the leaf's
  NIC bandwidth divided by ``oversubscription``. The GPU-NIC PCIe hop is not modelled.
* ``rail_optimized``: NIC i of every server of a group of ``servers_per_leaf`` servers goes
  to leaf i of that group, the "rail" (NVIDIA DGX SuperPOD reference architecture:
  traffic on a rail is one switch away, traffic between rails or groups crosses the
  spine). Otherwise all NICs of ``servers_per_leaf`` servers share one top-of-rack leaf.

Links are directed: bandwidths are per direction. A traffic pattern is a sequence of
phases, each a set of concurrent flows (src GPU, dst GPU, bytes). This module says *where
the bytes go* (:func:`link_loads`, :func:`tier_bytes`). Its time, :func:`traffic_time`, is
per phase ``steps * alpha`` plus the busiest link's bytes over that link's bandwidth: the
**fluid bound** that pipelined collectives (chunked rings and trees) approach. For one ring
this is exactly the alpha-beta ring cost of :mod:`scaleout.costmodel` (Thakur et al. 2005).
It is a floor on the time of the pattern it prices, not a prediction, and it assumes what
every pattern here does: the GPUs do the reduction. In-network reduction (NVLS in the
NVSwitches, SHARP in InfiniBand switches) sends each byte once and beats that floor; the
bounds of both kinds are :func:`allreduce_bound`. What NCCL actually takes (its channels at
a per-channel speed below the link's, its protocols, its choice between ring, tree and NVLS,
chapter 10) is :func:`nccl_allreduce_scenarios`, NCCL's own cost model
(:mod:`scaleout.nccl`), priced beside the fluid bound.

The patterns: tensor-parallel rings inside a server (:func:`tp_allreduce`), pipeline sends
(:func:`pp_send`), data-parallel rings, binary and double binary trees over servers
(:func:`dp_allreduce`), and three ways to all-reduce over every GPU: NCCL's flat ring, one
ring per channel striped over the NICs (:func:`flat_ring_allreduce`; with one channel it is
the labelled "what if one NIC" case), and the hierarchical scheme of Horovod and BlueConnect
(:func:`hierarchical_allreduce`), a different algorithm that NCCL does not use.

Limits (``ValueError`` beyond them): at most ``MAX_GPUS`` = 65,536 GPUs in a cluster (the
book's largest case), ``MAX_CHANNELS`` = 64 channels, ``MAX_FLOWS`` = 2**21 flows in one
traffic pattern (65,536 GPUs x 32 channels).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import NamedTuple

from . import checks, hardware, nccl, trees
from . import machine as M

LINK_KINDS = ("nvlink-out", "nvlink-in", "nic-out", "nic-in", "leaf-up", "leaf-down")
TIERS = ("local", "nvlink", "leaf", "spine")
DP_ALGORITHMS = ("ring", "tree", "double-tree")
MAX_GPUS = 65_536
MAX_CHANNELS = 64  # NCCL's MAXCHANNELS in recent releases
MAX_FLOWS = 2**21
MAX_STEPS = 2**31  # message steps of one phase
MAX_ALPHA_S = 1.0  # a per-message latency above one second is not a network


# --- records: validated on construction --------------------------------------------------
class _LinkFields(NamedTuple):
    kind: str
    index: int


class Link(_LinkFields):
    """A directed link: ``kind`` (one of ``LINK_KINDS``) and the GPU, NIC or leaf index."""

    __slots__ = ()

    def __new__(cls, kind: str, index: int):
        kind = checks.choice("kind", kind, LINK_KINDS)
        return super().__new__(cls, kind, checks.integer("index", index, 0, MAX_GPUS - 1))


class _FlowFields(NamedTuple):
    src: int
    dst: int
    nbytes: float


class Flow(_FlowFields):
    """``nbytes`` from GPU ``src`` to GPU ``dst``, sent during one phase of a pattern."""

    __slots__ = ()

    def __new__(cls, src: int, dst: int, nbytes: float):
        src = checks.integer("src", src, 0, MAX_GPUS - 1)
        dst = checks.integer("dst", dst, 0, MAX_GPUS - 1)
        return super().__new__(cls, src, dst, checks.nonnegative("nbytes", nbytes))


class _PathFields(NamedTuple):
    src: int
    dst: int
    tier: str
    links: tuple[Link, ...]
    switches: tuple[str, ...]


class Path(_PathFields):
    """How bytes from GPU ``src`` reach GPU ``dst``: links and switches crossed, in order;
    ``tier`` is "local", "nvlink", "leaf" (one leaf switch) or "spine"."""

    __slots__ = ()

    def __new__(cls, src: int, dst: int, tier: str, links, switches):
        src = checks.integer("src", src, 0, MAX_GPUS - 1)
        dst = checks.integer("dst", dst, 0, MAX_GPUS - 1)
        links = _sequence("links", links, 4, lambda x: checks.instance("links", x, Link))
        switches = _sequence("switches", switches, 3, lambda x: checks.text("switches", x))
        return super().__new__(cls, src, dst, checks.choice("tier", tier, TIERS), links, switches)


class _TimingFields(NamedTuple):
    seconds: float
    latency_s: float
    bandwidth_s: float
    bottleneck: Link | None


class Timing(_TimingFields):
    """``seconds`` = ``latency_s`` (sum over phases of steps * alpha) + ``bandwidth_s``
    (sum over phases of the busiest link's bytes / bandwidth); ``bottleneck`` is the
    busiest link (relative to its bandwidth) of the slowest phase, None if nothing moves."""

    __slots__ = ()

    def __new__(cls, seconds: float, latency_s: float, bandwidth_s: float, bottleneck=None):
        if bottleneck is not None:
            checks.instance("bottleneck", bottleneck, Link, "a Link or None")
        return super().__new__(
            cls,
            checks.nonnegative("seconds", seconds),
            checks.nonnegative("latency_s", latency_s),
            checks.nonnegative("bandwidth_s", bandwidth_s),
            bottleneck,
        )


def _link(kind: str, index: int) -> Link:
    """A Link from the library's own (already valid) values: skips the checks."""
    return tuple.__new__(Link, (kind, index))


def _flow(src: int, dst: int, nbytes: float) -> Flow:
    return tuple.__new__(Flow, (src, dst, nbytes))


def _sequence(name: str, value, limit: int, check) -> tuple:
    """``value`` as a tuple of at most ``limit`` items, each passed through ``check``."""
    if isinstance(value, str | bytes | Mapping) or not isinstance(value, Iterable):
        raise checks.fail(name, f"a sequence of at most {limit} items", value)
    items = []
    for item in value:
        if len(items) == limit:
            raise checks.fail(name, f"a sequence of at most {limit} items", value)
        items.append(check(item))
    return tuple(items)


def _as_flow(flow) -> Flow:
    if type(flow) is Flow:
        return flow
    if isinstance(flow, str | bytes | Mapping) or not isinstance(flow, Iterable):
        raise checks.fail("flow", "a Flow or a (src, dst, nbytes) triple", flow)
    items = list(flow) if not hasattr(flow, "__len__") or len(flow) <= 3 else None
    if items is None or len(items) != 3:
        raise checks.fail("flow", "a Flow or a (src, dst, nbytes) triple", flow)
    return Flow(*items)


def _flows(flows, budget: int = MAX_FLOWS) -> tuple[Flow, ...]:
    """``flows`` (an iterable of Flow or triples) as a tuple of at most ``budget`` Flows."""
    if isinstance(flows, str | bytes | Mapping) or not isinstance(flows, Iterable):
        raise checks.fail("flows", "an iterable of Flow or (src, dst, nbytes) triples", flows)
    out = []
    for flow in flows:
        if len(out) >= budget:
            raise checks.fail("flows", f"at most {MAX_FLOWS} flows in one pattern", "more")
        out.append(_as_flow(flow))
    return tuple(out)


@dataclass(frozen=True)
class Traffic:
    """A traffic pattern: phases run one after another, the flows of a phase at once;
    ``steps`` gives each phase's message steps (its latency terms)."""

    name: str
    phases: tuple[tuple[Flow, ...], ...]
    steps: tuple[int, ...]

    def __post_init__(self):
        checks.text("name", self.name)
        if isinstance(self.phases, str | bytes | Mapping) or not isinstance(self.phases, Iterable):
            raise checks.fail("phases", "a sequence of phases (each a sequence of flows)", 0)
        phases, budget = [], MAX_FLOWS
        for phase in self.phases:
            flows = _flows(phase, budget)
            budget -= len(flows)
            phases.append(flows)
        steps = _sequence(
            "steps", self.steps, len(phases), lambda s: checks.integer("steps", s, 0, MAX_STEPS)
        )
        if len(steps) != len(phases):
            raise checks.fail("steps", f"one count per phase ({len(phases)})", self.steps)
        object.__setattr__(self, "phases", tuple(phases))
        object.__setattr__(self, "steps", steps)


_H100 = hardware.link("nvlink4-h100")
_NIC400 = hardware.link("nic-400g")


@dataclass(frozen=True)
class Cluster:
    """Servers of GPUs, NVLink domains, NICs, leaf and spine switches (see module doc).

    Defaults describe DGX H100 servers: 8 GPUs, NVLink 4 at 450 GB/s per direction per
    GPU, one 400 Gb/s (50 GB/s per direction) NIC per GPU, groups of up to 32 servers
    per rail leaf. At most ``MAX_GPUS`` GPUs in all.
    """

    servers: int = 4
    gpus_per_server: int = 8
    nics_per_server: int | None = None  # None: one NIC per GPU
    rail_optimized: bool = True
    servers_per_leaf: int = 32
    oversubscription: float = 1.0  # leaf downlink : uplink bandwidth
    servers_per_nvlink_domain: int = 1
    nvlink_gb_per_s: float = _H100.gb_per_s  # per GPU, per direction
    nic_gb_per_s: float = _NIC400.gb_per_s  # per NIC, per direction
    nvlink_alpha_s: float = _H100.alpha_s
    nic_alpha_s: float = _NIC400.alpha_s

    def __post_init__(self):
        s = checks.integer("servers", self.servers, 1, MAX_GPUS)
        g = checks.integer("gpus_per_server", self.gpus_per_server, 1, MAX_GPUS)
        if s * g > MAX_GPUS:
            raise checks.fail("servers * gpus_per_server", f"at most {MAX_GPUS} GPUs", s * g)
        nics = self.nics_per_server
        nics = g if nics is None else checks.integer("nics_per_server", nics, 1, g)
        if g % nics:
            raise ValueError(f"nics_per_server must divide gpus_per_server = {g}, got {nics}")
        values = dict(
            servers=s,
            gpus_per_server=g,
            nics_per_server=nics,
            rail_optimized=checks.boolean("rail_optimized", self.rail_optimized),
            servers_per_leaf=checks.integer("servers_per_leaf", self.servers_per_leaf, 1, MAX_GPUS),
            oversubscription=checks.real("oversubscription", self.oversubscription, 1.0),
            servers_per_nvlink_domain=checks.integer(
                "servers_per_nvlink_domain", self.servers_per_nvlink_domain, 1, MAX_GPUS
            ),
            nvlink_gb_per_s=checks.positive("nvlink_gb_per_s", self.nvlink_gb_per_s),
            nic_gb_per_s=checks.positive("nic_gb_per_s", self.nic_gb_per_s),
            nvlink_alpha_s=checks.nonnegative("nvlink_alpha_s", self.nvlink_alpha_s, MAX_ALPHA_S),
            nic_alpha_s=checks.nonnegative("nic_alpha_s", self.nic_alpha_s, MAX_ALPHA_S),
        )
        for key, value in values.items():
            object.__setattr__(self, key, value)

    # --- structure -------------------------------------------------------------------
    @property
    def num_gpus(self) -> int:
        return self.servers * self.gpus_per_server

    @property
    def groups(self) -> int:
        """Rail groups (rail-optimized) or top-of-rack leaves (otherwise)."""
        return -(-self.servers // self.servers_per_leaf)

    @property
    def num_leaves(self) -> int:
        return self.groups * (self.nics_per_server if self.rail_optimized else 1)

    def _gpu(self, gpu, name: str = "gpu") -> int:
        return checks.integer(name, gpu, 0, self.num_gpus - 1)

    def server_of(self, gpu: int) -> int:
        return self._gpu(gpu) // self.gpus_per_server

    def local_rank(self, gpu: int) -> int:
        """The GPU's index inside its server (0..gpus_per_server-1)."""
        return self._gpu(gpu) % self.gpus_per_server

    def domain_of(self, gpu: int) -> int:
        """Index of the NVLink domain holding ``gpu``."""
        return self.server_of(gpu) // self.servers_per_nvlink_domain

    def nic_of(self, gpu: int) -> int:
        """Global index of the NIC that ``gpu`` uses (server * nics_per_server + rail)."""
        server, local = self.server_of(gpu), self.local_rank(gpu)
        return server * self.nics_per_server + local * self.nics_per_server // self.gpus_per_server

    def rail_of(self, gpu: int) -> int:
        """The NIC's index inside its server: the rail, in a rail-optimized fabric."""
        return self.nic_of(gpu) % self.nics_per_server

    def _leaf_of_nic(self, server: int, nic: int) -> int:
        group = server // self.servers_per_leaf
        return group * self.nics_per_server + nic if self.rail_optimized else group

    def leaf_of(self, gpu: int) -> int:
        """Index of the leaf switch that ``gpu``'s NIC plugs into."""
        return self._leaf_of_nic(self.server_of(gpu), self.rail_of(gpu))

    def leaf_name(self, leaf: int) -> str:
        leaf = checks.integer("leaf", leaf, 0, self.num_leaves - 1)
        group, rail = divmod(leaf, self.nics_per_server) if self.rail_optimized else (leaf, 0)
        if self.rail_optimized:
            return f"rail {rail} leaf" + (f" (group {group})" if self.groups > 1 else "")
        return f"ToR leaf {group}"

    def leaf_uplink_gb_per_s(self, leaf: int) -> float:
        """Leaf-to-spine bandwidth per direction: its NICs' bandwidth / oversubscription."""
        leaf = checks.integer("leaf", leaf, 0, self.num_leaves - 1)
        group = leaf // self.nics_per_server if self.rail_optimized else leaf
        servers = min(self.servers_per_leaf, self.servers - group * self.servers_per_leaf)
        nics = servers * (1 if self.rail_optimized else self.nics_per_server)
        return nics * self.nic_gb_per_s / self.oversubscription

    # --- paths and single transfers ----------------------------------------------------
    def _route(self, src: int, dst: int) -> tuple[str, tuple[Link, ...]]:
        """(tier, links) for validated GPU indices; the hot path of every load count."""
        if src == dst:
            return "local", ()
        g, spd = self.gpus_per_server, self.servers_per_nvlink_domain
        sa, sb = src // g, dst // g
        if sa // spd == sb // spd:
            return "nvlink", (_link("nvlink-out", src), _link("nvlink-in", dst))
        nics = self.nics_per_server
        ra, rb = (src % g) * nics // g, (dst % g) * nics // g
        a, b = sa * nics + ra, sb * nics + rb
        la, lb = self._leaf_of_nic(sa, ra), self._leaf_of_nic(sb, rb)
        if la == lb:
            return "leaf", (_link("nic-out", a), _link("nic-in", b))
        return "spine", (
            _link("nic-out", a),
            _link("leaf-up", la),
            _link("leaf-down", lb),
            _link("nic-in", b),
        )

    def path(self, src: int, dst: int) -> Path:
        """Links and switches a transfer from GPU ``src`` to GPU ``dst`` crosses."""
        src, dst = self._gpu(src, "src"), self._gpu(dst, "dst")
        tier, links = self._route(src, dst)
        if tier == "local":
            switches = ()
        elif tier == "nvlink":
            switches = (f"NVSwitch (domain {self.domain_of(src)})",)
        else:
            la, lb = self.leaf_of(src), self.leaf_of(dst)
            names = (self.leaf_name(la), "spine", self.leaf_name(lb))
            switches = names[:1] if tier == "leaf" else names
        return tuple.__new__(Path, (src, dst, tier, links, switches))

    def link_gb_per_s(self, link: Link) -> float:
        """Bandwidth of ``link`` (a :class:`Link` or a (kind, index) pair) in GB/s, per
        direction."""
        kind, index = _as_link(link)
        if kind.startswith("nvlink"):
            self._gpu(index, "link index (a GPU)")
            return self.nvlink_gb_per_s
        if kind.startswith("nic"):
            checks.integer("link index (a NIC)", index, 0, self.servers * self.nics_per_server - 1)
            return self.nic_gb_per_s
        return self.leaf_uplink_gb_per_s(index)

    def path_gb_per_s(self, src: int, dst: int) -> float:
        """Bandwidth of a lone transfer src -> dst: its slowest link, GB/s per direction
        (infinite for a GPU to itself)."""
        links = self.path(src, dst).links
        return min((self.link_gb_per_s(x) for x in links), default=math.inf)

    def alpha_s(self, tier: str) -> float:
        """Per-message latency assumed for a transfer of ``tier`` (see hardware presets)."""
        tier = checks.choice("tier", tier, TIERS)
        return {"local": 0.0, "nvlink": self.nvlink_alpha_s}.get(tier, self.nic_alpha_s)

    def transfer_time(self, src: int, dst: int, nbytes: float) -> float:
        """Seconds for a lone transfer: alpha of the path + nbytes / path bandwidth."""
        nbytes = checks.nonnegative("nbytes", nbytes)
        path = self.path(src, dst)
        if path.tier == "local":
            return 0.0
        seconds = self.alpha_s(path.tier) + nbytes / (self.path_gb_per_s(src, dst) * 1e9)
        return checks.finite_result("transfer time", seconds)


def _as_link(link) -> Link:
    if type(link) is Link:
        return link
    if isinstance(link, str | bytes | Mapping) or not isinstance(link, Iterable):
        raise checks.fail("link", "a Link or a (kind, index) pair", link)
    items = list(link) if not hasattr(link, "__len__") or len(link) <= 2 else ()
    if len(items) != 2:
        raise checks.fail("link", "a Link or a (kind, index) pair", link)
    return Link(*items)


def _cluster(cluster) -> Cluster:
    return checks.instance("cluster", cluster, Cluster)


def _traffic(traffic) -> Traffic:
    return checks.instance("traffic", traffic, Traffic)


# --- loads and times -----------------------------------------------------------------------
def _loads(cluster: Cluster, flows: tuple[Flow, ...]) -> tuple[dict[Link, float], set[str]]:
    loads: dict[Link, float] = defaultdict(float)
    tiers = set()
    n = cluster.num_gpus
    for src, dst, nbytes in flows:
        if src >= n or dst >= n:  # flows are validated records; only the range is left
            cluster._gpu(src, "src"), cluster._gpu(dst, "dst")
        tier, links = cluster._route(src, dst)
        tiers.add(tier)
        for link in links:
            loads[link] += nbytes
    return dict(loads), tiers


def link_loads(cluster: Cluster, flows) -> dict[Link, float]:
    """Bytes each directed link carries for ``flows`` (Flow or (src, dst, nbytes) tuples),
    or for every phase of a :class:`Traffic` added up."""
    cluster = _cluster(cluster)
    if isinstance(flows, Traffic):
        flows = [f for phase in flows.phases for f in phase]
    return _finite_loads(_loads(cluster, _flows(flows))[0])


def _finite_loads(loads: dict[Link, float]) -> dict[Link, float]:
    if not all(math.isfinite(v) for v in loads.values()):
        raise ValueError("link loads must stay finite, but they overflow float64")
    return loads


def tier_bytes(cluster: Cluster, traffic: Traffic) -> dict[str, float]:
    """Bytes of ``traffic`` by the highest tier each flow reaches (local..spine)."""
    cluster, traffic = _cluster(cluster), _traffic(traffic)
    out = dict.fromkeys(TIERS, 0.0)
    n = cluster.num_gpus
    for phase in traffic.phases:
        for src, dst, nbytes in phase:
            if src >= n or dst >= n:
                cluster._gpu(src, "src"), cluster._gpu(dst, "dst")
            out[cluster._route(src, dst)[0]] += nbytes
    return _finite_loads(out)


def traffic_time(cluster: Cluster, traffic: Traffic) -> Timing:
    """Fluid-model time: per phase, steps * alpha + max over links of bytes / bandwidth."""
    cluster, traffic = _cluster(cluster), _traffic(traffic)
    latency = bandwidth = 0.0
    worst, worst_s = None, -1.0
    for flows, steps in zip(traffic.phases, traffic.steps, strict=True):
        loads, tiers = _loads(cluster, flows)
        latency += steps * max((cluster.alpha_s(t) for t in tiers), default=0.0)
        times = {x: b / (cluster.link_gb_per_s(x) * 1e9) for x, b in loads.items()}
        link, seconds = max(times.items(), key=lambda kv: kv[1], default=(None, 0.0))
        bandwidth += seconds
        if seconds > worst_s:
            worst, worst_s = link, seconds
    checks.finite_result("traffic time", latency + bandwidth)
    return Timing(latency + bandwidth, latency, bandwidth, worst)


# --- traffic patterns ------------------------------------------------------------------
def _ring_flows(gpus, nbytes: float, factor: float) -> list[Flow]:
    p = len(gpus)
    return [_flow(gpus[i], gpus[(i + 1) % p], factor * nbytes) for i in range(p) if p > 1]


def _groups(cluster: Cluster, groups) -> list[list[int]]:
    """A non-empty list of non-empty GPU lists, each GPU once per group, at most
    ``MAX_FLOWS`` GPUs in all."""
    what = "a non-empty list of non-empty lists of distinct GPU indices"
    if isinstance(groups, str | bytes | Mapping) or not isinstance(groups, Iterable):
        raise checks.fail("groups", what, groups)
    out, total = [], 0
    for group in groups:
        if isinstance(group, str | bytes | Mapping) or not isinstance(group, Iterable):
            raise checks.fail("groups", what, group)
        gpus = []
        for gpu in group:
            total += 1
            if total > MAX_FLOWS:
                raise checks.fail("groups", f"at most {MAX_FLOWS} GPUs in all", "more")
            gpus.append(cluster._gpu(gpu))
        if not gpus or len(set(gpus)) != len(gpus):
            raise checks.fail("groups", what, group)
        out.append(gpus)
    if not out:
        raise checks.fail("groups", what, groups)
    return out


def ring_allreduce(cluster: Cluster, groups, nbytes: float, name: str = "ring all-reduce"):
    """Ring all-reduce of ``nbytes`` per GPU in each group (a list of GPU lists, all run
    at once): every GPU sends 2(p-1)/p * nbytes to its successor over 2(p-1) steps
    (Patarasuk & Yuan 2009; MPICH ``allreduce_intra_ring.c``). One ring, one channel: a
    hop between servers goes through the one NIC of the GPU that sends it."""
    cluster = _cluster(cluster)
    nbytes = checks.nonnegative("nbytes", nbytes)
    name = checks.text("name", name)
    groups = _groups(cluster, groups)
    flows = [f for grp in groups for f in _ring_flows(grp, nbytes, 2 * (len(grp) - 1) / len(grp))]
    steps = max(2 * (len(group) - 1) for group in groups)
    return Traffic(name, (tuple(flows),), (steps,))


def tp_allreduce(cluster: Cluster, nbytes: float, tp: int | None = None) -> Traffic:
    """Tensor parallelism: groups of ``tp`` consecutive GPUs of one server (default: the
    whole server) each ring-all-reduce ``nbytes`` (Shoeybi et al. 2019: TP traffic is
    all-reduce, kept inside the NVLink domain)."""
    cluster = _cluster(cluster)
    g = cluster.gpus_per_server
    tp = g if tp is None else checks.integer("tp", tp, 1, g)
    if g % tp:
        raise ValueError(f"tp must divide gpus_per_server = {g}, got {tp}")
    groups = [list(range(start, start + tp)) for start in range(0, cluster.num_gpus, tp)]
    return ring_allreduce(cluster, groups, nbytes, f"TP all-reduce (tp = {tp})")


def pp_send(cluster: Cluster, nbytes: float, scatter_gather: bool = True) -> Traffic:
    """Pipeline parallelism with one stage per server: every stage boundary s -> s+1 sends
    an activation of ``nbytes``. Each GPU i sends to GPU i of the next server (same rail).
    Without scatter-gather every one of the t GPUs sends the whole activation; with it
    (Narayanan et al. 2021, sec. 4.1) each sends nbytes / t, then the receiving server
    rebuilds the tensor with an NVLink ring all-gather: cross-server bytes / t."""
    cluster = _cluster(cluster)
    nbytes = checks.nonnegative("nbytes", nbytes)
    scatter_gather = checks.boolean("scatter_gather", scatter_gather)
    g = cluster.gpus_per_server
    share = nbytes / g if scatter_gather else nbytes
    sends = tuple(
        _flow(s * g + i, (s + 1) * g + i, share)
        for s in range(cluster.servers - 1)
        for i in range(g)
    )
    name = "PP send" + (" with scatter-gather" if scatter_gather else "")
    if not scatter_gather:
        return Traffic(name, (sends,), (1,))
    receivers = [list(range(s * g, (s + 1) * g)) for s in range(1, cluster.servers)]
    gather = tuple(f for grp in receivers for f in _ring_flows(grp, nbytes / g, g - 1))
    return Traffic(name, (sends, gather), (1, g - 1))


def dp_groups(cluster: Cluster) -> list[list[int]]:
    """Data-parallel groups when TP fills each server: GPU i of every server, per i."""
    cluster = _cluster(cluster)
    g = cluster.gpus_per_server
    return [[s * g + i for s in range(cluster.servers)] for i in range(g)]


def _tree_flows(group: list[int], parent, nbytes: float) -> list[Flow]:
    """Each child sends ``nbytes`` up to its parent (reduce) and gets ``nbytes`` back
    (broadcast); ``parent[k]`` is the parent of rank k (-1 for the root)."""
    flows = []
    for child, up in enumerate(parent):
        if up >= 0:
            flows += [
                _flow(group[child], group[up], nbytes),
                _flow(group[up], group[child], nbytes),
            ]
    return flows


def _depth(parent: list[int]) -> int:
    """Edges on the longest path from a rank to the root of the tree ``parent``."""
    depth = [0] * len(parent)
    for k in range(len(parent)):
        d, up = 0, parent[k]
        while up >= 0 and d <= len(parent):
            d, up = d + 1, parent[up]
        depth[k] = d
    return max(depth, default=0)


def dp_allreduce(cluster: Cluster, nbytes: float, algorithm: str = "ring") -> Traffic:
    """Data-parallel gradient all-reduce of ``nbytes`` per GPU across servers, one group
    per local rank (all at once).

    * ``"ring"``: servers in order.
    * ``"tree"``: one binary tree over servers in heap order (parent of s is (s-1)//2);
      each child sends nbytes up (reduce) and receives nbytes back (broadcast),
      pipelined, so an inner node moves 3 x nbytes through its NIC in each direction.
    * ``"double-tree"``: NCCL's two trees (:func:`scaleout.trees.double_binary_tree`,
      chapter 9), each carrying half the data. No rank has more than two children over
      both trees, so no NIC carries more than 2 x nbytes per direction, like the ring; for
      an odd number of servers one rank (rank 0) is an inner node of *both* trees, with
      one child in each (:func:`scaleout.trees.check_double_tree`).
    """
    cluster = _cluster(cluster)
    algorithm = checks.choice("algorithm", algorithm, DP_ALGORITHMS)
    if algorithm == "ring":
        return ring_allreduce(cluster, dp_groups(cluster), nbytes, "DP ring all-reduce")
    nbytes = checks.nonnegative("nbytes", nbytes)
    s = cluster.servers
    if algorithm == "tree":
        parents = [[(k - 1) // 2 if k else -1 for k in range(s)]]
    else:
        parents = [tree.parent.tolist() for tree in trees.double_binary_tree(s)]
        nbytes = nbytes / 2
    flows = [
        f
        for group in dp_groups(cluster)
        for parent in parents
        for f in _tree_flows(group, parent, nbytes)
    ]
    depth = max(_depth(parent) for parent in parents)
    name = "DP tree all-reduce" if algorithm == "tree" else "DP double binary tree all-reduce"
    return Traffic(name, (tuple(flows),), (2 * depth,))


def _server_path(g: int, nics: int, rail_in: int, rail_out: int) -> list[int]:
    """Local ranks of one server in a channel's ring: enter at a GPU of ``rail_in``,
    visit the others, leave from a GPU of ``rail_out`` (a different GPU when g > 1)."""
    per = g // nics
    enter = rail_in * per
    leave = rail_out * per + per - 1
    if leave == enter and g > 1:  # one GPU per rail and the same rail both ways
        leave = (enter + 1) % g  # leave from the next GPU: this hop crosses rails
    middle = [k for k in range(g) if k not in (enter, leave)]
    return [enter, *middle] + ([leave] if leave != enter else [])


def _exit_rails(servers: int, nics: int) -> list[int]:
    """Rail each server leaves by in channel 0: neighbours differ (so a server enters on
    one rail and leaves on another) wherever ``nics`` allows it."""
    rails = [s % nics for s in range(servers)]
    if servers > 2 and nics > 2 and rails[-1] == rails[0]:
        rails[-1] = 1  # differs from rails[0] = 0 and from rails[-2] = nics - 1
    return rails


def flat_ring_allreduce(cluster: Cluster, nbytes: float, channels: int | None = None) -> Traffic:
    """All-reduce of ``nbytes`` per GPU over every GPU as NCCL's ring algorithm lays it
    out: ``channels`` flat rings over all GPUs (default: one per NIC of a server), each
    carrying ``nbytes / channels``, all at once.

    Each ring enters a server through a NIC, visits its GPUs one after another over NVLink
    and leaves through a NIC; NCCL runs several such rings at once, one per NIC, so that
    the NICs' bandwidths add up (NVIDIA/nccl issue 412, S. Jeaugey), and keeps each ring on
    the same NIC from node to node so that its traffic stays on one rail of a
    rail-optimized fabric (``NCCL_CROSS_NIC`` in NCCL's environment-variable documentation).
    Here channel c leaves server s by rail (r_s + c) mod nics and enters server s+1 on that
    same rail: every hop between servers stays on one rail (one leaf switch), and with one
    channel per NIC every NIC carries 2(p-1)/p * nbytes / channels each way. NCCL may enter
    and leave a server through the same NIC (its last GPU reaches that NIC over PCIe, which
    this model does not draw); the model sends every flow through its sending GPU's own NIC
    and alternates rails instead, which puts the same bytes on every NIC and leaf. Where the
    rails cannot alternate (two NICs and an odd number of servers) a server enters and leaves
    on one rail, by two GPUs when the rail has two.

    ``channels=1`` is one ring whose hops between servers each go through a single NIC:
    the "what if one NIC" case, the pricing NCCL does *not* do. Chapter 10 prices NCCL's
    ring (and its choice between ring and tree) with NCCL's own cost model.
    """
    cluster = _cluster(cluster)
    nbytes = checks.nonnegative("nbytes", nbytes)
    nics = cluster.nics_per_server
    c = nics if channels is None else checks.integer("channels", channels, 1, MAX_CHANNELS)
    g, s, p = cluster.gpus_per_server, cluster.servers, cluster.num_gpus
    if c * p > MAX_FLOWS:
        raise checks.fail("channels * GPUs", f"at most {MAX_FLOWS} flows", c * p)
    share = 2 * (p - 1) / p * nbytes / c if p > 1 else 0.0
    base = _exit_rails(s, nics)
    flows = []
    for k in range(c):
        out = [(r + k) % nics for r in base]
        ring = []
        for server in range(s):
            rail_in = out[server - 1] if s > 1 else (out[0] + 1) % nics
            local = _server_path(g, nics, rail_in, out[server])
            ring += [server * g + i for i in local]
        flows += _ring_flows(ring, share, 1.0)
    name = f"flat ring all-reduce, {c} channel" + ("s" if c > 1 else "")
    return Traffic(name, (tuple(flows),), (2 * (p - 1),))


def hierarchical_allreduce(cluster: Cluster, nbytes: float) -> Traffic:
    """Hierarchical all-reduce of ``nbytes`` per GPU over every GPU, in three phases: ring
    reduce-scatter inside each server (NVLink), ring all-reduce of the 1/g shards across
    servers on each rail, ring all-gather inside each server.

    This is Horovod's hierarchical all-reduce (``HOROVOD_HIERARCHICAL_ALLREDUCE``: NCCL
    reduce-scatter, MPI all-reduce across nodes, NCCL all-gather; ``NCCLHierarchicalAllreduce``
    in ``horovod/common/ops/nccl_operations.cc``) and the two-level case of BlueConnect (Cho
    et al., SysML 2019). It is an alternative to NCCL's algorithm, not what NCCL does: NCCL
    runs flat rings over all GPUs (:func:`flat_ring_allreduce`) or trees.
    """
    cluster = _cluster(cluster)
    nbytes = checks.nonnegative("nbytes", nbytes)
    g, s = cluster.gpus_per_server, cluster.servers
    servers = [list(range(k * g, (k + 1) * g)) for k in range(s)]
    inside = tuple(f for grp in servers for f in _ring_flows(grp, nbytes, (g - 1) / g))
    across = ring_allreduce(cluster, dp_groups(cluster), nbytes / g).phases[0]
    phases = (inside, across, inside)
    return Traffic("hierarchical all-reduce", phases, (g - 1, 2 * (s - 1), g - 1))


SCENARIOS = (
    "inside one server (NVLink)",
    "across servers, on the rails",
    "across servers, through the spine",
    "all GPUs, flat rings on all NICs",
    "all GPUs, hierarchical (Horovod)",
    "all GPUs, one ring (what if one NIC)",
)


def allreduce_scenarios(
    servers: int,
    gpus_per_server: int,
    nvlink_gb_per_s: float,
    nic_gb_per_s: float,
    oversubscription: float = 1.0,
    nbytes: float = 1e9,
) -> dict[str, Timing]:
    """Time of an all-reduce of ``nbytes`` per GPU in the places named by ``SCENARIOS``:

    1. inside one server over NVLink;
    2. among the same-rank GPUs of all servers, on the rails (all servers under one rail
       leaf each; one ring per local rank, each on its GPU's own NIC);
    3. the same through an oversubscribed spine (one top-of-rack leaf per server, so every
       hop climbs to the spine);
    4. over all GPUs with NCCL's flat rings, one channel per NIC (:func:`flat_ring_allreduce`);
    5. over all GPUs with Horovod's hierarchical scheme (:func:`hierarchical_allreduce`);
    6. over all GPUs with one flat ring, one NIC per server crossing: "what if one NIC".
    """
    common = dict(
        servers=servers,
        gpus_per_server=gpus_per_server,
        nvlink_gb_per_s=nvlink_gb_per_s,
        nic_gb_per_s=nic_gb_per_s,
    )
    rails = Cluster(rail_optimized=True, servers_per_leaf=servers, **common)
    spine = Cluster(
        rail_optimized=False, servers_per_leaf=1, oversubscription=oversubscription, **common
    )
    nbytes = checks.nonnegative("nbytes", nbytes)
    one_server = [list(range(gpus_per_server))]
    patterns = (
        (rails, ring_allreduce(rails, one_server, nbytes)),
        (rails, dp_allreduce(rails, nbytes)),
        (spine, dp_allreduce(spine, nbytes)),
        (rails, flat_ring_allreduce(rails, nbytes)),
        (rails, hierarchical_allreduce(rails, nbytes)),
        (rails, flat_ring_allreduce(rails, nbytes, channels=1)),
    )
    return {name: traffic_time(c, t) for name, (c, t) in zip(SCENARIOS, patterns, strict=True)}


def allreduce_bound(gpus: int, nbytes: float, gb_per_s: float, in_network: bool = False) -> float:
    """Bandwidth lower bound, in seconds, on an all-reduce of ``nbytes`` per GPU over
    ``gpus`` GPUs, each attached to a non-blocking fabric at ``gb_per_s`` per direction
    (latency not counted).

    * ``in_network=False``, the GPUs reduce: every GPU must send and receive
      :math:`2\\frac{p-1}{p}n` bytes (Patarasuk & Yuan 2009), which the ring meets. This
      caps the bus bandwidth (nccl-tests' ``busbw``) at ``gb_per_s``.
    * ``in_network=True``, the switches reduce (NVLS in the NVSwitch, SHARP in InfiniBand
      switches; Graham et al. 2016): each GPU sends its :math:`n` bytes once and receives
      the sum once, :math:`n / B`, and the bus bandwidth can reach
      :math:`2\\frac{p-1}{p}` times ``gb_per_s``.

    One GPU has nothing to exchange: 0 s. Limits: ``gpus`` at most ``MAX_GPUS``."""
    p = checks.integer("gpus", gpus, 1, MAX_GPUS)
    n = checks.nonnegative("nbytes", nbytes)
    bw = checks.positive("gb_per_s", gb_per_s) * 1e9
    checks.boolean("in_network", in_network)
    if p == 1:
        return 0.0
    sent = n if in_network else 2 * (p - 1) / p * n
    return checks.finite_result("allreduce_bound", sent / bw)


#: The scenarios of :func:`nccl_allreduce_scenarios` (NCCL's model, chapter 10).
NCCL_SCENARIOS = (
    "across servers, on the rails: NCCL's model",
    "all GPUs: NCCL's model",
)


def nccl_machine(gpus_per_server: int, nvlink_generation: int, nic_gbit_per_s: float):
    """The :class:`scaleout.nccl.topo.Topology` of one server of ``gpus_per_server`` GPUs of
    NVLink ``nvlink_generation`` (2-5: V100 to B200; NCCL's model has no P100), one NIC of
    ``nic_gbit_per_s`` per GPU, as :func:`scaleout.tensor_parallel.network.machine` reduces
    a server to what NCCL reads (:func:`scaleout.machine.from_links`)."""
    gen = hardware.nvlink_generation(checks.integer("nvlink_generation", nvlink_generation, 2, 5))
    nic = checks.real("nic_gbit_per_s", nic_gbit_per_s, 0.0, 3200.0, low_open=True)
    return M.from_links(gpus_per_server, gen.preset, "nic-400g").topology.with_(nic_gbps=nic)


def nccl_allreduce_scenarios(servers: int, machine, nbytes: float = 1e9) -> dict:
    """What NCCL's cost model (:func:`scaleout.nccl.model.predict`, release
    :data:`scaleout.nccl.constants.RELEASE`) predicts for the two cross-server all-reduces of
    :func:`allreduce_scenarios` that NCCL runs, on ``servers`` servers of ``machine`` (an
    :class:`scaleout.nccl.topo.Topology` or a preset name; its ``gpus_per_node`` is g), ``nbytes``
    per GPU: label (``NCCL_SCENARIOS``) -> :class:`scaleout.nccl.model.Prediction`.

    1. "on the rails": one communicator per local rank, the same-rank GPUs of every server,
       each keeping its own GPU's NIC (:meth:`scaleout.nccl.topo.Topology.group` (1, servers));
       they run at once on different NICs, so one group's time is the scenario's;
    2. "all GPUs": one communicator of every GPU: NCCL's rings over all NICs, or its trees.

    Unlike the fluid bound these include NCCL's per-channel speeds (a channel runs below
    the link: the GPU's PCIe link caps a DGX H100's network channels at 48 GB/s), its
    protocols and latencies, and its choice of algorithm; like it, they assume a
    non-blocking fabric (no spine oversubscription, no other jobs)."""
    s = checks.integer("servers", servers, 1, MAX_GPUS)
    base = M.as_topology(machine)
    if base.gpus_per_node * s > MAX_GPUS:
        raise checks.fail("servers * gpus_per_node", f"at most {MAX_GPUS} GPUs",
                          base.gpus_per_node * s)  # fmt: skip
    if s > 1 and base.nics_per_node == 0:
        raise checks.fail("machine", "a machine with NICs when servers > 1", base.name)
    n = checks.positive("nbytes", nbytes, nccl.model.MAX_BYTES)
    cluster = base.with_(nodes=s)
    groups = (cluster.group(1, s), cluster)
    return {name: nccl.predict("allreduce", n, topo)
            for name, topo in zip(NCCL_SCENARIOS, groups, strict=True)}  # fmt: skip
