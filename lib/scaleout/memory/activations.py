"""Activation bytes of a transformer layer (Korthikanti et al. 2023, Sec. 4 and Table 2;
FlashAttention stores no s x s matrix), the parameter count of a GPT layer stack and the
model presets (Narayanan et al. 2021, Table 1).

Taught in chapter 6, "ZeRO sharding" (``chapters/06_zero.ipynb``); sources and units in
:mod:`scaleout.memory`.
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import checks, transformer
from .limits import _QUIET, _counts, _out


@_QUIET
def activation_bytes_per_layer(
    seq, batch, hidden, heads, recompute="none", tp=1, sequence_parallel=False,
    flash_attention=False,
):  # fmt: skip
    """Activation bytes of one transformer layer kept for the backward pass.

    Korthikanti et al. 2022, Table 2 (16-bit activations, 1-byte dropout masks; s = ``seq``,
    b = ``batch`` (micro-batch), h = ``hidden``, a = ``heads``, t = ``tp``):
    none: s b h (10 + 24/t + 5 a s/(h t)), or s b h (34/t + 5 a s/(h t)) with sequence
    parallelism; selective (recompute only the attention core): drop the 5 a s/(h t) term;
    full (keep only each layer's input): 2 s b h. With t = 1: s b h (34 + 5 a s / h).

    The 5 a s / h term is the attention core's a x s x s matrices per sequence: the softmax
    output (2 bytes per element), the dropout mask (1) and the dropout output (2); the raw
    scores Q K^T are not kept. ``flash_attention=True`` models FlashAttention (Dao et al.
    2022), which never stores them: the core keeps only one fp32 softmax statistic
    (logsumexp) per query row and head, 4 a s b / t bytes = s b h (4 a / (h t)), in place
    of the 5 a s / (h t) term. Korthikanti et al.'s (and Narayanan et al.'s) published runs
    stored the matrices (the default here); current stacks use FlashAttention.
    """
    _counts("seq", seq), _counts("batch", batch)  # integer counts here
    _counts("hidden", hidden), _counts("heads", heads), _counts("tp", tp)
    return transformer.activation_bytes(seq, batch, hidden, heads, recompute, tp,
                                        sequence_parallel, flash_attention)  # fmt: skip


@_QUIET
def activation_bytes(layers, seq, batch, hidden, heads, recompute="none", tp=1,
                     sequence_parallel=False, flash_attention=False):  # fmt: skip
    """Peak activation bytes of ``layers`` transformer layers during the backward pass
    (embeddings and the output layer, a few percent for large models, left out).

    Without recomputation and with selective recomputation: layers x
    :func:`activation_bytes_per_layer`. With full recomputation the layers keep only their
    inputs (2 s b h each, Korthikanti et al.'s 2 s b h L), but the backward of each layer
    first reruns its forward, so while that layer's gradient is computed its full
    activations (:func:`activation_bytes_per_layer` with ``recompute="none"`` and the same
    attention) sit beside the checkpoints: layers x 2 s b h + one layer's full activations.
    """
    n = _counts("layers", layers)
    per_layer = activation_bytes_per_layer(seq, batch, hidden, heads, recompute, tp,
                                           sequence_parallel, flash_attention)  # fmt: skip
    if recompute == "full":
        working = activation_bytes_per_layer(seq, batch, hidden, heads, "none", tp,
                                             sequence_parallel, flash_attention)  # fmt: skip
        return _out("activation bytes", n * per_layer + working)
    return _out("activation bytes", n * per_layer)


@_QUIET
def transformer_params(layers, hidden, seq=2048, vocab=51200):
    """Parameters of a GPT model, 12 l h^2 (1 + 13/(12 h) + (V + s)/(12 l h)) (Narayanan et
    al. 2021, Section 5.1). Vectorised."""
    return transformer.gpt_params(layers, hidden, seq, vocab)


@dataclass(frozen=True)
class Transformer:
    """A GPT configuration of Narayanan et al. 2021, Table 1 (V = 51200, s = 2048)."""

    name: str
    layers: int
    hidden: int
    heads: int
    seq: int = 2048
    vocab: int = 51200

    def __post_init__(self):
        checks.text("name", self.name)
        for key in ("layers", "hidden", "heads", "seq", "vocab"):
            checks.integer(key, getattr(self, key), 1, 2**31)

    @property
    def shape(self) -> transformer.Transformer:
        """This GPT as a :class:`scaleout.transformer.Transformer` (the library's one model
        shape), when its sizes are within that record's limits."""
        return transformer.Transformer(self.layers, self.hidden, self.heads, seq=self.seq,
                                       vocab=self.vocab, name=self.name)  # fmt: skip

    @property
    def params(self) -> float:
        """The parameter count, from :func:`transformer_params`."""
        return transformer_params(self.layers, self.hidden, self.seq, self.vocab)


#: Narayanan et al. 2021, Table 1, from :data:`scaleout.transformer.NARAYANAN_TABLE1`.
TRANSFORMERS = {
    name: Transformer(m.name, m.layers, m.hidden, m.heads, m.seq, m.vocab)
    for name, m in transformer.NARAYANAN_TABLE1.items()
}
