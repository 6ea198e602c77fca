"""The one model shape: a decoder-only transformer's parameters, FLOPs and activation bytes,
and the registry of the models the book names.

* Shape: layers L, hidden h, attention heads a and KV heads g (GQA, Ainslie et al. 2023),
  FFN width f (default 4h), gated MLP (SwiGLU: three matrices instead of two), vocabulary
  V, sequence s, tied input/output embeddings, learned positions (GPT) or rotary (Llama),
  and ``experts`` MLPs per layer of which each token uses ``top_k`` (mixture of experts).
* Parameters (:attr:`Transformer.params`): per layer Q, K, V and output projections, the
  MLP (times the experts, plus an h x E router when E > 1), two norms with scale and bias,
  and biases on the projections and MLP when the model has learned positions (a GPT); plus
  the input embedding, learned positions and the output layer unless tied (the final
  norm's 2h is left out, as Narayanan et al. leave it out). For a GPT (a = g, f = 4h,
  learned positions, tied) this is Narayanan et al. (SC21, arXiv 2104.04473) Section 5.1:
  ``12 L h^2 (1 + 13/(12h) + (V + s)/(12 L h))``.
* FLOPs (:meth:`Transformer.step_flops`): model FLOPs (Chowdhery et al. 2022, Appendix B;
  Korthikanti et al. 2022, Appendix A) are 3 x the forward GEMMs and the attention core, 2
  FLOPs per multiply-add: per token and layer ``2 h (a + 2g) d + 2 h^2 + 2 h f m k + 4 s h``
  (d = h/a, m the MLP's matrices, k = top_k; plus ``2 h E`` for a router) and ``2 h V`` for
  the logits. ``recompute="full"`` adds the layers' forward again: for a GPT, Narayanan et
  al.'s eq. 3, ``96 B s L h^2 (1 + s/(6h) + V/(16 L h))``; ``"none"`` is
  ``72 B s L h^2 (1 + s/(6h) + V/(12 h L))``; ``"selective"`` adds the attention core's
  forward ``4 s h`` per token and layer (Korthikanti et al. 2022, Section 5).
* Activations (:func:`activation_bytes`, :meth:`Transformer.activation_bytes_per_layer`):
  Korthikanti et al. 2022 (MLSys 2023, arXiv 2205.05198) Table 2, term by term for any shape
  (GQA, SwiGLU; the GPT's dropout masks kept).

Limits: dimensions up to 2**20, layers up to 4096, sequences up to 2**20 tokens, batches
up to 2**24 sequences, experts up to 4096.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import checks
from . import data as _data

MAX_DIM = 2**20
MAX_LAYERS = 4096
MAX_SEQ = 2**20
MAX_BATCH = 2**24
MAX_EXPERTS = 4096
RECOMPUTE = ("none", "selective", "full")


def _dim(name, value, high=MAX_DIM):
    return checks.integer(name, value, 1, high)


def _counts(name: str, x, high: int | None = None) -> np.ndarray:
    """An integer or integer array >= 1 (and <= high), as floats."""
    return checks.array(name, x, integer=True, low=1, high=high).astype(np.float64)


def _out(name: str, x):
    """A float for 0-d results, else a float64 array; ValueError if it overflowed."""
    with np.errstate(over="ignore", invalid="ignore"):
        x = np.asarray(x, dtype=np.float64)
    checks.finite_result(name, x)
    return float(x) if x.ndim == 0 else x


def activation_bytes(seq, batch, hidden, heads, recompute="none", tp=1, sequence_parallel=False,
                     flash_attention=False, kv_heads=None, ffn=None, swiglu=False):  # fmt: skip
    """Stored activation bytes of one layer per GPU, Korthikanti et al. 2022, Table 2, term
    by term for any shape (16-bit activations, 1-byte dropout masks; s = ``seq``, b =
    ``batch``, h = ``hidden``, a = ``heads``, g = ``kv_heads`` (default a), f = ``ffn``
    (default 4h), t = ``tp``). Per s b h: 10 replicated (norm inputs 4, QKV and MLP inputs
    2 + 2, two dropout masks 1 + 1; divided by t with sequence parallelism), then divided
    by t: Q 2, K and V 2 g/a each, the output projection's input 2, the MLP 2 + 2 per s b f
    (GeLU's input and output) or 2 + 2 + 2 (SwiGLU's gate, up and product); the attention
    core 5 a s/(h t) (softmax output, dropout mask and output) or, with FlashAttention, one
    fp32 statistic per row and head, 4 a/(h t). Selective recomputation drops the core,
    full keeps the 2 s b h input. For a GPT: ``s b h (10 + 24/t + 5 a s/(h t))``, ``34/t``
    in place of ``10 + 24/t`` with sequence parallelism. Vectorised; ``batch`` and ``tp`` are
    real numbers >= 1 (the planner passes them as float arrays)."""
    with np.errstate(over="ignore", invalid="ignore"):
        s, h, a = _counts("seq", seq), _counts("hidden", hidden), _counts("heads", heads)
        b = checks.array("batch", batch, low=1.0, high=float(MAX_BATCH))
        t = checks.array("tp", tp, low=1.0, high=1024.0)
        checks.choice("recompute", recompute, RECOMPUTE)
        sp = checks.boolean("sequence_parallel", sequence_parallel)
        flash = checks.boolean("flash_attention", flash_attention)
        g = a if kv_heads is None else _counts("kv_heads", kv_heads)
        f = 4.0 * h if ffn is None else _counts("ffn", ffn)
        mlp = 6.0 if checks.boolean("swiglu", swiglu) else 4.0
        sbh = s * b * h
        if recompute == "full":
            return _out("activation bytes", 2.0 * sbh + 0.0 * t * a)
        split = 4.0 + 4.0 * (g / a) + mlp * f / h  # 24 for a GPT
        linear = (10.0 + split) / t if sp else 10.0 + split / t
        if recompute == "selective":
            attention = 0.0 * a
        elif flash:
            attention = 4.0 * a / (h * t)
        else:
            attention = 5.0 * a * s / (h * t)
        return _out("activation bytes", sbh * (linear + attention))


def gpt_params(layers, hidden, seq=2048, vocab=51200):
    """Parameters of a GPT (a = g, f = 4h, biases, learned positions, tied embeddings), the
    count of :attr:`Transformer.params`: ``L (12 h^2 + 13 h) + V h + s h``, which is
    Narayanan et al.'s ``12 L h^2 (1 + 13/(12 h) + (V + s)/(12 L h))``. Vectorised."""
    with np.errstate(over="ignore", invalid="ignore"):
        nl, h = _counts("layers", layers), _counts("hidden", hidden)
        s, v = _counts("seq", seq), _counts("vocab", vocab)
        return _out("params", nl * (12 * h * h + 13 * h) + v * h + s * h)


class Shape:
    """The widths every record of a transformer layer derives the same way from its fields
    ``hidden``, ``heads``, ``kv_heads`` and ``ffn`` (:class:`Transformer` and
    :class:`scaleout.compute.Layer` both inherit them)."""

    __slots__ = ()

    @property
    def g(self) -> int:
        """KV heads (``kv_heads``, or ``heads`` when None: multi-head attention)."""
        return self.heads if self.kv_heads is None else self.kv_heads

    @property
    def f(self) -> int:
        """FFN width (``ffn``, or 4 ``hidden`` when None)."""
        return 4 * self.hidden if self.ffn is None else self.ffn

    @property
    def head_dim(self) -> int:
        """Width of one attention head, ``hidden / heads``."""
        return self.hidden // self.heads


@dataclass(frozen=True)
class Transformer(Shape):
    """A decoder-only transformer (module docstring). ``kv_heads`` defaults to ``heads``
    (multi-head attention), ``ffn`` to ``4 hidden``; ``positions``: learned position
    embeddings (GPT) rather than rotary (Llama); ``tied``: the output layer shares the
    input embedding. ``name`` labels it (the registry's key)."""

    layers: int
    hidden: int
    heads: int
    kv_heads: int | None = None
    ffn: int | None = None
    swiglu: bool = False
    seq: int = 2048
    vocab: int = 51200
    tied: bool = True
    positions: bool = True
    experts: int = 1
    top_k: int = 1
    name: str = ""

    def __post_init__(self):
        _dim("layers", self.layers, MAX_LAYERS)
        h = _dim("hidden", self.hidden)
        a = checks.integer("heads", self.heads, 1, h)
        if h % a:
            raise checks.fail("heads", f"a divisor of hidden = {h} (integer head size)", a)
        g = checks.integer("kv_heads", self.g, 1, a)
        if a % g:
            raise checks.fail("kv_heads", f"a divisor of heads = {a}", g)
        _dim("ffn", self.f)
        _dim("seq", self.seq, MAX_SEQ)
        _dim("vocab", self.vocab)
        for key in ("swiglu", "tied", "positions"):
            checks.boolean(key, getattr(self, key))
        checks.integer("experts", self.experts, 1, MAX_EXPERTS)
        checks.integer("top_k", self.top_k, 1, self.experts)
        if self.name != "":
            checks.text("name", self.name, 80)

    @property
    def mlp_matrices(self) -> int:
        return 3 if self.swiglu else 2

    @property
    def mlp_params(self) -> float:
        """One expert's MLP (matrices, and biases for a GPT)."""
        bias = self.f + self.hidden if self.positions else 0
        return float(self.mlp_matrices * self.hidden * self.f + bias)

    @property
    def layer_params(self) -> float:
        """The parameters of one layer, all of them (attention, every expert's MLP, a router
        when there are experts, two norms with scale and bias)."""
        h, d = self.hidden, self.head_dim
        attn = h * (self.heads + 2 * self.g) * d + h * h
        if self.positions:
            attn += (self.heads + 2 * self.g) * d + h
        router = h * self.experts if self.experts > 1 else 0
        return float(attn + self.experts * self.mlp_params + router + 4 * h)

    @property
    def embedding_params(self) -> float:
        """Input embedding, learned positions, the output layer unless tied."""
        h = self.hidden
        out = 0 if self.tied else self.vocab * h
        return float(self.vocab * h + (self.seq * h if self.positions else 0) + out)

    @property
    def params(self) -> float:
        """All parameters (Narayanan et al.'s formula for a GPT)."""
        return self.layers * self.layer_params + self.embedding_params

    @property
    def active_params(self) -> float:
        """Parameters one token uses (``top_k`` of the ``experts`` MLPs)."""
        idle = (self.experts - self.top_k) * self.mlp_params
        return self.params - self.layers * idle

    def layer_forward_flops(self, tokens) -> float:
        """Model FLOPs of one layer's forward pass over ``tokens`` tokens (whole layer)."""
        h, s, d = self.hidden, self.seq, self.head_dim
        per_token = 2 * h * (self.heads + 2 * self.g) * d + 2 * h * h
        per_token += 2 * h * self.f * self.mlp_matrices * self.top_k + 4 * s * h
        if self.experts > 1:
            per_token += 2 * h * self.experts
        return float(tokens) * per_token

    def step_flops(self, batch, recompute: str = "full"):
        """FLOPs of one iteration on ``batch`` sequences of ``seq`` tokens: model FLOPs
        (``"none"``), plus the attention core's forward again (``"selective"``), plus the
        layers' forward again (``"full"``: Narayanan et al.'s eq. 3 for a GPT). Vectorised
        over ``batch``."""
        b = checks.array("batch", batch, low=1.0, high=float(MAX_BATCH))
        checks.choice("recompute", recompute, RECOMPUTE)
        tokens = b * self.seq
        layer = self.layers * self.layer_forward_flops(1.0) * tokens
        logits = 2.0 * self.hidden * self.vocab * tokens
        total = 3.0 * (layer + logits)
        if recompute == "full":
            total = total + layer
        elif recompute == "selective":
            total = total + self.layers * 4.0 * self.seq * self.hidden * tokens
        return float(total) if np.ndim(total) == 0 else total

    def activation_bytes_per_layer(self, batch, tp=1, recompute="none", sequence_parallel=False,
                                   flash_attention=False) -> float:  # fmt: skip
        """Stored activation bytes of one layer for a micro-batch of ``batch`` sequences on
        one of ``tp`` tensor-parallel ranks (:func:`activation_bytes`, Korthikanti et al.
        2022, Table 2 term by term for this shape)."""
        b = checks.integer("batch", batch, 1, MAX_BATCH)
        t = checks.integer("tp", tp, 1, 1024)
        return float(activation_bytes(self.seq, b, self.hidden, self.heads, recompute, t,
                                      sequence_parallel, flash_attention, self.g, self.f,
                                      self.swiglu))  # fmt: skip


def _shape_fields(name: str) -> dict:
    """The numbers of model ``name`` in ``data/models.csv`` (layers, hidden, heads, and where
    the source states them kv_heads, ffn, seq, vocab), as ints."""
    return {v.get("field"): int(v.value) for v in _data.load("models")
            if v.get("model") == name and v.get("field") != "stated_params"}  # fmt: skip


def stated_params(name) -> int:
    """The parameter count the source of model ``name`` (a key of :data:`MODELS`) states for
    it, its ``stated_params`` row in ``data/models.csv`` (GPT-3's 175.0B, 1.3B and 350M,
    Llama 3's 8B, 70B and 405B, Narayanan et al.'s Table 1 from 1.7B to 1T, which it
    counts as 1008.0B): the round number a text means by the model's size, where
    :attr:`Transformer.params` counts the shape (174.6B for GPT-3 175B)."""
    checks.choice("name", name, tuple(MODELS))
    rows = [v for v in _data.load("models")
            if v.get("model") == name and v.get("field") == "stated_params"]  # fmt: skip
    if not rows:
        stated = sorted({v.get("model") for v in _data.load("models")
                         if v.get("field") == "stated_params"})  # fmt: skip
        raise checks.fail("name", f"a model whose source states its size, one of {stated}", name)
    return int(rows[0].value)


def _gpt(name):
    return Transformer(**_shape_fields(name), name=name)


#: Narayanan et al. 2021, Table 1 (GPT, V = 51,200, s = 2,048), by their parameter labels;
#: the shapes are rows of ``data/models.csv``.
NARAYANAN_TABLE1 = {
    name: _gpt(name)
    for name in ("1.7B", "3.6B", "7.5B", "18.4B", "39.1B", "76.1B", "145.6B", "310.1B",
                 "529.6B", "1T")
}  # fmt: skip


def _llama(name):
    return Transformer(**_shape_fields(name), swiglu=True, tied=False, positions=False, name=name)


#: The models the book names, keyed by name; every shape is a row of ``data/models.csv``
#: with its source: GPT-3 175B, Brown et al. 2020, Table 2.1 (96 layers, h = 12,288,
#: 96 heads, s = 2,048; V = 51,200 as in Narayanan et al.); GPT-3 1.3B and 350M, the same
#: table's GPT-3 XL (24 layers, h = 2,048, 16 heads of 128: the row's n_heads = 24 does not
#: divide h) and GPT-3 Medium (24 layers, h = 1,024, 16 heads); Llama 2 70B, Touvron et
#: al. 2023, Table 1 and the released config (80 layers, h = 8,192, 64 heads, 8 KV heads,
#: SwiGLU FFN 28,672, V = 32,000, s = 4,096); Llama 3 8B, 70B and 405B, Llama team 2024
#: (arXiv 2407.21783), Table 3 (V = 128,256 in the released tokenizer; s = 8,192 in the main
#: pre-training stage); and Narayanan et al.'s Table 1 (:data:`NARAYANAN_TABLE1`). The
#: Llamas use SwiGLU, rotary positions and untied output layers (the papers' architecture
#: sections). The sizes their sources state: :func:`stated_params`.
MODELS: dict[str, Transformer] = {
    "GPT-3 175B": _gpt("GPT-3 175B"),
    "GPT-3 1.3B": _gpt("GPT-3 1.3B"),
    "GPT-3 350M": _gpt("GPT-3 350M"),
    "Llama 2 70B": _llama("Llama 2 70B"),
    "Llama 3 8B": _llama("Llama 3 8B"),
    "Llama 3 70B": _llama("Llama 3 70B"),
    "Llama 3 405B": _llama("Llama 3 405B"),
    **NARAYANAN_TABLE1,
}


def model(name) -> Transformer:
    """A :class:`Transformer` given itself or by its name in :data:`MODELS`."""
    if isinstance(name, Transformer):
        return name
    return MODELS[checks.choice("model", name, tuple(MODELS))]
