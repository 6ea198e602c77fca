"""Published measurements of matrix-multiply throughput that the GEMM model uses or is
checked against, every row with its source.

* ``MAMF``: the "Maximum Achievable Matmul FLOPS comparison table" of the ML Engineering
  Open Book (Stas Bekman, ``compute/accelerator/README.md``, repository stas00/ml-engineering
  at commit 744d01e): the best mean TFLOP/s of ``torch.mm`` over a brute-force search of
  shapes (M x N x K, K the reduction), BF16 and FP8 (``float8_e4m3fn``) inputs, no sparsity,
  100 iterations after 50 warm-up, the L2 cache flushed between iterations
  (``compute/accelerator/benchmarks/mamf-finder.py``, ``benchmark_mm``).
* ``SWIGLU_SWEEP``: the SwiGLU MLP-size search on an H100 in the same book
  (``training/performance/README.md``, section "SwiGLU-based MLP"; script
  ``benchmarks/matrix-shape/swiglu-maf-bench.py``, written for Anthony et al., "The Case for
  Co-Designing Model Architectures with Hardware", arXiv 2401.14489): ``torch.bmm`` of
  4 x (4096 x d_ff) by (d_ff x 4096) in fp16, for d_ff near 8/3 x 4096.

* ``XLA_H100_SHAPES``: OpenXLA's default matmul performance table for ``sm_90`` (Hopper),
  ``kDefaultMatmulPTable`` in ``xla/service/gpu/model/matmul_interpolator_data.h``
  (tensorflow/tensorflow @ 372d578, ``third_party/xla``), which XLA's cost model
  interpolates: measured FLOP/s of ``bf16 x bf16 -> bf16`` products over a grid of shapes
  (b in 1, 2, 4; m, n, k in 256 ... 4096). The book keeps the 27 unbatched rows with m, n,
  k all in {1024, 2048, 4096} (2 to 137 GFLOPs, 4 to 175 microseconds: the smaller ones
  are dominated by launch latency, which the model leaves out). The file does not name the
  H100 variant; its best row, 783 TFLOP/s at 4096^3, is above an H100 PCIe's 756 TFLOP/s
  peak, so it is an SXM part. Not a MAMF search: one measurement per shape, with the
  kernel XLA picked.

* ``KORTHIKANTI_TABLE4``: the forward and backward time of one transformer layer of the
  22B model of Korthikanti et al., "Reducing Activation Recomputation in Large Transformer
  Models" (arXiv 2205.05198, Table 4; configuration from their Table 3 and Section 6:
  h = 6144, 64 heads, s = 2048, micro-batch 4, t = 8 on one DGX A100 80GB node of Selene,
  mixed precision), with and without sequence parallelism and selective or full
  recomputation. The backward column of a recomputing run includes the recomputation.
  Their Figure 8 shows the same breakdown for the 175B, 530B and 1T models as bars without
  numbers, so only the 22B rows are used.

Anthony et al.'s own shape sweeps are published as plots only (their figures give no
numbers in the text), so their qualitative rules are checked in chapter 14, not their
figures' values.

Every number above is a row of ``scaleout/data/compute.csv`` (loaded by :mod:`scaleout.data`:
one number a row, with its references.bib ``source``, ``locator`` and ``kind``); the column
``record`` names the record it builds, the shape (``batch``, ``m``, ``n``, ``k``) and the
Table 4 row (``experiment``, ``sp``, ``recompute``) are the row's setting. The records keep
a human-readable ``source`` string as well.
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import checks, data

_MAMF_SRC = (
    "ML Engineering Open Book, compute/accelerator/README.md (stas00/ml-engineering @ "
    "744d01e), Maximum Achievable Matmul FLOPS comparison table, {table}"
)
_SWIGLU_SRC = (
    "ML Engineering Open Book, training/performance/README.md (stas00/ml-engineering @ "
    "744d01e), SwiGLU-based MLP: swiglu-maf-bench.py on an H100, h = 4096"
)
MAX_DIM = 2**24


@dataclass(frozen=True)
class Measurement:
    """One published GEMM measurement: ``batch`` products of (m x k) by (k x n) in ``dtype``
    on ``accelerator`` at ``tflops`` (dense TFLOP/s achieved, 2 m n k batch / time)."""

    accelerator: str  # as the source names it
    dtype: str
    m: int
    n: int
    k: int
    tflops: float
    source: str
    batch: int = 1
    note: str = ""

    def __post_init__(self):
        checks.text("accelerator", self.accelerator, 80)
        checks.choice("dtype", self.dtype, ("fp32", "tf32", "bf16", "fp16", "fp8"))
        for key in ("m", "n", "k"):
            checks.integer(key, getattr(self, key), 1, MAX_DIM)
        checks.positive("tflops", self.tflops, 1e6)
        checks.text("source", self.source, 1000)
        checks.integer("batch", self.batch, 1, 2**20)
        if not isinstance(self.note, str) or len(self.note) > 1000:
            raise checks.fail("note", "a string of at most 1000 characters", self.note)

    @property
    def shape(self) -> str:
        """``"MxNxK"`` (with ``"B x "`` in front for a batched product)."""
        prefix = f"{self.batch} x " if self.batch > 1 else ""
        return f"{prefix}{self.m}x{self.n}x{self.k}"


def _rows(record: str) -> list:
    """The rows of ``compute.csv`` that build ``record``, in the file's order."""
    return [v for v in data.load("compute") if v.get("record") == record]


def _int(v, column: str) -> int:
    """The whole number in setting ``column`` of row ``v``."""
    text = v.get(column)
    if not text.isdigit():
        raise ValueError(f"compute.csv row {v.key!r}: {column} must be a whole number, "
                         f"got {text!r}")  # fmt: skip
    return int(text)


def _whole(v) -> int:
    """The value of row ``v`` as an ``int`` (it must be a whole number)."""
    if not float(v.value).is_integer():
        raise ValueError(f"compute.csv row {v.key!r}: value must be a whole number, "
                         f"got {v.value!r}")  # fmt: skip
    return int(v.value)


def _measurement(v, source: str, note: str = "", scale: float = 1.0) -> Measurement:
    """A :class:`Measurement` of row ``v``: its value over ``scale`` as TFLOP/s."""
    value = v.value if scale == 1.0 else v.value / scale
    return Measurement(v.get("accelerator"), v.get("dtype"), _int(v, "m"), _int(v, "n"),
                       _int(v, "k"), value, source, batch=_int(v, "batch"), note=note)  # fmt: skip


#: The NVIDIA rows of the MAMF table (mean TFLOP/s at the best shape found), from
#: ``compute.csv`` (the note: the table's torch version and notes).
MAMF: tuple[Measurement, ...] = tuple(
    _measurement(v, _MAMF_SRC.format(table="BF16" if v.get("dtype") == "bf16"
                                     else "FP8 (float8_e4m3fn)"), note=v.note)
    for v in _rows("MAMF")
)  # fmt: skip

#: H100, fp16, ``torch.bmm`` of 4 x (4096 x d_ff) (d_ff x 4096): d_ff = 10922 = 8/3 x 4096
#: is not a multiple of 8; the five others are the best of the search.
SWIGLU_SWEEP: tuple[Measurement, ...] = tuple(
    _measurement(v, _SWIGLU_SRC) for v in _rows("SWIGLU_SWEEP")
)


_XLA_SRC = (
    "OpenXLA, xla/service/gpu/model/matmul_interpolator_data.h, kDefaultMatmulPTable, "
    "sm_90, bf16xbf16->bf16 (tensorflow/tensorflow @ 372d578bb861cc5804e56d37d93aec931a59762c, "
    "third_party/xla)"
)


#: The 27 unbatched sm_90 rows with m, n and k each 1024, 2048 or 4096 (k the contracted
#: dimension), stored in ``compute.csv`` in FLOP/s as the file stores them.
XLA_H100_SHAPES: tuple[Measurement, ...] = tuple(
    _measurement(v, _XLA_SRC, scale=1e12) for v in _rows("XLA_H100_SHAPES")
)


def mamf(accelerator: str, dtype: str = "bf16") -> Measurement:
    """The ``MAMF`` row of ``accelerator`` (as the table names it) for ``dtype``."""
    rows = {(r.accelerator, r.dtype): r for r in MAMF}
    key = (
        checks.text("accelerator", accelerator, 80),
        checks.choice("dtype", dtype, ("bf16", "fp8")),
    )
    if key not in rows:
        raise checks.fail("accelerator", f"one of the MAMF rows {sorted(rows)}", key)
    return rows[key]


_TABLE4_SRC = (
    "Korthikanti et al. 2022, arXiv 2205.05198, Table 4 (22B model of Table 3: h 6144, 64 "
    "heads, s 2048, micro-batch 4, t 8; A100 80GB, DGX A100 nodes of Selene)"
)


@dataclass(frozen=True)
class LayerMeasurement:
    """One published per-layer timing: ``forward_ms`` and ``backward_ms`` (recomputation
    included) of one transformer layer on one GPU of its tensor-parallel group, with
    sequence parallelism ``sp`` and ``recompute`` ("none", "selective" or "full")."""

    experiment: str
    sp: bool
    recompute: str
    forward_ms: float
    backward_ms: float
    source: str = _TABLE4_SRC

    def __post_init__(self):
        checks.text("experiment", self.experiment, 80)
        checks.boolean("sp", self.sp)
        checks.choice("recompute", self.recompute, ("none", "selective", "full"))
        checks.positive("forward_ms", self.forward_ms, 1e7)
        checks.positive("backward_ms", self.backward_ms, 1e7)
        checks.text("source", self.source, 1000)

    @property
    def combined_ms(self) -> float:
        """Forward plus backward, as the table's "Combined" column."""
        return self.forward_ms + self.backward_ms


def _layer() -> dict:
    # Their Table 3's 22B row has one home: its shape in planner_models.csv, its run (t,
    # micro-batch) in planner_runs.csv; the sequence length (Sec. 6) is compute.csv's.
    shape = {v.get("field"): _whole(v) for v in data.load("planner_models")
             if v.get("model") == "22B"}  # fmt: skip
    run = {v.get("field"): _whole(v) for v in data.load("planner_runs")
           if v.get("run") == "K5 22B" and v.get("field") in ("t", "micro_batch")}  # fmt: skip
    q = {v.get("quantity"): _whole(v) for v in _rows("KORTHIKANTI_LAYER")}
    out = {"hidden": shape["hidden"], "heads": shape["heads"], "seq": q["seq"],
           "b": run["micro_batch"], "t": run["t"]}  # fmt: skip
    # The book's GPU row for their A100 80GB (a name of hardware.GPUS, not a number).
    out["gpu"] = "A100-80GB"
    return out


#: The layer of Korthikanti et al.'s Table 4 (hidden, heads, seq, micro-batch b,
#: tensor-parallel t from ``compute.csv``; the book's GPU row).
KORTHIKANTI_LAYER = _layer()


def _table4() -> tuple[LayerMeasurement, ...]:
    rows: dict = {}
    for v in _rows("KORTHIKANTI_TABLE4"):
        sp = checks.choice("sp", v.get("sp"), ("True", "False")) == "True"
        key = (v.get("experiment"), sp, v.get("recompute"))
        rows.setdefault(key, {})[v.get("quantity")] = v.value
    return tuple(LayerMeasurement(*key, ms["forward_ms"], ms["backward_ms"])
                 for key, ms in rows.items())  # fmt: skip


#: Table 4, in the paper's order, from ``compute.csv``; "Combined" is forward + backward
#: (19.6, 19.0, 27.2, 20.9, 20.3 ms, rows of their own in the file) and "Overhead" the
#: combined time over the first row's.
KORTHIKANTI_TABLE4: tuple[LayerMeasurement, ...] = _table4()


def _narayanan_sec51() -> dict:
    out: dict = {}
    for v in _rows("NARAYANAN_SEC51"):
        out.setdefault(v.get("experiment"), {})[v.get("quantity")] = _whole(v)
    return out


#: Narayanan et al.'s end-to-end training-time examples (their Sec. 5.1), from
#: ``compute.csv``: GPT-3 175B's ``tflops`` per GPU (eq. 3 FLOPs, full recomputation) on
#: ``gpus`` A100s; the 1T model's assumed ``tokens`` and the ``days`` the paper estimates
#: (its GPUs and TFLOP/s are Table 1's 1T row, ``planner.published``).
NARAYANAN_SEC51: dict = _narayanan_sec51()

#: Narayanan et al.'s Sec. 5.6 (Figure 17, a 145B model on 128 A100s). Full recomputation
#: costs up to ``throughput_loss`` of the throughput at small batches and, at the large
#: batches only it makes fit, gives up to ``throughput_gain`` times the best without it.
NARAYANAN_SEC56: dict = {v.get("quantity"): v.value for v in _rows("NARAYANAN_SEC56")}
