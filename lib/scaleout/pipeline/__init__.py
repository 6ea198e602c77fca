"""Model and pipeline parallelism: memory, schedules, bubbles, in-flight activations, traffic.

Taught in chapters 3 ("Model parallelism") and 5 ("Pipeline parallelism").

A pipeline of ``p`` stages (one per GPU) processes a batch as ``m`` micro-batches. Every
schedule is an *order* of operations per stage -- forward ``F``, backward ``B`` and, for
zero-bubble schedules, weight gradient ``W`` -- and :func:`schedule` turns that order into a
timeline by simulation: each operation starts when its stage is free *and* its data has
arrived (``F`` of micro-batch j on virtual stage s needs ``F`` of j on s-1; ``B`` needs
``B`` on s+1, or the last stage's own ``F``; ``W`` needs its ``B``). Nothing is drawn from a
closed form; the closed forms (:func:`bubble_closed_form`) are what the simulation is tested
against. Times are in one arbitrary unit (the book uses t_f = 1). A message between two
devices takes ``t_comm`` (default 0, the assumption behind every published closed form);
every micro-batch and every stage computes for the same time.

Orders, with their sources:

* ``naive``: one micro-batch in the pipeline at a time (F j, B j, F j+1, ...).
* ``gpipe``: all forwards, then all backwards (Huang et al., NeurIPS 2019, section 2).
* ``1f1b``: PipeDream-Flush (Narayanan et al., "Memory-Efficient Pipeline-Parallel DNN
  Training", ICML 2021, the PipeDream-2BW paper; Narayanan et al., SC21, section 2.2.1;
  Megatron-LM ``megatron/core/pipeline_parallel/schedules.py``,
  ``forward_backward_pipelining_without_interleaving``): stage r runs min(p - r - 1, m)
  warm-up forwards, then alternates one forward and one backward, then drains. Equal to
  the per-rank order of PyTorch's ``_get_1f1b_rank_ops`` (``torch/distributed/pipelining/
  schedules.py``; ``Schedule1F1B._get_pipeline_order`` -- the IR only, not what it
  executes -- starts the last rank's steady state at micro-batch 1).
* ``interleaved``: v model chunks per device, virtual stage c p + r on device r (Narayanan
  et al., SC21, section 2.2.2; same file, ``forward_backward_pipelining_with_interleaving``
  and ``get_schedule_table``): micro-batches run in groups of ``group`` (Megatron-Core's
  ``microbatch_group_size_per_vp_stage``, default p), each group through chunk 0, then
  chunk 1, ...; warm-up 2 (p - r - 1) + (v - 1) group chunk-forwards. Megatron-LM's
  original schedule needs p | m; Megatron-Core accepts p <= group <= m when the last group
  is full or holds at least p micro-batches.
* ``zb-h1``: 1F1B with the backward split into B (input gradient) and W (weight gradient);
  stage r postpones its W's by r micro-batches (Qi et al., ICLR 2024, handcrafted "ZB-H1";
  the same order as PyTorch's ``_get_1f1b_rank_ops`` with ``enable_zero_bubble``).
* ``zb-v`` and ``dualpipe-v``: two chunks per device in a V (chunk 0 = stage r, chunk 1 =
  stage 2p - 1 - r), PyTorch's ``ScheduleZBVZeroBubble`` (Qi et al., ICLR 2024, section 6)
  and ``ScheduleDualPipeV`` (DeepSeek-V3, arXiv:2412.19437, section 3.2.1); see
  ``vshape``. DualPipe-V also runs full backwards ``BW`` (B and W in one operation).

Parts: ``orders`` (the orders, vectorised), ``reference`` (the same orders as plain loops,
tested equal), ``vshape``, ``timeline`` (records), ``simulate`` (the ready-time
simulation), ``analysis`` (bubbles, in-flight activations, messages) and ``states``
(model-state memory, chapter 3).

Limits (``ValueError`` beyond them): p <= ``MAX_STAGES``, m <= ``MAX_MICROBATCHES``,
v <= ``MAX_CHUNKS``; a simulated schedule holds at most ``MAX_OPERATIONS`` operations
(phases x p x v x m: for example 1F1B with p = 64 and m = 32,768, or p = 1,024 and
m = 2,048), which it simulates in at most about 5 s and 1.1 GB of memory.
"""

from __future__ import annotations

# The package's parts, one concept each; every name the chapters and tests used from the
# former single module is re-exported here (``from scaleout.pipeline import X`` still works).
from . import reference as reference  # the plain-loop orders
from . import vshape as vshape  # the V orders
from .analysis import (
    CLOSED_FORMS,
    activation_message_bytes,
    bubble_closed_form,
    bubble_fraction,
    idle_intervals,
    in_flight_timeline,
    p2p_messages,
    peak_in_flight,
)
from .orders import (
    ALL_SCHEDULES,
    MAX_CHUNKS,
    MAX_MICROBATCHES,
    MAX_OPERATIONS,
    MAX_STAGES,
    MAX_V_OPERATIONS,
    PHASES,
    SCHEDULES,
    V_SCHEDULES,
    stage_order,
)
from .simulate import (
    ROUNDS_FROM_STAGES,
    SPLIT_BACKWARD,
    schedule,
)
from .simulate import _simulate_events as _simulate_events  # tests, bench
from .simulate import _simulate_rounds as _simulate_rounds  # tests, bench
from .states import (
    BYTES_PER_PARAM,
    DEFAULT_GPU_GB,
    GPU_MEMORY_GB,
    layer_owners,
    min_gpus,
    model_state_bytes,
)
from .timeline import (
    Schedule,
    Timeline,
    timeline_from_records,
)

__all__ = [
    "ALL_SCHEDULES",
    "BYTES_PER_PARAM", "CLOSED_FORMS", "DEFAULT_GPU_GB", "GPU_MEMORY_GB", "MAX_CHUNKS",
    "MAX_MICROBATCHES", "MAX_OPERATIONS", "MAX_STAGES", "MAX_V_OPERATIONS", "PHASES",
    "ROUNDS_FROM_STAGES", "SCHEDULES", "SPLIT_BACKWARD", "V_SCHEDULES", "Schedule", "Timeline",
    "activation_message_bytes", "bubble_closed_form", "bubble_fraction", "idle_intervals",
    "in_flight_timeline", "layer_owners", "min_gpus", "model_state_bytes", "p2p_messages",
    "peak_in_flight", "schedule", "stage_order", "timeline_from_records",
]  # fmt: skip
