"""Published ZeRO-3 measurements beside chapter 6's model of a ZeRO-3 step.

Taught in chapter 6, "ZeRO sharding" (``chapters/06_zero.ipynb``). Units: seconds, FLOP/s,
bytes.

Source of the rows: Narayanan et al., "Efficient Large-Scale Language Model Training on GPU
Clusters Using Megatron-LM", SC21 (arXiv 2104.04473), Table 2, the rows "ZeRO-3 without
Model Parallelism": DeepSpeed ZeRO-3 on DGX A100 80 GB servers (8 GPUs and 8 x 200 Gb/s
HDR InfiniBand per server, section 5), GPT models of 174.6B parameters (GPT-3 175B's shape,
96 layers, h = 12288, 96 heads) and 529.6B (105 layers, h = 20480, 128 heads; their Table 1),
s = 2048, V = 51200, and the achieved teraFLOP/s per GPU of their eq. 3, which counts the
forward pass that activation recomputation repeats. The global batch is 1536 (174.6B) and
2240 or 2560 (529.6B; the run on 640 GPUs needed the larger batch, their footnote).

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

Every published number here (the runs' GPUs, batches and measured teraFLOP/s, the GPUs per
server) is a row of ``scaleout/data/zero.csv`` with its references.bib key, locator and kind;
the runs' shapes are :data:`scaleout.transformer.MODELS`' (rows of ``data/models.csv``).

The same file holds what the ZeRO paper itself prints of model-state memory (Rajbhandari et
al., SC20, arXiv 1910.02054), which chapter 6 compares with
:func:`scaleout.memory.model_state_bytes`: :data:`TABLE1`, the 54 entries of its Table 1 (GB
per device for 7.5B, 128B and 1T parameters, :data:`TABLE1_MODELS`, at the DP degrees
:data:`TABLE1_DPS`, for P_os, P_os+g and P_os+g+p; bold where a 32 GB V100,
:data:`TABLE1_GPU_GB`, holds them), and :data:`FIGURE1`, the four values of its Figure 1
(7.5B parameters, N_d = 64). Each is a :class:`PrintedMemory` holding the value as printed
and its printed digits; :func:`printed_rule` says how a computed value becomes the printed
one (rounded half up or truncated to those digits).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import ROUND_DOWN, ROUND_HALF_UP, Decimal

from . import checks, data, deepspeed_zero3, memory, nccl, transformer

#: Most GPUs of a run (the book's 65,536-rank case).
MAX_GPUS = 65536
#: How the collectives are priced, as three whole-model calls or DeepSpeed's calls one by one
#: (gradients reduce-scattered per tensor, ``contiguous_gradients`` on; or, with the
#: release's default, all-reduced in buckets: "per-call-allreduce").
PRICINGS = ("whole", "per-call", "per-call-allreduce")
# The published numbers: scaleout/data/zero.csv (Narayanan et al. SC21, Table 2 and Section 5).
_DATA = data.load("zero")


def _stated(quantity, model, gpus="") -> int:
    """The whole number ``quantity`` of ``model`` (and run on ``gpus``) in zero.csv."""
    rows = [v for v in _DATA if (v.get("quantity"), v.get("model"), v.get("gpus"))
            == (quantity, model, str(gpus))]  # fmt: skip
    if len(rows) != 1:
        raise ValueError(f"zero.csv must have one {quantity!r} row of {model!r} on "
                         f"{gpus or 'any'} GPUs, has {len(rows)}")  # fmt: skip
    (row,) = rows
    if not float(row.value).is_integer():
        raise ValueError(f"zero.csv row {row.key!r} must be a whole number, got {row.value!r}")
    return int(row.value)


_PER_SERVER = _stated("GPUs per server", "DGX A100")
#: The runs' models in :data:`scaleout.transformer.MODELS` (its shapes are rows of
#: ``data/models.csv``): Table 2's 174.6B is GPT-3 175B's shape, its 529.6B Table 1's row.
MODELS = {"174.6B": "GPT-3 175B", "529.6B": "529.6B"}
_SEQ, _VOCAB = (transformer.MODELS["529.6B"].seq, transformer.MODELS["529.6B"].vocab)


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
    seq: int = _SEQ
    vocab: int = _VOCAB

    def __post_init__(self):
        _ = self.model  # the GPT shape, checked by memory.Transformer
        checks.integer("gpus", self.gpus, _PER_SERVER, MAX_GPUS)
        if self.gpus % _PER_SERVER:
            raise checks.fail("gpus", f"a multiple of {_PER_SERVER} (DGX A100 servers)", self.gpus)
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


def _runs():
    models = {m: transformer.MODELS[name] for m, name in MODELS.items()}
    for v in _DATA:
        if v.get("quantity") == "throughput":
            m, gpus = v.get("model"), int(v.get("gpus"))
            yield Zero3Run(
                f"{m}, {gpus} GPUs",
                models[m].layers,
                models[m].hidden,
                models[m].heads,
                gpus=gpus,
                batch=_stated("global batch", m, gpus),
                microbatch=_stated("micro-batch size", m, gpus),
                tflops=_stated("throughput", m, gpus),
                seq=models[m].seq,
                vocab=models[m].vocab,
            )


#: Narayanan et al. SC21, Table 2, "ZeRO-3 without Model Parallelism" (teraFLOP/s per GPU);
#: shapes: GPT-3 175B (Brown et al. 2020, Table 2.1) and their Table 1's 529.6B.
SC21_ZERO3 = tuple(_runs())


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
    topo = nccl.topology("dgx-a100", nodes=run.gpus // _PER_SERVER)
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


# ------------------------------------------------------ the ZeRO paper's printed memory values
#: The ZeRO paper's stage names (the headers of Table 1 and Figure 1), each mapped to its
#: stage number in ``scaleout.memory.STAGES``.
PAPER_STAGES = {"baseline": 0, "P_os": 1, "P_os+g": 2, "P_os+g+p": 3}
_PRINTED_DIGITS = 6  # the most digits after the point a printed value may have


@dataclass(frozen=True)
class PrintedMemory:
    """One per-device model-state memory the ZeRO paper prints: ``gb`` (GB, as printed, with
    ``decimals`` digits after the point) for a model ``model`` of ``params`` parameters at DP
    degree ``dp`` and ZeRO ``stage`` (0 plain DP, 1 P_os, 2 P_os+g, 3 P_os+g+p), at
    ``locator`` in the paper (Table 1 or Figure 1)."""

    locator: str
    model: str
    params: float
    dp: int
    stage: int
    gb: float
    decimals: int

    def __post_init__(self):
        checks.text("locator", self.locator, 200)
        checks.text("model", self.model, 40)
        checks.positive("params", self.params, 1e15)
        checks.integer("dp", self.dp, 1, MAX_GPUS)
        checks.choice("stage", self.stage, tuple(PAPER_STAGES.values()))
        checks.nonnegative("gb", self.gb, 1e9)
        checks.integer("decimals", self.decimals, 0, _PRINTED_DIGITS)

    @property
    def printed(self) -> str:
        """The value as the paper prints it."""
        return f"{self.gb:.{self.decimals}f}"


def printed_rule(entry: PrintedMemory, gb) -> str:
    """How ``entry``'s printed value follows from a computed ``gb`` (GB): "exact" (equal),
    "rounded" (``gb`` rounded half up to the printed digits gives it), "truncated" (``gb`` cut
    after the printed digits gives it, and rounding does not), or "" (neither: they disagree).
    ``gb`` is first taken to 12 significant digits, dropping the float noise of a byte count."""
    checks.instance("entry", entry, PrintedMemory)
    gb = Decimal(f"{checks.nonnegative('gb', gb, 1e12):.12g}")
    printed, unit = Decimal(entry.printed), Decimal(1).scaleb(-entry.decimals)
    if gb == printed:
        return "exact"
    if gb.quantize(unit, ROUND_HALF_UP) == printed:
        return "rounded"
    return "truncated" if gb.quantize(unit, ROUND_DOWN) == printed else ""


def _decimals(v: data.Value) -> int:
    """The digits a printed value has after the point: its shortest decimal form's (the paper
    prints no trailing zeros: 30, 7.5, 0.47)."""
    text = repr(v.value)
    if "e" in text or "E" in text:
        raise ValueError(f"zero.csv row {v.key!r} must be a plain decimal, got {text}")
    return 0 if v.value == int(v.value) else len(text.split(".")[1])


def _printed(prefix: str, params: dict) -> tuple[PrintedMemory, ...]:
    """The per-device memory rows whose key starts with ``prefix``, in the file's order."""
    return tuple(
        PrintedMemory(v.locator, v.get("model"), params[v.get("model")], int(v.get("dp")),
                      PAPER_STAGES[v.get("stage")], v.value, _decimals(v))
        for v in _DATA
        if v.key.startswith(prefix) and v.get("quantity") == "per-device memory"
    )  # fmt: skip


def _sizes(prefix: str) -> dict:
    return {v.get("model"): v.value for v in _DATA
            if v.key.startswith(prefix) and v.get("quantity") == "parameters"}  # fmt: skip


#: Table 1's models by label, with their parameter counts (its column headers 7.5B, 128B
#: and 1T).
TABLE1_MODELS: dict[str, float] = _sizes("table1-")
#: Table 1's 54 entries, DP degree by DP degree (its rows), models and stages as printed.
TABLE1: tuple[PrintedMemory, ...] = _printed("table1-", TABLE1_MODELS)
#: Table 1's DP degrees N_d, its rows (1, 4, 16, 64, 256 and 1024).
TABLE1_DPS: tuple[int, ...] = tuple(dict.fromkeys(e.dp for e in TABLE1))
#: The memory in GB of the GPU whose fit Table 1 marks in bold (its caption says 32 GB
#: V100s).
TABLE1_GPU_GB: float = next(v.value for v in _DATA if v.key == "table1-device-memory")
#: Figure 1's worked example, 7.5B parameters at N_d = 64, plain DP and the three stages.
FIGURE1: tuple[PrintedMemory, ...] = _printed("fig1-", _sizes("fig1-"))
