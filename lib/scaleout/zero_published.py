"""Published ZeRO-3 measurements beside chapter 6's model of a ZeRO-3 step.

Taught in chapter 6, "ZeRO sharding" (``chapters/06_zero.ipynb``). Units: seconds, FLOP/s,
bytes.

Source of the rows: Narayanan et al., "Efficient Large-Scale Language Model Training on GPU
Clusters Using Megatron-LM", SC21 (arXiv 2104.04473), Table 2, the rows "ZeRO-3 without
Model Parallelism": DeepSpeed ZeRO-3 on DGX A100 80 GB servers (8 GPUs and 8 x 200 Gb/s
HDR InfiniBand per server, section 5), GPT models of 174.6B parameters (96 layers,
h = 12288, 96 heads) and 529.6B (105 layers, h = 20480, 128 heads; their Table 1), s = 2048,
V = 51200, and the achieved teraFLOP/s per GPU of their eq. 3, which counts the forward
pass that activation recomputation repeats. The global batch is 1536 (174.6B) and 2240 or
2560 (529.6B; the run on 640 GPUs needed the larger batch, their footnote).

The model (chapter 6, :func:`predict`): per GPU and micro-batch of ``b`` sequences, compute
K = eq. 3 FLOPs of b sequences / ``rate``; communication C = two all-gathers and one
reduce-scatter of the 2 psi bytes of fp16 parameters (``memory.COMM_PATTERN[3]``), each call
priced with NCCL's model on the run's servers (:func:`scaleout.nccl.model.predict`), either
as three whole-model calls (``pricing="whole"``, which pays NCCL's per-call latency three
times) or call by call as the DeepSpeed release of the runs issued them (``pricing="per-call"``,
one call per parameter tensor, :mod:`scaleout.deepspeed_zero3`); the exposed part
:func:`scaleout.memory.zero3_exposed_seconds` (C, K, L); the step m (K + exposed) for
m = batch / (gpus b) micro-batches (ZeRO-3 gathers again for every micro-batch). Nothing
else: no optimizer step, no data loading, no host-side overhead of DeepSpeed. One
number is fitted, the sustained compute ``rate``, on one row (:func:`fit_rate`); a second
variant also fits a ``comm_slowdown`` factor on the collectives' NCCL time, on another row
(:func:`fit_comm_slowdown`): how much slower than NCCL's model the run's collectives
must have been.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from . import checks, deepspeed_zero3, memory, nccl

#: Most GPUs of a run (the book's 65,536-rank case).
MAX_GPUS = 65536
#: How the collectives are priced, as three whole-model calls or DeepSpeed's calls one by one
#: (gradients reduce-scattered per tensor, ``contiguous_gradients`` on; or, with the
#: release's default, all-reduced in buckets: "per-call-allreduce").
PRICINGS = ("whole", "per-call", "per-call-allreduce")


@dataclass(frozen=True)
class Zero3Run:
    """One published ZeRO-3 run: GPT shape, GPUs (8 per DGX A100 server), global ``batch``
    and ``microbatch`` in sequences, and the measured ``tflops`` per GPU."""

    name: str
    layers: int
    hidden: int
    heads: int
    gpus: int
    batch: int
    microbatch: int
    tflops: float
    seq: int = 2048
    vocab: int = 51200

    def __post_init__(self):
        _ = self.model  # the GPT shape, checked by memory.Transformer
        checks.integer("gpus", self.gpus, 8, MAX_GPUS)
        if self.gpus % 8:
            raise checks.fail("gpus", "a multiple of 8 (DGX A100 servers)", self.gpus)
        checks.integer("batch", self.batch, 1, 2**24)
        checks.integer("microbatch", self.microbatch, 1, 2**16)
        if self.batch % (self.gpus * self.microbatch):
            raise checks.fail("batch", f"a multiple of gpus x microbatch = "
                              f"{self.gpus * self.microbatch}", self.batch)  # fmt: skip
        checks.positive("tflops", self.tflops, high=1e4)

    @property
    def model(self) -> memory.Transformer:
        """The run's GPT shape as :class:`scaleout.memory.Transformer`."""
        return memory.Transformer(self.name, self.layers, self.hidden, self.heads, self.seq,
                                  self.vocab)  # fmt: skip

    @property
    def params(self) -> float:
        """Parameters, counted by :class:`scaleout.memory.Transformer`."""
        return self.model.params

    @property
    def microbatches(self) -> int:
        """The number of micro-batches per GPU and step, batch / (gpus x microbatch)."""
        return self.batch // (self.gpus * self.microbatch)


_175B, _530B = (96, 12288, 96), (105, 20480, 128)
#: Narayanan et al. SC21, Table 2, "ZeRO-3 without Model Parallelism" (teraFLOP/s per GPU).
SC21_ZERO3 = (
    Zero3Run("174.6B, 384 GPUs", *_175B, gpus=384, batch=1536, microbatch=4, tflops=144),
    Zero3Run("174.6B, 768 GPUs", *_175B, gpus=768, batch=1536, microbatch=2, tflops=88),
    Zero3Run("174.6B, 1536 GPUs", *_175B, gpus=1536, batch=1536, microbatch=1, tflops=44),
    Zero3Run("529.6B, 640 GPUs", *_530B, gpus=640, batch=2560, microbatch=4, tflops=138),
    Zero3Run("529.6B, 1120 GPUs", *_530B, gpus=1120, batch=2240, microbatch=2, tflops=98),
    Zero3Run("529.6B, 2240 GPUs", *_530B, gpus=2240, batch=2240, microbatch=1, tflops=48),
)


def eq3_flops(run: Zero3Run, sequences) -> float:
    """Narayanan et al.'s eq. 3, FLOPs of ``sequences`` sequences with full recomputation:
    96 B s l h^2 (1 + s / (6 h) + V / (16 l h))."""
    checks.instance("run", run, Zero3Run)
    b = checks.positive("sequences", sequences, high=2.0**24)
    return float(run.model.shape.step_flops(b, "full"))  # scaleout.transformer's count


@dataclass(frozen=True)
class Zero3Prediction:
    """The model's step for one run: per micro-batch ``compute_s``, ``comm_s`` and its
    ``exposed_s`` part; the ``step_s`` and the resulting ``tflops`` per GPU (eq. 3)."""

    compute_s: float
    comm_s: float
    exposed_s: float
    step_s: float
    tflops: float

    def __post_init__(self):
        for key in ("compute_s", "comm_s", "exposed_s", "step_s", "tflops"):
            checks.nonnegative(key, getattr(self, key))


def comm_seconds(run: Zero3Run, pricing="whole") -> float:
    """ZeRO-3's collectives of one micro-batch (2 all-gathers + 1 reduce-scatter of the
    fp16 parameters), NCCL's model on ``run.gpus / 8`` DGX A100 servers: as three
    whole-model calls (``pricing="whole"``) or as DeepSpeed v0.3.13's one call per parameter
    tensor (``"per-call"``, :func:`scaleout.deepspeed_zero3.calls`; the per-step gather of the
    persistent parameters included, since every run has one micro-batch per step), or the
    same gathers with the gradients all-reduced in 5e8-element buckets (the release's default
    ``contiguous_gradients=False``, ``"per-call-allreduce"``)."""
    checks.instance("run", run, Zero3Run)
    checks.choice("pricing", pricing, PRICINGS)
    topo = nccl.topology("dgx-a100", nodes=run.gpus // 8)
    if pricing != "whole":
        shapes = deepspeed_zero3.gpt_parameters(run.layers, run.hidden, run.seq, run.vocab)
        calls = deepspeed_zero3.calls(shapes, contiguous_gradients=pricing == "per-call")
        return deepspeed_zero3.seconds(calls, machine=topo)
    pattern = [coll for coll, _, _ in memory.COMM_PATTERN[3]]
    return float(sum(nccl.predict(coll, 2 * run.params, machine=topo).seconds for coll in pattern))


def predict(run: Zero3Run, rate, comm_slowdown=1.0, pricing="whole") -> Zero3Prediction:
    """The model's step of ``run`` with compute at ``rate`` FLOP/s per GPU and the
    collectives (priced as ``pricing``, see :func:`comm_seconds`) ``comm_slowdown`` times
    slower than NCCL's model (see the module docstring)."""
    checks.instance("run", run, Zero3Run)
    rate = checks.positive("rate", rate, high=1e17)
    slow = checks.positive("comm_slowdown", comm_slowdown, high=1e6)
    compute = eq3_flops(run, run.microbatch) / rate
    comm = comm_seconds(run, pricing) * slow
    exposed = float(memory.zero3_exposed_seconds(comm, compute, run.layers))
    step = run.microbatches * (compute + exposed)
    tflops = eq3_flops(run, run.batch) / run.gpus / step / 1e12
    return Zero3Prediction(compute, comm, exposed, step, checks.finite_result("tflops", tflops))


def fit_rate(run: Zero3Run, pricing="whole") -> float:
    """The compute rate (FLOP/s per GPU) at which :func:`predict` gives ``run.tflops``.
    Closed form where compute is the longer (then only C / L is exposed): the measured
    micro-batch time minus C / L is compute. Raises if the run is communication-bound in
    the model (then the rate is not determined by it)."""
    checks.instance("run", run, Zero3Run)
    flops = eq3_flops(run, run.microbatch)
    per_micro = flops / (run.tflops * 1e12)
    comm = comm_seconds(run, pricing)
    compute = per_micro - comm / run.layers
    if compute < comm:
        raise checks.fail("run", "a run that is compute-bound in the model", run.name)
    rate = flops / compute
    if not (math.isfinite(rate) and rate > 0):  # e.g. FLOPs that underflow against the time
        raise checks.fail("run", "a run whose fitted rate is positive and finite "
                          f"(FLOPs {flops:.3g} over {compute:.3g} s)", run.name)  # fmt: skip
    return rate


def fit_comm_slowdown(run: Zero3Run, rate, pricing="whole") -> float:
    """The factor on NCCL's collective time (priced as ``pricing``) at which :func:`predict`
    (compute at ``rate``) gives ``run.tflops``. Closed form where communication is the
    longer (then the step is C - K + K / L + K per micro-batch); raises if the fitted C would
    not exceed K."""
    checks.instance("run", run, Zero3Run)
    rate = checks.positive("rate", rate, high=1e17)
    flops = eq3_flops(run, run.microbatch)
    per_micro = flops / (run.tflops * 1e12)
    compute = flops / rate
    comm = per_micro - compute / run.layers
    if comm <= compute:
        raise checks.fail("run", "a run that is communication-bound at this rate", run.name)
    return comm / comm_seconds(run, pricing)
