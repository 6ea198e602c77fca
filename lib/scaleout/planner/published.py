"""Published training runs with full configurations, and the planner beside them.

Every :class:`Run` names its source (bibliography key and table or section) and what was
assumed where the source is silent (``assumed``). Measured throughputs are converted to
seconds per step with the source's own FLOP count: Narayanan et al. and BLOOM count
Narayanan's eq. 3 (full recomputation, ``Model.flops(B, "full")``), Llama 3 and Nemotron
model FLOPs (``Model.flops(B, "none")``); Korthikanti et al., MT-NLG and NVIDIA's DGXC
benchmark publish seconds per iteration.

* **A100** (Selene and Jean Zay): Narayanan et al. 2021 (SC21) Table 1, with each row's
  micro-batch, interleaving and DDP from the paper's own scripts (Megatron-LM
  ``examples/sc21/run_table_1.sh``, commit 6985e58); its Table 2 (PTD-P rows); its
  Figures 13-16 (``FIG_SWEEPS``: the plan varied on 64 GPUs, configurations from
  ``run_figure_13.sh`` to ``run_figure_16.sh``, values read off the figures' vector
  drawing); Korthikanti et al. 2022 Table 5 with the configurations of their Table 3 (v as
  calculon transcribes them) and 2022 Megatron-LM's TP overlap (``K5_TP``); MT-NLG 530B
  (Smith et al. 2022, Section 2.4); BLOOM 176B (BigScience 2022).
* **H100**: Llama 3 405B (Llama team 2024 [dubey2024llama3], Table 4 and Sec. 3.3.2),
  Nemotron-4 340B (NVIDIA 2024, Table 2), NVIDIA's DGXC benchmark of Nemotron-4 340B (NGC
  catalog, release 24.11).

Every number of these runs is a row of ``scaleout/data`` (``scaleout.data.load``): the
runs' measurements and plans in ``planner_runs.csv`` (setting ``run``, ``field``), the figure
readings in ``planner_figures.csv``, the shapes of the models defined here in
``planner_models.csv``; each row names its bibliography key, locator and kind (an assumed
field says why). What stays in code: the split (:data:`T1_FIT`), the software of each plan
(precision, recomputation, overlap), the alternatives tried and the provenance strings.

Where a source does not give a plan field (the chunks v of Llama 3 and Nemotron-4, the
interleaving of Table 2, MT-NLG's micro-batch) the run lists the plausible values
(``alternatives``): it belongs to the *assumption-dependent* group, and every error
statistic is also reported as the range it takes over those values
(:class:`~scaleout.planner.fit.Errors`).

Calibration (:mod:`scaleout.planner.fit`, which reads the runs from here): one constant per
GPU generation, a multiplier on the compute model's time, fitted (least squares on the log
of predicted over measured step time, golden-section search) on the runs marked ``fit`` and
nothing else; every other run is held out. Baselines
(:func:`~scaleout.planner.baselines.baselines`, in :mod:`scaleout.planner.baselines`; the
package :mod:`scaleout.planner` exports both), fitted the same way on the same runs: one
executed-FLOP/s rate per GPU generation, and that rate with the pipeline bubble; and, for
ranking, the parameter count (:func:`~scaleout.planner.baselines.rank_by_params`).
Skill: Spearman's rank correlation of predicted against measured executed FLOP/s per GPU
within each sweep (runs that vary one thing); in every figure sweep whether the
planner's best run is the measured best (:func:`~scaleout.planner.baselines.figure_sweeps`);
and for every Table 1 row whether the published plan is within 5 % of the planner's best
plan in the same software (search over t, p, d, b, v and recomputation with the run's precision,
attention and overlap).
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass

from .. import checks, data
from .. import overlap as OV
from .model import GPT3, LLAMA3_405B, Cluster, Model, a100_cluster, model_from_table
from .step import Plan

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
    alternatives: tuple = ()  # other plausible plans where ``assumed`` names a plan field
    uncertainty: float = 0.0  # of ``measured``, in its unit (a value read off a figure)

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
        if not isinstance(self.alternatives, tuple) or len(self.alternatives) > 16:
            raise checks.fail("alternatives", "a tuple of at most 16 Plan", self.alternatives)
        for alt in self.alternatives:
            checks.instance("alternatives", alt, Plan)
        if self.alternatives and not self.assumed:
            raise checks.fail("assumed", "the assumption the alternatives vary",
                              self.assumed)  # fmt: skip
        checks.nonnegative("uncertainty", self.uncertainty, self.measured)

    @property
    def group(self) -> str:
        """``"sourced"``, or ``"assumption-dependent"`` where a plan field the source does
        not give is varied over ``alternatives``."""
        return "assumption-dependent" if self.alternatives else "sourced"

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


def _integral(what: str, x: float) -> int:
    if x != int(x):
        raise ValueError(f"{what} must be a whole number in the data, got {x!r}")
    return int(x)


#: Llama 3's runs are rows 1 and 2 of its Table 4, whose home is ``data/context_parallel.csv``
#: (chapter 8 reads the whole table): the row -> the run, and the table's columns -> the
#: run's fields. The batch is the table's batch size per DP rank times DP.
LLAMA3_TABLE4_ROWS = {"1": "Llama 3 8192", "2": "Llama 3 16384"}
_TABLE4_FIELDS = {"gpus": "gpus", "tp": "t", "pp": "p", "printed_dp": "d",
                  "tflops_per_gpu": "tflops"}  # fmt: skip


@functools.lru_cache(maxsize=1)
def _run_rows() -> dict:
    """Every published number of the runs by (run, field): ``data/planner_runs.csv``, and
    Llama 3's Table 4 columns from ``data/context_parallel.csv``."""
    rows = {(v.get("run"), v.get("field")): v for v in data.load("planner_runs")}
    table4 = {(v.get("row"), v.get("quantity")): v for v in data.load("context_parallel")
              if v.get("table") == "llama3" and v.get("row") in LLAMA3_TABLE4_ROWS}  # fmt: skip
    for row, run in LLAMA3_TABLE4_ROWS.items():
        for column, field in _TABLE4_FIELDS.items():
            rows[run, field] = table4[row, column]
        per_dp, d = table4[row, "batch_per_dp"], table4[row, "printed_dp"]
        rows[run, "batch"] = dataclasses.replace(per_dp, value=per_dp.value * d.value)
    return rows


def _num(run: str, field: str) -> float:
    return _run_rows()[(run, field)].value


def _int(run: str, field: str) -> int:
    return _integral(f"{run} {field}", _num(run, field))


def _run_names(prefix: str) -> tuple:
    """The runs of ``data/planner_runs.csv`` whose name starts with ``prefix``, in file order."""
    return tuple(dict.fromkeys(r for r, _ in _run_rows() if r.startswith(prefix)))


def _model(name: str, **kw) -> Model:
    """Model ``name`` with the shape fields ``data/planner_models.csv`` gives it."""
    fields = {v.get("field"): _integral(f"{name} {v.get('field')}", v.value)
              for v in data.load("planner_models") if v.get("model") == name}  # fmt: skip
    return Model(name, **fields, **kw)


SC21 = dict(recompute="full", precision="megatron-fp16", flash=False, overlap="none")
#: The Table 1 rows the calibration is fitted on (every other run is held out).
T1_FIT = ("1.7B", "18.4B", "145.6B", "1T")
# name, t, p, GPUs, B, TFLOP/s, micro-batch, v, torch DDP (overlapped), split: the rows
# "T1 <name>" of data/planner_runs.csv
_T1 = tuple(
    (r[3:], _int(r, "t"), _int(r, "p"), _int(r, "gpus"), _int(r, "batch"), _int(r, "tflops"),
     _int(r, "micro_batch"), _int(r, "v"), bool(_int(r, "torch_ddp")),
     "fit" if r[3:] in T1_FIT else "held-out")
    for r in _run_names("T1 ")
)  # fmt: skip
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
#: Where Table 2's split of the model-parallel size and its interleaving come from.
_T2_WHY = {
    GPT3.name: "the paper's GPT-3 runs on p = 12 (run_figure_12.sh: 2 layers per virtual stage)",
    MT530.name: "Table 1's 529.6B row (run_table_1.sh)",
}


def _table2() -> list[Run]:
    out = []
    models = {GPT3.name: GPT3, MT530.name: MT530}
    for r in _run_names("T2 "):
        model = models[r[3:].rsplit(" ", 1)[0]]
        t, p, v, n, batch = (_int(r, f) for f in ("t", "p", "v", "gpus", "batch"))
        plan = Plan(t, p, n // (t * p), _int(r, "micro_batch"), v, dp_overlap=False, **SC21)
        alt = Plan(t, p, n // (t * p), _int(r, "micro_batch"), 1, dp_overlap=False, **SC21)
        out.append(Run(f"T2 {model.name} {n}", model, _selene(n), batch, plan,
                       _int(r, "tflops"), "eq3", "held-out", f"Narayanan Table 2, {model.name}",
                       "narayanan2021megatron Table 2 (PTD-P rows)",
                       f"v = {v} as {_T2_WHY[model.name]}; or v = 1",
                       alternatives=(alt,)))  # fmt: skip
    return out


KORTHIKANTI_MODELS = {
    "22B": _model("22B"),
    "175B": GPT3,
    "530B": MT530,
    "1T": model_from_table("1T"),
}
#: The tensor-parallel schedule of Korthikanti et al.'s runs, Megatron-LM's of 2022, the
#: one :mod:`scaleout.compute.validation` prices their Table 4 with. (calculon's
#: transcription sets ``"tensor_par_overlap": "none"``; the paper and Megatron-LM's code of
#: the time overlap the backward collectives: see :data:`scaleout.overlap.MEGATRON_2022`.)
K5_TP = OV.MEGATRON_2022
# model, t, p, GPUs, B, micro-batch, v, full-recompute s, selective+SP s: the rows
# "K5 <model>" of data/planner_runs.csv
_K5 = tuple(
    (r[3:], *(_int(r, f) for f in ("t", "p", "gpus", "batch", "micro_batch", "v")),
     _num(r, "seconds_full"), _num(r, "seconds_selective"))
    for r in _run_names("K5 ")
)  # fmt: skip


def _korthikanti() -> list[Run]:
    out = []
    for name, t, p, n, batch, b, v, full_s, present_s in _K5:
        model = KORTHIKANTI_MODELS[name]
        for rec, sp, seconds in (("full", False, full_s), ("selective", True, present_s)):
            # the TP schedule of 2022's Megatron-LM, the one chapter 14 prices their
            # Table 4 with (overlap.MEGATRON_2022); v from calculon's transcription
            plan = Plan(t, p, 1, b, v, recompute=rec, sp=sp, overlap=K5_TP.overlap,
                        precision="megatron-bf16", flash=False,
                        regather=K5_TP.regather(sp) if sp else None)  # fmt: skip
            out.append(Run(f"K5 {name} {rec}", model, _selene(n), batch, plan, seconds,
                           "seconds", "held-out", f"Korthikanti Table 5, {name}",
                           "korthikanti2022reducing Tables 3 and 5; v: calculonvalidation; "
                           "TP overlap and SP re-gather: overlap.MEGATRON_2022"))  # fmt: skip
    return out


#: The micro-batches MT-NLG's runs are priced at (the source does not give it): the
#: data's nominal b first, then this one.
_MTNLG_ALT_B = 2


def _mtnlg() -> list[Run]:
    out = []
    for r in _run_names("MT-NLG "):
        t, p, n, b = (_int(r, f) for f in ("t", "p", "gpus", "micro_batch"))
        plan, alt = (Plan(t, p, n // (t * p), bb, zero=_int(r, "zero"), dp_overlap=False,
                          precision="megatron-bf16", flash=False)
                     for bb in (b, _MTNLG_ALT_B))  # fmt: skip
        out.append(Run(f"MT-NLG {n}", MT530, _selene(n), _int(r, "batch"), plan,
                       _num(r, "seconds"), "seconds", "held-out", "MT-NLG GPUs",
                       "smith2022mtnlg Section 2.4",
                       "DeepSpeed pipeline (no interleaving), ZeRO-1; micro-batch not given: "
                       f"b = {b}, or {_MTNLG_ALT_B}", alternatives=(alt,)))  # fmt: skip
    return out


BLOOM = _model("BLOOM-176B", positions=False)


def _bloom() -> list[Run]:
    r = "BLOOM 176B"
    n = _int(r, "gpus")
    jean_zay = Cluster(f"{n} A100 (Jean Zay)", n, nics_per_node=_int(r, "nics_per_node"),
                       nic_gbps=_num(r, "nic_gbps"))  # fmt: skip
    plan = Plan(*(_int(r, f) for f in ("t", "p", "d", "micro_batch")), zero=_int(r, "zero"),
                dp_overlap=False, precision="megatron-bf16", flash=False)  # fmt: skip
    return [
        Run(
            r,
            BLOOM,
            jean_zay,
            _int(r, "batch"),
            plan,
            _int(r, "tflops"),
            "eq3",
            "held-out",
            "BLOOM",
            "bigscience2022bloom (model card: about 150 TFLOP/s per GPU)",
            "micro-batch 2 (tr11-176B-ml script); 4 x 100 Gb/s Omni-Path per node",
        )
    ]


NEMOTRON4_340B = _model("Nemotron-4-340B", tied_embeddings=False, positions=False)
H100_RUN = dict(sp=True, overlap="megatron", precision="megatron-bf16", flash=True,
                zero=_int("Nemotron-4 340B 6144", "zero"), recompute="none")  # fmt: skip
#: Llama 3's plan fields. Its FSDP (dubey2024llama3, Sec. 3.3.2) shards optimizer states
#: and gradients and keeps the weights gathered after the forward (ZeRO-2), gradients
#: reduce-scattered in fp32 (4 B, Megatron's bf16 accounting), 8K sequences without
#: activation checkpointing.
LLAMA3_RUN = dict(H100_RUN, zero=_int("Llama 3 8192", "zero"))
#: The chunks v tried where the sources do not give them. Both runs use an interleaved
#: schedule (Llama 3 Sec. 3.3.2 and Fig. 6; Nemotron-4 Sec. 3.1), and 8 layers per stage
#: allow 2, 4, 8.
H100_VS = (2, 4, 8)


def _vs_order(v: int) -> tuple:
    """The nominal ``v`` (the data's assumed value) first, then the other :data:`H100_VS`."""
    return (v,) + tuple(x for x in H100_VS if x != v)


_VS_ORDER = _vs_order(_int("Llama 3 8192", "v"))


def _h100() -> list[Run]:
    from .model import h100_cluster

    out = []
    for r in _run_names("Llama 3 "):
        t, p, n, d, b = (_int(r, f) for f in ("t", "p", "gpus", "d", "micro_batch"))
        sw = dict(LLAMA3_RUN, zero=_int(r, "zero"))
        plan, *alts = (Plan(t, p, d, b, v, **sw) for v in _vs_order(_int(r, "v")))
        out.append(Run(f"Llama 3 {n}", LLAMA3_405B, h100_cluster(n), _int(r, "batch"), plan,
                       _int(r, "tflops"), "model", "held-out", "Llama 3 405B GPUs",
                       "dubey2024llama3 Table 4, Sec. 3.3.2",
                       "interleaved, v not given: v = 4, or 2 or 8; b = 1",
                       alternatives=tuple(alts)))  # fmt: skip
    r = "Nemotron-4 340B 6144"
    t, p, n, d, b = (_int(r, f) for f in ("t", "p", "gpus", "d", "micro_batch"))
    sw = dict(H100_RUN, zero=_int(r, "zero"))
    plan, *alts = (Plan(t, p, d, b, v, **sw) for v in _vs_order(_int(r, "v")))
    out.append(Run(r, NEMOTRON4_340B, h100_cluster(n), _int(r, "batch"), plan,
                   _num(r, "seconds"), "seconds", "held-out", "Nemotron-4 340B",
                   "nvidia2024nemotron Table 2",
                   "interleaved, v not given: v = 4, or 2 or 8; b = 1, no recomputation",
                   alternatives=tuple(alts)))  # fmt: skip
    r = "Nemotron-4 340B DGXC 128"
    n = _int(r, "gpus")
    sw = dict(H100_RUN, zero=_int(r, "zero"))
    plan = Plan(*(_int(r, f) for f in ("t", "p", "d", "micro_batch", "v")), **sw)
    out.append(Run(r, NEMOTRON4_340B, h100_cluster(n), _int(r, "batch"), plan,
                   _num(r, "seconds"), "seconds", "fit", "Nemotron-4 340B DGXC",
                   "nvidiadgxc2024nemotron (NGC DGXC benchmarking, 24.11, BF16)",
                   "no recomputation"))  # fmt: skip
    return out


#: Narayanan et al.'s figure sweeps on 64 A100 GPUs (Selene), each configuration from
#: Megatron-LM ``examples/sc21/run_figure_1x.sh`` (fp16, full recomputation
#: ``--activations-checkpoint-method uniform``, ``--DDP-impl local``, micro-batch 1 unless
#: swept, no interleaving, s = 2048, V = 51,200). The paper prints no numbers for them:
#: the achieved TFLOP/s per GPU (eq. 3) were read from the marker centres of the vector
#: drawing in the arXiv v5 PDF through the y axis's tick marks. Every reading lies within
#: 0.01 TFLOP/s of an integer (the plotted data were integers), so the uncertainty is the
#: plotted values' rounding, 0.5 TFLOP/s. The readings are ``data/planner_figures.csv``, the
#: models' shapes ``data/planner_models.csv``.
FIG_MODELS = {
    13: _model("162.2B (Fig. 13)"),
    14: _model("5.9B (Figs. 14-15)"),
    16: _model("91B (Fig. 16)"),
}
FIG_MODELS[15] = FIG_MODELS[14]


def _fig_sweeps() -> dict:
    """{figure: (what varies, its values, {global batch: TFLOP/s per GPU read})} from the
    rows of ``data/planner_figures.csv``, in file order."""
    out = {}
    for v in data.load("planner_figures"):
        fig, batch, x = (_integral(c, float(v.get(c))) for c in ("figure", "batch", "x"))
        what, xs, by_batch = out.setdefault(fig, (v.get("varies"), {}, {}))
        xs.setdefault(x, None)
        by_batch.setdefault(batch, []).append(_integral(f"Figure {fig} reading", v.value))
    for fig, (_, xs, by_batch) in out.items():
        if any(len(vals) != len(xs) for vals in by_batch.values()):
            raise ValueError(f"planner_figures.csv: Figure {fig} needs one reading per x and batch")
    return {fig: (what, tuple(xs), {b: tuple(vals) for b, vals in by_batch.items()})
            for fig, (what, xs, by_batch) in out.items()}  # fmt: skip


FIG_SWEEPS = _fig_sweeps()


def _one_reading() -> float:
    (reading,) = {v.uncertainty for v in data.load("planner_figures")}  # one for all
    return reading


#: The reading uncertainty of every value of ``FIG_SWEEPS``, in TFLOP/s (one for all).
FIG_READING = _one_reading()
SC21_FIG = dict(SC21, dp_overlap=False)


def fig_plan(figure: int, x: int) -> Plan:
    """The plan of Narayanan et al.'s Figure ``figure`` (13-16) at the swept value ``x``
    (the first of the figure's pair, or the micro-batch), on 64 GPUs."""
    figure = checks.choice("figure", figure, tuple(FIG_SWEEPS))
    checks.choice("x", x, FIG_SWEEPS[figure][1])
    if figure == 13:
        return Plan(64 // x, x, 1, 1, **SC21_FIG)
    if figure == 14:
        return Plan(1, x, 64 // x, 1, **SC21_FIG)
    if figure == 15:
        return Plan(x, 1, 64 // x, 1, **SC21_FIG)
    return Plan(8, 8, 1, x, **SC21_FIG)


def _figures() -> list[Run]:
    out = []
    for fig, (_what, xs, readings) in FIG_SWEEPS.items():
        for batch, values in readings.items():
            for x, value in zip(xs, values, strict=True):
                plan = fig_plan(fig, x)
                label = {13: f"p={x} t={64 // x}", 14: f"p={x} d={64 // x}",
                         15: f"t={x} d={64 // x}", 16: f"b={x}"}[fig]  # fmt: skip
                out.append(Run(
                    f"F{fig} B={batch} {label}", FIG_MODELS[fig], _selene(64), batch, plan,
                    value, "eq3", "held-out", f"Narayanan Fig. {fig}, B = {batch}",
                    f"narayanan2021megatronarxiv Figure {fig} (read off the figure's vector "
                    f"drawing, +-{FIG_READING} TFLOP/s); megatronsc21 run_figure_{fig}.sh",
                    uncertainty=FIG_READING,
                ))  # fmt: skip
    return out


@functools.lru_cache(maxsize=1)
def runs() -> tuple[Run, ...]:
    """Every published run of the table, A100 first."""
    return tuple(
        _table1() + _table2() + _korthikanti() + _mtnlg() + _bloom() + _h100() + _figures()
    )
