"""The constants of NCCL's cost model, each with the file and lines it comes from.

Pinned release: NCCL ``v2.27.7-1`` (https://github.com/NVIDIA/nccl/tree/v2.27.7-1). Every
number the model uses is a :class:`Constant` of :data:`CONSTANTS`: its value as this module
stores it, and the :class:`Source` (file and line range in that release) where NCCL states
it. ``tests/unit/test_nccl.py`` checks that every stored number is written at those lines,
which ``tests/fixtures/nccl_cited_lines.json`` holds (only the cited lines, with the release's
commit; ``tools/nccl_cited_lines.py`` writes them from a clone). Nothing here is fitted.

Units follow NCCL: latencies in microseconds, bandwidths in GB/s (1e9 bytes/s) *per
channel* unless named otherwise. Indices follow NCCL's own order (``nccl_common.h``):
algorithms Tree, Ring, CollNetDirect, CollNetChain, NVLS, NVLSTree, PAT; protocols LL,
LL128, Simple; hardware NVLink, PCI, network; GPU generations Volta, Ampere, Hopper,
Blackwell; node counts 1, 2, more.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import checks

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


_T = "src/graph/tuning.cc"
_S = "src/graph/search.cc"

_TABLE = (
    # name, value, file, first, last, meaning
    ("base_latency_us", ((6.8, 14.0, 8.4), (6.6, 14.0, 8.4), (0, 0, 0), (0, 0, 0), (0, 0, 0),
     (0, 0, 0), (0, 0, 0)), _T, 134, 137,
     "baseLat[algorithm][protocol]: fixed cost of one collective (PAT: unlisted, 0)"),
    ("hw_latency_us", (
        ((.6, 1.25, 4.0), (.6, 1.9, 3.4), (0, 0, 3.7), (0, 0, 2.8), (0, 0, 25), (0, 0, 25),
         (0, 0, 0)),
        ((1.0, 1.9, 4.0), (1.0, 2.5, 5.7), (0, 0, 3.7), (0, 0, 2.8), (0, 0, 0), (0, 0, 0),
         (0, 0, 0)),
        ((5.0, 8.5, 14), (2.7, 4.0, 14.0), (0, 0, 31), (0, 0, 30), (0, 0, 18), (0, 0, 14),
         (0, 0, 0))), _T, 143, 156,
     "hwLat[NVLink|PCI|network][algorithm][protocol]: latency of one step (hop)"),
    ("ll_max_bw", ((39.0, 39.0, 20.4), (87.7, 22.5, 19.0), (141.0, 45.0, 35.0),
                   (282.0, 90.0, 70.0)), _T, 165, 170,
     "llMaxBws[index1][nodes]: cap on LL bus bandwidth (index1: GPU type on one node, "
     "else 0 for Intel CPUs and 1 for AMD)"),
    ("per_channel_ring_ll128_bw", ((20.0,) * 3, (20.0,) * 3, (36.7,) * 3, (73.4,) * 3), _T,
     172, 177, "perChMaxRingLL128Bws[gpu][nodes]: LL128 ring bandwidth per channel"),
    ("per_channel_tree_ll128_bw", ((20.0,) * 3, (20.0,) * 3, (36.7, 36.7, 29.0),
                                   (73.4, 73.4, 58.0)), _T, 178, 183,
     "perChMaxTreeLL128Bws[gpu][nodes]: LL128 tree bandwidth per channel"),
    ("per_channel_tree_bw", ((26.5, 18.5, 10.0), (24.0, 23.6, 17.8), (38.7, 41.4, 36.0),
                             (77.4, 82.8, 72.0)), _T, 184, 189,
     "perChMaxTreeBws[gpu][nodes]: tree all-reduce bandwidth per channel"),
    ("net_overhead_us", (1.0, 2.0, 1.0), _T, 204, 209,
     "network post overhead per ring step: Intel, AMD, other CPUs"),
    ("simple_net_overhead_factor", 3, _T, 351, 351, "Simple pays 3x the network overhead"),
    ("ring_ll_factor", .5, _T, 279, 279, "LL carries 4 bytes of data per 8-byte store"),
    ("ring_ll128_factor", 0.92, _T, 280, 280, "LL128 ring efficiency (about 120/128)"),
    ("tree_allreduce_factor", .92, _T, 281, 281, "tree all-reduce efficiency"),
    ("tree_ll_divisor", 3.8, _T, 282, 282, "tree LL bandwidth is busBw / 3.8"),
    ("tree_ll128_factor", (7.0 / 9.0, 120.0 / 128.0), _T, 283, 283,
     "tree LL128 efficiency on one node, and across nodes"),
    ("tree_pattern_factor", .85, _T, 284, 284, "penalty when the tree is not balanced"),
    ("pat_factor", .75, _T, 285, 285, "PAT bandwidth efficiency"),
    ("collnet_agrs_inter_factor", 0.9, _T, 290, 290,
     "CollNetDirect all-gather/reduce-scatter network efficiency"),
    ("collnet_hopper_factor", .85, _T, 296, 296, "CollNetDirect all-reduce on Hopper+"),
    ("nvls_agrs_inter_factor", 0.9, _T, 272, 272,
     "NVLS all-gather/reduce-scatter network efficiency"),
    ("nvls_busbw_ratio", 5.0 / 6.0, _T, 324, 324, "NVLS/NVLSTree bus to algorithm bandwidth"),
    ("tree_busbw_ratio", .5, _T, 325, 325, "tree and CollNet bus to algorithm bandwidth"),
    ("collnet_arity_latency_us", 0.4, _T, 364, 364, "CollNetDirect serialization per GPU"),
    ("pat_latency_us", (8, 3.5, 2.8), _T, 374, 376,
     "PAT: base time, divisor of the network latency per log2(nodes), time per rank"),
    ("ring_plateau_factor", (1.9, 1.4), _T, 572, 572,
     "Ring/Simple multi-node all-reduce latency multiplier: before Ampere, Ampere+"),
    ("tree_correction", (
        (1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0,
         1.0, 1.0, 1.0),
        (1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9,
         .9, 1.0, 1.0),
        (.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8,
         .9, .9)), _T, 555, 559,
     "treeCorrectionFactor[protocol][log2(bytes/64)]: tree all-reduce bandwidth factor"),
    ("speed_intra", ((40.0, 30.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0, 3.0),
                     (60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 15.0, 12.0, 11.0, 6.0, 3.0),
                     (90.0, 80.0, 70.0, 60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 19.0, 18.0)),
     _S, 952, 962, "per-channel speeds tried on one node: before Hopper, Hopper, Blackwell"),
    ("speed_inter", ((48.0, 30.0, 28.0, 24.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0,
                      4.0, 3.0, 2.4, 1.2, 0.24, 0.12),
                     (48.0, 45.0, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5, 15.0, 12.0, 6.0,
                      3.0, 2.4, 1.2, 0.24, 0.12),
                     (96.0, 48.0, 45.1, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5, 15.0, 12.0,
                      6.0, 3.0, 2.4, 1.2, 0.24, 0.12)),
     _S, 953, 963, "per-channel speeds tried across nodes: before Hopper, Hopper, Blackwell"),
    ("dup_channels_thresholds", (25.0, 80, 50.0, 4), _S, 940, 941,
     "duplicate channels unless bw < 25, or (cc > 80 and bw < 50 and channels > 4)"),
    ("speed_step_ratio", .49, _S, 1121, 1121, "keep lowering the speed while next/best > .49"),
    ("nvlink_bw_per_link", (18.0, 20.0, 20.0, 20.6, 40.1), "src/graph/topo.h", 16, 21,
     "NVLink bandwidth per link: SM60, SM70, SM80, SM90, SM100"),
    ("pci_bw", 12.0, "src/graph/topo.h", 22, 22, "PCI Gen3 x16: Ring/Simple threads limit"),
    ("pcie_lane_speed", (60, 120, 240, 480), "src/graph/topo.cc", 410, 410,
     "PCIe speed per lane in 100 Mb/s: Gen3, Gen4, Gen5, Gen6 (bw = lanes x speed / 80)"),
    ("pcie_lane_divisor", 80.0, "src/graph/topo.cc", 476, 476, "lanes x speed / 80 = GB/s"),
    ("net_mbps_divisor", 8000.0, "src/graph/topo.cc", 370, 370, "NIC Mb/s / 8000 = GB/s"),
    ("max_channels", 64, "src/include/device.h", 87, 87, "MAXCHANNELS"),
    ("max_nvls_arity", 32, "src/include/device.h", 206, 206, "NCCL_MAX_NVLS_ARITY"),
    ("max_direct_arity", 7, "src/include/device.h", 192, 192, "NCCL_MAX_DIRECT_ARITY"),
    ("max_threads", (640, 512, 512, 640), "src/include/device.h", 89, 110,
     "NCCL_MAX_NTHREADS, SIMPLE, LL, LL128 maximum threads per block"),
    ("thread_thresholds", (8, 8, 64), "src/include/comm.h", 38, 40,
     "bytes per thread before adding threads/channels: LL, LL128, Simple"),
    ("nvls_channels", (16, 32, 24), "src/transport/nvls.cc", 147, 149,
     "NVLS channels: Hopper, Blackwell multi-node, Blackwell one NVLink domain"),
    ("steps_per_buffer", 8, "src/include/device.h", 25, 25,
     "NCCL_STEPS: slots of a connection's receive buffer"),
    ("allreduce_slice_chunk_steps", (2, 4), "src/include/collectives.h", 17, 18,
     "all-reduce slices and chunks, in slots (NCCL_STEPS/4, NCCL_STEPS/2)"),
    ("simple_buffer_log2_bytes", 22, "src/init.cc", 620, 620,
     "DEFAULT_BUFFSIZE = 1 << 22 bytes (4 MiB) for Simple"),
    ("p2p_ll_threshold", 16384, "src/enqueue.cc", 783, 783,
     "send/recv use LL up to 16 KiB per peer (x channels)"),
    ("nvls_min_gpus", 2, "src/transport/nvls.cc", 160, 160, "NVLS needs more than 2 GPUs"),
    ("collnet_node_threshold", 2, "src/init.cc", 656, 656, "CollNet needs 2 nodes or more"),
    ("coll_channel_doubling", (2, 45.0, 16), "src/graph/connect.cc", 452, 466,
     "channels are doubled; Hopper+ multi-node doubles again if ring bw > 45 and < 16"),
)  # fmt: skip

#: Every constant of the model, by name.
CONSTANTS: dict[str, Constant] = {
    name: Constant(name, value, Source(file, first, last), meaning)
    for name, value, file, first, last, meaning in _TABLE
}


def value(name: str) -> np.ndarray:
    """The constant ``name`` as a float64 array (a 0-d array for a single number)."""
    checks.choice("name", name, tuple(CONSTANTS))
    return np.asarray(CONSTANTS[name].value, dtype=np.float64)


# The arrays the model reads (copies of the table above, so the table stays the one truth).
BASE_LAT = value("base_latency_us")  # (algorithm, protocol)
HW_LAT = value("hw_latency_us")  # (hw, algorithm, protocol)
LL_MAX_BW = value("ll_max_bw")  # (gpu or cpu index, nodes index)
PER_CH_RING_LL128 = value("per_channel_ring_ll128_bw")
PER_CH_TREE_LL128 = value("per_channel_tree_ll128_bw")
PER_CH_TREE = value("per_channel_tree_bw")
TREE_CORRECTION = value("tree_correction")  # (protocol, log2(bytes/64))
SPEED_INTRA = tuple(np.asarray(s) for s in CONSTANTS["speed_intra"].value)
SPEED_INTER = tuple(np.asarray(s) for s in CONSTANTS["speed_inter"].value)
