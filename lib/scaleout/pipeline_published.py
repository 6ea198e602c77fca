"""Pipeline schedules and micro-batch sizes beside published measurements.

Taught in chapter 5 ("Pipeline parallelism"). The simulator of :mod:`scaleout.pipeline`
predicts step times; here its predictions sit beside measurements published by others,
with nothing fitted: every input is a number the source states.

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

from . import checks
from . import compute as C
from . import pipeline as P
from .compute.validation import spearman

QI = "qi2024zerobubble Table 4 (measured), Tables 3 and 9 (setup, profiled times)"
SC21_FIG12 = "narayanan2021megatron Figure 12 (read off), megatronsc21 run_figure_12.sh"
GPIPE = "huang2019gpipe Table 2"
SC21_FIG16 = "narayanan2021megatron Figure 16 (read off), Section 5.5; run_figure_16.sh"
SC21_FIG7 = "narayanan2021megatron Figure 7 (read off), Section 3.4"
#: The simulator's schedule for each published one; "none" means no bubble (the ideal time).
SIMULATED = {"1F1B": "1f1b", "1F1B-I": "interleaved", "ZB-1p": "zb-h1", "ZB-2p": "none",
             "non-interleaved": "1f1b", "interleaved": "interleaved", "GPipe": "gpipe"}  # fmt: skip

# Qi et al.: model -> (p, b, layers, micro-batch counts); Table 3.
_QI_SETUP = {"1.5B": (8, 6, 22, (24, 32, 64)), "6.2B": (8, 3, 30, (24, 32, 64)),
             "14.6B": (16, 1, 46, (48, 64, 128)), "28.3B": (32, 1, 62, (96, 128, 256))}  # fmt: skip
# Table 4, samples per GPU per second, one value per micro-batch count.
_QI_MEASURED = {
    "1.5B": {"ZB-2p": (14.5, 14.8, 14.9), "ZB-1p": (12.9, 13.4, 14.2),
             "1F1B": (11.8, 12.5, 13.6), "1F1B-I": (13.1, 13.4, 13.9)},
    "6.2B": {"ZB-2p": (4.32, 4.35, 4.39), "ZB-1p": (3.88, 4.00, 4.20),
             "1F1B": (3.50, 3.70, 4.03), "1F1B-I": (4.01, 4.08, 4.19)},
    "14.6B": {"ZB-2p": (1.81, 1.83, 1.85), "ZB-1p": (1.61, 1.67, 1.76),
              "1F1B": (1.40, 1.49, 1.64), "1F1B-I": (1.54, 1.59, 1.66)},
    "28.3B": {"ZB-2p": (0.99, 1.00, 1.00), "ZB-1p": (0.87, 0.90, 0.96),
              "1F1B": (0.76, 0.80, 0.88), "1F1B-I": (0.82, 0.85, 0.90)},
}  # fmt: skip
# Table 9: (T_F, T_B, T_W, T_comm) in ms, one tuple per micro-batch count.
_QI_PROFILE = {
    "1.5B": ((18.522, 18.086, 9.337, 0.601), (18.513, 18.086, 9.331, 0.626),
             (18.546, 18.097, 9.321, 0.762)),
    "6.2B": ((29.718, 29.444, 19.927, 0.527), (29.802, 29.428, 19.530, 0.577),
             (29.935, 29.621, 19.388, 0.535)),
    "14.6B": ((11.347, 11.248, 8.132, 0.377), (11.307, 11.254, 8.101, 0.379),
              (11.325, 11.308, 8.109, 0.378)),
    "28.3B": ((10.419, 10.207, 7.715, 0.408), (10.408, 10.204, 7.703, 0.408),
              (10.402, 10.248, 7.698, 0.460)),
}  # fmt: skip
# SC21 Figure 12: batch size -> (non-interleaved, interleaved) TFLOP/s per GPU, read off.
_FIG12 = {12: (82, 119), 24: (109, 134), 36: (122, 141), 48: (130, 143), 60: (135, 146)}
# GPipe Table 2: model -> {(K, M): normalised throughput}.
_GPIPE = {
    "AmoebaNet-D": {(2, 1): 1.0, (4, 1): 1.13, (8, 1): 1.38, (2, 4): 1.07, (4, 4): 1.26,
                    (8, 4): 1.72, (2, 32): 1.21, (4, 32): 1.84, (8, 32): 3.48},
    "Transformer-48": {(2, 1): 1.0, (4, 1): 1.07, (8, 1): 1.3, (2, 4): 1.7, (4, 4): 3.2,
                       (8, 4): 4.8, (2, 32): 1.8, (4, 32): 3.4, (8, 32): 6.3},
}  # fmt: skip
#: SC21 Figure 16, read off the figure, TFLOP/s per GPU by batch and micro-batch size (the
#: text says the best micro-batch size is 2).
FIG16_MEASURED = {128: {1: 156, 2: 159, 4: 139, 8: 120}, 512: {1: 162, 2: 171, 4: 160, 8: 154}}
#: SC21 Figure 7, read off the figure, TFLOP/s on one GPU by micro-batch size (the text says
#: up to 1.3 times from the smallest to the largest).
FIG7_MEASURED = {1: 68, 2: 78, 4: 86, 8: 89, 16: 91}
#: The 91B model of Figure 16 and the 1B model of Figure 7 (run_figure_16.sh, Section 3.4).
FIG16_LAYER = C.Layer(hidden=15360, heads=128, seq=2048)
FIG16_SETUP = dict(n_layers=32, p=8, t=8, recompute="full")
FIG7_LAYER = C.Layer(hidden=4096, heads=128, seq=2048)


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
    for model, (p, b, layers, ms) in _QI_SETUP.items():
        for i, m in enumerate(ms):
            t_f, t_bb, t_ww, t_comm = _QI_PROFILE[model][i]
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
    p, v, t_f, t_b = 12, 4, 1.0, 3.0  # full recomputation: backward = 2 t_f + recompute t_f
    speed = {(B, s): B / step_ms(s, p, B, t_f, t_b, v=v if s == "interleaved" else 1)
             for B in _FIG12 for s in ("1f1b", "interleaved")}  # fmt: skip
    rows = []
    for B, values in _FIG12.items():
        for k, sched in enumerate(("non-interleaved", "interleaved")):
            if (B, k) != (12, 0):
                rows.append(Row(SC21_FIG12, f"GPT-3 175B, p = 12, B = m = {B}", sched,
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
