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
phases, each a set of concurrent flows (src GPU, dst GPU, bytes). Its time is, per phase,
``steps * alpha`` plus the busiest link's bytes over that link's bandwidth: the fluid
bound that pipelined collectives (NCCL's chunked rings and trees) approach. For one ring
this is exactly the alpha-beta ring cost of :mod:`scaleout.costmodel` (Thakur et al. 2005).
"""

from __future__ import annotations

import math
import numbers
from collections import defaultdict
from dataclasses import dataclass
from typing import NamedTuple

from . import hardware

LINK_KINDS = ("nvlink-out", "nvlink-in", "nic-out", "nic-in", "leaf-up", "leaf-down")
TIERS = ("local", "nvlink", "leaf", "spine")


class Link(NamedTuple):
    """A directed link: ``kind`` (one of ``LINK_KINDS``) and the GPU, NIC or leaf index."""

    kind: str
    index: int


class Flow(NamedTuple):
    src: int  # GPU index
    dst: int  # GPU index
    nbytes: float


class Path(NamedTuple):
    """How bytes from GPU ``src`` reach GPU ``dst``: links and switches crossed, in order."""

    src: int
    dst: int
    tier: str  # "local" | "nvlink" | "leaf" | "spine"
    links: tuple[Link, ...]
    switches: tuple[str, ...]


class Timing(NamedTuple):
    seconds: float
    latency_s: float  # sum over phases of steps * alpha
    bandwidth_s: float  # sum over phases of busiest-link bytes / bandwidth
    bottleneck: Link | None  # busiest link (relative to its bandwidth) of the slowest phase


@dataclass(frozen=True)
class Traffic:
    """A traffic pattern: phases run one after another, the flows of a phase at once."""

    name: str
    phases: tuple[tuple[Flow, ...], ...]
    steps: tuple[int, ...]  # message steps per phase (latency terms)


def _count(name: str, value, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def _positive(name: str, value, minimum: float = 0.0, strict: bool = True) -> float:
    ok = isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)
    if not ok or value < minimum or (strict and value == minimum):
        rng = f"> {minimum:g}" if strict else f">= {minimum:g}"
        raise ValueError(f"{name} must be a finite number {rng}, got {value!r}")
    return float(value)


_H100 = hardware.link("nvlink4-h100")
_NIC400 = hardware.link("nic-400g")


@dataclass(frozen=True)
class Cluster:
    """Servers of GPUs, NVLink domains, NICs, leaf and spine switches (see module doc).

    Defaults describe DGX H100 servers: 8 GPUs, NVLink 4 at 450 GB/s per direction per
    GPU, one 400 Gb/s (50 GB/s per direction) NIC per GPU, groups of up to 32 servers
    per rail leaf.
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
        _count("servers", self.servers)
        g = _count("gpus_per_server", self.gpus_per_server)
        nics = (
            g if self.nics_per_server is None else _count("nics_per_server", self.nics_per_server)
        )
        if g % nics:
            raise ValueError(f"nics_per_server must divide gpus_per_server = {g}, got {nics}")
        object.__setattr__(self, "nics_per_server", nics)
        if not isinstance(self.rail_optimized, bool):
            raise ValueError(f"rail_optimized must be True or False, got {self.rail_optimized!r}")
        _count("servers_per_leaf", self.servers_per_leaf)
        _count("servers_per_nvlink_domain", self.servers_per_nvlink_domain)
        _positive("oversubscription", self.oversubscription, 1.0, strict=False)
        _positive("nvlink_gb_per_s", self.nvlink_gb_per_s)
        _positive("nic_gb_per_s", self.nic_gb_per_s)
        _positive("nvlink_alpha_s", self.nvlink_alpha_s, strict=False)
        _positive("nic_alpha_s", self.nic_alpha_s, strict=False)

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

    def _gpu(self, gpu) -> int:
        if isinstance(gpu, bool) or not isinstance(gpu, numbers.Integral):
            raise ValueError(f"gpu must be an integer in 0..{self.num_gpus - 1}, got {gpu!r}")
        if not 0 <= gpu < self.num_gpus:
            raise ValueError(f"gpu must be in 0..{self.num_gpus - 1}, got {gpu}")
        return int(gpu)

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
        group, rail = divmod(leaf, self.nics_per_server) if self.rail_optimized else (leaf, 0)
        if self.rail_optimized:
            return f"rail {rail} leaf" + (f" (group {group})" if self.groups > 1 else "")
        return f"ToR leaf {group}"

    def leaf_uplink_gb_per_s(self, leaf: int) -> float:
        """Leaf-to-spine bandwidth per direction: its NICs' bandwidth / oversubscription."""
        _count("leaf", leaf, 0)
        if leaf >= self.num_leaves:
            raise ValueError(f"leaf must be in 0..{self.num_leaves - 1}, got {leaf}")
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
            return "nvlink", (Link("nvlink-out", src), Link("nvlink-in", dst))
        nics = self.nics_per_server
        ra, rb = (src % g) * nics // g, (dst % g) * nics // g
        a, b = sa * nics + ra, sb * nics + rb
        la, lb = self._leaf_of_nic(sa, ra), self._leaf_of_nic(sb, rb)
        if la == lb:
            return "leaf", (Link("nic-out", a), Link("nic-in", b))
        return "spine", (
            Link("nic-out", a),
            Link("leaf-up", la),
            Link("leaf-down", lb),
            Link("nic-in", b),
        )

    def path(self, src: int, dst: int) -> Path:
        """Links and switches a transfer from GPU ``src`` to GPU ``dst`` crosses."""
        src, dst = self._gpu(src), self._gpu(dst)
        tier, links = self._route(src, dst)
        if tier == "local":
            switches = ()
        elif tier == "nvlink":
            switches = (f"NVSwitch (domain {self.domain_of(src)})",)
        else:
            la, lb = self.leaf_of(src), self.leaf_of(dst)
            names = (self.leaf_name(la), "spine", self.leaf_name(lb))
            switches = names[:1] if tier == "leaf" else names
        return Path(src, dst, tier, links, switches)

    def link_gb_per_s(self, link: Link) -> float:
        """Bandwidth of ``link`` in GB/s (1e9 bytes/s), per direction."""
        kind, index = link
        if kind not in LINK_KINDS:
            raise ValueError(f"link kind must be one of {LINK_KINDS}, got {kind!r}")
        if kind.startswith("nvlink"):
            self._gpu(index)
            return self.nvlink_gb_per_s
        if kind.startswith("nic"):
            total = self.servers * self.nics_per_server
            if isinstance(index, bool) or not isinstance(index, numbers.Integral):
                raise ValueError(f"nic must be an integer in 0..{total - 1}, got {index!r}")
            if not 0 <= index < total:
                raise ValueError(f"nic must be in 0..{total - 1}, got {index}")
            return self.nic_gb_per_s
        return self.leaf_uplink_gb_per_s(index)

    def path_gb_per_s(self, src: int, dst: int) -> float:
        """Bandwidth of a lone transfer src -> dst: its slowest link, GB/s per direction."""
        links = self.path(src, dst).links
        return min((self.link_gb_per_s(x) for x in links), default=math.inf)

    def alpha_s(self, tier: str) -> float:
        """Per-message latency assumed for a transfer of ``tier`` (see hardware presets)."""
        _check_tier(tier)
        return {"local": 0.0, "nvlink": self.nvlink_alpha_s}.get(tier, self.nic_alpha_s)

    def transfer_time(self, src: int, dst: int, nbytes: float) -> float:
        """Seconds for a lone transfer: alpha of the path + nbytes / path bandwidth."""
        nbytes = _positive("nbytes", nbytes, strict=False)
        path = self.path(src, dst)
        if path.tier == "local":
            return 0.0
        return self.alpha_s(path.tier) + nbytes / (self.path_gb_per_s(src, dst) * 1e9)


def _check_tier(tier: str) -> str:
    if tier not in TIERS:
        raise ValueError(f"tier must be one of {TIERS}, got {tier!r}")
    return tier


# --- loads and times -----------------------------------------------------------------------
def _loads(cluster: Cluster, flows) -> tuple[dict[Link, float], set[str]]:
    loads: dict[Link, float] = defaultdict(float)
    tiers = set()
    n = cluster.num_gpus
    for src, dst, nbytes in flows:
        nbytes = _positive("nbytes", nbytes, strict=False)
        if not (0 <= src < n and 0 <= dst < n):  # full check (and message) in _gpu
            cluster._gpu(src), cluster._gpu(dst)
        tier, links = cluster._route(int(src), int(dst))
        tiers.add(tier)
        for link in links:
            loads[link] += nbytes
    return dict(loads), tiers


def link_loads(cluster: Cluster, flows) -> dict[Link, float]:
    """Bytes each directed link carries for ``flows`` (Flow or (src, dst, nbytes) tuples),
    or for every phase of a :class:`Traffic` added up."""
    if isinstance(flows, Traffic):
        flows = [f for phase in flows.phases for f in phase]
    return _loads(cluster, flows)[0]


def tier_bytes(cluster: Cluster, traffic: Traffic) -> dict[str, float]:
    """Bytes of ``traffic`` by the highest tier each flow reaches (local..spine)."""
    out = dict.fromkeys(TIERS, 0.0)
    for phase in traffic.phases:
        for src, dst, nbytes in phase:
            out[cluster.path(src, dst).tier] += nbytes
    return out


def traffic_time(cluster: Cluster, traffic: Traffic) -> Timing:
    """Fluid-model time: per phase, steps * alpha + max over links of bytes / bandwidth."""
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
    return Timing(latency + bandwidth, latency, bandwidth, worst)


# --- traffic patterns ------------------------------------------------------------------
def _ring_flows(gpus, nbytes: float, factor: float) -> tuple[Flow, ...]:
    p = len(gpus)
    return tuple(Flow(gpus[i], gpus[(i + 1) % p], factor * nbytes) for i in range(p) if p > 1)


def ring_allreduce(cluster: Cluster, groups, nbytes: float, name: str = "ring all-reduce"):
    """Ring all-reduce of ``nbytes`` per GPU in each group (a list of GPU lists, all run
    at once): every GPU sends 2(p-1)/p * nbytes to its successor over 2(p-1) steps
    (Patarasuk & Yuan 2009; MPICH ``allreduce_intra_ring.c``)."""
    nbytes = _positive("nbytes", nbytes, strict=False)
    groups = [[cluster._gpu(g) for g in group] for group in groups]
    if not groups or any(len(group) < 1 for group in groups):
        raise ValueError("groups must be a non-empty list of non-empty GPU lists")
    flows = [f for grp in groups for f in _ring_flows(grp, nbytes, 2 * (len(grp) - 1) / len(grp))]
    steps = max(2 * (len(group) - 1) for group in groups)
    return Traffic(name, (tuple(flows),), (steps,))


def tp_allreduce(cluster: Cluster, nbytes: float, tp: int | None = None) -> Traffic:
    """Tensor parallelism: groups of ``tp`` consecutive GPUs of one server (default: the
    whole server) each ring-all-reduce ``nbytes`` (Shoeybi et al. 2019: TP traffic is
    all-reduce, kept inside the NVLink domain)."""
    g = cluster.gpus_per_server
    tp = g if tp is None else _count("tp", tp)
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
    nbytes = _positive("nbytes", nbytes, strict=False)
    if not isinstance(scatter_gather, bool):
        raise ValueError(f"scatter_gather must be True or False, got {scatter_gather!r}")
    g = cluster.gpus_per_server
    share = nbytes / g if scatter_gather else nbytes
    sends = tuple(
        Flow(s * g + i, (s + 1) * g + i, share)
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
    g = cluster.gpus_per_server
    return [[s * g + i for s in range(cluster.servers)] for i in range(g)]


def dp_allreduce(cluster: Cluster, nbytes: float, algorithm: str = "ring") -> Traffic:
    """Data-parallel gradient all-reduce of ``nbytes`` per GPU across servers, one group
    per local rank (all at once). ``"ring"``: servers in order. ``"tree"``: a binary
    tree over servers in heap order (parent of s is (s-1)//2); each child sends nbytes up
    (reduce) and receives nbytes back (broadcast), pipelined, so an inner node moves 3x
    nbytes through its NIC (chapter 9's double binary tree halves that)."""
    if algorithm not in ("ring", "tree"):
        raise ValueError(f"algorithm must be 'ring' or 'tree', got {algorithm!r}")
    if algorithm == "ring":
        return ring_allreduce(cluster, dp_groups(cluster), nbytes, "DP ring all-reduce")
    nbytes = _positive("nbytes", nbytes, strict=False)
    flows = []
    for group in dp_groups(cluster):
        for child in range(1, len(group)):
            parent = (child - 1) // 2
            flows += [
                Flow(group[child], group[parent], nbytes),
                Flow(group[parent], group[child], nbytes),
            ]
    depth = int(math.floor(math.log2(cluster.servers)))
    return Traffic("DP tree all-reduce", (tuple(flows),), (2 * depth,))


def hierarchical_allreduce(cluster: Cluster, nbytes: float) -> Traffic:
    """All-reduce of ``nbytes`` per GPU over every GPU: ring reduce-scatter inside each
    server (NVLink), ring all-reduce of the 1/g shards across servers on each rail, ring
    all-gather inside each server (the 2D scheme NCCL and Horovod use across nodes)."""
    nbytes = _positive("nbytes", nbytes, strict=False)
    g, s = cluster.gpus_per_server, cluster.servers
    servers = [list(range(k * g, (k + 1) * g)) for k in range(s)]
    inside = tuple(f for grp in servers for f in _ring_flows(grp, nbytes, (g - 1) / g))
    across = ring_allreduce(cluster, dp_groups(cluster), nbytes / g).phases[0]
    phases = (inside, across, inside)
    return Traffic("hierarchical all-reduce", phases, (g - 1, 2 * (s - 1), g - 1))


def allreduce_scenarios(
    servers: int,
    gpus_per_server: int,
    nvlink_gb_per_s: float,
    nic_gb_per_s: float,
    oversubscription: float = 1.0,
    nbytes: float = 1e9,
) -> dict[str, Timing]:
    """Time of an all-reduce of ``nbytes`` per GPU in four places of one cluster:
    inside one server over NVLink; across servers on the rails (all servers under one rail
    leaf each); across servers through an oversubscribed spine (one top-of-rack leaf per
    server, so every hop climbs to the spine); and over all GPUs, hierarchically."""
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
    one_server = [list(range(gpus_per_server))]
    return {
        "inside one server (NVLink)": traffic_time(
            rails, ring_allreduce(rails, one_server, nbytes)
        ),
        "across servers, on the rails": traffic_time(rails, dp_allreduce(rails, nbytes)),
        "across servers, through the spine": traffic_time(spine, dp_allreduce(spine, nbytes)),
        "all GPUs, hierarchical": traffic_time(rails, hierarchical_allreduce(rails, nbytes)),
    }
