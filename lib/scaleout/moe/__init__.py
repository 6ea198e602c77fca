"""Mixture of experts and expert parallelism: routing, dispatch, costs, placement.

Taught in chapters/07_expert_parallel.ipynb. One package, six parts, every name
importable from ``scaleout.moe``:

* ``routing``: gate scores (softmax, sigmoid), top-k, node-limited routing,
  capacity and dropped tokens in a stated order, the load-balancing loss.
* ``dispatch``: the dispatch and combine all-to-alls over ep ranks (who sends
  how many copies to whom), and the single-process MoE layer with its exact gradient.
* ``cost``: all-to-all seconds over NVLink and rails, the four all-to-alls of a
  layer, the expert GEMMs.
* ``placement``: the tp x ep x expert-dp mesh and its groups; total and active
  parameters; model-state bytes per GPU.
* ``published``: DeepSeek-V3, Mixtral and Switch as published; DeepEP's
  measured all-to-alls.
* ``deepep``: those measurements priced by the book's all-to-all model, with the
  transport each measured version used and the bytes DeepEP counts.

Sources: Shazeer et al. 2017 (sparsely gated MoE); Lepikhin et al., GShard (arXiv
2006.16668); Fedus et al., Switch Transformers (JMLR 2022); Gale et al., MegaBlocks (MLSys
2023); Jiang et al., Mixtral (arXiv 2401.04088); DeepSeek-V3 (arXiv 2412.19437);
Megatron-Core's ``megatron/core/transformer/moe/`` (``moe_utils.py``, ``router.py``,
``token_dispatcher.py``) and ``parallel_state.py``; fairscale's ``top2gate.py``.
"""

from .cost import (
    MAX_FLOPS,
    AllToAllTime,
    ExpertCompute,
    LayerAllToAll,
    Network,
    alltoall_seconds,
    as_network,
    expert_compute_seconds,
    expert_flops,
    expert_gemm_seconds,
    layer_alltoall,
    nccl_network,
    network,
    two_hop_bytes,
    two_hop_seconds,
    two_hop_time,
)
from .deepep import (
    TEST_EXPERTS,
    LowLatencyPrice,
    NormalPrice,
    counted_copy_bytes,
    deepep_routing,
    low_latency_copies,
    price_low_latency,
    price_normal,
    rdma_only,
)
from .dispatch import (
    MAX_EP,
    MAX_TOKEN_BYTES,
    DispatchPlan,
    Experts,
    dispatch_plan,
    expected_plan,
    layer_backward,
    layer_forward,
    layer_reference,
    random_experts,
)
from .placement import (
    MAX_WORLD,
    Mesh,
    MoEModel,
    ParameterCount,
    StateBytes,
    mesh,
    moe_parameters,
    moe_state_bytes,
)
from .published import (
    DEEPEP_MEASUREMENTS,
    DEEPEP_V2_GB_PER_S,
    DEEPSEEK_V3,
    DEEPSEEK_V3_TRAINING,
    FP8_SCALE_BYTES_PER_ELEMENT,
    H800_NETWORK,
    LL_HEADER_BYTES,
    LL_MASKED_DRAWS,
    MIXTRAL_8X7B,
    MODELS,
    PUBLISHED_COUNTS,
    SWITCH_AUX_LOSS_COEF,
    SWITCH_C_EXPERTS,
    TRANSPORTS,
    V3_EXPERT_GROUPS,
    V3_LIMITED_GROUPS,
    V3_ROUTE_SCALE,
    AllToAllMeasurement,
    PublishedCount,
    TrainingSetup,
    gqa_parameters,
    mla_parameters,
)
from .routing import (
    GATINGS,
    MAX_CAPACITY_FACTOR,
    MAX_EXPERTS,
    MAX_TOKENS,
    ORDERS,
    Routing,
    capacity,
    claim_order,
    gate_scores,
    nodes_per_token,
    route,
)

__all__ = [
    "DEEPEP_MEASUREMENTS",
    "DEEPEP_V2_GB_PER_S",
    "DEEPSEEK_V3",
    "DEEPSEEK_V3_TRAINING",
    "FP8_SCALE_BYTES_PER_ELEMENT",
    "GATINGS",
    "H800_NETWORK",
    "LL_HEADER_BYTES",
    "LL_MASKED_DRAWS",
    "MAX_CAPACITY_FACTOR",
    "MAX_EP",
    "MAX_EXPERTS",
    "MAX_FLOPS",
    "MAX_TOKENS",
    "MAX_TOKEN_BYTES",
    "MAX_WORLD",
    "MIXTRAL_8X7B",
    "MODELS",
    "ORDERS",
    "PUBLISHED_COUNTS",
    "SWITCH_AUX_LOSS_COEF",
    "SWITCH_C_EXPERTS",
    "TEST_EXPERTS",
    "TRANSPORTS",
    "V3_EXPERT_GROUPS",
    "V3_LIMITED_GROUPS",
    "V3_ROUTE_SCALE",
    "AllToAllMeasurement",
    "AllToAllTime",
    "DispatchPlan",
    "ExpertCompute",
    "Experts",
    "LayerAllToAll",
    "LowLatencyPrice",
    "Mesh",
    "MoEModel",
    "Network",
    "NormalPrice",
    "ParameterCount",
    "PublishedCount",
    "Routing",
    "StateBytes",
    "TrainingSetup",
    "alltoall_seconds",
    "capacity",
    "claim_order",
    "counted_copy_bytes",
    "deepep_routing",
    "dispatch_plan",
    "expected_plan",
    "expert_compute_seconds",
    "expert_gemm_seconds",
    "expert_flops",
    "gate_scores",
    "gqa_parameters",
    "layer_alltoall",
    "layer_backward",
    "layer_forward",
    "layer_reference",
    "low_latency_copies",
    "as_network",
    "nccl_network",
    "mesh",
    "mla_parameters",
    "moe_parameters",
    "moe_state_bytes",
    "network",
    "nodes_per_token",
    "price_low_latency",
    "price_normal",
    "random_experts",
    "rdma_only",
    "two_hop_bytes",
    "two_hop_seconds",
    "two_hop_time",
    "route",
]
