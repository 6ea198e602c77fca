"""The GEMM model beside published measurements: which rows calibrate it, the error on the
others, and its skill (does it rank them right?).

Rows (:mod:`scaleout.compute.published`):

* ``fit``: the MAMF rows that set each GPU's ceiling (``CEILING_ROWS`` of
  :mod:`scaleout.compute.gemm`). The ceiling is the measured TFLOP/s, so the model meets a
  row only where its tiles and waves lose nothing at that shape; the error is the model's
  loss there (never above zero).
* ``transfer``: MAMF rows of accelerators that set no ceiling, priced on the book's nearest
  sibling GPU row: the A100 PCIe (same chip and peak as the SXM, at 250-300 W) on
  A100-80GB, the GH200 (a Hopper GPU at 900 W) on H200, the B300 (same bf16 and fp8 peaks as
  the B200) on B200 (the H200's fp8 row sets the H200's fp8 ceiling). They test whether a ceiling
  *transfers* between sibling GPUs, not the tile and wave model: each is one large,
  well-shaped product near its GPU's best.
* ``sweep``: the H100 SwiGLU sweep (fp16 ``bmm``), priced on H100-SXM.
* ``shapes``: OpenXLA's sm_90 table (``XLA_H100_SHAPES``), 27 shapes on one H100, priced on
  H100-SXM: the test of the tile and wave model (nothing fitted to them).

Skill is Spearman's rank correlation between predicted and measured TFLOP/s.

The layer model (:func:`scaleout.compute.layer_time`) is checked on held-out rows of its
own: Korthikanti et al.'s Table 4 (``KORTHIKANTI_TABLE4``, nothing fitted to them), one
layer's forward and backward time with and without sequence parallelism and selective or
full recomputation (:func:`layer_rows`, :func:`layer_summary`). Their times include the
tensor-parallel collectives on the node's NVLink, which the layer model leaves out, so the
comparison adds them as chapter 15's planner does (NCCL's collective times,
``scaleout.nccl.collective_seconds``, and the overlap rules of
:func:`scaleout.overlap.tp_layer`, which the planner's ``tp_exposed`` follows): priced with
NCCL's model on a DGX A100 (:func:`scaleout.machine.preset`), with the one schedule of
2022's Megatron-LM, :data:`scaleout.overlap.MEGATRON_2022` (:data:`TP_SCHEDULE`), which the
planner's rows of the same paper's Table 5 use too: forward collectives on the critical
path, backward ones beside the weight- and input-gradient GEMMs (the paper: "we overlap
all-reduce communication with the linear weight's gradient computation"), with sequence
parallelism the input all-gathered again in the backward; a full recomputation repeats
the forward's collectives.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import checks, machine, nccl, overlap
from ..stats import ranks, spearman  # noqa: F401  (re-exported: chapters import them here)
from . import published as P
from .gemm import CEILING_ROWS, gemm_time
from .layer import Layer, layer_time

ROLES = ("fit", "transfer", "sweep", "shapes")
#: The tensor-parallel schedule Korthikanti et al.'s runs are priced with (chapters 14 and 15).
TP_SCHEDULE = overlap.MEGATRON_2022
#: Transfer MAMF rows and the sibling GPU row of ``hardware.GPUS`` that prices each.
TRANSFER = (
    ("NVIDIA A100 PCIe", "bf16", "A100-80GB"),
    ("NVIDIA GH200 SXM", "bf16", "H200"),
    ("NVIDIA B300 SXM", "bf16", "B200"),
    ("NVIDIA GH200 SXM", "fp8", "H200"),
    ("NVIDIA B300 SXM", "fp8", "B200"),
)


@dataclass(frozen=True)
class Row:
    """One published measurement beside the model's prediction for it."""

    measurement: P.Measurement
    gpu: str  # the hardware.GPUS row that prices it
    role: str
    predicted_tflops: float
    bound: str
    tile: tuple[int, int]
    waves: int

    def __post_init__(self):
        checks.instance("measurement", self.measurement, P.Measurement)
        checks.text("gpu", self.gpu, 40)
        checks.choice("role", self.role, ROLES)
        checks.positive("predicted_tflops", self.predicted_tflops, 1e9)
        checks.choice("bound", self.bound, ("compute", "memory"))
        if not isinstance(self.tile, tuple) or len(self.tile) != 2:
            raise checks.fail("tile", "a (Tm, Tn) pair of integers", self.tile)
        for size in self.tile:
            checks.integer("tile", size, 1, 4096)
        checks.integer("waves", self.waves, 1, 2**62)

    @property
    def error(self) -> float:
        """predicted / measured - 1."""
        return self.predicted_tflops / self.measurement.tflops - 1.0


def _row(measurement: P.Measurement, gpu: str, role: str) -> Row:
    g = gemm_time(measurement.m, measurement.n, measurement.k, gpu, measurement.dtype,
                  measurement.batch)  # fmt: skip
    return Row(measurement, gpu, role, g.achieved_flops / 1e12, g.bound, g.tile, g.waves)


def rows() -> tuple[Row, ...]:
    """Every validation row: fit, transfer, the sweep, then the shapes."""
    fit = []
    for (gpu, dtype), accelerator in CEILING_ROWS.items():
        if gpu == "A100-40GB" or (gpu, dtype) == ("H200", "bf16"):  # the same row again
            continue
        fit.append(_row(P.mamf(accelerator, dtype), gpu, "fit"))
    moved = [_row(P.mamf(acc, dtype), gpu, "transfer") for acc, dtype, gpu in TRANSFER]
    sweep = [_row(m, "H100-SXM", "sweep") for m in P.SWIGLU_SWEEP]
    shapes = [_row(m, "H100-SXM", "shapes") for m in P.XLA_H100_SHAPES]
    return tuple(fit + moved + sweep + shapes)


@dataclass(frozen=True)
class Summary:
    """Error and skill over the rows of one role."""

    role: str
    count: int
    median_abs_error: float
    max_abs_error: float
    rank_correlation: float  # NaN when the model predicts one value for every row

    def __post_init__(self):
        checks.choice("role", self.role, ROLES)
        checks.integer("count", self.count, 1, 10**6)
        checks.nonnegative("median_abs_error", self.median_abs_error)
        checks.nonnegative("max_abs_error", self.max_abs_error)
        if not (
            checks.is_real(self.rank_correlation)
            and (self.rank_correlation != self.rank_correlation or -1 <= self.rank_correlation <= 1)
        ):
            raise checks.fail("rank_correlation", "a number in [-1, 1], or NaN",
                              self.rank_correlation)  # fmt: skip


def summary(role: str) -> Summary:
    """:class:`Summary` of the rows of ``role`` (one of ``ROLES``)."""
    role = checks.choice("role", role, ROLES)
    chosen = [r for r in rows() if r.role == role]
    err = np.abs([r.error for r in chosen])
    rho = spearman([r.predicted_tflops for r in chosen], [r.measurement.tflops for r in chosen])
    return Summary(role, len(chosen), float(np.median(err)), float(err.max()), rho)


@dataclass(frozen=True)
class LayerRow:
    """One row of Korthikanti et al.'s Table 4 beside the model: compute
    (:func:`scaleout.compute.layer_time`) and exposed tensor-parallel communication, in ms,
    forward and backward (recomputation included in the backward, as the table counts it)."""

    measurement: P.LayerMeasurement
    compute_forward_ms: float
    compute_backward_ms: float
    comm_forward_ms: float
    comm_backward_ms: float

    def __post_init__(self):
        checks.instance("measurement", self.measurement, P.LayerMeasurement)
        for name in ("compute_forward_ms", "compute_backward_ms"):
            checks.positive(name, getattr(self, name), 1e7)
        for name in ("comm_forward_ms", "comm_backward_ms"):
            checks.nonnegative(name, getattr(self, name), 1e7)

    @property
    def forward_ms(self) -> float:
        return self.compute_forward_ms + self.comm_forward_ms

    @property
    def backward_ms(self) -> float:
        return self.compute_backward_ms + self.comm_backward_ms

    @property
    def combined_ms(self) -> float:
        return self.forward_ms + self.backward_ms

    def error(self, which: str = "combined") -> float:
        """predicted / measured - 1 of ``which``: "forward", "backward" or "combined"."""
        which = checks.choice("which", which, ("forward", "backward", "combined"))
        return getattr(self, f"{which}_ms") / getattr(self.measurement, f"{which}_ms") - 1.0


def layer_rows() -> tuple[LayerRow, ...]:
    """Korthikanti et al.'s Table 4, each row with the model's forward and backward time."""
    cfg = P.KORTHIKANTI_LAYER
    layer = Layer(cfg["hidden"], cfg["heads"], cfg["seq"])
    b, t = cfg["b"], cfg["t"]
    topo = machine.preset("dgx-a100").topology  # one DGX A100 holds the t = 8 group
    nbytes = float(b) * layer.seq * layer.hidden * 2  # 16-bit activations
    sec = {c: float(nccl.collective_seconds(c, nbytes, t, 1, machine=topo))
           for c in overlap.COLLECTIVES}  # fmt: skip
    out = []
    for m in P.KORTHIKANTI_TABLE4:
        lt = layer_time(layer, b, cfg["gpu"], t=t, sp=m.sp, recompute=m.recompute, flash=False)
        fwd = {p.name: p.seconds for p in lt.parts if p.phase == "forward" and p.kind == "gemm"}
        col = (fwd["QKV projection"], fwd["MLP up"])
        row = (fwd["attention output projection"], fwd["MLP down"])
        tp_f, tp_b, _, _ = overlap.tp_layer(sec, col, row, t, m.sp, TP_SCHEDULE.overlap,
                                            TP_SCHEDULE.regather(m.sp))  # fmt: skip
        again = 2 if m.recompute == "full" else 1
        out.append(LayerRow(m, lt.seconds("forward") * 1e3,
                            (lt.seconds("backward") + lt.seconds("recompute")) * 1e3,
                            tp_f * 1e3, (tp_b + (again - 1) * tp_f) * 1e3))  # fmt: skip
    return tuple(out)


@dataclass(frozen=True)
class LayerSummary:
    """Error and skill of the layer model on Table 4: median and largest absolute error of the
    forward, backward and combined times, the rank correlation of the combined times, and
    of the recomputation overheads (each row's combined time over the first row's)."""

    count: int
    median_abs_error: dict
    max_abs_error: dict
    rank_correlation: float
    overhead_rank_correlation: float

    def __post_init__(self):
        checks.integer("count", self.count, 2, 10**6)
        for name in ("median_abs_error", "max_abs_error"):
            d = getattr(self, name)
            if not isinstance(d, dict) or set(d) != {"forward", "backward", "combined"}:
                raise checks.fail(name, "a dict of forward, backward, combined errors", d)
            for v in d.values():
                checks.nonnegative(name, v)
        for name in ("rank_correlation", "overhead_rank_correlation"):
            checks.real(name, getattr(self, name), -1.0, 1.0)


def layer_summary() -> LayerSummary:
    """:class:`LayerSummary` of :func:`layer_rows`."""
    rows = layer_rows()
    med, big = {}, {}
    for which in ("forward", "backward", "combined"):
        err = np.abs([r.error(which) for r in rows])
        med[which], big[which] = float(np.median(err)), float(err.max())
    measured = [r.measurement.combined_ms for r in rows]
    predicted = [r.combined_ms for r in rows]
    rho = spearman(predicted, measured)
    over_m = [x / measured[0] for x in measured[1:]]
    over_p = [x / predicted[0] for x in predicted[1:]]
    return LayerSummary(len(rows), med, big, rho, spearman(over_p, over_m))
