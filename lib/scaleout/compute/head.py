"""The language-model head: the logits GEMM and the softmax cross-entropy, per GPU.

The output layer multiplies the final hidden states (b s x h) by the embedding matrix
transposed (h x V), split over the t tensor-parallel GPUs by vocabulary (Megatron's
vocabulary-parallel embedding and cross-entropy; Shoeybi et al. 2019, Section 3): forward
(b s x h)(h x V/t), backward its input-gradient and weight-gradient GEMMs. Model FLOPs
6 b s h V / t, the V / (16 l h) term of Narayanan et al. (2021)'s 96 B s l h^2 formula. The
softmax cross-entropy is memory-bound: the forward reads the logits and writes the
probabilities (kept for the backward), the backward reads them and writes the logits'
gradient, each b s V/t elements. The loss and the all-reduces of the per-token maxima and
sums (a few values per token) are not modelled.
"""

from __future__ import annotations

import functools

from .. import checks
from .. import hardware as H
from .gemm import MAX_DIM, gemm_time
from .layer import MAX_MICROBATCH, MAX_T, LayerTime, Part
from .roofline import DTYPE_BYTES


def head_time(b, seq, hidden, vocab, gpu, t=1, dtype="bf16") -> LayerTime:
    """Forward and backward time of the logits GEMM and the softmax cross-entropy for ``b``
    sequences of ``seq`` tokens on one of ``t`` GPUs (``t`` must divide ``vocab``)."""
    b = checks.integer("b", b, 1, MAX_MICROBATCH)
    seq = checks.integer("seq", seq, 1, MAX_DIM)
    hidden = checks.integer("hidden", hidden, 1, MAX_DIM)
    vocab = checks.integer("vocab", vocab, 1, MAX_DIM)
    t = checks.integer("t", t, 1, MAX_T)
    if vocab % t:
        raise checks.fail("t", f"a divisor of vocab = {vocab}", t)
    if b * seq > MAX_DIM:
        raise checks.fail("b", f"at most {MAX_DIM // seq} (b x seq <= {MAX_DIM})", b)
    row = H.gpu(gpu)
    return _head_time(b, seq, hidden, vocab, row, t, checks.choice("dtype", dtype, row.dtypes))


@functools.lru_cache(maxsize=4096)
def _head_time(b, seq, hidden, vocab, row, t, dtype) -> LayerTime:
    m, n, k = b * seq, vocab // t, hidden
    fwd = gemm_time(m, n, k, row, dtype)
    back = [gemm_time(m, k, n, row, dtype), gemm_time(k, n, m, row, dtype)]
    logits = float(m) * n
    nbytes = DTYPE_BYTES[dtype]
    hbm = row.hbm_bytes_per_s
    parts = (
        Part("logits", "forward", "gemm", fwd.seconds, fwd.flops, fwd.bytes),
        Part("logits", "backward", "gemm", sum(g.seconds for g in back),
             sum(g.flops for g in back), sum(g.bytes for g in back)),
        Part("softmax cross-entropy", "forward", "memory", 2 * nbytes * logits / hbm, logits,
             2 * nbytes * logits),
        Part("softmax cross-entropy", "backward", "memory", 2 * nbytes * logits / hbm,
             logits, 2 * nbytes * logits),
    )  # fmt: skip
    return LayerTime(parts, 6.0 * m * n * k, row.peak_flops(dtype))
