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
* :data:`~scaleout.context_parallel.published.LLAMA3_SETUPS`: Llama 3 405B pre-training (Dubey
  et al., arXiv 2407.21783, Table 4; the same GPU, TP, CP, PP and TFLOPs figures appear in P.
  Balaji's SC'24 talk as reproduced on glennklockwood.com, "Llama-3.1"). Sequence lengths and the
  CP scheme (2 x CP chunks, rank i holding chunks i and 2 CP - 1 - i; K and V all-gathered) from the
  paper's Sec. 3.3.2; 400 Gb/s RoCE between the servers' 8 H100s (Sec. 3.3.1).
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import checks

__all__ = ["LLAMA3_SETUPS", "RING_BENCHMARKS", "LlamaSetup", "RingBenchmark"]

_RING_SOURCE = "zhuzilin/ring-flash-attention README, Performance Summary (batch api)"


@dataclass(frozen=True)
class RingBenchmark:
    """One measured ring attention: ``gpu`` (8 of them), ``passes`` ("forward" or
    "forward+backward"), ``layout`` (ring layout name), ``flash_iter_per_s`` (flash_attn on
    one GPU's share, the README's numerator) and ``iter_per_s`` (the ring, measured)."""

    gpu: str
    passes: str
    layout: str
    flash_iter_per_s: float
    iter_per_s: float
    source: str = _RING_SOURCE
    cp: int = 8
    tokens_per_gpu: int = 8192

    def __post_init__(self):
        checks.choice("gpu", self.gpu, ("A100", "H800"))
        checks.choice("passes", self.passes, ("forward", "forward+backward"))
        checks.choice("layout", self.layout, ("contiguous", "zigzag", "striped"))
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


@dataclass(frozen=True)
class LlamaSetup:
    """One row of Llama 3's Table 4: GPUs, tensor, context and pipeline parallel sizes,
    sequence length, and the achieved bf16 TFLOPs per GPU."""

    gpus: int
    tp: int
    cp: int
    pp: int
    seq: int
    tflops_per_gpu: float
    source: str = "Dubey et al. 2024, arXiv 2407.21783, Table 4 and Sec. 3.3.2"

    def __post_init__(self):
        for key in ("gpus", "tp", "cp", "pp"):
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


#: Llama 3 405B's three configurations (8K pre-training on 8K and 16K GPUs; long context).
LLAMA3_SETUPS: tuple[LlamaSetup, ...] = (
    LlamaSetup(8192, 8, 1, 16, 8192, 430.0),
    LlamaSetup(16384, 8, 1, 16, 8192, 400.0),
    LlamaSetup(16384, 8, 16, 16, 131072, 380.0),
)
