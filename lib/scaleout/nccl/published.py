"""Measurements of NCCL published by others, and the model's prediction for each.

Every :class:`Measurement` names its source (an issue thread, a book chapter with the
commit read, a conference talk as quoted), the NCCL release the measurer reported (or
"not stated"), the machine as a :class:`~scaleout.nccl.topo.Topology`, the collective, the
size and the algorithm if it was forced. Values are nccl-tests' ``busbw`` (GB/s) at large
sizes or ``time`` (us) at small ones, as printed by the source. Nothing in the model is
fitted to them. :data:`NCCL_PRINTED` holds times NCCL itself printed for its own model
(``NCCL_DEBUG_SUBSYS=TUNING``), which the replica must reproduce digit for digit.

:data:`ALLTOALL` holds published nccl-tests ``alltoall_perf`` bus bandwidths, the check of
the book's all-to-all model (:mod:`scaleout.nccl.p2p`, which is not NCCL's: NCCL does not
price point-to-point operations); :func:`alltoall_rows` puts the model beside them. Not
used, because the machine cannot be rebuilt from what the source says: the same slide's
PCIe rows ("2x4 GPUs", no switch layout) and its "2x 200Gb / 2x 400Gb RDMA" rows (GPUs per
node not stated); NVIDIA/nccl issue 1792 (16 H20 nodes at 20+ GB/s, which the maintainers
call "not the expected behavior"); NVIDIA/nccl-tests issue 267 (its tables are images).
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import checks
from ..stats import spearman  # noqa: F401  (re-exported: chapters import it here)
from .model import ALGORITHMS, ALL_COLLECTIVES, predict
from .topo import Topology, topology

ML_ENG = ("https://github.com/stas00/ml-engineering/blob/744d01e18b79512572f64a6bbd8b5f4a"
          "725203a7/network/README.md")  # fmt: skip
ISSUE = "https://github.com/NVIDIA/{}/issues/{}"
GTC25_A2A = ("https://github.com/stas00/ml-engineering/blob/744d01e18b79512572f64a6bbd8b5f4a"
             "725203a7/network/images/all-to-all-bw-2025.png")  # fmt: skip
GIB = 2**30


@dataclass(frozen=True)
class Measurement:
    label: str
    topo: Topology
    collective: str
    nbytes: float
    algorithm: str | None  # forced (NCCL_ALGO) or None for NCCL's own choice
    kind: str  # "busbw" (GB/s) or "time" (us)
    measured: float
    chosen: str | None  # the algorithm the source says NCCL picked, if it says
    source: str
    release: str
    note: str = ""

    def __post_init__(self):
        checks.text("label", self.label, 80)
        checks.instance("topo", self.topo, Topology)
        checks.choice("collective", self.collective, ALL_COLLECTIVES)
        checks.positive("nbytes", self.nbytes, 2.0**50)
        if self.algorithm is not None:
            checks.choice("algorithm", self.algorithm, ALGORITHMS)
        checks.choice("kind", self.kind, ("busbw", "time"))
        checks.positive("measured", self.measured, 1e9)
        if self.chosen is not None:
            checks.choice("chosen", self.chosen, ALGORITHMS)
        checks.text("source", self.source, 300)
        checks.text("release", self.release, 40)
        if self.note:
            checks.text("note", self.note, 300)


def _h100(nodes=1, **kw):
    return topology("dgx-h100", nodes=nodes, **kw)


def _gb200(nodes, gpus):
    return topology("gb200-nvl72", nodes=nodes, gpus_per_node=gpus, nics_per_node=gpus,
                    nvls=False)  # fmt: skip


#: Published bus bandwidths and times of the five collectives, one per setup.
MEASUREMENTS: tuple[Measurement, ...] = (
    Measurement("8xA100 1 node", topology("dgx-a100"), "allreduce", 16 * GIB, None, "busbw",
                234.89, None, ML_ENG, "not stated", "nccl-tests -g 8 sweep"),
    Measurement("8xH200 1 node, NVLS", _h100(), "allreduce", 16 * GIB, None, "busbw", 482.26,
                "nvls", ML_ENG, "2.27.7", "H200: same NVLink and NVSwitch as H100; README.md "
                "lines 972 and 1285 (its line 978 rounds it to 480.0)"),
    Measurement("8xH200 1 node, NVLS off", _h100(nvls=False), "allreduce", 16 * GIB, None,
                "busbw", 367.61, "ring", ML_ENG, "2.27.7", "NCCL_NVLS_ENABLE=0; README.md "
                "lines 972 and 1284 (its line 989 rounds it to 367.2)"),
    Measurement("8xH200 all-gather", _h100(), "allgather", 16 * GIB, None, "busbw", 361.4,
                "ring", ML_ENG, "2.27.7"),
    Measurement("8xH200 reduce-scatter", _h100(), "reducescatter", 16 * GIB, None, "busbw",
                362.9, "ring", ML_ENG, "2.27.7"),
    Measurement("4 of 8 H200", _h100().group(4, 1), "allreduce", 8 * GIB, None, "busbw",
                363.3, "ring", ML_ENG, "not stated", "GPU-count sweep, 8 GiB"),
    Measurement("5 of 8 H200", _h100().group(5, 1), "allreduce", 8 * GIB, None, "busbw",
                414.2, "nvls", ML_ENG, "not stated", "GPU-count sweep, 8 GiB"),
    Measurement("6 of 8 H200", _h100().group(6, 1), "allreduce", 8 * GIB, None, "busbw",
                435.6, "nvls", ML_ENG, "not stated", "GPU-count sweep, 8 GiB"),
    Measurement("7 of 8 H200", _h100().group(7, 1), "allreduce", 8 * GIB, None, "busbw",
                460.0, "nvls", ML_ENG, "not stated", "GPU-count sweep, 8 GiB"),
    Measurement("DGX A100 multi-node", topology("dgx-a100", nodes=4), "allreduce", 16 * GIB,
                None, "busbw", 192.0, None, ISSUE.format("nccl", 1576), "not stated",
                "NVIDIA engineer's figure (quoted from issue 812); node count not stated, "
                "model at 4 nodes; also NVIDIA GTC 2024 S62129"),
    Measurement("DGX H100 multi-node", _h100(4), "allreduce", 16 * GIB, None, "busbw", 380.0,
                None, ML_ENG, "not stated",
                "NVIDIA GTC 2024 S62129 as reproduced; node count not stated, model at 4"),
    Measurement("DGX H100 multi-node, SHARP", _h100(4, collnet=True), "allreduce", 16 * GIB,
                None, "busbw", 480.0, None, ML_ENG, "not stated",
                "NVIDIA GTC 2024 S62129 as reproduced; model at 4 nodes with CollNet"),
    Measurement("5x HGX H100 4x400G, Ring", topology("hgx-h100-4nic", nodes=5), "allreduce",
                GIB, "ring", "busbw", 190.0, None, ISSUE.format("nccl", 1368), "2.20",
                "RoCE; largest size 1 GiB"),
    Measurement("5x HGX H100 4x400G, Tree", topology("hgx-h100-4nic", nodes=5), "allreduce",
                GIB, "tree", "busbw", 150.0, None, ISSUE.format("nccl", 1368), "2.20",
                "RoCE; largest size 1 GiB"),
    Measurement("3x GB200 NVL4, default", _gb200(3, 4), "allreduce", 16 * GIB, None, "busbw",
                196.72, "ring", ISSUE.format("nccl", 1801), "2.27.3", "NVLS disabled"),
    Measurement("3x GB200 NVL4, Tree", _gb200(3, 4), "allreduce", 16 * GIB, "tree", "busbw",
                234.43, None, ISSUE.format("nccl", 1801), "2.27.3", "NVLS disabled"),
    Measurement("3x GB200 NVL8, default", _gb200(3, 8), "allreduce", 16 * GIB, None, "busbw",
                393.66, "ring", ISSUE.format("nccl", 1801), "2.27.3", "NVLS disabled"),
    Measurement("3x GB200 NVL8, Tree", _gb200(3, 8), "allreduce", 16 * GIB, "tree", "busbw",
                485.68, None, ISSUE.format("nccl", 1801), "2.27.3", "NVLS disabled"),
    Measurement("8xA100 1 node, 32 KiB", topology("dgx-a100"), "allreduce", 32768, None,
                "time", 43.83, None, ML_ENG, "not stated",
                "one process drives all 8 GPUs (-g 8): 8 launches in series"),
    Measurement("2x DGX A100, Ring, 8 B", topology("dgx-a100", nodes=2), "allreduce", 8,
                "ring", "time", 93.12, None, ISSUE.format("nccl", 812), "2.16.5"),
    Measurement("2x 8 H20, NVLSTree, 4 B", _h100(2), "allreduce", 4, "nvls_tree", "time",
                47.54, None, ISSUE.format("nccl", 1244), "2.21.5",
                "H20: H100's NVLink and NICs (8 x 400 Gb/s)"),
    Measurement("5x HGX H100 4x400G, Ring, 1 MiB", topology("hgx-h100-4nic", nodes=5),
                "allreduce", 2**20, "ring", "time", 354.9, None, ISSUE.format("nccl", 1368),
                "2.20", "RoCE"),
    Measurement("2x 1 H100 + 4 NICs, Tree, 2 MiB",
                topology("dgx-h100", nodes=2, gpus_per_node=1, nics_per_node=4, nvls=False),
                "allreduce", 2**21, "tree", "time", 113.2, None,
                ISSUE.format("nccl-tests", 232), "not stated"),
)  # fmt: skip

_GTC25 = ("NVIDIA GTC 2025 S72583 slide 'All-to-all Communication Bandwidth' (NCCL Tests "
          "Alltoall Bus Bandwidth), as reproduced in the ML Engineering Open Book; size not "
          "stated, model at 16 GiB (the plateau)")  # fmt: skip

#: Published ``alltoall_perf`` bus bandwidths (GB/s, nccl-tests' (n-1)/n x algbw).
ALLTOALL: tuple[Measurement, ...] = (
    Measurement("8x A100, one node", topology("dgx-a100"), "alltoall", 16 * GIB, None,
                "busbw", 210.0, None, GTC25_A2A, "not stated", f"{_GTC25}; 8 GPUs"),
    Measurement("8x H100, one node", _h100(), "alltoall", 16 * GIB, None, "busbw", 320.0,
                None, GTC25_A2A, "not stated", f"{_GTC25}; 8 GPUs"),
    Measurement("8x B200, one node", topology("gb200-nvl72", gpus_per_node=8, nics_per_node=8,
                gpu="B200", cpu="intel"), "alltoall", 16 * GIB, None, "busbw", 640.0, None,
                GTC25_A2A, "not stated", f"{_GTC25}; 8 GPUs, NVLink 5"),
    Measurement("4x H100, one node", _h100().group(4, 1), "alltoall", 524288000, None,
                "busbw", 334.90, None, ISSUE.format("nccl", 2169), "2.30.4",
                "out-of-place, 500 MiB, 4 H100 80GB HBM3 of one server (the board is not "
                "stated)"),
    Measurement("4x DGX A100 (8x200G)", topology("dgx-a100", nodes=4), "alltoall", 16 * GIB,
                None, "busbw", 24.0, None, GTC25_A2A, "not stated",
                f"{_GTC25}; 32 GPUs, 8 x 200 Gb/s RDMA per node"),
    Measurement("4x DGX H100 (8x400G)", _h100(4), "alltoall", 16 * GIB, None, "busbw", 48.0,
                None, GTC25_A2A, "not stated", f"{_GTC25}; 32 GPUs, 8 x 400 Gb/s RDMA per node"),
    Measurement("32 GPUs of a GB200 NVL72", topology("gb200-nvl72", gpus_per_node=32,
                nics_per_node=32), "alltoall", 16 * GIB, None, "busbw", 640.0, None, GTC25_A2A,
                "not stated", f"{_GTC25}; 32 GPUs in one NVLink domain"),
)  # fmt: skip

#: Times NCCL printed for its own model (``NCCL_DEBUG=INFO``: "N Bytes -> Algo A proto P time
#: T") for all-reduces on three 8-GPU H100 servers, as (bytes, algorithm, protocol,
#: microseconds): Tree/LL ("Algo 0 proto 0") for small sizes, NVLSTree/Simple ("Algo 5
#: proto 2") from 512 KiB. The reporter's machine: NCCL 2.22.3, 8 ConnectX-7 ports at 200 Gb/s
#: per server (NVIDIA/nccl issue 1453). The Tree/LL points do not depend on the NIC speed;
#: the NVLSTree ones do, and match on this machine only.
NCCL_PRINTED = {
    "source": ISSUE.format("nccl", 1453),
    "release": "2.22.3",
    "topo": _h100(3, nic_gbps=200),
    "collective": "allreduce",
    "points": (
        (64, "tree", "ll", 25.207382),
        (1024, "tree", "ll", 25.331232),
        (4096, "tree", "ll", 25.874907),
        (8192, "tree", "ll", 26.549810),
        (524288, "nvls_tree", "simple", 59.5536),
        (1048576, "nvls_tree", "simple", 66.1072),
        (2097152, "nvls_tree", "simple", 79.2144),
    ),
}


def rows() -> list[dict]:
    """Each measurement of :data:`MEASUREMENTS` with the model's prediction, the choice,
    and the error."""
    return _rows(MEASUREMENTS)


def alltoall_rows() -> list[dict]:
    """Each measurement of :data:`ALLTOALL` with the book's all-to-all model beside it
    (:func:`scaleout.nccl.p2p.alltoall_us`; nothing fitted)."""
    return _rows(ALLTOALL)


def _rows(measurements) -> list[dict]:
    out = []
    for m in measurements:
        p = predict(m.collective, m.nbytes, m.topo, algorithm=m.algorithm)
        value = p.busbw_gb_per_s if m.kind == "busbw" else p.seconds * 1e6
        out.append({
            "label": m.label, "kind": m.kind, "measured": m.measured, "predicted": value,
            "error": value / m.measured - 1, "algorithm": p.algorithm, "protocol": p.protocol,
            "chosen": m.chosen, "source": m.source, "release": m.release, "note": m.note,
            "forced": m.algorithm, "nbytes": m.nbytes, "ranks": m.topo.ranks,
        })  # fmt: skip
    return out
