"""Measurements of NCCL published by others, and the model's prediction for each.

The numbers are rows of ``scaleout/data/nccl.csv`` (the book's long format, loaded by
:mod:`scaleout.data`): one number a row, its ``source`` a key of references.bib and its
``locator`` the line, slide, bar or log line it is read from. A record is the rows that share
a ``table`` and a ``label``: the measured value (``quantity`` "busbw", GB/s, nccl-tests' bus
bandwidth at a large size, or "time", us, at a small one), the message size, the servers
("nodes") and the GPUs used on each (and, where the source states them, NICs per server or
the NIC speed). The setting columns say the collective, the algorithm if it was forced
(NCCL_ALGO), the one the source says NCCL chose, the NCCL release the measurer reported (or
"not stated"), whether NVLink SHARP (``nvls``) and InfiniBand SHARP (``sharp``) were on, and
``machine``: the preset the model rebuilds the machine from (the book's choice, a key of
:data:`MACHINES`; the label says what ran). Each :class:`Measurement` is built from its rows.
Nothing in the model is fitted to them. :data:`NCCL_PRINTED` holds times NCCL itself printed
for its own model (``NCCL_DEBUG_SUBSYS=TUNING``), which the replica must reproduce digit for
digit (kind "stated": NCCL's estimates, not measurements).

:data:`ALLTOALL` holds published nccl-tests ``alltoall_perf`` bus bandwidths, the check of
the book's all-to-all model (:mod:`scaleout.nccl.p2p`, which is not NCCL's: NCCL does not
price point-to-point operations); :func:`alltoall_rows` puts the model beside them. Not
used, because the machine cannot be rebuilt from what the source says: the same slide's
PCIe rows ("2x4 GPUs", no switch layout) and its "2x 200Gb / 2x 400Gb RDMA" rows (GPUs per
node not stated); NVIDIA/nccl issue 1792 (16 H20 nodes at 20+ GB/s, which the maintainers
call "not the expected behavior"); NVIDIA/nccl-tests issue 267 (its tables are images).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from .. import checks, data
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
#: How the model rebuilds each ``machine`` of the CSV, a preset of
#: :func:`scaleout.nccl.topo.topology` and the fields it overrides. H200 and H20 servers run
#: as DGX H100 (the same NVLink, NVSwitch and NICs); an 8 x B200 server (HGX B200: NVLink 5,
#: one NIC per GPU, Intel hosts) as eight GPUs of the NVL72 preset; "GB200 NVL72" is an
#: NVLink domain of the GPUs used, one NIC per GPU.
MACHINES = {
    "DGX A100": ("dgx-a100", {}),
    "DGX H100": ("dgx-h100", {}),
    "HGX H100 4x400G": ("hgx-h100-4nic", {}),
    "HGX B200": ("gb200-nvl72", {"gpus_per_node": 8, "nics_per_node": 8, "gpu": "B200",
                                 "cpu": "intel"}),
    "GB200 NVL72": ("gb200-nvl72", {}),
}  # fmt: skip


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


def _records(table: str) -> dict[str, dict[str, data.Value]]:
    """The rows of ``table`` in nccl.csv by label (in file order), each by quantity."""
    out: dict[str, dict[str, data.Value]] = {}
    for v in data.load("nccl"):
        if v.get("table") == table:
            out.setdefault(v.get("label"), {})[v.get("quantity")] = v
    return out


def _topology(q: dict[str, data.Value]) -> Topology:
    """The machine of one record (its rows by quantity), rebuilt as :data:`MACHINES` says."""
    v = next(iter(q.values()))
    preset, fixed = MACHINES[v.get("machine")]
    nodes, gpus = int(q["nodes"].value), int(q["GPUs per node"].value)
    kw = {"nvls": v.get("nvls") == "on", **fixed}
    if v.get("sharp") == "on":
        kw["collnet"] = True
    if "NIC speed" in q:
        kw["nic_gbps"] = q["NIC speed"].value
    if v.get("machine") == "GB200 NVL72":  # the NVLink domain is the GPUs used
        return topology(preset, nodes=nodes, gpus_per_node=gpus, nics_per_node=gpus, **kw)
    if "NICs per node" in q:  # a server the source describes whole
        nics = int(q["NICs per node"].value)
        return topology(preset, nodes=nodes, gpus_per_node=gpus, nics_per_node=nics, **kw)
    return topology(preset, nodes=nodes, **kw).group(gpus, nodes)


def _url(source: str, collective: str) -> str:
    """The address a record shows for bib key ``source`` (the slide image for GTC talks)."""
    if source == "bekman2024mlengineering":
        return ML_ENG
    if source == "gtc2025s72583":
        return GTC25_A2A if collective == "alltoall" else GTC25_AR
    if source == "gtc2024s62129":
        return GTC24_NVLSTREE
    m = re.fullmatch(r"(nccl|nccltests)issue(\d+)", source)
    if m is None:
        raise ValueError(f"nccl.csv: no address for source {source!r}")
    return ISSUE.format("nccl" if m[1] == "nccl" else "nccl-tests", m[2])


def _measurements(table: str) -> tuple[Measurement, ...]:
    out = []
    for label, q in _records(table).items():
        kind = "busbw" if "busbw" in q else "time"
        v = q[kind]
        out.append(Measurement(
            label, _topology(q), v.get("collective"), int(q["message size"].value),
            v.get("algorithm") or None, kind, v.value, v.get("chosen") or None,
            _url(v.source, v.get("collective")), v.get("release"), v.note))  # fmt: skip
    return tuple(out)


#: Published bus bandwidths and times of the five collectives, one per setup.
MEASUREMENTS: tuple[Measurement, ...] = _measurements("measurements")

#: Published ``alltoall_perf`` bus bandwidths (GB/s, nccl-tests' (n-1)/n x algbw).
ALLTOALL: tuple[Measurement, ...] = _measurements("alltoall")


def _printed() -> dict:
    records = _records("nccl printed")
    setup = next(q for q in records.values() if "nodes" in q)
    v = setup["nodes"]
    points = tuple((int(q["message size"].value), q["time"].get("algorithm"),
                    q["time"].get("protocol"), q["time"].value)
                   for q in records.values() if "time" in q)  # fmt: skip
    return {"source": _url(v.source, v.get("collective")), "release": v.get("release"),
            "topo": _topology(setup), "collective": v.get("collective"),
            "points": points}  # fmt: skip


#: Times NCCL printed for its own model (``NCCL_DEBUG=INFO``: "N Bytes -> Algo A proto P time
#: T") for all-reduces on three 8-GPU H100 servers, as (bytes, algorithm, protocol,
#: microseconds): Tree/LL ("Algo 0 proto 0") for small sizes, NVLSTree/Simple ("Algo 5
#: proto 2") from 512 KiB. The reporter's machine: NCCL 2.22.3, 8 ConnectX-7 ports at 200 Gb/s
#: per server (NVIDIA/nccl issue 1453). The Tree/LL points do not depend on the NIC speed;
#: the NVLSTree ones do, and match on this machine only.
NCCL_PRINTED = _printed()

#: Published numbers chapter 10 quotes beside the table but does not price (table "quoted"
#: of nccl.csv), by row key: an H200 cluster on EFA (no preset), and the all-to-all bus
#: bandwidth NCCL's maintainers expect on 4 nodes.
QUOTED = {v.key: v.value for v in data.load("nccl") if v.get("table") == "quoted"}


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


#: The largest list of rows :func:`split_summary` and the validation figures accept.
MAX_ROWS = 10_000
#: What a row of :func:`rows` holds that the summaries and figures read, and each one's check.
_ROW_CHECKS = {
    "label": lambda k, v: checks.text(k, v, 300),
    "kind": lambda k, v: checks.choice(k, v, ("busbw", "time")),
    "measured": checks.positive,
    "predicted": checks.positive,
    "error": checks.real,
    "nbytes": checks.positive,
    "on_design": checks.boolean,
    **{k: lambda k, v: checks.text(k, v, 300) for k in ("algorithm", "protocol", "release",
                                                        "source")},
}  # fmt: skip
_SPLIT_KEYS = ("kind", "on_design", "error", "measured", "predicted")


def _check_rows(rows, keys) -> list:
    """``rows`` as a list, if it is a non-empty list (or tuple) of at most :data:`MAX_ROWS`
    rows of :func:`rows` (mappings holding ``keys``, each value checked as
    :data:`_ROW_CHECKS` says); the one check of :func:`split_summary` and
    :mod:`scaleout.viz.nccl`'s validation figure and table."""
    what = f"a non-empty list of at most {MAX_ROWS} rows of published.rows() (with keys {keys})"
    if not isinstance(rows, list | tuple) or not rows or len(rows) > MAX_ROWS:
        raise checks.fail("rows", what, rows)
    for r in rows:
        if not isinstance(r, Mapping) or any(k not in r for k in keys):
            raise checks.fail("rows", what, r)
        for k in keys:
            _ROW_CHECKS[k](k, r[k])
    return list(rows)


def split_summary(rows: list[dict]) -> dict[str, dict]:
    """The bus-bandwidth rows of :func:`rows` in two groups, "on design" and "off design"
    (:func:`on_design`), each with its row count, median and largest absolute error, the
    signed errors at both ends, and Spearman's rank correlation of measured and predicted."""
    rows = _check_rows(rows, _SPLIT_KEYS)
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
