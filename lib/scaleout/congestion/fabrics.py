"""Fabrics: how big a fat tree of a given switch radix gets, and what rail-only and
multi-plane designs save or serve.

* :func:`fat_tree` (Al-Fares et al., SIGCOMM 2008): k-port switches, non-blocking. Two
  tiers serve k^2/2 hosts with 3k/2 switches; three tiers k^3/4 hosts with 5k^2/4 switches.
  For N hosts below the maximum, the tree is cut to size (N/(k/2) leaves, and so on).
* Rail-optimized (chapter 11): one NIC per GPU, NIC i of every server on rail i, all rails
  joined by a spine: one any-to-any Clos over all N NIC ports.
* Rail-only (Wang et al., "How to Build Low-cost Networks for Large Language Models
  (without Sacrificing Performance)", arXiv 2307.12169, 2023): no spine; each of the
  ``rails`` rails is its own Clos over N/rails ports. Traffic between rails crosses the
  NVLink domain first (PXN-style forwarding); it serves DP and PP traffic (same-rank
  GPUs) directly and all-to-all only through the forwarding.
* Multi-plane (Alibaba HPN, Qian et al., SIGCOMM 2024): each NIC port is split into
  ``planes`` ports of 1/planes the speed, each to a separate plane; a switch of the same
  total bandwidth has ``planes`` x more ports at the lower speed, so each plane's Clos
  reaches more hosts in fewer tiers, and hashing in one plane cannot collide with the
  other.

Counts are switches, switch-to-switch links and host links; a link is two transceivers
when optical. No prices are assumed: the chapter compares counts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .. import checks

MAX_HOSTS = 1 << 24
RADIX_RANGE = (4, 1024)


@dataclass(frozen=True)
class FabricSize:
    """Switches, tiers and links of a fabric for ``hosts`` NIC ports (per plane summed)."""

    name: str
    hosts: int
    tiers: int
    switches: int
    switch_links: int
    host_links: int

    @property
    def switches_per_gpu(self) -> float:
        return self.switches / self.hosts

    @property
    def links_per_gpu(self) -> float:
        return (self.switch_links + self.host_links) / self.hosts


def _radix(radix) -> int:
    k = checks.integer("radix", radix, *RADIX_RANGE)
    if k % 2:
        raise checks.fail("radix", "an even number of ports", k)
    return k


def fat_tree_hosts(radix: int, tiers: int) -> int:
    """Most hosts a non-blocking fat tree of ``radix``-port switches serves in ``tiers``
    tiers (1: one switch, k; 2: k^2/2; 3: k^3/4)."""
    k = _radix(radix)
    t = checks.integer("tiers", tiers, 1, 3)
    return {1: k, 2: k * k // 2, 3: k**3 // 4}[t]


def fat_tree(hosts: int, radix: int, name: str = "fat tree") -> FabricSize:
    """The smallest non-blocking fat tree of ``radix``-port switches for ``hosts`` ports."""
    n = checks.integer("hosts", hosts, 1, MAX_HOSTS)
    k = _radix(radix)
    name = checks.text("name", name)
    half = k // 2
    if n <= k:
        return FabricSize(name, n, 1, 1, 0, n)
    if n <= k * k // 2:
        leaves = math.ceil(n / half)
        spines = math.ceil(leaves * half / k)
        return FabricSize(name, n, 2, leaves + spines, leaves * half, n)
    if n <= k**3 // 4:
        edge = math.ceil(n / half)
        agg = edge
        core = math.ceil(agg * half / k)
        return FabricSize(name, n, 3, edge + agg + core, edge * half + agg * half, n)
    raise checks.fail("hosts", f"at most {k**3 // 4} for a 3-tier fat tree of radix {k}", n)


def _sum(name: str, parts: list[FabricSize], hosts: int) -> FabricSize:
    return FabricSize(
        name, hosts, max(p.tiers for p in parts), sum(p.switches for p in parts),
        sum(p.switch_links for p in parts), sum(p.host_links for p in parts),
    )  # fmt: skip


def rail_optimized(gpus: int, radix: int) -> FabricSize:
    """Rail-optimized any-to-any fabric: one fat tree over every GPU's NIC port."""
    return fat_tree(gpus, radix, "rail-optimized")


def rail_only(gpus: int, radix: int, rails: int = 8) -> FabricSize:
    """Rail-only: ``rails`` separate fat trees (one per rail), no spine between them."""
    n = checks.integer("gpus", gpus, 1, MAX_HOSTS)
    r = checks.integer("rails", rails, 1, 1024)
    if n % r:
        raise checks.fail("gpus", f"a multiple of rails = {r}", n)
    per = fat_tree(n // r, radix, "rail")
    return _sum("rail-only", [per] * r, n)


def multi_plane(gpus: int, radix: int, planes: int = 2) -> FabricSize:
    """Multi-plane: each NIC port split into ``planes`` ports; each plane a fat tree of
    switches with ``radix x planes`` ports at 1/planes the speed."""
    n = checks.integer("gpus", gpus, 1, MAX_HOSTS)
    p = checks.integer("planes", planes, 1, 8)
    plane = fat_tree(n, _radix(radix) * p, "plane")
    return _sum(f"{p}-plane", [plane] * p, n)


def compare(gpus: int, radix: int, rails: int = 8, planes: int = 2) -> dict[str, FabricSize]:
    """The three designs for ``gpus`` GPUs (one NIC port each) of ``radix``-port switches."""
    return {
        "rail-optimized": rail_optimized(gpus, radix),
        "rail-only": rail_only(gpus, radix, rails),
        "multi-plane": multi_plane(gpus, radix, planes),
    }


def saving(base: FabricSize, other: FabricSize) -> dict[str, float]:
    """Fraction of ``base``'s switches, and of its links, that ``other`` does without."""
    checks.instance("base", base, FabricSize)
    checks.instance("other", other, FabricSize)
    base_links = base.switch_links + base.host_links
    other_links = other.switch_links + other.host_links
    return {
        "switches": 1 - other.switches / base.switches,
        "links": 1 - other_links / base_links,
    }
