"""Tensor x pipeline parallelism on 64 A100s: Narayanan et al. (SC21), Figure 13, and the model.

Figure 13 of Narayanan et al., "Efficient Large-Scale Language Model Training on GPU
Clusters Using Megatron-LM" (SC21, arXiv 2104.04473), measures the throughput per GPU of a
162.2B-parameter GPT on 64 A100 GPUs (8 DGX A100 servers of NVIDIA's Selene, 8 GPUs and
8 x 200 Gb/s HDR InfiniBand NICs each) for every (pipeline, tensor) split of the 64 GPUs,
at global batch sizes 32 and 128. The configuration comes from the paper's own script,
``examples/academic_paper_scripts/sc21/run_figure_13.sh`` and ``CONFIG.sh`` in
NVIDIA/Megatron-LM: 32 layers, hidden size 20480, 128 heads, sequence 2048, micro-batch 1,
fp16, full ("uniform") activation recomputation, no data parallelism (t p = 64).

The paper shows the measurements as bars and does not tabulate them; its text states two
findings, which are what this module records (:data:`MEASURED`): the peak is at t = 8, the
size of a server (Sec. 5.4.1), and sub-optimal combinations of tensor and pipeline
parallelism are "up to 2x" slower (Sec. 1).

:func:`iteration` is the book's model of one training iteration for a split (t, p): ideal
compute at the A100's dense fp16 peak, every tensor-parallel all-reduce on the critical
path (Megatron-LM of 2021 did not overlap them; with full recomputation the forward's two
all-reduces per layer run twice), priced by
:func:`scaleout.tensor_parallel.collective_seconds` on DGX A100 servers (NCCL's model, or
the one-NIC flat ring), and the 1F1B pipeline's (m + p - 1) micro-batch slots (Sec. 2.2).
It leaves out what the measurements also contain: GEMM efficiency below peak and its fall
as h/t shrinks, the pipeline's point-to-point sends (about 1 % here), the optimizer step,
and the network shared with other traffic. It is a communication model combined with an
ideal compute model, to be compared for ranking, not for absolute throughput.
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import checks, hardware
from .sizes import t_size
from .traffic import TOPOLOGIES, layer_comm_seconds, layer_flops

#: The A100 SXM's dense fp16/bf16 Tensor Core peak in FLOP/s (312 TFLOP/s), from hardware's
#: GPU table (NVIDIA A100 datasheet).
A100_DENSE_FLOPS = hardware.gpu("A100-80GB").bf16_tflops * 1e12
#: The model and run of Figure 13, from run_figure_13.sh and CONFIG.sh (the vocabulary from
#: Table 1).
FIGURE_13 = dict(layers=32, hidden=20480, heads=128, seq=2048, vocab=51200, micro_batch=1,
                 gpus=64, batches=(32, 128), pipelines=(2, 4, 8, 16, 32),
                 intra="nvlink3-a100", inter="nic-200g", dtype_bytes=2)  # fmt: skip
#: What the paper says about the measurements of Figure 13, which it does not tabulate.
MEASURED = {
    "best_t": 8,  # Sec. 5.4.1: "peak performance when the tensor-parallel size is equal to
    # the number of GPUs in a single node (8 with DGX A100 nodes)"
    "worst_over_best": 2.0,  # Sec. 1: "sub-optimal combinations of tensor and pipeline
    # model parallelism can lead to up to 2x lower throughput"
    "source": "Narayanan et al., SC21: Figure 13, Sec. 1 and Sec. 5.4.1",
}


@dataclass(frozen=True)
class Iteration:
    """One iteration of a (t, p) split at global batch ``batch``: per micro-batch and stage
    the ideal ``compute_s`` and the tensor-parallel ``comm_s``; the iteration's seconds
    over (m + p - 1) slots; ``tflops_per_gpu`` in the paper's count (eq. 3, recomputation
    included)."""

    t: int
    p: int
    batch: int
    topology: str
    compute_s: float
    comm_s: float
    seconds: float
    tflops_per_gpu: float

    def __post_init__(self):
        t_size(self.t)
        checks.integer("p", self.p, 1, 4096)
        checks.integer("batch", self.batch, 1, 2**20)
        checks.choice("topology", self.topology, TOPOLOGIES)
        for name in ("compute_s", "comm_s", "seconds", "tflops_per_gpu"):
            checks.nonnegative(name, getattr(self, name))

    @property
    def comm_over_compute(self) -> float:
        return self.comm_s / self.compute_s

    @property
    def bubble(self) -> float:
        """(p - 1) / m, the 1F1B bubble over the ideal time (Sec. 2.2.1)."""
        return (self.p - 1) / (self.batch // FIGURE_13["micro_batch"])


def iteration(p: int, batch: int, topology: str = "nccl") -> Iteration:
    """The model of Figure 13's run with p pipeline stages and t = 64 / p (see the module
    docstring), its collectives priced with ``topology`` (NCCL's model by default)."""
    f = FIGURE_13
    p = checks.choice("p", p, f["pipelines"])
    batch = checks.choice("batch", batch, f["batches"])
    topology = checks.choice("topology", topology, TOPOLOGIES)
    t = f["gpus"] // p
    b, s, h, layers = f["micro_batch"], f["seq"], f["hidden"], f["layers"]
    forward = layer_flops(b, s, h)
    compute = (layers // p) * 4 * forward / t / A100_DENSE_FLOPS  # fwd, recompute, 2x bwd
    comm = layer_comm_seconds(b, s, h, t, f["dtype_bytes"], topology=topology,
                              gpus_per_server=8, intra=f["intra"], inter=f["inter"])  # fmt: skip
    comm = (layers // p) * (2 * comm.forward + comm.backward)  # the forward runs twice
    m = batch // b
    seconds = (m + p - 1) * (compute + comm)
    v = f["vocab"]
    flops = 96 * batch * s * layers * h * h * (1 + s / (6 * h) + v / (16 * layers * h))
    tflops = checks.finite_result("the throughput", flops / seconds / f["gpus"] / 1e12)
    return Iteration(t, p, batch, topology, compute, comm, seconds, tflops)


def figure13(topology: str = "nccl") -> list[Iteration]:
    """:func:`iteration` for every bar of Figure 13 (both batch sizes, p = 2 to 32)."""
    return [iteration(p, batch, topology) for batch in FIGURE_13["batches"]
            for p in FIGURE_13["pipelines"]]  # fmt: skip
