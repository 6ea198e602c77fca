"""Sequence and context parallelism: attention over a sequence split across ranks.

Chapter 8, "Sequence and context parallelism" (``chapters/08_context_parallel.ipynb``),
builds on this package. Arrays have shape ``(heads, sequence, head_dim)``.

* :mod:`~scaleout.context_parallel.attention`: attention block by block, the online
  softmax and the exact log-sum-exp merge of partial results.
* :mod:`~scaleout.context_parallel.ring`: ring attention over cp ranks, the contiguous,
  zig-zag and striped layouts of the sequence, the work per rank and step.
* :mod:`~scaleout.context_parallel.ulysses`: DeepSpeed-Ulysses (all-to-all from sequence
  to heads and back) and all-gather context parallelism (Llama 3's).
* :mod:`~scaleout.context_parallel.costs`: bytes and time per layer of each scheme with
  overlap, the hybrid's Ulysses degree, perfect scaling, the layer's GEMMs (chapter 14's
  compute model) and activation memory per rank (chapter 15's count).
* :mod:`~scaleout.context_parallel.network`: the network pricing they use, chapter 10's
  NCCL model, in one place.
"""

from .attention import (
    Partial,
    attention_reference,
    block_attention,
    blockwise_attention,
    causal_mask,
    merge,
)
from .costs import (
    ATTENTION_BACKWARD_FLOPS_PER_S,
    ATTENTION_FORWARD_FLOPS_PER_S,
    BACKWARD_FACTOR,
    FLOPS_RANGE,
    MAX_BATCH,
    MODELS,
    PEAK_FLOPS_PER_S,
    SCHEMES,
    AttentionShape,
    AttentionTime,
    activation_bytes_per_rank,
    attention_flops,
    attention_seconds,
    ideal_seconds,
    layer_gemm_flops,
    layer_gemm_seconds,
    model,
    overlap_threshold_tokens,
    traffic_bytes,
    ulysses_degree,
)
from .network import NETWORKS, TRANSFERS, cluster, ranks_per_node, transfer_seconds
from .ring import (
    LAYOUTS,
    MAX_CP,
    MAX_DOCUMENTS,
    MAX_SEQ,
    balance,
    chunks_per_rank,
    ring_attention,
    ring_work,
    shard_positions,
)
from .ulysses import allgather_attention, heads_to_sequence, sequence_to_heads, ulysses_attention

__all__ = [
    "ATTENTION_BACKWARD_FLOPS_PER_S",
    "ATTENTION_FORWARD_FLOPS_PER_S",
    "BACKWARD_FACTOR",
    "FLOPS_RANGE",
    "LAYOUTS",
    "MAX_BATCH",
    "MAX_CP",
    "MAX_DOCUMENTS",
    "MAX_SEQ",
    "MODELS",
    "NETWORKS",
    "PEAK_FLOPS_PER_S",
    "SCHEMES",
    "TRANSFERS",
    "AttentionShape",
    "AttentionTime",
    "Partial",
    "activation_bytes_per_rank",
    "allgather_attention",
    "attention_flops",
    "attention_reference",
    "attention_seconds",
    "balance",
    "block_attention",
    "blockwise_attention",
    "causal_mask",
    "chunks_per_rank",
    "cluster",
    "heads_to_sequence",
    "ideal_seconds",
    "layer_gemm_flops",
    "layer_gemm_seconds",
    "merge",
    "model",
    "overlap_threshold_tokens",
    "ranks_per_node",
    "ring_attention",
    "ring_work",
    "sequence_to_heads",
    "shard_positions",
    "traffic_bytes",
    "transfer_seconds",
    "ulysses_attention",
    "ulysses_degree",
]
