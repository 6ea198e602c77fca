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
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import checks

__all__ = [
    "LLAMA3_SETUPS",
    "RING_BENCHMARKS",
    "RING_VARLEN_BENCHMARKS",
    "TOKENS_PER_BATCH",
    "USP_BENCHMARKS",
    "VARLEN_DOCUMENTS",
    "LlamaSetup",
    "RingBenchmark",
    "UspBenchmark",
]

_RING_SOURCE = "zhuzilin/ring-flash-attention README, Performance Summary (batch api)"


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
    cp: int = 8
    tokens_per_gpu: int = 8192
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


def _rows():
    table = {  # (gpu, passes): flash_attn iter/s, then ring_attn, zigzag_ring, stripe_attn
        ("H800", "forward"): (591.5, 38.5, 63.0, 55.0),
        ("H800", "forward+backward"): (154.7, 10.4, 17.4, 16.0),
        ("A100", "forward"): (373.4, 24.0, 38.2, 32.5),
        ("A100", "forward+backward"): (94.7, 6.2, 10.6, 9.75),
    }
    return tuple(
        RingBenchmark(gpu, passes, layout, flash, measured)
        for (gpu, passes), (flash, *rings) in table.items()
        for layout, measured in zip(("contiguous", "zigzag", "striped"), rings, strict=True)
    )


#: The twelve measurements of the README's batch-API table.
RING_BENCHMARKS: tuple[RingBenchmark, ...] = _rows()

_VARLEN_SOURCE = "zhuzilin/ring-flash-attention README, Performance Summary (varlen api)"

#: The four document masks the varlen benchmark cycles through, as document lengths of one
#: GPU's 8,192 tokens (``cu_seqlens_list`` of ``benchmark_varlen_kvpacked_func.py``: [0, 8192],
#: [0, 256, 7648, 8192], [0, 4096, 8192], [0, 3104, 6304, 7904, 8064, 8192]); the distributed
#: runs pack the same documents 8 times longer into 65,536 tokens.
VARLEN_DOCUMENTS: tuple[tuple[int, ...], ...] = (
    (8192,),
    (256, 7392, 544),
    (4096, 4096),
    (3104, 3200, 1600, 160, 128),
)


def _varlen_rows():
    table = {  # (gpu, passes): flash_attn iter/s, then ring_attn, zigzag_ring, llama3_attn
        ("H800", "forward"): (852.4, 52.4, 74.8, 60.8),
        ("H800", "forward+backward"): (225.4, 14.4, 21.4, 16.4),
        ("A100", "forward"): (532.3, 33.1, 47.9, 34.3),
        ("A100", "forward+backward"): (133.8, 8.7, 13.4, 9.7),
    }
    kinds = (("contiguous", "ring"), ("zigzag", "ring"), ("contiguous", "allgather"))
    return tuple(
        RingBenchmark(
            gpu, passes, layout, flash, measured, _VARLEN_SOURCE, scheme=scheme, api="varlen"
        )  # fmt: skip
        for (gpu, passes), (flash, *rows) in table.items()
        for (layout, scheme), measured in zip(kinds, rows, strict=True)
    )


#: The twelve measurements of the README's varlen-API table.
RING_VARLEN_BENCHMARKS: tuple[RingBenchmark, ...] = _varlen_rows()

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
    seq: int = 131072
    heads: int = 8
    head_dim: int = 128
    batch: int = 2
    gpus: int = 8
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


def _usp_rows():
    table = {  # Ulysses degree: (basic, zigzag, stripe), packed QKV then unpacked
        8: ((20.988, 20.992, 21.036), (20.983, 21.002, 20.976)),
        4: ((15.309, 21.916, 21.146), (15.496, 21.464, 20.54)),
        2: ((8.994, 21.383, 20.447), (13.181, 21.201, 20.355)),
        1: ((7.769, 18.211, 17.569), (11.332, 17.778, 17.057)),
    }
    return tuple(
        UspBenchmark(u, layout, packed, value)
        for u, columns in table.items()
        for packed, values in zip((True, False), columns, strict=True)
        for layout, value in zip(("contiguous", "zigzag", "striped"), values, strict=True)
    )


#: The 24 measurements at 131,072 tokens, 8 heads of dimension 128.
USP_BENCHMARKS: tuple[UspBenchmark, ...] = _usp_rows()

#: Tokens per global batch in every row of Llama 3's Table 4 ("16M"), 2**24 = 64 x 32 x 8,192.
TOKENS_PER_BATCH = 2**24


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
LLAMA3_SETUPS: tuple[LlamaSetup, ...] = (
    LlamaSetup(8192, 8, 1, 16, 8192, 430.0, 64, 32),
    LlamaSetup(16384, 8, 1, 16, 8192, 400.0, 128, 16),
    LlamaSetup(16384, 8, 16, 16, 131072, 380.0, 4, 16),
)
