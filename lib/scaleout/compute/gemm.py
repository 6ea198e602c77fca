"""How long a matrix multiply takes on a GPU: the roofline, tiles, waves and a measured ceiling.

A GEMM C = A B with A (m x k) and B (k x n) does 2 m n k FLOPs and moves at least
(m k + k n + m n) elements through HBM. cuBLAS computes C in *tiles*: one thread block per
Tm x Tn output tile, one block per SM at a time (Anthony et al., "The Case for
Co-Designing Model Architectures with Hardware", arXiv 2401.14489, Section IV; NVIDIA,
"Matrix Multiplication Background User's Guide", sections "Tile Quantization" and "Wave
Quantization"). The model:

* **Tile quantization**: a partial tile costs a whole one, so the work done is
  ceil(m/Tm) ceil(n/Tn) tiles of 2 Tm Tn k FLOPs.
* **Wave quantization**: the tiles run in waves of one per SM; a wave costs the same full or
  not, so time is proportional to ceil(tiles / SMs).
* **Tile size**: larger tiles reuse each loaded operand more (Tm Tn / (Tm + Tn) FLOPs per
  element loaded); the model assumes the largest tile, 256 x 128, just saturates an SM's
  operand feed, so a smaller tile runs at its reuse relative to 256 x 128. Of the tiles in
  ``TILES`` (NVIDIA's guide) it picks the one that finishes first, as cuBLAS's heuristics
  aim to.
* **Ceiling**: a full wave of 256 x 128 tiles runs at the per-SM share of a *measured*
  ceiling: the Maximum Achievable Matmul FLOPS of the ML Engineering Open Book
  (:mod:`scaleout.compute.published`) for that GPU and data type, taken as it is: the
  ceiling is the measured TFLOP/s, its fraction of peak the measured fraction. The MAMF is
  the best of a brute-force search over shapes, so no shape may run faster in the model
  than the best measured one; the tile and wave terms only take away from it. GPUs or data
  types without a row of their own borrow the measured fraction of peak of a named sibling
  row (``CEILING_ROWS``, ``RELATED``; :func:`scaleout.compute.ceiling` says which).
  Nothing is tuned to training runs.
* **Roofline**: the time is at least the HBM time of the minimum traffic, bytes / bandwidth.

Not modelled: kernel launch latency (a few microseconds, which dominates tiny GEMMs),
alignment (dimensions that are not multiples of 16 bytes run slower: see the H100 SwiGLU
sweep in chapter 14), split-K and stream-K or persistent kernels that fill the last wave
(cuBLAS uses them on Hopper and Blackwell, so the model's wave staircase is too steep
there), each tile's fixed costs (filling the operand pipeline, writing the output tile),
which make products with a short k slower than the model (OpenXLA's H100 shapes in
chapter 14: 14-63 % too fast at k = 1,024), L2 cache effects, and clocks that drop under
power or thermal limits (the PCIe cards in the validation table).

Limits: m, n, k up to ``MAX_DIM``; ``batch`` up to ``MAX_BATCH``.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

from .. import checks
from .. import hardware as H
from . import published as P
from .roofline import DTYPE_BYTES

MAX_DIM = 2**24
MAX_BATCH = 2**20
MAX_FLOPS = 1e36  # FLOPs or FLOP/s: far above 2 MAX_DIM^3 MAX_BATCH
#: Output tile sizes (Tm, Tn) cuBLAS picks from, largest first (NVIDIA, Matrix
#: Multiplication Background User's Guide, "Tile Quantization").
TILES = ((256, 128), (128, 256), (128, 128), (256, 64), (64, 256), (128, 64), (64, 128), (64, 64))

#: The MAMF row that sets each (GPU, dtype) ceiling; fp16 uses the bf16 row (same peak and
#: kernels). Every row is the GPU's own measurement except the H200's bf16, which the table
#: gives as the H100 SXM's ("H200 is the same": same chip and clocks, same bf16 peak).
CEILING_ROWS = {
    ("A100-40GB", "bf16"): "NVIDIA A100 SXM",
    ("A100-80GB", "bf16"): "NVIDIA A100 SXM",
    ("H100-SXM", "bf16"): "NVIDIA H100 SXM",
    ("H200", "bf16"): "NVIDIA H100 SXM",
    ("B200", "bf16"): "NVIDIA B200 SXM",
    ("GB200", "bf16"): "NVIDIA GB200 SXM",
    ("H100-SXM", "fp8"): "NVIDIA H100 SXM",
    ("H200", "fp8"): "NVIDIA H200 SXM",
    ("B200", "fp8"): "NVIDIA B200 SXM",
    ("GB200", "fp8"): "NVIDIA GB200 SXM",
}
#: GPUs without a row of their own borrow the measured fraction of peak of a sibling's row:
#: the H100 PCIe (same Hopper chip, fewer SMs, lower clocks: an optimistic transfer) the H100
#: SXM's, the V100 the A100's (no MAMF row for Volta). Data types without a row (fp32, tf32)
#: borrow the same GPU's bf16 fraction.
RELATED = {"H100-PCIe": "H100-SXM", "V100-32GB": "A100-80GB"}


def _reuse(tm: int, tn: int) -> float:
    return tm * tn / (tm + tn)


def tile_efficiency(tm: int, tn: int) -> float:
    """A tile's operand reuse relative to the 256 x 128 tile's (1 for the largest tiles)."""
    tm, tn = checks.integer("tm", tm, 1, 4096), checks.integer("tn", tn, 1, 4096)
    return min(1.0, _reuse(tm, tn) / _reuse(*TILES[0]))


def _compute(m: int, n: int, k: int, batch: int, sms: int, rate: float):
    """(seconds, tile, tiles, waves) of the fastest tile at ``rate`` FLOP/s per full GPU."""
    best = None
    for tm, tn in TILES:
        tiles = batch * math.ceil(m / tm) * math.ceil(n / tn)
        waves = math.ceil(tiles / sms)
        seconds = waves * 2.0 * tm * tn * k / (rate / sms * tile_efficiency(tm, tn))
        if best is None or seconds < best[0]:
            best = (seconds, (tm, tn), tiles, waves)
    return best


def utilization(m, n, k, sms, batch=1) -> float:
    """Fraction of a GPU's ceiling a compute-bound GEMM reaches under tile and wave
    quantization and tile size: (2 m n k batch / ceiling) / the model's compute time."""
    m, n, k = (checks.integer(name, v, 1, MAX_DIM) for name, v in (("m", m), ("n", n), ("k", k)))
    sms = checks.integer("sms", sms, 1, H.MAX_SMS)
    batch = checks.integer("batch", batch, 1, MAX_BATCH)
    seconds = _compute(m, n, k, batch, sms, 1.0)[0]
    return 2.0 * m * n * k * batch / seconds


@dataclass(frozen=True)
class Ceiling:
    """The FLOP/s a full wave of large tiles reaches on one GPU and data type, and why."""

    flops: float
    fraction: float  # of the dense peak
    basis: str  # how it was obtained, with the row's source

    def __post_init__(self):
        checks.positive("flops", self.flops, MAX_FLOPS)
        checks.fraction("fraction", self.fraction, open_low=True)
        checks.text("basis", self.basis, 2000)


def ceiling(gpu, dtype: str = "bf16") -> Ceiling:
    """The measured ceiling of :func:`gemm_seconds` for ``gpu`` (a name of
    ``hardware.GPUS`` or a row) and ``dtype`` (see the module docstring)."""
    row = H.gpu(gpu)
    return _ceiling(row, checks.choice("dtype", dtype, row.dtypes))


def _measured(row: H.GPU, key: str):
    """The MAMF measurement that sets (row, key), or None where there is none."""
    accelerator = CEILING_ROWS.get((row.name, key))
    return None if accelerator is None else P.mamf(accelerator, key)


@functools.lru_cache(maxsize=256)
def _ceiling(row: H.GPU, dtype: str) -> Ceiling:
    peak = row.peak_flops(dtype)
    key = "bf16" if dtype == "fp16" else dtype
    measured = _measured(row, key)
    if measured is not None:
        fraction = measured.tflops * 1e12 / peak
        why = (f"measured: {measured.accelerator} {key} {measured.tflops:g} TFLOP/s at "
               f"{measured.shape} = {fraction:.1%} of {peak / 1e12:g}: "
               f"{measured.source}")  # fmt: skip
        return Ceiling(measured.tflops * 1e12, fraction, why)
    donor = H.gpu(RELATED.get(row.name, row.name))
    donor_key = key if _measured(donor, key) is not None else "bf16"
    if _measured(donor, donor_key) is None:  # no row for the GPU in any data type
        donor, donor_key = H.gpu("A100-80GB"), "bf16"
    base = _ceiling(donor, donor_key)
    why = (f"transferred: {base.fraction:.1%} of peak, the measured fraction of "
           f"{donor.name} {donor_key} (no published measurement for {row.name} {dtype}); "
           f"{base.basis}")  # fmt: skip
    return Ceiling(base.fraction * peak, base.fraction, why)


@dataclass(frozen=True)
class GemmTime:
    """The model's time for one (batched) GEMM and what bounds it."""

    seconds: float
    flops: float  # useful FLOPs, 2 m n k batch
    bytes: float  # minimum HBM traffic
    compute_s: float  # tiles and waves at the ceiling
    memory_s: float  # bytes / HBM bandwidth
    tile: tuple[int, int]
    tiles: int
    waves: int
    peak_flops: float

    def __post_init__(self):
        for key in ("seconds", "flops", "bytes", "peak_flops"):
            checks.positive(key, getattr(self, key), MAX_FLOPS if key != "seconds" else None)
        checks.nonnegative("compute_s", self.compute_s)
        checks.nonnegative("memory_s", self.memory_s)
        if not isinstance(self.tile, tuple) or len(self.tile) != 2:
            raise checks.fail("tile", "a (Tm, Tn) pair of integers", self.tile)
        for size in self.tile:
            checks.integer("tile", size, 1, 4096)
        checks.integer("tiles", self.tiles, 1, MAX_DIM**3)
        checks.integer("waves", self.waves, 1, MAX_DIM**3)
        if self.seconds < max(self.compute_s, self.memory_s) * (1 - 1e-12):
            raise checks.fail("seconds", "at least max(compute_s, memory_s)", self.seconds)

    @property
    def bound(self) -> str:
        """Which term is larger, ``"compute"`` or ``"memory"``."""
        return "compute" if self.compute_s >= self.memory_s else "memory"

    @property
    def achieved_flops(self) -> float:
        """Useful FLOP/s, flops / seconds."""
        return self.flops / self.seconds

    @property
    def efficiency(self) -> float:
        """Achieved over dense peak FLOP/s, in (0, 1]."""
        return self.achieved_flops / self.peak_flops


def gemm_time(m, n, k, gpu, dtype: str = "bf16", batch=1) -> GemmTime:
    """The model's time for ``batch`` products of (m x k) by (k x n) in ``dtype`` on ``gpu``
    (a ``hardware.GPUS`` name or row): max(tile-and-wave compute time, HBM time)."""
    m, n, k = (checks.integer(name, v, 1, MAX_DIM) for name, v in (("m", m), ("n", n), ("k", k)))
    batch = checks.integer("batch", batch, 1, MAX_BATCH)
    row = H.gpu(gpu)
    return _gemm_time(m, n, k, row, checks.choice("dtype", dtype, row.dtypes), batch)


@functools.lru_cache(maxsize=2**16)
def _gemm_time(m: int, n: int, k: int, row: H.GPU, dtype: str, batch: int) -> GemmTime:
    top = _ceiling(row, dtype)
    compute_s, tile, tiles, waves = _compute(m, n, k, batch, row.sms, top.flops)
    elements = float(batch) * (m * k + k * n + m * n)
    nbytes = elements * DTYPE_BYTES[dtype]
    memory_s = nbytes / row.hbm_bytes_per_s
    flops = 2.0 * m * n * k * batch
    return GemmTime(max(compute_s, memory_s), flops, nbytes, compute_s, memory_s, tile,
                    tiles, waves, row.peak_flops(dtype))  # fmt: skip


def gemm_seconds(m, n, k, gpu, dtype: str = "bf16", batch=1) -> float:
    """Seconds for (m x k) by (k x n) on ``gpu`` (:func:`gemm_time`)."""
    return gemm_time(m, n, k, gpu, dtype, batch).seconds


def gemm_efficiency(m, n, k, gpu, dtype: str = "bf16", batch=1) -> float:
    """Achieved over dense peak FLOP/s of the GEMM, in (0, 1] (:func:`gemm_time`)."""
    return gemm_time(m, n, k, gpu, dtype, batch).efficiency
