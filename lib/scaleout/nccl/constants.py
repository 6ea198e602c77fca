"""The constants of NCCL's cost model, each with the file and lines it comes from.

Pinned release: NCCL ``v2.27.7-1`` (https://github.com/NVIDIA/nccl/tree/v2.27.7-1). Every
number the model uses is a :class:`Constant` of :data:`CONSTANTS`: its value, and the
:class:`Source` (file and line range in that release) where NCCL states it. The numbers are
rows of ``lib/scaleout/data/nccl_constants.csv`` (read with :func:`scaleout.data.load`), one
number a row: ``name`` (the constant), ``i``, ``j``, ``k`` (its position in the nested
value, counted from 0; empty below the constant's depth, all empty for a single number; rows
may differ in length), ``literal`` (the number as NCCL writes it: ``2*141.0``, ``.6``,
``NCCL_STEPS/4``; empty for an entry NCCL leaves unlisted, which C sets to 0), then
``value``, ``unit``, ``source`` (``nccl2277``, the release in ``references.bib``),
``locator`` (``Source.label``: ``file:first-last``), ``kind`` (``stated``) and ``note``.
A number is an ``int`` where its literal has no decimal point, else a ``float``; what each
constant means is prose, kept here. ``tests/unit/test_nccl.py`` checks that every number and
literal is written at its lines, which ``tests/fixtures/nccl_cited_lines.json`` holds (only
the cited lines, with the release's commit; ``tools/nccl_cited_lines.py`` writes them from a
clone). Nothing here is fitted.

Units follow NCCL: latencies in microseconds, bandwidths in GB/s (1e9 bytes/s) *per
channel* unless named otherwise. Indices follow NCCL's own order (``nccl_common.h``):
algorithms Tree, Ring, CollNetDirect, CollNetChain, NVLS, NVLSTree, PAT; protocols LL,
LL128, Simple; hardware NVLink, PCI, network; GPU generations Volta, Ampere, Hopper,
Blackwell; node counts 1, 2, more.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import checks, data

#: The pinned NCCL release, a tag of the NVIDIA/nccl repository.
RELEASE = "v2.27.7-1"
REPOSITORY = "https://github.com/NVIDIA/nccl"

ALGORITHMS = ("Tree", "Ring", "CollNetDirect", "CollNetChain", "NVLS", "NVLSTree", "PAT")
PROTOCOLS = ("LL", "LL128", "Simple")
FUNCTIONS = ("Broadcast", "Reduce", "AllGather", "ReduceScatter", "AllReduce")
TREE, RING, COLLNET_DIRECT, COLLNET_CHAIN, NVLS, NVLS_TREE, PAT = range(7)
LL, LL128, SIMPLE = range(3)
BROADCAST, REDUCE, ALLGATHER, REDUCESCATTER, ALLREDUCE = range(5)
HW_NVLINK, HW_PCI, HW_NET = range(3)
CPU_INDEX = {"intel": 0, "amd": 1, "arm": 2}  # getNetOverhead: Intel, AMD, other


@dataclass(frozen=True)
class Source:
    """Lines ``first``..``last`` of ``file`` in the pinned release."""

    file: str
    first: int
    last: int

    def __post_init__(self):
        checks.text("file", self.file, 200)
        checks.integer("first", self.first, 1, 100_000)
        checks.integer("last", self.last, self.first, 100_000)

    @property
    def url(self) -> str:
        return f"{REPOSITORY}/blob/{RELEASE}/{self.file}#L{self.first}-L{self.last}"

    @property
    def label(self) -> str:
        lines = f"{self.first}" if self.first == self.last else f"{self.first}-{self.last}"
        return f"{self.file}:{lines}"


@dataclass(frozen=True)
class Constant:
    """One constant of the model: ``value`` (a number or nested tuple) and its source."""

    name: str
    value: object
    source: Source
    meaning: str

    def __post_init__(self):
        checks.text("name", self.name, 80)
        _flat(self.value)
        checks.instance("source", self.source, Source)
        checks.text("meaning", self.meaning, 400)

    def numbers(self) -> list[float]:
        """Every number in ``value``, flattened (rows may differ in length)."""
        return _flat(self.value)


def _flat(value, depth: int = 0) -> list[float]:
    """The numbers of a number or nested tuple of numbers (each finite, >= 0)."""
    if isinstance(value, tuple | list) and depth < 4:
        if not value:
            raise checks.fail("value", "a number or a non-empty nested tuple of numbers", value)
        return [x for v in value for x in _flat(v, depth + 1)]
    return [checks.real("value", value, 0.0)]


#: The file of :mod:`scaleout.data` the numbers are read from, and its index columns.
_FILE = "nccl_constants"
_INDEX = ("i", "j", "k")

#: What each constant means: prose, kept here; its numbers, units and lines are the file's.
_MEANING = {
    "base_latency_us": "baseLat[algorithm][protocol]: fixed cost of one collective "
    "(PAT: unlisted, 0)",
    "hw_latency_us": "hwLat[NVLink|PCI|network][algorithm][protocol]: latency of one step (hop)",
    "ll_max_bw": "llMaxBws[index1][nodes]: cap on LL bus bandwidth (index1: GPU type on one "
    "node, else 0 for Intel CPUs and 1 for AMD)",
    "per_channel_ring_ll128_bw": "perChMaxRingLL128Bws[gpu][nodes]: LL128 ring bandwidth "
    "per channel",
    "per_channel_tree_ll128_bw": "perChMaxTreeLL128Bws[gpu][nodes]: LL128 tree bandwidth "
    "per channel",
    "per_channel_tree_bw": "perChMaxTreeBws[gpu][nodes]: tree all-reduce bandwidth per channel",
    "net_overhead_us": "network post overhead per ring step: Intel, AMD, other CPUs",
    "simple_net_overhead_factor": "Simple pays 3x the network overhead",
    "ring_ll_factor": "LL carries 4 bytes of data per 8-byte store",
    "ring_ll128_factor": "LL128 ring efficiency (about 120/128)",
    "tree_allreduce_factor": "tree all-reduce efficiency",
    "tree_ll_divisor": "tree LL bandwidth is busBw / 3.8",
    "tree_ll128_factor": "tree LL128 efficiency on one node, and across nodes",
    "tree_pattern_factor": "penalty when the tree is not balanced",
    "pat_factor": "PAT bandwidth efficiency",
    "collnet_agrs_inter_factor": "CollNetDirect all-gather/reduce-scatter network efficiency",
    "collnet_hopper_factor": "CollNetDirect all-reduce on Hopper+",
    "nvls_agrs_inter_factor": "NVLS all-gather/reduce-scatter network efficiency",
    "nvls_busbw_ratio": "NVLS/NVLSTree bus to algorithm bandwidth",
    "tree_busbw_ratio": "tree and CollNet bus to algorithm bandwidth",
    "collnet_arity_latency_us": "CollNetDirect serialization per GPU",
    "pat_latency_us": "PAT: base time, divisor of the network latency per log2(nodes), "
    "time per rank",
    "ring_plateau_factor": "Ring/Simple multi-node all-reduce latency multiplier: "
    "before Ampere, Ampere+",
    "tree_correction": "treeCorrectionFactor[protocol][log2(bytes/64)]: tree all-reduce "
    "bandwidth factor",
    "speed_intra": "per-channel speeds tried on one node: before Hopper, Hopper, Blackwell",
    "speed_inter": "per-channel speeds tried across nodes: before Hopper, Hopper, Blackwell",
    "dup_channels_thresholds": "duplicate channels unless bw < 25, or "
    "(cc > 80 and bw < 50 and channels > 4)",
    "speed_step_ratio": "keep lowering the speed while next/best > .49",
    "nvlink_bw_per_link": "NVLink bandwidth per link: SM60, SM70, SM80, SM90, SM100",
    "pci_bw": "PCI Gen3 x16: Ring/Simple threads limit",
    "pcie_lane_speed": "PCIe speed per lane in 100 Mb/s: Gen3, Gen4, Gen5, Gen6 "
    "(bw = lanes x speed / 80)",
    "pcie_lane_divisor": "lanes x speed / 80 = GB/s",
    "net_mbps_divisor": "NIC Mb/s / 8000 = GB/s",
    "max_channels": "MAXCHANNELS",
    "max_nvls_arity": "NCCL_MAX_NVLS_ARITY",
    "max_direct_arity": "NCCL_MAX_DIRECT_ARITY",
    "max_threads": "NCCL_MAX_NTHREADS, SIMPLE, LL, LL128 maximum threads per block",
    "thread_thresholds": "bytes per thread before adding threads/channels: LL, LL128, Simple",
    "nvls_channels": "NVLS channels: Hopper, Blackwell multi-node, Blackwell one NVLink domain",
    "steps_per_buffer": "NCCL_STEPS: slots of a connection's receive buffer",
    "allreduce_slice_chunk_steps": "all-reduce slices and chunks, in slots "
    "(NCCL_STEPS/4, NCCL_STEPS/2)",
    "simple_buffer_log2_bytes": "DEFAULT_BUFFSIZE = 1 << 22 bytes (4 MiB) for Simple",
    "p2p_ll_threshold": "send/recv use LL up to 16 KiB per peer (x channels)",
    "nvls_min_gpus": "NVLS needs more than 2 GPUs",
    "collnet_node_threshold": "CollNet needs 2 nodes or more",
    "coll_channel_doubling": "channels are doubled; Hopper+ multi-node doubles again if "
    "ring bw > 45 and < 16",
    "ib_timeout": "NCCL_IB_TIMEOUT: the QP's local ACK timeout, 4.096 us x 2^timeout",
    "ib_retry_cnt": "NCCL_IB_RETRY_CNT: resends of an unacknowledged packet before the QP fails",
    "ib_ar_threshold": "NCCL_IB_AR_THRESHOLD: bytes above which, with adaptive routing, data and "
    "completion go as separate writes",
    "ib_qps_per_connection": "NCCL_IB_QPS_PER_CONNECTION: QPs per connection and NIC",
    "ib_rnr_retry": "the QP's RNR retry count, 7 (retry without limit)",
    "ib_split_data_on_qps": "NCCL_IB_SPLIT_DATA_ON_QPS: 0 posts whole messages round-robin "
    "over the QPs, 1 splits each message",
    "ib_chunk_align": "multi-QP writes are cut into multiples of this many bytes",
}


def _source(locator: str) -> Source:
    """The :class:`Source` of a locator ``file:first-last`` (or ``file:line``)."""
    file, _, lines = locator.rpartition(":")
    first, _, last = lines.partition("-")
    if not (file and first.isdigit() and (last.isdigit() or not last)):
        raise checks.fail("locator", "'file:first-last' or 'file:line'", locator)
    return Source(file, int(first), int(last or first))


def _number(row: data.Value):
    """A row's number, typed as NCCL writes it: ``int`` where its literal has no decimal
    point (an unlisted entry, which C sets to 0, has no literal), else ``float``."""
    if "." in row.get("literal"):
        return float(row.value)
    if row.value != int(row.value):
        raise checks.fail("value", f"an integer (literal {row.get('literal')!r})", row.value)
    return int(row.value)


def _nest(name: str, items: list) -> object:
    """The number or nested tuple of ``items``, (index tuple, number) pairs in file order;
    indices count 0, 1, ... at every level (rows may differ in length)."""
    if len(items) == 1 and not items[0][0]:
        return items[0][1]
    groups: list[list] = []
    for index, x in items:
        if not index or index[0] not in (len(groups) - 1, len(groups)):
            raise checks.fail(name, "rows whose indices count 0, 1, ... in file order", index)
        if index[0] == len(groups):
            groups.append([])
        groups[-1].append((index[1:], x))
    return tuple(_nest(name, g) for g in groups)


def _build(rows: tuple) -> dict[str, Constant]:
    """The constants of ``rows`` (the file's :class:`scaleout.data.Value` records), in the
    file's order: one per ``name``, its indices the position in the nested value, its
    locator the :class:`Source`."""
    by_name: dict[str, list] = {}
    for row in rows:
        by_name.setdefault(row.get("name"), []).append(row)
    if set(by_name) != set(_MEANING):
        raise checks.fail("rows", f"the constants {sorted(_MEANING)}", sorted(by_name))
    out = {}
    for name, mine in by_name.items():
        index = [tuple(int(r.get(c)) for c in _INDEX if r.get(c) != "") for r in mine]
        locators = {r.locator for r in mine}
        if len({len(i) for i in index}) != 1 or len(locators) != 1:
            raise checks.fail(name, "rows of one depth and one locator", (index, locators))
        value = _nest(name, [(i, _number(r)) for i, r in zip(index, mine, strict=True)])
        out[name] = Constant(name, value, _source(locators.pop()), _MEANING[name])
    return out


#: Every constant of the model, by name (the rows of ``data/nccl_constants.csv``).
CONSTANTS: dict[str, Constant] = _build(data.load(_FILE))


def value(name: str) -> np.ndarray:
    """The constant ``name`` as a float64 array (a 0-d array for a single number)."""
    checks.choice("name", name, tuple(CONSTANTS))
    return np.asarray(CONSTANTS[name].value, dtype=np.float64)


# The arrays the model reads (copies of CONSTANTS, so the file stays the one truth).
BASE_LAT = value("base_latency_us")  # (algorithm, protocol)
HW_LAT = value("hw_latency_us")  # (hw, algorithm, protocol)
LL_MAX_BW = value("ll_max_bw")  # (gpu or cpu index, nodes index)
PER_CH_RING_LL128 = value("per_channel_ring_ll128_bw")
PER_CH_TREE_LL128 = value("per_channel_tree_ll128_bw")
PER_CH_TREE = value("per_channel_tree_bw")
TREE_CORRECTION = value("tree_correction")  # (protocol, log2(bytes/64))
SPEED_INTRA = tuple(np.asarray(s) for s in CONSTANTS["speed_intra"].value)
SPEED_INTER = tuple(np.asarray(s) for s in CONSTANTS["speed_inter"].value)
