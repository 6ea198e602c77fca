"""Matrix-multiply sweeps: read them, and calibrate chapter 14's compute ceiling per GPU.

Two formats:

* the ML Engineering Open Book's ``mamf-finder.py`` (stas00/ml-engineering at 744d01e; also the
  earlier one-number lines ``  12 |  807.5 TFLOPS @ MxNxK | best: ...`` and, when no per-shape
  line survived, the final "best outcome" line, as pasted in that repository's issue 58 and
  pull request 60;
  ``compute/accelerator/benchmarks/mamf-finder.py``): one line per shape, ``  12 |  701.2(mean)
  698.1(median)  720.3(max) @ 4096x4096x4096 | best: ...``, written with ``\\r`` endings
  (each overwrites the last on a terminal, all stay in the ``--output_file``), the dtype on
  ``** Dtype: torch.bfloat16``, the device on the line after ``** Platform/Device info:``;
* a plain CSV with a header ``m,n,k,dtype,`` then ``seconds`` or ``tflops`` (what
  :func:`sweep` writes).

:func:`calibrate_ceiling` fits one factor, measured / model FLOP/s, on every other shape
(sorted by FLOPs) and reports the error on the rest. With ``gpu`` the model is
:func:`scaleout.compute.gemm_time` (tiles, waves, the MAMF-calibrated ceiling); the
calibrated ceiling is that ceiling times the factor, and ``compute_calibration`` (model /
measured time) is the multiplier :func:`scaleout.planner.step.predict` takes as
``calibration``. Without ``gpu`` (a CPU, say) the model is a plain line, ``seconds =
overhead + FLOPs / ceiling``, fitted robustly (:func:`~scaleout.calibrate.fit.robust_line`).
"""

from __future__ import annotations

import csv
import io
import re
import time
from dataclasses import dataclass

import numpy as np

from .. import checks, compute
from .. import hardware as H
from .fit import HOLDOUTS, fit_mask, robust_line

MAX_SHAPES = 100_000
MAX_DIM = 2**20
_MAMF = re.compile(r"^\s*\d+\s*\|\s*([\d.]+)\(mean\)\s+([\d.]+)\(median\)\s+([\d.]+)\(max\)\s*@"
                   r"\s*(\d+)x(\d+)x(\d+)")  # fmt: skip
# mamf-finder.py before the mean/median/max report (mid-2024): "  12 |  807.5 TFLOPS @ MxNxK"
_MAMF_OLD = re.compile(r"^\s*\d+\s*\|\s*([\d.]+)\s*TFLOPS\s*@\s*(\d+)x(\d+)x(\d+)")
# the summary when no per-shape line survived: "The best outcome was 821.0TFLOPS @ MxNxK" (old)
# or "mean:   701.2 TFLOPS @ MxNxK (MxNxK)" (744d01e)
_MAMF_BEST = re.compile(
    r"^(?:The best outcome was|mean:)\s*([\d.]+)\s*TFLOPS\s*@\s*(\d+)x(\d+)x(\d+)"
)
_DTYPES = {"bfloat16": "bf16", "bf16": "bf16", "float16": "fp16", "half": "fp16", "fp16": "fp16",
           "float32": "fp32", "fp32": "fp32", "float": "fp32", "float8_e4m3fn": "fp8",
           "fp8": "fp8", "tf32": "tf32"}  # fmt: skip


@dataclass(frozen=True)
class Sweep:
    """GEMM measurements: per shape ``m``, ``n``, ``k`` and achieved ``tflops`` (2 m n k /
    time / 1e12), one ``dtype``, the ``device`` as the file names it."""

    m: np.ndarray
    n: np.ndarray
    k: np.ndarray
    tflops: np.ndarray
    dtype: str
    device: str = ""

    def __post_init__(self):
        for name in ("m", "n", "k"):
            object.__setattr__(self, name, checks.array(
                name, getattr(self, name), ndim=1, low=1, high=MAX_DIM, integer=True,
                max_size=MAX_SHAPES))  # fmt: skip
        object.__setattr__(
            self,
            "tflops",
            checks.array(
                "tflops", self.tflops, ndim=1, low=0.0, low_open=True, max_size=MAX_SHAPES
            ),
        )
        if not isinstance(self.device, str) or len(self.device) > 200:
            raise checks.fail("device", "a string of at most 200 characters", self.device)
        if not (self.m.size == self.n.size == self.k.size == self.tflops.size):
            raise checks.fail("m", "arrays of one length", (self.m.size, self.tflops.size))
        checks.choice("dtype", self.dtype, tuple(sorted(set(_DTYPES.values()))))

    @property
    def flops(self) -> np.ndarray:
        return 2.0 * self.m * self.n * self.k

    @property
    def seconds(self) -> np.ndarray:
        return self.flops / (self.tflops * 1e12)


def _dtype(text: str) -> str:
    key = text.strip().removeprefix("torch.").lower()
    if key not in _DTYPES:
        raise checks.fail("dtype", f"one of {sorted(_DTYPES)}", text)
    return _DTYPES[key]


def _text(name, text):
    if not isinstance(text, str) or len(text) > 2**25:
        raise checks.fail(name, "a string of at most 2**25 characters", text)
    return text


def read_mamf(text: str) -> Sweep:
    """The per-shape mean TFLOP/s of a ``mamf-finder.py`` output (see the module docstring)."""
    lines = re.split(r"\r\n|\r|\n", _text("text", text))
    dtype, device, rows, best = None, "", [], []
    for i, line in enumerate(lines):
        if line.startswith("** Dtype:"):
            dtype = _dtype(line.split(":", 1)[1])
        elif line.startswith("** Platform/Device info:"):
            for nxt in lines[i + 1 : i + 4]:  # the device is the block's last line
                text_ = nxt.removeprefix("- ").strip()
                if not text_ or text_.startswith("**") or _MAMF.match(nxt):
                    break
                device = text_[:200]
        m = _MAMF.match(line)
        if m:
            rows.append((int(m[4]), int(m[5]), int(m[6]), float(m[1])))
            continue
        old = _MAMF_OLD.match(line)
        m = old or _MAMF_BEST.match(line.strip())
        if m:
            (rows if old else best).append((int(m[2]), int(m[3]), int(m[4]), float(m[1])))
    rows = rows or best
    if not rows:
        raise ValueError(
            "text must be mamf-finder.py output: found no '| ...(mean) ... @ MxNxK' lines"
        )
    if dtype is None:
        raise ValueError("text must name its dtype ('** Dtype: torch.bfloat16')")
    a = np.array(rows[:MAX_SHAPES], dtype=float)
    return Sweep(a[:, 0].astype(np.int64), a[:, 1].astype(np.int64),
                 a[:, 2].astype(np.int64), a[:, 3], dtype, device)  # fmt: skip


def read_gemm_csv(text: str) -> Sweep:
    """A CSV of ``m,n,k,dtype,seconds`` or ``m,n,k,dtype,tflops`` (one dtype)."""
    reader = csv.DictReader(io.StringIO(_text("text", text)))
    cols = set(reader.fieldnames or ())
    if not {"m", "n", "k", "dtype"} <= cols or not ({"seconds", "tflops"} & cols):
        raise ValueError(
            f"text must be a CSV with columns m,n,k,dtype and seconds or tflops, got {sorted(cols)}"
        )
    rows, dtypes = [], set()
    for i, r in enumerate(reader):
        if i >= MAX_SHAPES:
            raise ValueError(f"text must hold at most {MAX_SHAPES} shapes")
        try:
            m, n, k = int(r["m"]), int(r["n"]), int(r["k"])
            if r.get("tflops"):
                tf = float(r["tflops"])
            else:
                tf = 2.0 * m * n * k / float(r["seconds"]) / 1e12
        except (TypeError, ValueError, ZeroDivisionError):
            raise ValueError(f"text row {i + 2} must hold numbers, got {r}") from None
        dtypes.add(_dtype(r["dtype"]))
        rows.append((m, n, k, tf))
    if not rows or len(dtypes) != 1:
        raise ValueError(f"text must hold rows of one dtype, got {len(rows)} rows of {dtypes}")
    a = np.array(rows, dtype=float)
    if not np.all(np.isfinite(a)):
        raise ValueError("text must hold finite numbers")
    return Sweep(a[:, 0].astype(np.int64), a[:, 1].astype(np.int64),
                 a[:, 2].astype(np.int64), a[:, 3], dtypes.pop())  # fmt: skip


def sweep(shapes, dtype: str = "fp32", repeats: int = 3) -> str:
    """Time ``torch.mm`` on this machine's CPU for each (m, n, k) of ``shapes`` (at most 64,
    each dimension at most 4096) and return the CSV :func:`read_gemm_csv` reads: the best of
    ``repeats`` runs after one warm-up. Measured times vary from run to run."""
    shapes = checks.array("shapes", shapes, ndim=2, low=1, high=4096, integer=True, max_size=192)
    if shapes.shape[1] != 3:
        raise checks.fail("shapes", "an (n, 3) array of (m, n, k)", shapes.shape)
    dtype = checks.choice("dtype", dtype, ("fp32", "bf16"))
    repeats = checks.integer("repeats", repeats, 1, 20)
    import torch

    tdtype = {"fp32": torch.float32, "bf16": torch.bfloat16}[dtype]
    out = io.StringIO()
    out.write("m,n,k,dtype,seconds\n")
    for m, n, k in shapes.tolist():
        a, b = torch.randn(m, k, dtype=tdtype), torch.randn(k, n, dtype=tdtype)
        torch.mm(a, b)
        best = float("inf")
        for _ in range(repeats):
            start = time.perf_counter()
            torch.mm(a, b)
            best = min(best, time.perf_counter() - start)
        out.write(f"{m},{n},{k},{dtype},{max(best, 1e-9):.6e}\n")
    return out.getvalue()


@dataclass(frozen=True)
class CeilingFit:
    """The calibrated ceiling: ``ceiling_flops`` (FLOP/s), ``factor`` (measured / model;
    with a GPU, the book's ceiling times it is the calibrated one), ``overhead_s`` (the
    plain line's per-call time; 0 with a GPU), per shape (sorted by FLOPs) ``fitted`` and
    ``rel_err`` of the calibrated model's time; ``basis`` says which model."""

    ceiling_flops: float
    factor: float
    overhead_s: float
    flops: np.ndarray
    fitted: np.ndarray
    rel_err: np.ndarray
    basis: str

    def __post_init__(self):
        checks.positive("ceiling_flops", self.ceiling_flops, compute.gemm.MAX_FLOPS)
        checks.positive("factor", self.factor, 1e6)
        checks.nonnegative("overhead_s", self.overhead_s, 1e6)
        f = checks.array("flops", self.flops, ndim=1, low=0.0, low_open=True, max_size=MAX_SHAPES)
        e = checks.array("rel_err", self.rel_err, ndim=1, max_size=MAX_SHAPES)
        mask = self.fitted
        if not isinstance(mask, np.ndarray):
            raise checks.fail("fitted", "a boolean numpy array", mask)
        if e.shape != f.shape or mask.dtype != bool or mask.shape != f.shape:
            raise checks.fail("fitted", f"{f.size} booleans and errors, one per shape", mask)
        checks.text("basis", self.basis, 2000)

    @property
    def held_out_median_abs(self) -> float:
        e = np.abs(self.rel_err[~self.fitted])
        return float(np.median(e)) if e.size else float("nan")

    @property
    def compute_calibration(self) -> float:
        """The multiplier on the model's compute time (model speed / measured speed), the
        ``calibration`` argument of :func:`scaleout.planner.step.predict`."""
        return 1.0 / self.factor


def calibrate_ceiling(sweep: Sweep, gpu=None, holdout: str = "alternate") -> CeilingFit:
    """Calibrate the compute ceiling on ``sweep`` (see the module docstring): against
    chapter 14's GEMM model of ``gpu`` (a ``hardware.GPUS`` name), or a plain line."""
    checks.instance("sweep", sweep, Sweep)
    checks.choice("holdout", holdout, HOLDOUTS)
    order = np.argsort(sweep.flops, kind="stable")
    m, n, k = sweep.m[order], sweep.n[order], sweep.k[order]
    flops, seconds = sweep.flops[order], sweep.seconds[order]
    mask = fit_mask(flops.size, holdout)
    if mask.sum() < 2 or (holdout != "none" and mask.all()):
        raise checks.fail("sweep", "at least 3 shapes (2 fitted, 1 held out)", flops.size)
    if gpu is None:
        a, b = robust_line(flops[mask], seconds[mask])
        model = a + flops * b
        return CeilingFit(
            1.0 / b,
            1.0,
            a,
            flops,
            mask,
            (model - seconds) / seconds,
            "plain line: seconds = overhead + FLOPs / ceiling (Huber IRLS)",
        )
    row = H.gpu(gpu)
    ceiling = compute.ceiling(row, sweep.dtype)
    model_s = np.array([compute.gemm_seconds(int(a), int(b), int(c), row, sweep.dtype)
                        for a, b, c in zip(m, n, k, strict=True)])  # fmt: skip
    ratio = model_s / seconds  # measured speed / model speed
    factor = float(np.exp(np.mean(np.log(ratio[mask]))))
    rel = (model_s / factor - seconds) / seconds
    return CeilingFit(
        ceiling.flops * factor,
        factor,
        0.0,
        flops,
        mask,
        rel,
        f"compute.gemm_time on {row.name} {sweep.dtype}: {ceiling.basis}",
    )
