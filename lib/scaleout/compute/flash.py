"""FlashAttention's time: the causal pair count at the kernel's measured rate.

The one price of a fused attention kernel, used by chapter 14's layer model
(:func:`scaleout.compute.layer_time` with ``flash=True``) and by chapter 8's context
parallelism (:mod:`scaleout.context_parallel.costs`).

* **Work**: 4 d FLOPs per visible query-key pair and query head forward (Q K^T and P V, two
  multiply-adds per element of each; FlashAttention-2, Dao 2023, Sec. 4.1), over
  s (s + 1) / 2 pairs with the causal mask and s^2 without (:func:`attention_pairs`). A
  causal kernel skips the blocks above the diagonal, so it does about half the work of the
  full s^2 that the model-FLOP convention (Narayanan et al. 2021; Korthikanti et al. 2022)
  counts. The backward does 2.5 times the forward's FLOPs (five products instead of two:
  Q K^T is recomputed; same source).
* **Rate**: FlashAttention-3's measured throughput on an H100 SXM5, BF16, head dimension
  128, 16K tokens (Shah et al. 2024, arXiv 2407.08608): forward with the causal mask 616
  TFLOP/s (Fig. 5d), backward 561 TFLOP/s (Fig. 6, measured without the mask only; the
  forward loses 5 % to the mask, 648 -> 616, so the backward rate is optimistic). The H200
  has the H100's compute and takes the same rates. Other GPUs have no measured row in the
  book: they take the same *fraction of their bf16 peak* (62.3 % forward, 56.7 % backward),
  which :func:`flash_rates` says ("transferred").
* **Memory floor**: at least the HBM time of reading Q, K, V and writing O forward, and
  twice that backward (read Q, K, V, O, dO; write dQ, dK, dV).

Not modelled: short sequences (the measured rates are at 16K tokens; at 512 tokens the
paper's rates are about half), head dimensions other than 128, FP8.

Limits: ``seq`` up to ``MAX_SEQ``, heads and head dimension up to 2^20, ``batch`` up to
2^20.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from .. import checks, data
from .. import hardware as H
from .roofline import DTYPE_BYTES

MAX_SEQ = 2**24
MAX_HEADS = 2**20
MAX_BATCH = 2**20
_ROWS = {v.key: v.value for v in data.load("attention")}  # data/attention.csv
#: Backward FLOPs over forward FLOPs (FlashAttention-2, Dao 2023, Sec. 4.1).
BACKWARD_FACTOR = _ROWS["fa2-backward-factor"]
#: FlashAttention-3's forward rate, BF16, H100 SXM5, causal, head dimension 128, 16K tokens
#: (Shah et al. 2024, arXiv 2407.08608, Fig. 5d; also ``assets/flash3_fp16_fwd.png`` of
#: Dao-AILab/flash-attention). The paper's "up to 740 TFLOPs/s" is the forward without the
#: mask at head dimension 256 (756 in Fig. 5e), a best case no Llama layer reaches.
FA3_FORWARD_FLOPS_PER_S = _ROWS["fa3-forward-causal-hd128-16k"] * 1e12
#: FlashAttention-3's backward rate (FLOPs counted as 2.5 x the forward's), head dimension
#: 128, 16K tokens, without the mask (Shah et al. 2024, Fig. 6).
FA3_BACKWARD_FLOPS_PER_S = _ROWS["fa3-backward-hd128-16k"] * 1e12
#: FlashAttention-2's range on an A100, as fractions of its peak, "reaching 50-73% of the
#: theoretical maximum FLOPs/s on A100" (Dao 2023, abstract). Stated, not used in pricing.
FA2_A100_PEAK_FRACTION = (_ROWS["fa2-a100-peak-fraction-low"], _ROWS["fa2-a100-peak-fraction-high"])
#: GPUs with measured rates (the H200 has the H100's chip and clocks).
MEASURED = {"H100-SXM": "measured", "H200": "measured on the H100 SXM5 (same chip and clocks)"}
_SOURCE = "FlashAttention-3, Shah et al. 2024 (arXiv 2407.08608), Fig. 5d and 6"


def attention_pairs(seq, causal=True) -> float:
    """Query-key pairs one head computes over a sequence of ``seq`` tokens:
    s (s + 1) / 2 with the causal mask, s^2 without."""
    s = checks.integer("seq", seq, 1, MAX_SEQ)
    return s * (s + 1) / 2 if checks.boolean("causal", causal) else float(s) ** 2


def attention_flops(seq, heads, head_dim, batch=1, causal=True) -> float:
    """Forward FLOPs of the attention core: 4 d per visible pair and query head."""
    heads = checks.integer("heads", heads, 1, MAX_HEADS)
    d = checks.integer("head_dim", head_dim, 1, MAX_HEADS)
    batch = checks.integer("batch", batch, 1, MAX_BATCH)
    return 4.0 * d * heads * batch * attention_pairs(seq, causal)


@dataclass(frozen=True)
class FlashRates:
    """The forward and backward FLOP/s of FlashAttention on one GPU, and why."""

    forward: float
    backward: float
    basis: str

    def __post_init__(self):
        checks.positive("forward", self.forward, 1e21)
        checks.positive("backward", self.backward, 1e21)
        checks.text("basis", self.basis, 1000)


def flash_rates(gpu="H100-SXM") -> FlashRates:
    """FlashAttention's rates on ``gpu`` (a ``hardware.GPUS`` name or row): measured on the
    H100 (and H200), else the H100's fraction of the bf16 peak (module docstring)."""
    return _rates(H.gpu(gpu))


@functools.lru_cache(maxsize=64)
def _rates(row: H.GPU) -> FlashRates:
    if row.name in MEASURED:
        return FlashRates(FA3_FORWARD_FLOPS_PER_S, FA3_BACKWARD_FLOPS_PER_S,
                          f"{MEASURED[row.name]}: {_SOURCE}")  # fmt: skip
    ref = H.gpu("H100-SXM").peak_flops("bf16")
    fwd, bwd = FA3_FORWARD_FLOPS_PER_S / ref, FA3_BACKWARD_FLOPS_PER_S / ref
    peak = row.peak_flops("bf16" if "bf16" in row.dtypes else "fp16")
    return FlashRates(fwd * peak, bwd * peak,
                      f"transferred: the H100's {fwd:.1%} and {bwd:.1%} of the bf16 peak "
                      f"(no measurement for {row.name}); {_SOURCE}")  # fmt: skip


@dataclass(frozen=True)
class FlashTime:
    """One FlashAttention call forward and backward: seconds, FLOPs (executed, the causal
    count) and HBM bytes of each pass."""

    forward_s: float
    backward_s: float
    forward_flops: float
    backward_flops: float
    forward_bytes: float
    backward_bytes: float

    def __post_init__(self):
        for key in ("forward_s", "backward_s", "forward_flops", "backward_flops",
                    "forward_bytes", "backward_bytes"):  # fmt: skip
            checks.nonnegative(key, getattr(self, key), 1e36)


def flash_attention_time(seq, heads, head_dim, gpu="H100-SXM", batch=1, causal=True,
                         kv_heads=None, dtype="bf16", forward_flops_per_s=None,
                         backward_flops_per_s=None) -> FlashTime:  # fmt: skip
    """FlashAttention over ``batch`` sequences of ``seq`` tokens, ``heads`` query heads and
    ``kv_heads`` key/value heads (default: ``heads``) of ``head_dim``, on ``gpu``: each pass
    max(FLOPs / rate, HBM bytes / bandwidth), FLOPs by :func:`attention_flops`, rates by
    :func:`flash_rates` unless given (``forward_flops_per_s``, ``backward_flops_per_s``)."""
    heads = checks.integer("heads", heads, 1, MAX_HEADS)
    g = checks.integer("kv_heads", heads if kv_heads is None else kv_heads, 1, heads)
    row = H.gpu(gpu)
    dtype = checks.choice("dtype", dtype, tuple(DTYPE_BYTES))
    rates = _rates(row)
    fwd_rate = rates.forward if forward_flops_per_s is None else checks.positive(
        "forward_flops_per_s", forward_flops_per_s, 1e21)  # fmt: skip
    bwd_rate = rates.backward if backward_flops_per_s is None else checks.positive(
        "backward_flops_per_s", backward_flops_per_s, 1e21)  # fmt: skip
    flops = attention_flops(seq, heads, head_dim, batch, causal)
    s, d, b = int(seq), int(head_dim), int(batch)
    qkvo = float(b) * s * (2 * heads + 2 * g) * d * DTYPE_BYTES[dtype]  # Q, K, V, O
    hbm = row.hbm_bytes_per_s
    back = BACKWARD_FACTOR * flops
    return FlashTime(max(flops / fwd_rate, qkvo / hbm), max(back / bwd_rate, 2 * qkvo / hbm),
                     flops, back, qkvo, 2 * qkvo)  # fmt: skip
