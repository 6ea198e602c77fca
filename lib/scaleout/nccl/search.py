"""NCCL's topology search (``src/graph/search.cc``), reduced to a regular cluster.

NCCL explores the machine graph (GPUs, NVSwitches, PCIe switches, NICs) to find as many
*channels* as it can, each a path through every GPU of a node (a ring, a tree chain, an
NVLS "head"), all running at one per-channel speed taken from a fixed list
(``speedArrayIntra``/``speedArrayInter``). Every channel at speed ``s`` uses ``s`` GB/s of
each link on its path; a speed fits if the links' bandwidths (``topo.h``/``topo.cc``
figures) cover all channels. :func:`compute` replays ``ncclTopoCompute``
(``search.cc:967-1199``) on the :class:`~scaleout.nccl.topo.Topology` of a regular
cluster, where the link budget has a closed form instead of a graph walk:

* pass 1 starts at the fastest listed speed below the best GPU path (``maxBw``) and lowers
  it while the next speed is above 0.49 x the best found (``search.cc:1051, 1121``), keeping
  the graph with the largest channels x speed (``ncclTopoCompareGraphs``; ties keep the
  fewer channels); it stops early once a graph has ``maxChannels`` channels or covers the
  GPU's total NVLink/PCIe bandwidth (``search.cc:1074-1075``);
* channels are duplicated at half the speed when fast (``ncclTopoDupChannels``, 937-950);
* pass 2 raises the speed again (rings), the intra-node speed (trees, CollNet) or the
  network speed (NVLS) while the channels still fit (``search.cc:1142-1165``).

Link budgets (per GPU, per direction): a single-node ring or chain uses ``s`` of every
GPU's NVLink (or PCIe) per channel. Across nodes a ring enters a node through one NIC and
leaves through one, so each NIC carries ``floor(min(NIC, PCIe) / s)`` channels, a GPU's
PCIe carries ``floor(PCIe / s)`` entries, and the NVLink of a GPU is used by the channels
that do not enter (or leave) at it: ``(c - c // g) s``. NVLS channels each have a head GPU
that moves ``2 s`` (``ncclTopoSearchTryNvls``): ``(c + 1) s`` per GPU. CollNetDirect heads
send ``s`` and each other GPU ``s / (g - 1)`` per head (``ncclTopoSearchTryCollnetDirect``).

What the reduction omits: irregular machines (NICs not evenly spread, mixed link types,
PCIe trees deeper than one switch, NVLink without NVSwitch), CPU-crossing PCIe paths and
their Intel P2P overhead, the search's timeouts, and XML graph files. A balanced tree
needs two GPUs on each NIC's PCIe switch; with one, Hopper and later fall back to the
simpler tree (``search.cc:1093``) and earlier GPUs reach the NIC through a peer GPU (PXN).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .. import checks
from . import constants as C
from .topo import Topology, check_topology

PATH_TYPES = ("LOC", "NVL", "NVB", "C2C", "PIX", "PXB", "P2C", "PXN", "PHB", "SYS", "NET")
#: The graph patterns :func:`compute` searches for.
PATTERNS = ("balanced_tree", "tree", "ring", "nvls", "collnet_direct", "collnet_chain")
_EPS = 1e-3  # search.cc rounds link bandwidths to 1/1000 (SUB_ROUND)


@dataclass(frozen=True)
class Graph:
    """One search result (``struct ncclTopoGraph``): ``channels`` channels at
    ``bw_intra``/``bw_inter`` GB/s each, over NCCL path types ``type_intra``/``type_inter``."""

    pattern: str
    channels: int
    bw_intra: float
    bw_inter: float
    type_intra: str
    type_inter: str

    def __post_init__(self):
        checks.choice("pattern", self.pattern, PATTERNS)
        checks.integer("channels", self.channels, 0, 64)
        checks.positive("bw_intra", self.bw_intra, 5000.0)
        checks.positive("bw_inter", self.bw_inter, 5000.0)
        checks.choice("type_intra", self.type_intra, PATH_TYPES)
        checks.choice("type_inter", self.type_inter, PATH_TYPES)

    def path_rank(self, which: str) -> int:
        return PATH_TYPES.index(self.type_intra if which == "intra" else self.type_inter)


def _gen(cc: int) -> int:
    return 2 if cc >= 100 else 1 if cc >= 90 else 0


def speeds(topo: Topology) -> tuple[float, ...]:
    """The per-channel speeds NCCL tries on this machine (``search.cc:952-963``)."""
    topo = check_topology("topo", topo)
    table = C.SPEED_INTER if topo.nodes > 1 else C.SPEED_INTRA
    return tuple(float(s) for s in table[_gen(topo.compute_capability)])


def max_bw(topo: Topology) -> float:
    """``system->maxBw``: the best single path from a GPU to a NIC (or to a peer GPU)."""
    topo = check_topology("topo", topo)
    if topo.nodes > 1:
        return min(topo.pcie_bw, topo.nic_bw)
    if topo.gpus_per_node == 1:
        return 5000.0  # LOC_BW (topo.h:15)
    return topo.nvlink_bw if topo.nvlink_links else topo.pcie_bw


def total_bw(topo: Topology) -> float:
    """``system->totalBw``: a GPU's NVLink bandwidth, or its PCIe if larger."""
    topo = check_topology("topo", topo)
    if topo.nodes == 1 and topo.gpus_per_node == 1:
        return 5000.0
    return max(topo.nvlink_bw, topo.pcie_bw)


def _fits(n: float, s: float) -> int:
    """How many channels of ``s`` GB/s fit in ``n`` GB/s (with NCCL's 1/1000 rounding)."""
    if s <= 0:
        return 0
    q = (n + _EPS) / s  # a subnormal s: inf (callers cap the count at 64 anyway)
    return int(math.floor(q)) if q < 2**31 else 2**31


def _max_c(ok, cap: int) -> int:
    c = 0
    while c < cap and ok(c + 1):
        c += 1
    return c


def capacity(topo: Topology, pattern: str, s_intra: float, s_inter: float, cap: int) -> int:
    """Most channels (at most ``cap``) of ``pattern`` the links carry at these speeds."""
    topo = check_topology("topo", topo)
    checks.choice("pattern", pattern, PATTERNS)
    s_intra = checks.positive("s_intra", s_intra, 5000.0)
    s_inter = checks.positive("s_inter", s_inter, 5000.0)
    cap = checks.integer("cap", cap, 1, 64)
    if pattern in ("balanced_tree", "collnet_chain"):
        pattern = "tree"
    g, k, multi = topo.gpus_per_node, topo.nics_per_node, topo.nodes > 1
    nvl, pci, nvs = topo.nvlink_bw, topo.pcie_bw, topo.nvlink_links > 0
    intra = nvl if nvs else pci
    if pattern == "nvls":
        if not multi:  # cap channels, each through every GPU, 2 s at its head
            return cap if (cap + 1) * s_intra <= nvl + _EPS else 0
        if s_inter > min(topo.nic_bw, pci) + _EPS:
            return 0
        return _max_c(lambda c: (c + 1) * s_intra <= nvl + _EPS, min(cap, k, g))
    if pattern == "collnet_direct":
        if s_inter > min(topo.nic_bw, pci) + _EPS or not multi:
            return 0
        share = (lambda c: s_intra * (1 + (c - 1) / (g - 1))) if g > 1 else (lambda c: 0.0)
        return _max_c(lambda c: share(c) <= nvl + _EPS, min(cap, k, g))
    if not multi:  # a ring or a chain through every GPU of the node
        return min(cap, _fits(intra, s_intra)) if g > 1 else cap
    ends = topo.nic_gpus  # GPUs a channel can enter or leave through
    c = min(cap, k * _fits(min(topo.nic_bw, pci), s_inter), ends * _fits(pci, s_inter))
    if g == 1:
        return c
    if not nvs:  # PCIe-only: every hop crosses each GPU's PCIe link
        return min(c, _fits(pci, max(s_intra, s_inter)))
    if ends < g:  # some GPUs are never an end: NVLink carries every channel there
        return min(c, _fits(nvl, s_intra))
    return _max_c(lambda n: (n - n // g) * s_intra <= nvl + _EPS, c)


def _better(pattern: str, new: Graph | None, old: Graph | None, g: int) -> bool:
    """``ncclTopoCompareGraphs`` (ties keep the graph with fewer channels, fewer hops)."""
    if new is None:
        return False
    if old is None:
        return True
    if pattern == "nvls":
        return (new.channels > old.channels and new.channels <= g) or (
            new.channels * new.bw_inter > old.channels * old.bw_inter
        )
    a, b = new.channels * new.bw_intra, old.channels * old.bw_intra
    return a > b + 1e-9 or (abs(a - b) <= 1e-9 and new.channels < old.channels)


def _types(topo: Topology, pattern: str) -> tuple[str, str]:
    intra = "LOC" if topo.gpus_per_node == 1 else ("NVL" if topo.nvlink_links else "PXB")
    if topo.nodes == 1:
        return intra, "PIX"
    pxn = pattern == "balanced_tree" and topo.switch_gpus < 2
    return intra, "PXN" if pxn else "PIX"


def compute(topo: Topology, pattern: str, min_channels: int, max_channels: int) -> Graph | None:
    """``ncclTopoCompute`` for ``pattern`` (one of :data:`PATTERNS`); None if none fits."""
    topo = check_topology("topo", topo)
    checks.choice("pattern", pattern, PATTERNS)
    max_channels = checks.integer("max_channels", max_channels, 1, 64)
    min_channels = checks.integer("min_channels", min_channels, 1, max_channels)
    g, cc = topo.gpus_per_node, topo.compute_capability
    if pattern == "balanced_tree" and g == 1 and topo.nodes > 1:
        pattern = "tree"  # search.cc:1023 (one GPU: trees are plain trees)
    kind = "collnet_chain" if pattern == "collnet_chain" else pattern
    shape = "tree" if kind == "collnet_chain" else kind
    if pattern == "nvls" and topo.nodes == 1:
        min_channels = max_channels  # search.cc:1021
    table = speeds(topo)
    total = total_bw(topo) * (g / (g - 1) if g > 1 and pattern != "ring" else 1.0)
    idx = 0
    while idx < len(table) - 1 and (
        table[idx] > max_bw(topo) + _EPS or table[idx] * min_channels > total + _EPS
    ):
        idx += 1

    def graph(shape_: str, si: float, se: float, need: int) -> Graph | None:
        c = capacity(topo, shape_, si, se, max_channels)
        return Graph(shape_, c, si, se, *_types(topo, shape_)) if c >= need and c else None

    best = None
    shapes = [shape]
    if shape == "balanced_tree" and cc >= 90 and topo.nodes > 1 and _types(topo, shape)[1] == "PXN":
        shapes = ["tree"]  # the balanced tree needs PXN; Hopper tries the simpler tree first
    while True:  # pass 1
        s = table[idx]
        for sh in shapes:
            cand = graph(sh, s, s, min_channels)
            if _better(shape, cand, best, g):
                best = cand
        if best and (best.channels == max_channels or best.channels * best.bw_inter
                     >= total_bw(topo) - _EPS):  # fmt: skip
            break
        if idx < len(table) - 1 and (best is None or table[idx + 1] / best.bw_inter > 0.49):
            idx += 1
            continue
        break
    if best is None:
        if kind in ("nvls", "collnet_direct", "collnet_chain"):
            return None
        return Graph(shape, 1, 0.1, 0.1, "SYS", "SYS")  # search.cc:1168-1176
    best = _dup(best, cc, max_channels)
    idx = 0
    while idx < len(table) - 1 and table[idx] > best.bw_inter + _EPS:
        idx += 1
    si = se = table[idx]
    need = best.channels
    while idx > 0:  # pass 2
        if shape == "ring":
            idx -= 1
            cand = graph(best.pattern, table[idx], table[idx], need)
        elif shape == "nvls" and se == best.bw_inter and se < 2 * si:
            idx -= 1
            se = table[idx]
            cand = graph("nvls", si, se, need)
            cand = cand if cand and cand.channels == need else None
        elif shape != "nvls" and si == best.bw_intra and si < 2 * se:
            idx -= 1
            si = table[idx]
            cand = graph(best.pattern, si, se, need)
        else:
            break
        if _better(shape, cand, best, g):
            best = cand
    return best


def _dup(graph: Graph, cc: int, max_channels: int) -> Graph:
    """``ncclTopoDupChannels`` (search.cc:937-950)."""
    low, cc_min, fast, few = C.CONSTANTS["dup_channels_thresholds"].value
    if graph.pattern == "nvls" or graph.bw_intra < low:
        return graph
    if cc > cc_min and graph.bw_intra < fast and graph.channels > few:
        return graph
    dup = min(2 * graph.channels, max_channels)
    div = -(-dup // graph.channels)
    return Graph(graph.pattern, dup, graph.bw_intra / div, graph.bw_inter / div,
                 graph.type_intra, graph.type_inter)  # fmt: skip
