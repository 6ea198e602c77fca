"""The kernels of a transformer layer other than its weight GEMMs: the attention core with
and without FlashAttention, and the memory-bound operations (see :mod:`scaleout.compute.layer`
for the model and its sources). Each kernel is a :class:`Part`.
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import checks
from .flash import flash_attention_time
from .gemm import MAX_FLOPS, gemm_time

PHASES = ("forward", "backward", "recompute")
KINDS = ("gemm", "attention", "memory")
MASK_BYTES = 1  # dropout masks, one byte per element (Korthikanti et al. Table 2)


@dataclass(frozen=True)
class Part:
    """One kernel of a layer: its name, phase (forward / backward / recompute), kind
    (gemm / attention / memory), seconds, FLOPs and HBM bytes. A memory-bound kernel counts
    one FLOP per output element (its exact count, a few per element, only places it on the
    roofline; MFU and HFU count GEMM and attention FLOPs only)."""

    name: str
    phase: str
    kind: str
    seconds: float
    flops: float
    bytes: float

    def __post_init__(self):
        checks.text("name", self.name, 80)
        checks.choice("phase", self.phase, PHASES)
        checks.choice("kind", self.kind, KINDS)
        checks.nonnegative("seconds", self.seconds)
        checks.nonnegative("flops", self.flops, MAX_FLOPS)
        checks.nonnegative("bytes", self.bytes, MAX_FLOPS)


def _elementwise(layer, b: int, t: int, sp: bool, flash: bool, nbytes: int):
    """Memory-bound kernels per GPU: (name, forward bytes, backward bytes, output elements,
    in the attention core)."""
    e = b * layer.seq * layer.hidden / (t if sp else 1)
    f = b * layer.seq * layer.f / t
    rows = [
        ("norms (2)", 2 * 2 * nbytes * e, 2 * 3 * nbytes * e, 2 * e, False),
        ("residual adds (2)", 2 * 3 * nbytes * e, 2 * 3 * nbytes * e, 2 * e, False),
        (
            "dropouts (2)",
            2 * (2 * nbytes + MASK_BYTES) * e,
            2 * (2 * nbytes + MASK_BYTES) * e,
            2 * e,
            False,
        ),
    ]
    if layer.swiglu:
        rows.append(("SwiGLU", 3 * nbytes * f, 5 * nbytes * f, f, False))
    else:
        rows.append(("GeLU", 2 * nbytes * f, 3 * nbytes * f, f, False))
    if not flash:
        scores = b * layer.heads / t * layer.seq * layer.seq
        rows.append(("softmax", 2 * nbytes * scores, 3 * nbytes * scores, scores, True))
        rows.append(
            (
                "attention dropout",
                (2 * nbytes + MASK_BYTES) * scores,
                (2 * nbytes + MASK_BYTES) * scores,
                scores,
                True,
            )
        )
    return rows  # fmt: skip


def _backward_shapes(m, n, k):
    return ((m, k, n), (k, n, m))  # input gradient, weight gradient


def _attention_parts(layer, b, t, row, dtype, flash):
    """(forward parts, backward parts) of the attention core: without FlashAttention its
    batched GEMMs over the full s x s scores; with it :func:`scaleout.compute.flash.
    flash_attention_time` (causal pairs at FlashAttention-3's measured rates)."""
    s, d, batch = layer.seq, layer.head_dim, b * layer.heads // t
    if not flash:
        qk, pv = gemm_time(s, s, d, row, dtype, batch), gemm_time(s, d, s, row, dtype, batch)
        back = [gemm_time(*shape, row, dtype, batch) for g in ((s, s, d), (s, d, s))
                for shape in _backward_shapes(*g)]  # fmt: skip
        fwd = [
            Part(
                "attention Q K^T, P V",
                "forward",
                "attention",
                qk.seconds + pv.seconds,
                qk.flops + pv.flops,
                qk.bytes + pv.bytes,
            )
        ]
        bwd = [
            Part(
                "attention core backward",
                "backward",
                "attention",
                sum(x.seconds for x in back),
                sum(x.flops for x in back),
                sum(x.bytes for x in back),
            )
        ]
        return fwd, bwd
    fa = flash_attention_time(s, layer.heads // t, d, row, b, causal=True,
                              kv_heads=layer.g // t, dtype=dtype)  # fmt: skip
    fwd = [Part("FlashAttention", "forward", "attention", fa.forward_s, fa.forward_flops,
                fa.forward_bytes)]  # fmt: skip
    bwd = [Part("FlashAttention backward", "backward", "attention", fa.backward_s,
                fa.backward_flops, fa.backward_bytes)]  # fmt: skip
    return fwd, bwd  # fmt: skip
