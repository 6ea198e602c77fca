"""Planning 3D parallelism: predict a plan's step from the parts the book teaches, search
the plans, and check the predictions against published runs.

Taught in chapter 15, "Putting it together" (``chapters/15_planner.ipynb``). The parts:

* :mod:`~scaleout.planner.model` - the model's shape
  (:class:`~scaleout.planner.model.Model`: GQA, FFN, SwiGLU, vocabulary, tied embeddings,
  fields for experts) and the cluster (:class:`~scaleout.planner.model.Cluster` on an NCCL
  topology; :func:`~scaleout.planner.model.a100_cluster`,
  :func:`~scaleout.planner.model.h100_cluster`).
* :mod:`~scaleout.planner.compute_term` - one layer's compute time (the only contact
  with the compute model).
* :mod:`~scaleout.planner.comm` - TP, PP and DP traffic priced with :mod:`scaleout.nccl`,
  and what overlap hides.
* :mod:`~scaleout.planner.step` - :class:`~scaleout.planner.step.Plan` and
  :func:`~scaleout.planner.step.predict`: step seconds, its breakdown, memory per GPU,
  throughput and MFU.
* :mod:`~scaleout.planner.search` - every legal plan
  (:func:`~scaleout.planner.search.candidates`), ranked
  (:func:`~scaleout.planner.search.search`), summarised over two fields
  (:func:`~scaleout.planner.search.grid`).
* :mod:`~scaleout.planner.published` - the published runs, the calibration (one constant
  per GPU generation, fitted on declared rows), held-out error and skill.
"""

from .baselines import (
    Baseline,
    BestPlan,
    SweepResult,
    baselines,
    figure_sweeps,
    rank_by_params,
    table1_best,
)
from .comm import BUCKET_PARAMS
from .fit import (
    GROUPS,
    Errors,
    Row,
    SizeErrors,
    Summary,
    calibration,
    errors_by_size,
    errors_of,
    flops_per_gpu,
    summary,
    validation,
)
from .model import (
    GENERATION,
    GPT3,
    GPUS,
    LLAMA2_70B,
    LLAMA3_405B,
    ONE_T,
    Cluster,
    Model,
    a100_cluster,
    h100_cluster,
    model_from_table,
    training_days,
)
from .published import FIG_SWEEPS, Run, runs
from .search import MAX_PLANS, Grid, Space, candidates, divisors, grid, search
from .step import (
    OVERLAPS,
    PARTS,
    PRECISIONS,
    Plan,
    Prediction,
    activation_bytes,
    check_plan,
    memory_bytes,
    predict,
)

#: The chapter's preset settings, each a (model, cluster, global batch) triple.
PRESETS = {
    "GPT-3 175B, 1,024 A100": (GPT3, a100_cluster(1024), 1536),
    "1T, 3,072 A100": (ONE_T, a100_cluster(3072), 3072),
    "Llama-2-70B, 256 H100": (LLAMA2_70B, h100_cluster(256), 512),
}

#: The explorer's models, each on the GPU and servers it was run on: (model, GPU, topology).
#: The GPU count and the batch are the explorer's own controls.
EXPLORER_MODELS = {
    "GPT-3 175B on A100": (GPT3, "A100-80GB", "dgx-a100"),
    "1T on A100": (ONE_T, "A100-80GB", "dgx-a100"),
    "Llama-2-70B on H100": (LLAMA2_70B, "H100-SXM", "dgx-h100"),
}
#: The explorer's GPU counts and global batches: every combination has a plan that fits.
EXPLORER_GPUS = (512, 1024, 3072)
EXPLORER_BATCHES = (768, 1536, 3072)

__all__ = [
    "BUCKET_PARAMS", "EXPLORER_BATCHES", "EXPLORER_GPUS", "EXPLORER_MODELS", "FIG_SWEEPS",
    "GROUPS", "Baseline", "Errors", "SizeErrors", "SweepResult", "baselines", "errors_by_size",
    "errors_of", "figure_sweeps",
    "rank_by_params", "GENERATION", "GPT3", "GPUS", "LLAMA2_70B", "LLAMA3_405B", "MAX_PLANS",
    "ONE_T", "OVERLAPS", "PARTS", "PRECISIONS", "PRESETS", "BestPlan", "Cluster", "Grid",
    "Model", "Plan", "Prediction", "Row", "Run", "Space", "Summary", "a100_cluster",
    "activation_bytes", "calibration", "candidates", "check_plan", "divisors",
    "flops_per_gpu", "grid", "h100_cluster", "memory_bytes", "model_from_table", "predict",
    "runs", "search", "summary", "table1_best", "training_days", "validation",
]  # fmt: skip
