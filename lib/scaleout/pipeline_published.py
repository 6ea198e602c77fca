"""Pipeline schedules and micro-batch sizes beside published measurements.

Taught in chapter 5 ("Pipeline parallelism"). The simulator of :mod:`scaleout.pipeline`
predicts step times; here its predictions sit beside measurements published by others,
with nothing fitted: every input is a number the source states. Every published number
(measurements, read-off values, setups, profiled times) is a row of
``scaleout/data/pipeline.csv`` with its references.bib key, locator and kind.

* **Qi et al. 2024** (zero bubble; the version of ``paper.pdf`` in the authors'
  repository sail-sg/zero-bubble-pipeline-parallelism, commit 3a91d0c): Table 4 measures
  samples per GPU per second of 1F1B, 1F1B-I (interleaved), ZB-1p and ZB-2p for four GPT
  models on 8 to 32 A100 80 GB GPUs (RoCE between nodes); Table 3 gives each model's
  stages p, micro-batch size b and layers; Table 9 the profiled times T_F, T_B, T_W and
  T_comm (ms) that feed the simulator. 1F1B-I uses one layer per chunk (Section 5.1), so
  v = layers of a middle stage, (layers + 2) / p (the first and last stage hold one layer
  fewer, which the simulator's equal stages do not model). ZB-1p is priced as ZB-H1 (the
  paper's Table 5 gives the two identical bubble rates in all 12 settings); ZB-2p as no
  bubble at all, m (T_F + T_B + T_W), the paper's own upper bound.
* **Narayanan et al. 2021** (SC21), Figure 12: interleaved against non-interleaved 1F1B
  for GPT-3 175B on 96 GPUs, read off the figure (to about 2 TFLOP/s); t = 8, p = 12,
  b = 1, v = 4 (2 of a stage's 8 layers per chunk) and m = B from ``run_figure_12.sh``
  (``megatronsc21``). Messages are priced at 0 (the paper gives no time for them).
* **Huang et al. 2019** (GPipe), Table 2: normalised throughput with K partitions and M
  micro-batches on TPUs (AmoebaNet-D and Transformer-48), priced as GPipe schedules of one
  fixed batch cut into M micro-batches over K equal stages.
* **Micro-batch size** (SC21): Figure 16 (measured, read off the figure) sweeps b for a
  91B GPT model (32 layers, h = 15360, 128 heads, s = 2048, t = 8, p = 8, B = 128 and 512,
  full recomputation, fp16; ``run_figure_16.sh``); Figure 7 measures one GPU running a
  4-layer model (h = 4096, 128 heads). Stage times t_f(b), t_b(b) come from chapter 14's
  compute model (:func:`scaleout.compute.layer_time`, A100 80 GB, no FlashAttention as in
  2021 Megatron).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from . import checks, data
from . import compute as C
from . import pipeline as P
from .compute.validation import spearman

#: Every number below comes from ``scaleout/data/pipeline.csv`` (one number a row, each with
#: its source key, locator and kind; ``study`` names the table or figure).
_DATA = data.load("pipeline")


def _whole(v: data.Value) -> int:
    """The row's value as an ``int`` (the loader reads most units as float)."""
    if not float(v.value).is_integer():
        raise ValueError(f"pipeline.csv row {v.key!r} must be a whole number, got {v.value!r}")
    return int(v.value)


def _rows_of(study, quantity, **setting):
    """The rows of ``study`` giving ``quantity`` whose setting matches, in file order."""
    out = [v for v in _DATA if v.get("study") == study and v.get("quantity") == quantity
           and all(v.get(k) == str(x) for k, x in setting.items())]  # fmt: skip
    if not out:
        raise ValueError(f"pipeline.csv has no {quantity!r} row of {study!r} with {setting}")
    return out


def _one(study, quantity, **setting) -> data.Value:
    """The one row of ``study`` giving ``quantity`` in the setting (two are an error)."""
    rows = _rows_of(study, quantity, **setting)
    if len(rows) != 1:
        raise ValueError(f"pipeline.csv must have one {quantity!r} row of {study!r} with "
                         f"{setting}, has {len(rows)}")  # fmt: skip
    return rows[0]


def _stated(study, quantity, **setting) -> int:
    """The one whole number of ``study`` giving ``quantity``."""
    return _whole(_one(study, quantity, **setting))


def _source(study, quantity="throughput") -> str:
    """The references.bib key of ``study``'s measurements."""
    (key,) = {v.source for v in _rows_of(study, quantity)}
    return key


def _models(study) -> tuple[str, ...]:
    return tuple(dict.fromkeys(v.get("model") for v in _DATA if v.get("study") == study))


QI = f"{_source('qi2024')} Table 4 (measured), Tables 3 and 9 (setup, profiled times)"
SC21_FIG12 = (f"{_source('sc21-fig12')} Figure 12 (read off), "
              f"{_source('sc21-fig12', 'pipeline stages')} run_figure_12.sh")  # fmt: skip
GPIPE = f"{_source('gpipe', 'normalised throughput')} Table 2"
SC21_FIG16 = (
    "narayanan2021megatronarxiv Figure 16 (read off), Section 5.5; "
    f"{_source('sc21-fig16', 'pipeline stages')} run_figure_16.sh"
)
SC21_FIG7 = f"{_source('sc21-fig7')} Figure 7 (read off), Section 3.4"
#: The simulator's schedule for each published one; "none" means no bubble (the ideal time).
SIMULATED = {"1F1B": "1f1b", "1F1B-I": "interleaved", "ZB-1p": "zb-h1", "ZB-2p": "none",
             "non-interleaved": "1f1b", "interleaved": "interleaved", "GPipe": "gpipe"}  # fmt: skip
_QI_TIMES = ("T_F", "T_B", "T_W", "T_comm")


def _qi_setup(model):
    ms = tuple(
        dict.fromkeys(int(v.get("m")) for v in _rows_of("qi2024", "throughput", model=model))
    )
    return (_stated("qi2024", "pipeline stages", model=model),
            _stated("qi2024", "micro-batch size", model=model),
            _stated("qi2024", "layers", model=model), ms)  # fmt: skip


#: Qi et al.'s setups, model -> (pipeline stages p, micro-batch size b, layers, micro-batch
#: counts), their Table 3 (the counts are Table 4's); one GPU a stage.
QI_SETUP = {model: _qi_setup(model) for model in _models("qi2024")}
# Table 4, samples per GPU per second, one value per micro-batch count.
_QI_MEASURED = {
    model: {s: tuple(v.value for v in _rows_of("qi2024", "throughput", model=model, schedule=s))
            for s in dict.fromkeys(v.get("schedule")
                                   for v in _rows_of("qi2024", "throughput", model=model))}
    for model in QI_SETUP
}  # fmt: skip
#: Qi et al.'s Table 9, model -> one (T_F, T_B, T_W, T_comm) in ms per micro-batch count of
#: :data:`QI_SETUP`.
QI_PROFILE = {
    model: tuple(tuple(_one("qi2024", q, model=model, m=m).value for q in _QI_TIMES)
                 for m in ms)
    for model, (_, _, _, ms) in QI_SETUP.items()
}  # fmt: skip
# SC21 Figure 12: batch size -> (non-interleaved, interleaved) TFLOP/s per GPU, read off.
_FIG12 = {
    int(B): tuple(_stated("sc21-fig12", "throughput", batch=B, schedule=s)
                  for s in ("non-interleaved", "interleaved"))
    for B in dict.fromkeys(v.get("batch") for v in _rows_of("sc21-fig12", "throughput"))
}  # fmt: skip
#: SC21 Figure 12's setup in run_figure_12.sh, pipeline stages ``p``, micro-batch size ``b``,
#: chunks per stage ``v`` (the interleaved runs hold 2 of a stage's 96 / 12 = 8 layers per
#: chunk), the tensor-parallel size ``t`` (not simulated: t p = 96 GPUs) and the global
#: ``batches`` the figure reads.
FIG12_SETUP = dict(
    p=_stated("sc21-fig12", "pipeline stages"),
    b=_stated("sc21-fig12", "micro-batch size"),
    v=_stated("sc21-fig12", "layers")
    // _stated("sc21-fig12", "pipeline stages")
    // _stated("sc21-fig12", "layers per virtual stage"),
    t=_stated("sc21-fig12", "tensor-parallel size"),
    batches=tuple(_FIG12),
)
# GPipe Table 2: model -> {(K, M): normalised throughput}.
_GPIPE = {model: {(int(v.get("p")), int(v.get("m"))): v.value
                  for v in _rows_of("gpipe", "normalised throughput", model=model)}
          for model in _models("gpipe")}  # fmt: skip
# SC21 Figure 16's readings and the 91B model's shape have one home, with the planner's other
# SC21 figures: data/planner_figures.csv (figure 16) and data/planner_models.csv.
_FIG16_ROWS = [v for v in data.load("planner_figures") if v.get("figure") == "16"]
_FIG16_MODEL = {v.get("field"): _whole(v) for v in data.load("planner_models")
                if v.get("model") == "91B (Fig. 16)"}  # fmt: skip
#: SC21 Figure 16, read off the figure, TFLOP/s per GPU by batch and micro-batch size (the
#: text says the best micro-batch size is 2).
FIG16_MEASURED = {
    int(B): {int(v.get("x")): _whole(v) for v in _FIG16_ROWS if v.get("batch") == B}
    for B in dict.fromkeys(v.get("batch") for v in _FIG16_ROWS)
}  # fmt: skip
#: SC21 Figure 7, read off the figure, TFLOP/s on one GPU by micro-batch size (the text says
#: up to 1.3 times from the smallest to the largest).
FIG7_MEASURED = {int(v.get("b")): _whole(v) for v in _rows_of("sc21-fig7", "throughput")}
#: The gains over 1F1B that Qi et al.'s abstract states, in per cent (up to), by the schedule
#: the book reads them as: ZB-1p (similar memory) and ZB-2p (memory limit relaxed).
QI_CLAIMED_GAIN = {
    v.get("schedule"): _whole(v) for v in _rows_of("qi2024-abstract", "throughput gain over 1F1B")
}
#: The 91B model of Figure 16 and the 1B model of Figure 7 (run_figure_16.sh, Section 3.4).
FIG16_LAYER = C.Layer(hidden=_FIG16_MODEL["hidden"], heads=_FIG16_MODEL["heads"],
                      seq=_stated("sc21", "sequence length"))  # fmt: skip
FIG16_SETUP = dict(n_layers=_FIG16_MODEL["layers"],
                   p=_stated("sc21-fig16", "pipeline stages"),
                   t=_stated("sc21-fig16", "tensor-parallel size"), recompute="full")  # fmt: skip
FIG7_LAYER = C.Layer(hidden=_stated("sc21-fig7", "hidden size"),
                     heads=_stated("sc21-fig7", "attention heads"),
                     seq=_stated("sc21", "sequence length"))  # fmt: skip
#: The layers of Figure 7's 1B model (its caption).
FIG7_LAYERS = _stated("sc21-fig7", "layers")


@dataclass(frozen=True)
class Row:
    """One published measurement beside the simulator's prediction for it."""

    source: str
    setting: str  # what the source varies, e.g. "1.5B, p = 8, m = 24"
    schedule: str  # the source's name for it
    measured: float
    predicted: float
    unit: str

    def __post_init__(self):
        for name in ("source", "setting", "schedule", "unit"):
            checks.text(name, getattr(self, name), 200)
        checks.positive("measured", self.measured, 1e12)
        checks.positive("predicted", self.predicted, 1e12)

    @property
    def error(self) -> float:
        """predicted / measured - 1."""
        return self.predicted / self.measured - 1.0


def step_ms(sim, p, m, t_f, t_b, t_w=None, t_comm=0.0, v=1) -> float:
    """Simulated step time of schedule ``sim`` (a ``scaleout.pipeline.SCHEDULES`` name, or
    ``"none"``: no bubble, m (t_f + t_b)), in the unit of the times given."""
    if checks.choice("sim", sim, (*P.SCHEDULES, "none")) == "none":
        P.schedule("1f1b", p, m, t_f=t_f, t_b=t_b, t_comm=t_comm)  # same input checks
        return float(checks.integer("m", m, 1) * (t_f + t_b))
    extra = {"t_w": t_w} if sim == "zb-h1" else {}
    return P.schedule(sim, p, m, v, t_f=t_f, t_b=t_b, t_comm=t_comm, **extra).makespan


@functools.cache
def qi2024_rows() -> tuple[Row, ...]:
    """Qi et al.'s Table 4 against the simulator fed with their Table 9: samples per GPU
    per second, m b / (step p), for each model, micro-batch count and schedule."""
    rows = []
    for model, (p, b, layers, ms) in QI_SETUP.items():
        for i, m in enumerate(ms):
            t_f, t_bb, t_ww, t_comm = QI_PROFILE[model][i]
            for sched, values in _QI_MEASURED[model].items():
                sim, v = SIMULATED[sched], (layers + 2) // p if sched == "1F1B-I" else 1
                ms_step = step_ms(sim, p, m, t_f, t_bb + t_ww, t_ww, t_comm, v)
                rows.append(Row(QI, f"{model}, p = {p}, m = {m}", sched, values[i],
                                m * b / (ms_step / 1e3) / p, "samples/s per GPU"))  # fmt: skip
    return tuple(rows)


def relative(rows, baseline) -> tuple[Row, ...]:
    """Each row's throughput over the ``baseline`` schedule's in the same setting (measured
    over measured, predicted over predicted): what a schedule gains, without the absolute
    level (optimizer step, embeddings, data loading) that the schedule does not decide."""
    rows = tuple(checks.instance("rows", r, Row) for r in _rows(rows))
    checks.text("baseline", baseline, 40)
    base = {r.setting: r for r in rows if r.schedule == baseline}
    if not base:
        raise checks.fail("baseline", "a schedule that the rows hold", baseline)
    out = []
    for r in rows:
        if r.schedule != baseline and r.setting in base:
            ref = base[r.setting]
            ratios = r.measured / ref.measured, r.predicted / ref.predicted
            out.append(Row(r.source, r.setting, f"{r.schedule} / {baseline}", *ratios, "ratio"))
    return tuple(out)


@functools.cache
def sc21_interleaving_rows() -> tuple[Row, ...]:
    """SC21 Figure 12: each point's TFLOP/s per GPU relative to the non-interleaved run at
    B = 12 (the reference, left out), predicted as the simulated speed (B / step) over the
    reference's. A throughput ratio at fixed FLOPs per sample is a speed ratio."""
    # full recomputation: t_b = 2 t_f + t_f
    p, b, v, t_f, t_b = FIG12_SETUP["p"], FIG12_SETUP["b"], FIG12_SETUP["v"], 1.0, 3.0
    speed = {(B, s): B / step_ms(s, p, B // b, t_f, t_b, v=v if s == "interleaved" else 1)
             for B in _FIG12 for s in ("1f1b", "interleaved")}  # fmt: skip
    rows = []
    for B, values in _FIG12.items():
        for k, sched in enumerate(("non-interleaved", "interleaved")):
            if (B, k) != (12, 0):
                rows.append(Row(SC21_FIG12, f"GPT-3 175B, p = {p}, B = m = {B}", sched,
                                values[k] / _FIG12[12][0],
                                speed[(B, SIMULATED[sched])] / speed[(12, "1f1b")],
                                "relative to non-interleaved, B = 12"))  # fmt: skip
    return tuple(rows)


@functools.cache
def gpipe_rows() -> tuple[Row, ...]:
    """GPipe's Table 2: throughput relative to K = 2, M = 1 (the reference, left out),
    predicted as K M / (M + K - 1) by simulating GPipe schedules of one batch of work 1
    over K equal stages and M micro-batches."""
    rows = []
    for model, table in _GPIPE.items():
        speed = {km: 1.0 / step_ms("gpipe", km[0], km[1], 1 / (3 * km[0] * km[1]),
                                   2 / (3 * km[0] * km[1])) for km in table}  # fmt: skip
        for (k, m), value in table.items():
            if (k, m) != (2, 1):
                ratio = speed[(k, m)] / speed[(2, 1)]
                rows.append(Row(GPIPE, f"{model}, K = {k}, M = {m}", "GPipe", value, ratio,
                                "relative to K = 2, M = 1"))  # fmt: skip
    return tuple(rows)


@functools.cache
def sc21_microbatch_rows() -> tuple[Row, ...]:
    """SC21 Figure 16: TFLOP/s per GPU at micro-batch size b relative to b = 1 (left out),
    for B = 128 and 512, predicted by :func:`microbatch_throughput` (1F1B, messages free)
    with the compute model's stage times."""
    rows = []
    for batch, measured in FIG16_MEASURED.items():
        bs = list(measured)
        speed = microbatch_throughput(FIG16_LAYER, FIG16_SETUP["n_layers"], FIG16_SETUP["p"],
                                      batch, bs, t=FIG16_SETUP["t"],
                                      recompute=FIG16_SETUP["recompute"])  # fmt: skip
        for b, s in zip(bs[1:], speed[1:], strict=True):
            rows.append(Row(SC21_FIG16, f"91B, p = 8, B = {batch}", f"1F1B, b = {b}",
                            measured[b] / measured[1], s / speed[0],
                            "relative to b = 1"))  # fmt: skip
    return tuple(rows)


def _rows(rows):
    if not isinstance(rows, tuple | list) or not 1 <= len(rows) <= 10_000:
        raise checks.fail("rows", "a tuple or list of 1 to 10,000 Row records", rows)
    return rows


@dataclass(frozen=True)
class Skill:
    """Error and skill of a set of rows: median and largest absolute error, Spearman's rank
    correlation of predicted against measured (``None`` if either is constant), and the
    share of pairs within one setting ordered the same way (``None`` where no setting holds
    two rows)."""

    n: int
    median_abs_error: float
    max_abs_error: float
    spearman: float | None
    pairs_ordered: float | None

    def __post_init__(self):
        checks.integer("n", self.n, 2, 10_000)
        checks.nonnegative("median_abs_error", self.median_abs_error, 1e12)
        checks.real("max_abs_error", self.max_abs_error, self.median_abs_error, 1e12)
        if self.spearman is not None:
            checks.real("spearman", self.spearman, -1.0, 1.0)
        if self.pairs_ordered is not None:
            checks.fraction("pairs_ordered", self.pairs_ordered)


def skill(rows) -> Skill:
    """:class:`Skill` of ``rows`` (at least two)."""
    rows = tuple(checks.instance("rows", r, Row) for r in _rows(rows))
    if len(rows) < 2:
        raise checks.fail("rows", "at least 2 rows", len(rows))
    err = np.abs([r.error for r in rows])
    rho = spearman(np.array([r.predicted for r in rows]), np.array([r.measured for r in rows]))
    same, total = 0, 0
    for i, a in enumerate(rows):
        for b in rows[i + 1 :]:
            if a.setting == b.setting and a.measured != b.measured:
                total += 1
                same += (a.predicted - b.predicted) * (a.measured - b.measured) > 0
    rho = None if np.isnan(rho) else rho
    ordered = float(same / total) if total else None
    return Skill(len(rows), float(np.median(err)), float(err.max()), rho, ordered)


def stage_times(layer, layers, b, gpu, t=1, recompute="none", flash=False, dtype="fp16"):
    """(t_f, t_b) in seconds of one micro-batch of ``b`` sequences through ``layers`` layers
    on one GPU of a ``t``-way tensor-parallel stage, from chapter 14's compute model
    (:func:`scaleout.compute.layer_time`; t_b includes the recomputation)."""
    layers = checks.positive("layers", layers, 1e5)
    lt = C.layer_time(layer, b, gpu, t=t, recompute=recompute, flash=flash, dtype=dtype)
    return layers * lt.seconds("forward"), layers * (lt.seconds("backward")
                                                      + lt.seconds("recompute"))  # fmt: skip


def microbatch_throughput(layer, n_layers, p, batch, bs, gpu="A100-80GB", t=1, name="1f1b",
                          recompute="full", flash=False, dtype="fp16") -> np.ndarray:  # fmt: skip
    """Sequences per second of one pipeline of ``p`` stages (``n_layers`` / p layers each)
    processing ``batch`` sequences as micro-batches of each size in ``bs`` (each a divisor
    of batch): batch / step, with the step simulated (``name``) from :func:`stage_times`.
    Narayanan et al. (SC21, Section 3.4, eq. 1) write it for 1F1B without messages."""
    n_layers = checks.integer("n_layers", n_layers, 1, 1 << 16)
    p = checks.integer("p", p, 1, P.MAX_STAGES)
    batch = checks.integer("batch", batch, 1, P.MAX_MICROBATCHES * C.MAX_MICROBATCH)
    bs = checks.array("bs", bs, ndim=1, integer=True, low=1, high=batch, max_size=64)
    if np.any(batch % bs):
        raise checks.fail("bs", f"divisors of batch = {batch}", bs.tolist())
    out = []
    for b in bs.tolist():
        t_f, t_b = stage_times(layer, n_layers / p, b, gpu, t, recompute, flash, dtype)
        out.append(batch / P.schedule(name, p, batch // b, t_f=t_f, t_b=t_b).makespan)
    return np.array(out)


def single_gpu_tflops(layer, bs, gpu="A100-80GB", dtype="fp16") -> np.ndarray:
    """Model TFLOP/s of one GPU running ``layer`` for each micro-batch size in ``bs`` (the
    compute model, no FlashAttention, no recomputation): what SC21's Figure 7 measures."""
    bs = checks.array("bs", bs, ndim=1, integer=True, low=1, high=C.MAX_MICROBATCH, max_size=64)
    return np.array([C.layer_time(layer, int(b), gpu, flash=False, dtype=dtype).tflops_per_gpu
                     for b in bs])  # fmt: skip
