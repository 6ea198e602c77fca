"""A GPU cluster as a graph of links: servers, NVLink domains, NICs, rails, leaf and spine
switches; each pair of GPUs' path and transfer time.

Taught in chapter 11, "NVLink, NVSwitch and the cluster network"
(``chapters/11_nvlink_topology.ipynb``); see :mod:`scaleout.topology` for the model.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from .. import checks, hardware
from .records import MAX_ALPHA_S, MAX_GPUS, TIERS, Link, Path, Traffic, _link

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
