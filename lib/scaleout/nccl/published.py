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

import numpy as np

from .. import checks
from ..stats import spearman
from .model import ALGORITHMS, ALL_COLLECTIVES, predict
from .topo import Topology, topology

ML_ENG = ("https://github.com/stas00/ml-engineering/blob/744d01e18b79512572f64a6bbd8b5f4a"
          "725203a7/network/README.md")  # fmt: skip
ISSUE = "https://github.com/NVIDIA/{}/issues/{}"
GTC25_A2A = ("https://github.com/stas00/ml-engineering/blob/744d01e18b79512572f64a6bbd8b5f4a"
             "725203a7/network/images/all-to-all-bw-2025.png")  # fmt: skip
GTC25_AR = ("https://github.com/stas00/ml-engineering/blob/744d01e18b79512572f64a6bbd8b5f4a"
            "725203a7/network/images/all-reduce-bw-2025.png")  # fmt: skip
GTC24_NVLSTREE = ("https://github.com/stas00/ml-engineering/blob/744d01e18b79512572f64a6bbd8b5f"
                  "4a725203a7/network/images/nccl-all-reduce-scan-nvlstree.png")  # fmt: skip
GIB = 2**30
#: The machines NCCL's hand-set constants were tuned for (its per-channel speeds, latencies
#: and the Ring and NVLS bandwidth rules): rows on these presets, at large sizes, with Ring or
#: NVLS and no IB SHARP are "on design"; every other row reuses the constants off design.
ON_DESIGN_PRESETS = ("dgx-a100", "dgx-h100")
ON_DESIGN_ALGORITHMS = ("ring", "nvls")


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


def _b200(gpus=8, nvls=True):
    """``gpus`` of one 8 x B200 server (HGX B200: NVLink 5, one NIC per GPU, Intel hosts)."""
    return topology("gb200-nvl72", gpus_per_node=8, nics_per_node=8, gpu="B200", cpu="intel",
                    nvls=nvls).group(gpus, 1)  # fmt: skip


def _nvl72(gpus, nvls=True):
    """``gpus`` GPUs of one GB200 NVL72 NVLink domain."""
    return topology("gb200-nvl72", gpus_per_node=gpus, nics_per_node=gpus, nvls=nvls)


_SWEEP_B200 = (
    "8 x B200 p6-b200.48xlarge, nccl-tests at 8 GiB, measured 2026-08-09 (README.md "
    "lines 937-941); the chooser is AWS's NCCL_TUNER_PLUGIN=ofi ('base Tuner')"
)
_SWEEP_H200 = "8 x H200, nccl-tests at 8 GiB (README.md lines 925-929)"
_GTC25_8 = (
    "NVIDIA GTC 2025 S72583 slide 'Collective Communication Bandwidth', left (8 GPUs); "
    "size not stated, model at 16 GiB (the Open Book matched the bars at about 8 GiB)"
)
_GTC25_32 = (
    "NVIDIA GTC 2025 S72583 slide 'Collective Communication Bandwidth', right (32 GPUs)"
    "; size not stated, model at 16 GiB"
)
_GTC24 = (
    "NVIDIA GTC 2024 S62129 slide 35 (NCCL_ALGO=NVLSTree, H100), read off the plot at 16 "
    "GiB to +-3 GB/s (y axis 0-400 GB/s over 636 pixels); modelled as DGX H100 servers"
)


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
                363.3, "ring", ML_ENG, "not stated", _SWEEP_H200),
    Measurement("5 of 8 H200", _h100().group(5, 1), "allreduce", 8 * GIB, None, "busbw",
                414.2, "nvls", ML_ENG, "not stated", _SWEEP_H200),
    Measurement("6 of 8 H200", _h100().group(6, 1), "allreduce", 8 * GIB, None, "busbw",
                435.6, "nvls", ML_ENG, "not stated", _SWEEP_H200),
    Measurement("7 of 8 H200", _h100().group(7, 1), "allreduce", 8 * GIB, None, "busbw",
                460.0, "nvls", ML_ENG, "not stated", _SWEEP_H200),
    Measurement("DGX A100 multi-node", topology("dgx-a100", nodes=4), "allreduce", 16 * GIB,
                None, "busbw", 192.0, None, GTC25_AR, "not stated",
                f"4 DGX A100, 8 x 200 Gb/s RDMA; {_GTC25_32}; the same 192 GB/s an NVIDIA "
                "engineer quotes in NVIDIA/nccl issues 812 and 1576"),
    Measurement("DGX H100 multi-node", _h100(4), "allreduce", 16 * GIB, None, "busbw", 370.0,
                None, GTC25_AR, "not stated", f"4 DGX H100, 8 x 400 Gb/s RDMA; {_GTC25_32}"),
    Measurement("DGX H100 multi-node, SHARP", _h100(4, collnet=True), "allreduce", 16 * GIB,
                None, "busbw", 480.0, None, GTC25_AR, "not stated",
                f"4 DGX H100 with IB SHARP; {_GTC25_32}; model: NVLS with CollNet"),
    Measurement("8x A100, GTC 2025", topology("dgx-a100"), "allreduce", 16 * GIB, None,
                "busbw", 232.0, None, GTC25_AR, "not stated", _GTC25_8),
    Measurement("8x H100, GTC 2025", _h100(nvls=False), "allreduce", 16 * GIB, None, "busbw",
                370.0, None, GTC25_AR, "not stated", f"NVLink 4 without SHARP; {_GTC25_8}"),
    Measurement("8x H100 SHARP, GTC 2025", _h100(), "allreduce", 16 * GIB, None, "busbw",
                480.0, None, GTC25_AR, "not stated", f"NVLink 4 SHARP (NVLS); {_GTC25_8}"),
    Measurement("8x B200, GTC 2025", _b200(nvls=False), "allreduce", 16 * GIB, None, "busbw",
                700.0, None, GTC25_AR, "not stated", f"NVLink 5 without SHARP; {_GTC25_8}"),
    Measurement("8x B200 SHARP, GTC 2025", _b200(), "allreduce", 16 * GIB, None, "busbw",
                850.0, None, GTC25_AR, "not stated", f"NVLink 5 SHARP (NVLS); {_GTC25_8}"),
    Measurement("32 GPUs of a GB200 NVL72", _nvl72(32, nvls=False), "allreduce", 16 * GIB,
                None, "busbw", 680.0, None, GTC25_AR, "not stated",
                f"NVLink without SHARP; {_GTC25_32}"),
    Measurement("32 GPUs of a GB200 NVL72, SHARP", _nvl72(32), "allreduce", 16 * GIB, None,
                "busbw", 850.0, None, GTC25_AR, "not stated",
                f"NVLink 5 SHARP (NVLS); {_GTC25_32}"),
    Measurement("8x H200, 8 GiB", _h100(), "allreduce", 8 * GIB, None, "busbw", 473.1,
                "nvls", ML_ENG, "not stated", _SWEEP_H200),
    *(Measurement(f"{g} of 8 H200, NVLS off", _h100(nvls=False).group(g, 1), "allreduce",
                  8 * GIB, None, "busbw", v, "ring", ML_ENG, "not stated",
                  f"NCCL_NVLS_ENABLE=0; {_SWEEP_H200}")
      for g, v in ((5, 364.4), (6, 365.1), (7, 365.7), (8, 365.6))),
    *(Measurement(f"{g} of 8 B200", _b200(g), "allreduce", 8 * GIB, None, "busbw", v, c,
                  ML_ENG, "2.27.7", _SWEEP_B200)
      for g, v, c in ((4, 673.2, "ring"), (5, 677.8, "ring"), (6, 778.2, "nvls"),
                      (7, 811.2, "nvls"), (8, 838.0, "nvls"))),
    *(Measurement(f"{g} of 8 B200, NVLS off", _b200(g, nvls=False), "allreduce", 8 * GIB,
                  None, "busbw", v, "ring", ML_ENG, "2.27.7",
                  f"NCCL_NVLS_ENABLE=0; {_SWEEP_B200}")
      for g, v in ((6, 677.8), (7, 680.5), (8, 682.2))),
    *(Measurement(f"{8 * n} H100, NVLSTree forced", _h100(n), "allreduce", 16 * GIB,
                  "nvls_tree", "busbw", v, None, GTC24_NVLSTREE, "not stated", _GTC24)
      for n, v in ((8, 377.0), (128, 370.0), (1024, 366.0))),
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
        p = predict(m.collective, m.nbytes, algorithm=m.algorithm, machine=m.topo)
        value = p.busbw_gb_per_s if m.kind == "busbw" else p.seconds * 1e6
        out.append({
            "label": m.label, "kind": m.kind, "measured": m.measured, "predicted": value,
            "error": value / m.measured - 1, "algorithm": p.algorithm, "protocol": p.protocol,
            "chosen": m.chosen, "source": m.source, "release": m.release, "note": m.note,
            "forced": m.algorithm, "nbytes": m.nbytes, "ranks": m.topo.ranks,
            "on_design": on_design(m, p.algorithm),
        })  # fmt: skip
    return out


def on_design(m: Measurement, algorithm: str) -> bool:
    """Whether ``m`` ran where NCCL's hand-set constants were tuned: a bus bandwidth at a
    large size, on a DGX A100 or DGX H100/H200 (:data:`ON_DESIGN_PRESETS`, any GPU count of
    one server or whole servers), with Ring or NVLS (forced, reported, and the model's
    ``algorithm``) and no IB SHARP. Trees, NVLS-Tree, CollNet, other machines (B200, GB200,
    four-NIC HGX on RoCE) and small-message times are off design."""
    checks.instance("m", m, Measurement)
    checks.choice("algorithm", algorithm, (*ALGORITHMS, "p2p"))  # p2p: all-to-all's model
    used = {a for a in (m.algorithm, m.chosen, algorithm) if a is not None}
    return (m.kind == "busbw" and m.topo.name in ON_DESIGN_PRESETS and not m.topo.collnet
            and used <= set(ON_DESIGN_ALGORITHMS))  # fmt: skip


_SPLIT_KEYS = ("kind", "on_design", "error", "measured", "predicted")


def split_summary(rows: list[dict]) -> dict[str, dict]:
    """The bus-bandwidth rows of :func:`rows` in two groups, "on design" and "off design"
    (:func:`on_design`), each with its row count, median and largest absolute error, the
    signed errors at both ends, and Spearman's rank correlation of measured and predicted."""
    what = f"a list of rows of published.rows() (dicts with keys {_SPLIT_KEYS})"
    if not isinstance(rows, list) or len(rows) > 10_000:
        raise checks.fail("rows", what, rows)
    for r in rows:
        if not isinstance(r, dict) or any(k not in r for k in _SPLIT_KEYS):
            raise checks.fail("rows", what, r)
        checks.choice("kind", r["kind"], ("busbw", "time"))
        checks.boolean("on_design", r["on_design"])
        checks.real("error", r["error"])
        checks.positive("measured", r["measured"])
        checks.positive("predicted", r["predicted"])
    out = {}
    for name, want in (("on design", True), ("off design", False)):
        sel = [r for r in rows if r["kind"] == "busbw" and r["on_design"] is want]
        if not sel:
            raise checks.fail("rows", f"at least one {name} bus-bandwidth row", len(rows))
        err = np.array([r["error"] for r in sel])
        out[name] = {
            "rows": len(sel), "median_abs": float(np.median(np.abs(err))),
            "max_abs": float(np.abs(err).max()), "min": float(err.min()),
            "max": float(err.max()), "within_10": int(np.sum(np.abs(err) <= 0.10)),
            "spearman": spearman([r["measured"] for r in sel], [r["predicted"] for r in sel]),
        }  # fmt: skip
    return out
