"""Published measurements and training setups of context parallelism, each with its source.

Read by chapter 8 (``chapters/08_context_parallel.ipynb``), which compares them with the
models of :mod:`~scaleout.context_parallel.ring` and :mod:`~scaleout.context_parallel.costs`.

* :data:`~scaleout.context_parallel.published.RING_BENCHMARKS`: zhuzilin/ring-flash-attention,
  README "Performance Summary", batch API (commit 8996282). Benchmark
  ``benchmark/benchmark_kvpacked_func.py``: the attention of Llama 3.1 8B (32 query heads, 8
  key/value heads, head dimension 128), 8,192 tokens per GPU (65,536 in all), batch 1, bf16,
  causal, 8 GPUs on NVLink. Its reference, "theoretic flash_attn", is ``flash_attn`` on one GPU's
  8,192 tokens: the ring does 8 times that work in all, so a perfectly balanced ring with hidden
  communication would run at flash_attn's rate / 8. The README's ``ring_attn`` is the contiguous
  layout, ``zigzag_ring`` the zig-zag one, ``stripe_attn`` the striped one.
* :data:`~scaleout.context_parallel.published.RING_VARLEN_BENCHMARKS`: the same README's varlen
  API rows (``benchmark/benchmark_varlen_kvpacked_func.py``, commit 8996282): the same attention
  and sizes, but each iteration packs documents, cycling through the four masks of
  :data:`~scaleout.context_parallel.published.VARLEN_DOCUMENTS` (one GPU's 8,192 tokens; the
  reference ``flash_attn_varlen`` runs them on one GPU, the distributed versions run the
  8-times-longer documents of the whole 65,536-token sequence). ``ring_attn`` (contiguous ring,
  each document split over the ranks), ``zigzag_ring`` and ``llama3_attn``
  (``llama3_flash_attn_varlen_func``: Llama 3's all-gather of K and V, the packed sequence cut
  contiguously over the ranks, the gather split into two groups of 4 key/value heads, the second
  overlapped with the first group's attention: ``heads_k_stride=4``).
* :data:`~scaleout.context_parallel.published.USP_BENCHMARKS`: feifeibear/long-context-attention
  (USP, Fang & Zhao 2024, arXiv 2405.07719), README "Benchmark", table
  ``media/benchmark_results.png`` (commit b93c30e, "update comprehensive benchmark results"):
  forward-only iterations per second on 8 A100-SXM4-80GB with NVLink, the hybrid with Ulysses
  degree 8, 4, 2, 1 (ring degree 8 / Ulysses), ring layouts ``basic`` (contiguous), ``zigzag``
  and ``stripe``, batch 2, causal, bf16. Kept: the rows of 131,072 tokens (the whole sequence,
  ``--seq_len`` times 8 GPUs), 8 heads of dimension 128, both the packed-QKV and the unpacked
  columns.
* :data:`~scaleout.context_parallel.published.LLAMA3_SETUPS`: Llama 3 405B pre-training (Dubey
  et al., arXiv 2407.21783, Table 4; the same GPU, TP, CP, PP and TFLOPs figures appear in P.
  Balaji's SC'24 talk as reproduced on glennklockwood.com, "Llama-3.1"). Sequence lengths and the
  CP scheme (2 x CP chunks, rank i holding chunks i and 2 CP - 1 - i; K and V all-gathered) from the
  paper's Sec. 3.3.2; 400 Gb/s RoCE between the servers' 8 H100s (Sec. 3.3.1). The table's DP
  column is kept as printed (``printed_dp``): for the long-context row the arXiv HTML version
  prints 4, which neither the GPU count (16,384 / (8 x 16 x 16) = 8) nor the batch (16M tokens /
  131,072 / 16 sequences per DP rank = 8) allows; :attr:`LlamaSetup.dp` is the 8 both imply.

* :data:`~scaleout.context_parallel.published.STRIPED_TPU`: Striped Attention (Brandon et al.,
  arXiv 2311.09431), abstract: up to 1.65x end-to-end speedup over the original (contiguous)
  Ring Attention on 16 TPUv4 chips at "786k" tokens, which the book reads as 786,432 =
  768 x 1,024 (the abstract gives no exact count).

Every number comes from ``scaleout/data/context_parallel.csv`` (the book's long format, loaded by
:func:`scaleout.data.load`): one number a row with its unit, references.bib key, locator and
kind; the setting columns ``table`` (batch, varlen, usp, llama3), ``quantity``, ``gpu``,
``passes``, ``method`` (the source's column name: ``ring_attn``, ``zigzag_ring``, ...),
``ulysses``, ``packed`` (``qkvpack`` or ``no_packed``), ``row`` and ``index`` (and the
table ``striped``: its ``devices``, ``seq`` and ``speedup``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import checks, data

__all__ = [
    "LLAMA3_SETUPS",
    "RING_BENCHMARKS",
    "RING_VARLEN_BENCHMARKS",
    "TOKENS_PER_BATCH",
    "USP_BENCHMARKS",
    "VARLEN_DOCUMENTS",
    "LlamaSetup",
    "RingBenchmark",
    "STRIPED_TPU",
    "StripedSpeedup",
    "UspBenchmark",
]

_RING_SOURCE = "zhuzilin/ring-flash-attention README, Performance Summary (batch api)"
_ROWS = data.load("context_parallel")
_BY_KEY = {v.key: v for v in _ROWS}


def _int(key: str) -> int:
    """The value of row ``key`` of context_parallel.csv, an integer (a size, a count)."""
    v = _BY_KEY[checks.choice("key", key, sorted(_BY_KEY))].value
    if v != int(v):
        raise ValueError(f"context_parallel.csv row {key!r} must hold an integer, got {v!r}")
    return int(v)


def _table(table: str, quantity: str) -> list[data.Value]:
    """The rows of ``table`` holding ``quantity``, in the file's order."""
    return [v for v in _ROWS if v.get("table") == table and v.get("quantity") == quantity]


#: The README's columns: (layout, scheme) of each distributed version.
_METHODS = {
    "ring_attn": ("contiguous", "ring"),
    "zigzag_ring": ("zigzag", "ring"),
    "stripe_attn": ("striped", "ring"),
    "llama3_attn": ("contiguous", "allgather"),
}


def _ring_rows(table: str, source: str) -> tuple:
    """The README's ``table`` (batch or varlen): one record per distributed version's
    measurement, with the flash_attn reference of its (gpu, passes) row."""
    rows = _table(table, "iter_per_s")
    flash = {(v.get("gpu"), v.get("passes")): v.value for v in rows
             if v.get("method") == "flash_attn"}  # fmt: skip
    cp, tokens = _int(f"ring-{table}-gpus"), _int(f"ring-{table}-tokens-per-gpu")
    out = []
    for v in rows:
        if v.get("method") == "flash_attn":
            continue
        gpu, passes = v.get("gpu"), v.get("passes")
        layout, scheme = _METHODS[v.get("method")]
        out.append(RingBenchmark(gpu, passes, layout, flash[gpu, passes], v.value, source, cp,
                                 tokens, scheme, table))  # fmt: skip
    return tuple(out)


@dataclass(frozen=True)
class RingBenchmark:
    """One measured distributed attention: ``gpu`` (8 of them), ``passes`` ("forward" or
    "forward+backward"), ``layout`` (layout name), ``flash_iter_per_s`` (flash_attn on one
    GPU's share, the README's numerator), ``iter_per_s`` (measured), ``scheme`` ("ring", or
    "allgather" for ``llama3_attn``) and ``api`` ("batch", or "varlen": packed documents)."""

    gpu: str
    passes: str
    layout: str
    flash_iter_per_s: float
    iter_per_s: float
    source: str = _RING_SOURCE
    cp: int = _int("ring-batch-gpus")
    tokens_per_gpu: int = _int("ring-batch-tokens-per-gpu")
    scheme: str = "ring"
    api: str = "batch"

    def __post_init__(self):
        checks.choice("gpu", self.gpu, ("A100", "H800"))
        checks.choice("passes", self.passes, ("forward", "forward+backward"))
        checks.choice("layout", self.layout, ("contiguous", "zigzag", "striped"))
        checks.choice("scheme", self.scheme, ("ring", "allgather"))
        checks.choice("api", self.api, ("batch", "varlen"))
        checks.positive("flash_iter_per_s", self.flash_iter_per_s, 1e6)
        checks.positive("iter_per_s", self.iter_per_s, 1e6)
        checks.text("source", self.source, 400)
        checks.integer("cp", self.cp, 1, 1024)
        checks.integer("tokens_per_gpu", self.tokens_per_gpu, 1, 2**24)

    @property
    def efficiency(self) -> float:
        """Measured rate over the ideal (flash_attn's rate / cp), as the README reports it."""
        return self.iter_per_s / (self.flash_iter_per_s / self.cp)


#: The twelve measurements of the README's batch-API table.
RING_BENCHMARKS: tuple[RingBenchmark, ...] = _ring_rows("batch", _RING_SOURCE)

_VARLEN_SOURCE = "zhuzilin/ring-flash-attention README, Performance Summary (varlen api)"


#: The four document masks the varlen benchmark cycles through, as document lengths of one
#: GPU's 8,192 tokens (``cu_seqlens_list`` of ``benchmark_varlen_kvpacked_func.py``: [0, 8192],
#: [0, 256, 7648, 8192], [0, 4096, 8192], [0, 3104, 6304, 7904, 8064, 8192]); the distributed
#: runs pack the same documents 8 times longer into 65,536 tokens.
def _documents() -> tuple[tuple[int, ...], ...]:
    """Each mask's document lengths: differences of its ``cu_seqlens`` rows (which start at 0)."""
    masks: dict[str, list[int]] = {}
    for v in _table("varlen", "cu_seqlens"):
        masks.setdefault(v.get("row"), []).append(int(v.value))
    return tuple(tuple(int(d) for d in np.diff([0, *ends])) for ends in masks.values())


#: The document lengths of each varlen benchmark mask (one GPU's tokens, in order).
VARLEN_DOCUMENTS: tuple[tuple[int, ...], ...] = _documents()


#: The twelve measurements of the README's varlen-API table.
RING_VARLEN_BENCHMARKS: tuple[RingBenchmark, ...] = _ring_rows("varlen", _VARLEN_SOURCE)

_USP_SOURCE = (
    "feifeibear/long-context-attention README, Benchmark, media/benchmark_results.png "
    "(8xA100-SXM4-80GB NVLink, fwd-only)"
)


@dataclass(frozen=True)
class UspBenchmark:
    """One USP measurement: the hybrid on ``gpus`` GPUs with Ulysses degree ``ulysses``
    (ring degree gpus / ulysses) and ring ``layout``, ``packed`` QKV or not, forward only:
    ``iter_per_s`` measured, for ``batch`` sequences of ``seq`` tokens, ``heads`` heads (as
    many key/value heads) of dimension ``head_dim``, causal."""

    ulysses: int
    layout: str
    packed: bool
    iter_per_s: float
    seq: int = _int("usp-seq")
    heads: int = _int("usp-heads")
    head_dim: int = _int("usp-head-dim")
    batch: int = _int("usp-batch")
    gpus: int = _int("usp-gpus")
    gpu: str = "A100"
    source: str = _USP_SOURCE

    def __post_init__(self):
        checks.integer("gpus", self.gpus, 1, 1024)
        u = checks.integer("ulysses", self.ulysses, 1, self.gpus)
        if self.gpus % u:
            raise checks.fail("ulysses", f"a divisor of gpus ({self.gpus})", u)
        checks.choice("layout", self.layout, ("contiguous", "zigzag", "striped"))
        checks.boolean("packed", self.packed)
        checks.positive("iter_per_s", self.iter_per_s, 1e6)
        checks.integer("seq", self.seq, 1, 2**24)
        checks.integer("heads", self.heads, 1, 1024)
        checks.integer("head_dim", self.head_dim, 1, 1024)
        checks.integer("batch", self.batch, 1, 4096)
        checks.choice("gpu", self.gpu, ("A100",))
        checks.text("source", self.source, 400)

    @property
    def ring(self) -> int:
        """The ring degree, gpus / ulysses."""
        return self.gpus // self.ulysses


_USP_LAYOUTS = {"basic": "contiguous", "zigzag": "zigzag", "stripe": "striped"}
_USP_PACKED = {"qkvpack": True, "no_packed": False}


def _usp_rows():
    """The table's 128K rows; the setup (seq, heads, head_dim, batch, gpus) is the record's
    defaults, the rows ``usp-*`` of the same file."""
    return tuple(
        UspBenchmark(
            int(v.get("ulysses")),
            _USP_LAYOUTS[v.get("method")],
            _USP_PACKED[v.get("packed")],
            v.value,
        )
        for v in _table("usp", "iter_per_s")
    )


#: The 24 measurements at 131,072 tokens, 8 heads of dimension 128.
USP_BENCHMARKS: tuple[UspBenchmark, ...] = _usp_rows()

#: Tokens per global batch in every row of Llama 3's Table 4 ("16M"), 2**24 = 64 x 32 x 8,192.
TOKENS_PER_BATCH = _int("llama3-tokens-per-batch")


@dataclass(frozen=True)
class LlamaSetup:
    """One row of Llama 3's Table 4: GPUs, tensor, context and pipeline parallel sizes,
    sequence length, the achieved bf16 TFLOPs per GPU, the DP size as printed and the
    batch size per DP rank (sequences)."""

    gpus: int
    tp: int
    cp: int
    pp: int
    seq: int
    tflops_per_gpu: float
    printed_dp: int
    batch_per_dp: int
    source: str = "Dubey et al. 2024, arXiv 2407.21783, Table 4 and Sec. 3.3.2"

    def __post_init__(self):
        for key in ("gpus", "tp", "cp", "pp", "printed_dp", "batch_per_dp"):
            checks.integer(key, getattr(self, key), 1, 2**20)
        checks.integer("seq", self.seq, 1, 2**24)
        checks.positive("tflops_per_gpu", self.tflops_per_gpu, 1e5)
        checks.text("source", self.source, 400)
        if self.gpus % (self.tp * self.cp * self.pp):
            raise checks.fail("gpus", "a multiple of tp x cp x pp", self.gpus)

    @property
    def dp(self) -> int:
        """The data-parallel size, GPUs / (tp x cp x pp)."""
        return self.gpus // (self.tp * self.cp * self.pp)

    @property
    def dp_from_batch(self) -> float:
        """The data-parallel size the batch implies, tokens per batch / (seq x batch per DP)."""
        return TOKENS_PER_BATCH / (self.seq * self.batch_per_dp)


#: Llama 3 405B's three configurations (8K pre-training on 8K and 16K GPUs; long context).
LLAMA3_SETUPS: tuple[LlamaSetup, ...] = tuple(
    LlamaSetup(*(_int(f"llama3-row{row}-{q}") for q in ("gpus", "tp", "cp", "pp", "seq")),
               _BY_KEY[f"llama3-row{row}-tflops-per-gpu"].value,
               _int(f"llama3-row{row}-printed-dp"), _int(f"llama3-row{row}-batch-per-dp"))
    for row in dict.fromkeys(v.get("row") for v in _table("llama3", "gpus"))
)  # fmt: skip


@dataclass(frozen=True)
class StripedSpeedup:
    """A measured end-to-end speedup of Striped Attention over the original (contiguous) Ring
    Attention: ``speedup`` on ``devices`` ``accelerator`` chips at ``seq`` tokens, causal
    transformer training."""

    devices: int
    seq: int
    speedup: float
    accelerator: str = "TPUv4"
    source: str = "Brandon et al. 2023, arXiv 2311.09431, abstract"

    def __post_init__(self):
        checks.integer("devices", self.devices, 1, 2**20)
        checks.integer("seq", self.seq, 1, 2**26)
        checks.positive("speedup", self.speedup, 1e6)
        checks.text("accelerator", self.accelerator, 40)
        checks.text("source", self.source, 400)


#: Striped Attention's 1.65x on 16 TPUv4 chips at 786K (786,432) tokens (its abstract).
STRIPED_TPU = StripedSpeedup(_int("striped-tpu-devices"), _int("striped-tpu-seq"),
                             _BY_KEY["striped-tpu-speedup"].value)  # fmt: skip
