"""Published training runs with full configurations, and the planner beside them.

Every :class:`Run` names its source (bibliography key and table or section) and what was
assumed where the source is silent (``assumed``). Measured throughputs are converted to
seconds per step with the source's own FLOP count: Narayanan et al. and BLOOM count
Narayanan's eq. 3 (full recomputation, ``Model.flops(B, "full")``), Llama 3 and Nemotron
model FLOPs (``Model.flops(B, "none")``); Korthikanti et al., MT-NLG and NVIDIA's DGXC
benchmark publish seconds per iteration.

* **A100** (Selene and Jean Zay): Narayanan et al. 2021 (SC21) Table 1, with each row's
  micro-batch, interleaving and DDP from the paper's own scripts (Megatron-LM
  ``examples/sc21/run_table_1.sh``, commit 6985e58); its Table 2 (PTD-P rows);
  Korthikanti et al. 2022 Table 5 with the configurations of their Table 3; MT-NLG 530B
  (Smith et al. 2022, Section 2.4); BLOOM 176B (BigScience 2022).
* **H100**: Llama 3 405B (Llama team 2024 [dubey2024llama3], Table 4), Nemotron-4 340B (NVIDIA 2024,
  Table 2), NVIDIA's DGXC benchmark of Nemotron-4 340B (NGC catalog, release 24.11).

Calibration: one constant per GPU generation, a multiplier on the compute model's time,
fitted (least squares on the log of predicted over measured step time, golden-section
search) on the runs marked ``fit`` and nothing else; every other run is held out.
Skill: Spearman's rank correlation of predicted against measured throughput within each
sweep (runs that vary one thing), and for every Table 1 row whether the published plan
is within 5 % of the planner's best plan in the same software (search over t, p, d, b,
v and recomputation with the run's precision, attention and overlap).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from .. import checks
from ..nccl.published import spearman
from .model import GPT3, LLAMA3_405B, RECOMPUTE, Cluster, Model, a100_cluster, model_from_table
from .search import Space, search
from .step import Plan, Prediction, predict

SPLITS = ("fit", "held-out")
CONVENTIONS = ("eq3", "model", "seconds")


@dataclass(frozen=True)
class Run:
    """One published run: ``model`` on ``cluster`` at ``batch`` sequences with ``plan``;
    ``measured`` in the source's unit (``convention``: TFLOP/s per GPU by eq. 3 or by
    model FLOPs, or seconds per step); ``split`` fit / held-out; ``sweep`` the group it
    is ranked in; ``source`` and ``assumed`` say where each number comes from."""

    key: str
    model: Model
    cluster: Cluster
    batch: int
    plan: Plan
    measured: float
    convention: str
    split: str
    sweep: str
    source: str
    assumed: str = ""
    flops_model: Model | None = None  # the model whose FLOPs the source counted

    def __post_init__(self):
        checks.text("key", self.key, 60)
        checks.instance("model", self.model, Model)
        checks.instance("cluster", self.cluster, Cluster)
        checks.integer("batch", self.batch, 1, 2**24)
        checks.instance("plan", self.plan, Plan)
        checks.positive("measured", self.measured, 1e6)
        checks.choice("convention", self.convention, CONVENTIONS)
        checks.choice("split", self.split, SPLITS)
        checks.text("sweep", self.sweep, 80)
        checks.text("source", self.source, 300)
        if self.assumed:
            checks.text("assumed", self.assumed, 300)
        if self.flops_model is not None:
            checks.instance("flops_model", self.flops_model, Model)

    @property
    def measured_step_s(self) -> float:
        """The measured seconds per step."""
        if self.convention == "seconds":
            return self.measured
        fm = self.flops_model or self.model
        flops = fm.flops(self.batch, "full" if self.convention == "eq3" else "none")
        return float(flops / (self.cluster.gpus * self.measured * 1e12))

    def throughput(self, step_s: float) -> float:
        """Tokens per second per GPU at ``step_s`` seconds per step."""
        return self.batch * self.model.seq / self.cluster.gpus / step_s


def _selene(gpus: int) -> Cluster:
    return a100_cluster(gpus)


SC21 = dict(recompute="full", precision="megatron-fp16", flash=False, overlap="none")
_T1 = (  # name, t, p, GPUs, B, TFLOP/s, micro-batch, v, torch DDP (overlapped), split
    ("1.7B", 1, 1, 32, 512, 137, 16, 1, True, "fit"),
    ("3.6B", 2, 1, 64, 512, 138, 16, 1, True, "held-out"),
    ("7.5B", 4, 1, 128, 512, 142, 16, 1, True, "held-out"),
    ("18.4B", 8, 1, 256, 1024, 135, 8, 1, True, "fit"),
    ("39.1B", 8, 2, 512, 1536, 138, 4, 1, False, "held-out"),
    ("76.1B", 8, 4, 1024, 1792, 140, 2, 3, False, "held-out"),
    ("145.6B", 8, 8, 1536, 2304, 148, 2, 2, False, "fit"),
    ("310.1B", 8, 16, 1920, 2160, 155, 1, 2, False, "held-out"),
    ("529.6B", 8, 35, 2520, 2520, 163, 1, 3, False, "held-out"),
    ("1T", 8, 64, 3072, 3072, 163, 1, 1, False, "fit"),
)
SC21_SOURCE = ("narayanan2021megatron Table 1; micro-batch, interleaving, DDP, fp16: "
               "megatronsc21 (examples/sc21/run_table_1.sh)")  # fmt: skip


def _table1() -> list[Run]:
    out = []
    for name, t, p, n, batch, x, b, v, torch_ddp, split in _T1:
        plan = Plan(t, p, n // (t * p), b, v, dp_overlap=torch_ddp, **SC21)
        out.append(Run(f"T1 {name}", model_from_table(name), _selene(n), batch, plan, x,
                       "eq3", split, "Narayanan Table 1", SC21_SOURCE,
                       "no TP overlap (2021 Megatron)"))  # fmt: skip
    return out


MT530 = model_from_table("529.6B")


def _table2() -> list[Run]:
    out = []
    for model, t, p, v, batch, rows in (
        (GPT3, 8, 12, 4, 1536, ((384, 153), (768, 149), (1536, 141))),
        (MT530, 8, 35, 3, 2240, ((560, 171), (1120, 167), (2240, 159))),
    ):
        for n, x in rows:
            plan = Plan(t, p, n // (t * p), 1, v, dp_overlap=False, **SC21)
            out.append(Run(f"T2 {model.name} {n}", model, _selene(n), batch, plan, x, "eq3",
                           "held-out", f"Narayanan Table 2, {model.name}",
                           "narayanan2021megatron Table 2 (PTD-P rows)",
                           f"v = {v} (as the paper's other runs of this model)"))  # fmt: skip
    return out


KORTHIKANTI_MODELS = {
    "22B": Model("22B", 48, 6144, 64),
    "175B": GPT3,
    "530B": MT530,
    "1T": model_from_table("1T"),
}
_K5 = (  # model, t, p, GPUs, B, micro-batch, v, full-recompute s, selective+SP s
    ("22B", 8, 1, 8, 4, 4, 1, 1.42, 1.10),
    ("175B", 8, 8, 64, 64, 1, 3, 18.13, 13.75),
    ("530B", 8, 35, 280, 280, 1, 3, 49.05, 37.83),
    ("1T", 8, 64, 512, 512, 1, 1, 94.42, 71.49),
)


def _korthikanti() -> list[Run]:
    out = []
    for name, t, p, n, batch, b, v, full_s, present_s in _K5:
        model = KORTHIKANTI_MODELS[name]
        for rec, sp, seconds in (("full", False, full_s), ("selective", True, present_s)):
            plan = Plan(t, p, 1, b, v, recompute=rec, sp=sp, overlap="megatron",
                        precision="megatron-bf16", flash=False)  # fmt: skip
            out.append(Run(f"K5 {name} {rec}", model, _selene(n), batch, plan, seconds,
                           "seconds", "held-out", f"Korthikanti Table 5, {name}",
                           "korthikanti2022reducing Tables 3 and 5; calculonvalidation",
                           "v as in the calculon transcription of Table 3; Megatron's "
                           "async TP overlap"))  # fmt: skip
    return out


def _mtnlg() -> list[Run]:
    out = []
    for n, seconds in ((2240, 60.1), (2800, 50.2), (3360, 44.4)):
        plan = Plan(8, 35, n // 280, 1, zero=1, dp_overlap=False, precision="megatron-bf16",
                    flash=False)  # fmt: skip
        out.append(Run(f"MT-NLG {n}", MT530, _selene(n), 1920, plan, seconds, "seconds",
                       "held-out", "MT-NLG GPUs", "smith2022mtnlg Section 2.4",
                       "DeepSpeed pipeline (no interleaving), ZeRO-1, b = 1"))  # fmt: skip
    return out


BLOOM = Model("BLOOM-176B", 70, 14336, 112, seq=2048, vocab=250880, positions=False)


def _bloom() -> list[Run]:
    jean_zay = Cluster("384 A100 (Jean Zay)", 384, nics_per_node=4, nic_gbps=100.0)
    plan = Plan(4, 12, 8, 2, zero=1, dp_overlap=False, precision="megatron-bf16", flash=False)
    return [
        Run(
            "BLOOM 176B",
            BLOOM,
            jean_zay,
            2048,
            plan,
            150,
            "eq3",
            "held-out",
            "BLOOM",
            "bigscience2022bloom (model card: about 150 TFLOP/s per GPU)",
            "micro-batch 2 (tr11-176B-ml script); 4 x 100 Gb/s Omni-Path per node",
        )
    ]


NEMOTRON4_340B = Model("Nemotron-4-340B", 96, 18432, 96, seq=4096, vocab=256000, kv_heads=8,
                       ffn=73728, tied_embeddings=False, positions=False)  # fmt: skip
H100_RUN = dict(sp=True, overlap="megatron", precision="megatron-bf16", flash=True, zero=1,
                recompute="none")  # fmt: skip


def _h100() -> list[Run]:
    from .model import h100_cluster

    out = []
    for n, d, x in ((8192, 64, 430), (16384, 128, 400)):
        plan = Plan(8, 16, d, 1, 4, **H100_RUN)
        out.append(Run(f"Llama 3 {n}", LLAMA3_405B, h100_cluster(n), 2048, plan, x, "model",
                       "held-out", "Llama 3 405B GPUs", "dubey2024llama3 Table 4",
                       "v = 4, b = 1, no recomputation"))  # fmt: skip
    plan = Plan(8, 12, 64, 1, 4, **H100_RUN)
    out.append(Run("Nemotron-4 340B 6144", NEMOTRON4_340B, h100_cluster(6144), 2304, plan, 8.0,
                   "seconds", "held-out", "Nemotron-4 340B", "nvidia2024nemotron Table 2",
                   "v = 4, b = 1, no recomputation"))  # fmt: skip
    plan = Plan(8, 8, 2, 1, 12, **H100_RUN)
    out.append(Run("Nemotron-4 340B DGXC 128", NEMOTRON4_340B, h100_cluster(128), 32, plan,
                   4.77, "seconds", "fit", "Nemotron-4 340B DGXC",
                   "nvidiadgxc2024nemotron (NGC DGXC benchmarking, 24.11, BF16)",
                   "no recomputation"))  # fmt: skip
    return out


@functools.lru_cache(maxsize=1)
def runs() -> tuple[Run, ...]:
    """Every published run of the table, A100 first."""
    return tuple(_table1() + _table2() + _korthikanti() + _mtnlg() + _bloom() + _h100())


def _golden(f, lo: float, hi: float, iters: int = 48) -> float:
    g = (math.sqrt(5) - 1) / 2
    a, b = lo, hi
    c, d = b - g * (b - a), a + g * (b - a)
    fc, fd = f(c), f(d)
    for _ in range(iters):
        if fc < fd:
            b, d, fd = d, c, fc
            c = b - g * (b - a)
            fc = f(c)
        else:
            a, c, fc = c, d, fd
            d = a + g * (b - a)
            fd = f(d)
    return (a + b) / 2


def calibration(generation: str) -> float:
    """The compute-time multiplier of GPU ``generation`` ("A100" / "H100") fitted on the
    runs marked ``fit`` of that generation (see the module docstring)."""
    return _calibration(checks.choice("generation", generation, ("A100", "H100")))


@functools.lru_cache(maxsize=8)
def _calibration(generation: str) -> float:
    fit = [r for r in runs() if r.split == "fit" and r.cluster.generation == generation]

    def loss(k):
        return sum(math.log(_predict(r, k).step_s / r.measured_step_s) ** 2 for r in fit)

    return _golden(loss, 0.5, 4.0)


def _predict(run: Run, k: float) -> Prediction:
    return predict(run.model, run.cluster, run.batch, run.plan, calibration=k,
                   usable_fraction=1.0)  # fmt: skip


@dataclass(frozen=True)
class Row:
    """A run beside the planner: measured and predicted seconds per step, the error
    (predicted / measured - 1), and the prediction."""

    run: Run
    measured_s: float
    predicted_s: float
    error: float
    prediction: Prediction

    def __post_init__(self):
        checks.instance("run", self.run, Run)
        checks.positive("measured_s", self.measured_s)
        checks.positive("predicted_s", self.predicted_s)
        checks.real("error", self.error, -1.0, 1e6)
        checks.instance("prediction", self.prediction, Prediction)


@functools.lru_cache(maxsize=1)
def validation() -> tuple[Row, ...]:
    """Every run priced with its generation's calibration."""
    out = []
    for r in runs():
        pred = _predict(r, calibration(r.cluster.generation))
        meas = r.measured_step_s
        out.append(Row(r, meas, pred.step_s, pred.step_s / meas - 1.0, pred))
    return tuple(out)


@dataclass(frozen=True)
class Summary:
    """Errors on the held-out runs and skill: ``median_abs_error``, ``max_abs_error``
    (held-out), ``fit_median_abs_error``, ``rank`` (sweep -> Spearman's rho of predicted
    against measured throughput) and the calibrations."""

    held_out: int
    median_abs_error: float
    max_abs_error: float
    fit_median_abs_error: float
    rank: dict
    calibrations: dict

    def __post_init__(self):
        checks.integer("held_out", self.held_out, 1, 10**6)
        for name in ("median_abs_error", "max_abs_error", "fit_median_abs_error"):
            checks.nonnegative(name, getattr(self, name), 1e6)
        for name, (low, high) in (("rank", (-1.0, 1.0)), ("calibrations", (0.1, 10.0))):
            value = getattr(self, name)
            if not isinstance(value, dict):
                raise checks.fail(name, "a dict of name -> number", value)
            for key, x in value.items():
                checks.text(f"{name} key", key, 80)
                checks.real(f"{name}[{key!r}]", x, low, high)


def flops_per_gpu(run: Run, step_s: float) -> float:
    """Model FLOP/s per GPU of ``run`` at ``step_s`` seconds per step (the throughput
    ranked within a sweep: across model sizes tokens per second would rank trivially)."""
    checks.instance("run", run, Run)
    step_s = checks.positive("step_s", step_s, 1e9)
    flops = float(run.model.flops(run.batch, "none")) / run.cluster.gpus / step_s
    return checks.finite_result("FLOP/s per GPU", flops)


def summary() -> Summary:
    """Error and skill of :func:`validation` (see :class:`Summary`)."""
    rows = validation()
    held = np.array([abs(r.error) for r in rows if r.run.split == "held-out"])
    fit = np.array([abs(r.error) for r in rows if r.run.split == "fit"])
    sweeps = {}
    for r in rows:
        sweeps.setdefault(r.run.sweep, []).append(r)
    rank = {name: spearman([flops_per_gpu(x.run, x.predicted_s) for x in rs],
                           [flops_per_gpu(x.run, x.measured_s) for x in rs])
            for name, rs in sweeps.items() if len(rs) >= 3}  # fmt: skip
    return Summary(len(held), float(np.median(held)), float(held.max()),
                   float(np.median(fit)), rank,
                   {g: calibration(g) for g in ("A100", "H100")})  # fmt: skip


@dataclass(frozen=True)
class BestPlan:
    """For one Table 1 row: the planner's best plan in the run's software, and how much
    slower the published plan is predicted to be (``gap`` = published / best - 1)."""

    run: Run
    best: Prediction
    published: Prediction
    gap: float

    def __post_init__(self):
        checks.instance("run", self.run, Run)
        checks.instance("best", self.best, Prediction)
        checks.instance("published", self.published, Prediction)
        checks.real("gap", self.gap, -1.0, 1e6)


def table1_best(free_recompute: bool = False) -> tuple[BestPlan, ...]:
    """The planner's best plan for every Table 1 setting (model, GPUs, batch), searching
    t, p, d, b and v with the run's software (no ZeRO, no SP, fp16, no FlashAttention,
    its DDP) and its full recomputation, or any recomputation (``free_recompute``)."""
    return _table1_best(checks.boolean("free_recompute", free_recompute))


@functools.lru_cache(maxsize=2)
def _table1_best(free: bool) -> tuple[BestPlan, ...]:
    k = calibration("A100")
    out = []
    for r in runs()[: len(_T1)]:
        space = Space(max_microbatch=16, vs=(1, 2, 3, 4, 5), zero_stages=(0,),
                      recompute=RECOMPUTE if free else ("full",), sps=(False,),
                      overlap="none", dp_overlap=r.plan.dp_overlap,
                      precision="megatron-fp16", flash=False)  # fmt: skip
        best = search(r.model, r.cluster, r.batch, space, calibration=k, usable_fraction=1.0)[0]
        pub = _predict(r, k)
        out.append(BestPlan(r, best, pub, pub.step_s / best.step_s - 1.0))
    return tuple(out)
