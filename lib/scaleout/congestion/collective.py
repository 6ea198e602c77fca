"""A collective on a leaf-spine fabric whose spine paths are chosen per flow, per packet or
per flowlet: what ECMP collisions cost a ring across servers, and what buys it back.

The traffic is chapter 11's: NCCL's flat rings, one channel per NIC
(:func:`scaleout.topology.flat_ring_allreduce`), on chapter 11's cluster
(:class:`scaleout.topology.Cluster`: NVLink inside a server, one NIC per rail, rail leaves
or top-of-rack leaves). Chapter 11 treats each leaf's uplink as one perfectly balanced
aggregate; here it is what it is in a two-tier Clos, ``spines`` separate links, each the
speed of a NIC (``ceil(nics on the leaf / oversubscription)`` of them, together chapter
11's uplink bandwidth), and every flow that leaves its leaf takes one spine ``s``: the
uplink (leaf, s) and the downlink (s, destination leaf).

How a flow's bytes are placed on spines (``routing``):

* ``"ecmp"``: every queue pair (QP) of a connection is its own 5-tuple (a RoCEv2 QP has its
  own UDP source port), so each of ``qps_per_connection`` QPs hashes to a spine uniformly at
  random and carries 1/q of the bytes (NCCL round-robins messages over the QPs; see
  :mod:`scaleout.congestion.qps`).
* ``"spray"``: per-packet spraying puts 1/spines of every flow on every spine: exactly
  balanced, the no-collision case that chapter 11's fluid bound assumes. The receiver must
  place packets out of order (chapter 12).
* ``"adaptive"``: flowlet switching. Each QP's bytes come in ``flowlets`` pieces; each
  starts on the QP's hashed spine and moves to the spine whose two links (up and down) are
  least loaded when that is strictly less loaded than its own. A move never raises the
  busiest link's load, so adaptive is never slower than ECMP on the same hashes.

Links are shared max-min fairly (:func:`~scaleout.congestion.fairshare.max_min_rates`) and
the collective finishes with its slowest flow. All flows of a ring carry the same bytes,
so the slowest flow's rate is the first level of progressive filling, 1 / (busiest link's
flow weight per GB/s): the collective's time is the busiest link's bytes over its
bandwidth, chapter 11's fluid bound evaluated on the routed loads. Latency is not counted.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .. import checks, nccl, topology
from .. import machine as M

ROUTINGS = ("ecmp", "spray", "adaptive")
COLLECTIVES = ("allreduce", "allgather", "reducescatter")
FABRIC_KINDS = ("rail-optimized", "top-of-rack")
MAX_QPS = 64
MAX_SEEDS = 10_000
MAX_FLOWLETS = 64
MAX_WORK = 1 << 24  # seeds x spine flows x QPs (vectorised)
MAX_ADAPTIVE_WORK = 1 << 18  # seeds x spine flows x QPs x flowlets (a Python loop)


@dataclass(frozen=True)
class Fabric:
    """The network under the servers: ``kind`` "rail-optimized" (NIC i of each server to
    the rail-i leaf of its group) or "top-of-rack" (all NICs of ``servers_per_leaf``
    servers to one leaf); ``oversubscription`` leaf downlink : uplink bandwidth. Defaults:
    chapter 11's cluster (rail groups of 32 servers, non-blocking)."""

    kind: str = "rail-optimized"
    servers_per_leaf: int = 32
    oversubscription: float = 1.0

    def __post_init__(self):
        checks.choice("kind", self.kind, FABRIC_KINDS)
        checks.integer("servers_per_leaf", self.servers_per_leaf, 1, topology.MAX_GPUS)
        checks.real("oversubscription", self.oversubscription, 1.0, 64.0)


@dataclass(frozen=True)
class CollectiveResult:
    """Per-seed bus bandwidth (GB/s, nccl-tests' busbw) of the collective, and the
    no-collision bound (perfect balance: what spraying gets)."""

    routing: str
    qps_per_connection: int
    busbw_gb_per_s: np.ndarray
    fluid_busbw_gb_per_s: float
    spines: int
    spine_flows: int

    def percentile(self, q: float) -> float:
        """The ``q``-th percentile (0..100) of the per-seed bus bandwidth."""
        q = checks.real("q", q, 0.0, 100.0)
        return float(np.percentile(self.busbw_gb_per_s, q))

    @property
    def percentiles(self) -> dict[int, float]:
        """p1, p10, p50, p90 and p99 of the per-seed bus bandwidth, GB/s."""
        return {q: self.percentile(q) for q in (1, 10, 50, 90, 99)}


def as_topology(machine) -> nccl.Topology:
    """``machine`` as an :class:`scaleout.nccl.topo.Topology`: :func:`scaleout.machine.as_topology`
    (a preset name is looked up, a :class:`scaleout.machine.Machine` gives its topology)."""
    return M.as_topology(machine)


def cluster_of(machine, fabric: Fabric | None = None) -> topology.Cluster:
    """Chapter 11's :class:`scaleout.topology.Cluster` for ``machine`` on ``fabric``."""
    topo = as_topology(machine)
    fabric = Fabric() if fabric is None else checks.instance("fabric", fabric, Fabric)
    g, k = topo.gpus_per_node, topo.nics_per_node
    if k == 0 or g % k:
        raise checks.fail("machine", "a machine whose NICs divide its GPUs", topo.name)
    nvlink = topo.nvlink_bw if topo.nvlink_links else topo.pcie_bw
    return topology.Cluster(
        servers=topo.nodes, gpus_per_server=g, nics_per_server=k,
        rail_optimized=fabric.kind == "rail-optimized",
        servers_per_leaf=fabric.servers_per_leaf, oversubscription=fabric.oversubscription,
        nvlink_gb_per_s=nvlink, nic_gb_per_s=topo.nic_bw,
    )  # fmt: skip


def spines_of(cluster: topology.Cluster) -> int:
    """Uplinks of a full leaf, each one NIC's speed: ceil(NICs on it / oversubscription)."""
    cluster = checks.instance("cluster", cluster, topology.Cluster)
    nics = cluster.servers_per_leaf * (1 if cluster.rail_optimized else cluster.nics_per_server)
    return max(1, math.ceil(nics / cluster.oversubscription - 1e-9))


def _layout(cluster, traffic):
    """Flows as fixed links (NIC, NVLink) and, for spine flows, (source leaf, dest leaf)."""
    index, caps = {}, []
    fixed, spine_pairs, spine_rows = [], [], []
    for row, (src, dst, _) in enumerate(traffic.phases[0]):
        path = cluster.path(src, dst)
        cols = []
        for link in path.links:
            if link.kind in ("leaf-up", "leaf-down"):
                continue
            if link not in index:
                index[link] = len(caps)
                caps.append(cluster.link_gb_per_s(link))
            cols.append(index[link])
        fixed.append(cols)
        if path.tier == "spine":
            spine_pairs.append((cluster.leaf_of(src), cluster.leaf_of(dst)))
            spine_rows.append(row)
    return fixed, np.array(caps), spine_pairs, spine_rows


def _spine_loads(pairs, weights, spines, leaves, cap_up, cap_down):
    """Normalized loads (flow weight per GB/s) of uplinks and downlinks, (leaves, spines)."""
    up, down = np.zeros((leaves, spines)), np.zeros((leaves, spines))
    for (a, b), w in zip(pairs, weights, strict=True):
        up[a] += w / cap_up[a]
        down[b] += w / cap_down[b]
    return up, down


def _place(routing, pairs, q, flowlets, spines, rng, cap_up, cap_down, leaves):
    """Per spine flow, the fraction of its bytes on each spine: shape (flows, spines)."""
    n = len(pairs)
    if routing == "spray":
        return np.full((n, spines), 1.0 / spines)
    hashed = rng.integers(0, spines, size=(n, q))
    if routing == "ecmp":
        frac = np.zeros((n, spines))
        np.add.at(frac, (np.repeat(np.arange(n), q), hashed.ravel()), 1.0 / q)
        return frac
    piece = 1.0 / (q * flowlets)
    where = np.repeat(hashed, flowlets, axis=1)  # (n, q * flowlets): each flowlet's spine
    frac = np.zeros((n, spines))
    np.add.at(frac, (np.repeat(np.arange(n), q * flowlets), where.ravel()), piece)
    up, down = _spine_loads(pairs, frac, spines, leaves, cap_up, cap_down)
    for f, (a, b) in enumerate(pairs):
        du, dd = piece / cap_up[a], piece / cap_down[b]
        for j in range(q * flowlets):
            s = where[f, j]
            up[a, s] -= du
            down[b, s] -= dd
            cost = np.maximum(up[a] + du, down[b] + dd)
            best = int(np.argmin(cost))
            if cost[best] < cost[s] - 1e-15:
                s = best
                frac[f, where[f, j]] -= piece
                frac[f, s] += piece
                where[f, j] = s
            up[a, s] += du
            down[b, s] += dd
    return frac


def collective_under_ecmp(
    nbytes: float,
    *,
    collective: str = "allreduce",
    qps_per_connection: int = 1,
    routing: str = "ecmp",
    seeds: int = 100,
    fabric: Fabric | None = None,
    flowlets: int = 4,
    machine,
) -> CollectiveResult:
    """Bus bandwidth of ``collective`` of ``nbytes`` per GPU (NCCL's flat rings, one
    channel per NIC) on ``machine`` (a preset name, a Machine or an nccl Topology;
    its ``nodes`` servers) over ``fabric``, one value per seed of the hash (see the module
    docstring). ``flowlets``: pieces per QP for adaptive routing.

    Limits: ``qps_per_connection`` 1..64, ``seeds`` 1..10,000, ``flowlets`` 1..64, and
    ``seeds x spine flows x qps`` at most 2**24 (with ``flowlets`` for adaptive routing, at
    most 2**18)."""
    cluster = cluster_of(machine, fabric)
    n = checks.real("nbytes", nbytes, 1.0, 1e15)  # at least a byte: subnormals divide by 0
    collective = checks.choice("collective", collective, COLLECTIVES)
    q = checks.integer("qps_per_connection", qps_per_connection, 1, MAX_QPS)
    routing = checks.choice("routing", routing, ROUTINGS)
    s = checks.integer("seeds", seeds, 1, MAX_SEEDS)
    fl = checks.integer("flowlets", flowlets, 1, MAX_FLOWLETS)
    p = cluster.num_gpus
    if p < 2 or cluster.servers < 2:
        raise checks.fail("machine", "at least 2 servers (nodes >= 2)", cluster.servers)
    traffic = topology.flat_ring_allreduce(cluster, n)
    fixed, caps, pairs, rows = _layout(cluster, traffic)
    work = s * len(pairs) * q * (fl if routing == "adaptive" else 1)
    limit = MAX_ADAPTIVE_WORK if routing == "adaptive" else MAX_WORK
    if work > limit:
        raise checks.fail("seeds x spine flows x qps (x flowlets)", f"at most {limit}", work)
    spines, leaves = spines_of(cluster), cluster.num_leaves
    cap_up = np.array([cluster.leaf_uplink_gb_per_s(x) / spines for x in range(leaves)])
    cap_down = cap_up
    fixed_load = np.zeros(len(caps))
    for cols in fixed:
        fixed_load[cols] += 1.0
    base = float(np.max(fixed_load / caps)) if len(caps) else 0.0
    channels = cluster.nics_per_server
    factor = 2 * (p - 1) / p if collective == "allreduce" else (p - 1) / p
    share_gb = factor * n / channels / 1e9  # GB each flow carries

    def busbw(load: float) -> float:
        seconds = share_gb * load
        return factor * n / 1e9 / seconds

    spray = _place("spray", pairs, q, fl, spines, None, cap_up, cap_down, leaves)
    up, down = _spine_loads(pairs, spray, spines, leaves, cap_up, cap_down)
    fluid = busbw(max(base, up.max(initial=0.0), down.max(initial=0.0)))
    out = np.empty(s)
    for seed in range(s):
        rng = np.random.default_rng(seed)
        frac = _place(routing, pairs, q, fl, spines, rng, cap_up, cap_down, leaves)
        up, down = _spine_loads(pairs, frac, spines, leaves, cap_up, cap_down)
        out[seed] = busbw(max(base, up.max(initial=0.0), down.max(initial=0.0)))
    return CollectiveResult(routing, q, out, fluid, spines, len(pairs))
