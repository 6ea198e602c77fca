"""The compute term of a step: one layer's forward and backward time on one GPU.

This module is the planner's only contact with the compute model, chapter 14's
:mod:`scaleout.compute`: a layer's time (:func:`scaleout.compute.layer_time`: every GEMM
with tile and wave quantization over the SMs below the GPU's measured ceiling, the
attention core with or without FlashAttention, the memory-bound kernels at HBM
bandwidth, recomputation), the output layer (:func:`scaleout.compute.head_time`) and the
optimizer step (:func:`scaleout.compute.optimizer_step_seconds`). Here they are only
re-expressed per micro-batch for the planner: the forward, backward and recomputation
seconds, and the forward seconds of each block's column- and row-parallel GEMMs (the
partners a tensor-parallel collective can overlap with).

The vocabulary is padded as Megatron pads it (``--make-vocab-size-divisible-by 128``, times
t: ``megatron/training/tokenizer``'s ``_vocab_size_with_padding``) when t does not divide it.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from .. import checks, compute
from ..memory import RECOMPUTE
from .model import MAX_BATCH, Cluster, Model

VOCAB_MULTIPLE = 128


@dataclass(frozen=True)
class LayerTimes:
    """Seconds of one layer for one micro-batch on one GPU: ``forward``, ``backward``
    (input and weight gradients), ``recompute`` (what recomputation runs again), and
    the GEMM partners of the tensor-parallel collectives, one entry per block (attention,
    MLP): ``col`` the column-parallel GEMM (Q/K/V, MLP up), ``row`` the row-parallel one
    (output projection, MLP down), forward seconds; a backward GEMM (input or weight
    gradient) costs as much."""

    forward: float
    backward: float
    recompute: float
    col: tuple
    row: tuple

    def __post_init__(self):
        for name in ("forward", "backward", "recompute"):
            checks.nonnegative(name, getattr(self, name))
        for name in ("col", "row"):
            pair = getattr(self, name)
            if not isinstance(pair, tuple) or len(pair) != 2:
                raise checks.fail(name, "a pair of seconds (attention, MLP)", pair)
            for x in pair:
                checks.nonnegative(name, x)


def _check(model, cluster, b, t):
    checks.instance("model", model, Model)
    checks.instance("cluster", cluster, Cluster)
    b = checks.integer("b", b, 1, min(MAX_BATCH, compute.MAX_MICROBATCH))
    t = checks.integer("t", t, 1, compute.MAX_T)
    if model.heads % t or model.g % t or model.f % t:
        raise checks.fail("t", "a divisor of heads, kv_heads and ffn", t)
    if b * model.seq > compute.MAX_DIM:
        raise checks.fail("b", f"at most {compute.MAX_DIM // model.seq} (b x seq)", b)
    return b, t


def layer_times(model: Model, cluster: Cluster, b: int, t: int, sp: bool, recompute: str,
                flash: bool) -> LayerTimes:  # fmt: skip
    """One layer's times for a micro-batch of ``b`` on one of ``t`` GPUs of ``cluster``
    (:func:`scaleout.compute.layer_time`, bf16); ``sp`` sequence parallelism,
    ``recompute`` one of ``memory.RECOMPUTE``, ``flash`` FlashAttention."""
    b, t = _check(model, cluster, b, t)
    sp, flash = checks.boolean("sp", sp), checks.boolean("flash", flash)
    checks.choice("recompute", recompute, RECOMPUTE)
    return _layer_times(model, cluster, b, t, sp, recompute, flash)


@functools.lru_cache(maxsize=8192)
def _layer_times(model, cluster, b, t, sp, recompute, flash) -> LayerTimes:
    layer = compute.Layer(model.hidden, model.heads, model.seq, kv_heads=model.g,
                          ffn=model.f, swiglu=model.swiglu)  # fmt: skip
    lt = compute.layer_time(layer, b, cluster.gpu_row, t, sp, recompute, flash)
    fwd = {p.name: p.seconds for p in lt.parts if p.phase == "forward" and p.kind == "gemm"}
    up = fwd.get("MLP gate and up", fwd.get("MLP up", 0.0))
    return LayerTimes(lt.seconds("forward"), lt.seconds("backward"), lt.seconds("recompute"),
                      (fwd["QKV projection"], up),
                      (fwd["attention output projection"], fwd["MLP down"]))  # fmt: skip


def padded_vocab(vocab: int, t: int) -> int:
    """Megatron's padded vocabulary: a multiple of 128 t."""
    unit = VOCAB_MULTIPLE * checks.integer("t", t, 1, compute.MAX_T)
    return -(-checks.integer("vocab", vocab, 1, 2**30) // unit) * unit


def logits_seconds(model: Model, cluster: Cluster, b: int, t: int) -> float:
    """Forward + backward of the output layer and the loss for one micro-batch
    (:func:`scaleout.compute.head_time`)."""
    b, t = _check(model, cluster, b, t)
    vocab = model.vocab if model.vocab % t == 0 else padded_vocab(model.vocab, t)
    return float(compute.head_time(b, model.seq, model.hidden, vocab, cluster.gpu_row,
                                   t).total_s)  # fmt: skip


def optimizer_seconds(params_updated: float, cluster: Cluster) -> float:
    """One Adam step over ``params_updated`` parameters held by this GPU
    (:func:`scaleout.compute.optimizer_step_seconds`, HBM-bound)."""
    params_updated = checks.nonnegative("params_updated", params_updated, 1e15)
    checks.instance("cluster", cluster, Cluster)
    return float(compute.optimizer_step_seconds(params_updated, cluster.gpu_row))
