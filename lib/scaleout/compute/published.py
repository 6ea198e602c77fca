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
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import checks

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


def _mamf(accelerator, dtype, tflops, m, n, k, note=""):
    table = "BF16" if dtype == "bf16" else "FP8 (float8_e4m3fn)"
    return Measurement(accelerator, dtype, m, n, k, tflops, _MAMF_SRC.format(table=table),
                       note=note)  # fmt: skip


#: The NVIDIA rows of the MAMF table (mean TFLOP/s at the best shape found).
MAMF: tuple[Measurement, ...] = (
    _mamf("NVIDIA A100 SXM", "bf16", 271.2, 1024, 10240, 5120, "torch 2.6.0+cu126"),
    _mamf("NVIDIA GH200 SXM", "bf16", 828.6, 1024, 15360, 4096,
          "torch 2.6.0+cu126; 900W 141GiB HBM3e version"),
    _mamf("NVIDIA A100 PCIe", "bf16", 252.9, 2048, 5120, 6144, "torch 2.5.1+cu124"),
    _mamf("NVIDIA H100 SXM", "bf16", 794.5, 2048, 2048, 13312,
          "torch 2.7.0+cu126; the table notes: H200 is the same"),
    _mamf("NVIDIA B300 SXM", "bf16", 1769.0, 12288, 18432, 1024,
          "torch 2.9.1+cu130; same bf16 peak as B200"),
    _mamf("NVIDIA B200 SXM", "bf16", 1745.0, 1792, 16128, 3072, "torch 2.7.1+cu128"),
    _mamf("NVIDIA GB200 SXM", "bf16", 1822.0, 4096, 9728, 2048, "torch 2.10.0.dev+cu130"),
    _mamf("NVIDIA GH200 SXM", "fp8", 1535.0, 1024, 14336, 14336, "torch 2.6.0+cu126; 900W"),
    _mamf("NVIDIA B200 SXM", "fp8", 3432.5, 15360, 4096, 3072, "torch 2.7.1+cu128"),
    _mamf("NVIDIA B300 SXM", "fp8", 3353.3, 3072, 6144, 7168, "torch 2.9.1+cu130"),
    _mamf("NVIDIA H200 SXM", "fp8", 1453.4, 1280, 4096, 12032, "torch 2.7.1+cu128"),
    _mamf("NVIDIA GB200 SXM", "fp8", 3615.6, 19456, 5120, 1536, "torch 2.10.0.dev+cu130"),
    _mamf("NVIDIA H100 SXM", "fp8", 1402.6, 1024, 9216, 14336, "torch 2.7.0+cu126"),
)  # fmt: skip


def _swiglu(d_ff, tflops):
    return Measurement("NVIDIA H100", "fp16", 4096, 4096, d_ff, tflops, _SWIGLU_SRC, batch=4)


#: H100, fp16, ``torch.bmm`` of 4 x (4096 x d_ff) (d_ff x 4096): d_ff = 10922 = 8/3 x 4096
#: is not a multiple of 8; the five others are the best of the search.
SWIGLU_SWEEP: tuple[Measurement, ...] = tuple(
    _swiglu(d, tf)
    for d, tf in ((10922, 272.73), (10944, 398.38), (10848, 395.62), (10880, 395.52),
                  (10912, 395.16), (11008, 395.01))
)  # fmt: skip


_XLA_SRC = (
    "OpenXLA, xla/service/gpu/model/matmul_interpolator_data.h, kDefaultMatmulPTable, "
    "sm_90, bf16xbf16->bf16 (tensorflow/tensorflow @ 372d578bb861cc5804e56d37d93aec931a59762c, "
    "third_party/xla)"
)


def _xla(m, n, k, flops):
    return Measurement("NVIDIA H100 (sm_90)", "bf16", m, n, k, flops / 1e12, _XLA_SRC)


#: The 27 unbatched sm_90 rows with m, n and k each 1024, 2048 or 4096, as (m, n, k,
#: FLOP/s) the way the file stores them (k the contracted dimension).
XLA_H100_SHAPES: tuple[Measurement, ...] = tuple(
    _xla(*row)
    for row in (
        (1024, 1024, 1024, 236298816901408), (1024, 1024, 2048, 349981037809648),
        (1024, 1024, 4096, 470114633975481), (1024, 2048, 1024, 373345557719054),
        (1024, 2048, 2048, 524288000000000), (1024, 2048, 4096, 653525151552039),
        (1024, 4096, 1024, 490293070319634), (1024, 4096, 2048, 634224349675132),
        (1024, 4096, 4096, 738474431911967), (2048, 1024, 1024, 373345557719054),
        (2048, 1024, 2048, 523265996101364), (2048, 1024, 4096, 653127630170316),
        (2048, 2048, 1024, 493901482980680), (2048, 2048, 2048, 631984593290170),
        (2048, 2048, 4096, 737966889347079), (2048, 4096, 1024, 594212409518539),
        (2048, 4096, 2048, 715350982011992), (2048, 4096, 4096, 753643516181744),
        (4096, 1024, 1024, 488064465454545), (4096, 1024, 2048, 631984593290170),
        (4096, 1024, 4096, 738474431911967), (4096, 2048, 1024, 593227527071823),
        (4096, 2048, 2048, 716066571523841), (4096, 2048, 4096, 758434522012648),
        (4096, 4096, 1024, 677439636593059), (4096, 4096, 2048, 738736406437117),
        (4096, 4096, 4096, 783328793548203),
    )
)  # fmt: skip


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


#: The layer of Korthikanti et al.'s Table 4 (hidden, heads, seq, micro-batch b,
#: tensor-parallel t, GPU row).
KORTHIKANTI_LAYER = {"hidden": 6144, "heads": 64, "seq": 2048, "b": 4, "t": 8,
                     "gpu": "A100-80GB"}  # fmt: skip

#: Table 4, in the paper's order; "Combined" is forward + backward (19.6, 19.0, 27.2, 20.9,
#: 20.3 ms) and "Overhead" the combined time over the first row's.
KORTHIKANTI_TABLE4: tuple[LayerMeasurement, ...] = (
    LayerMeasurement("baseline, no recompute", False, "none", 7.7, 11.9),
    LayerMeasurement("sequence parallelism", True, "none", 7.2, 11.8),
    LayerMeasurement("baseline with full recompute", False, "full", 7.7, 19.5),
    LayerMeasurement("selective recompute", False, "selective", 7.7, 13.2),
    LayerMeasurement("selective + sequence parallelism", True, "selective", 7.2, 13.1),
)
