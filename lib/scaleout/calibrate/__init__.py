"""Your own cluster: read nccl-tests and GEMM measurements, calibrate the book's models.

Taught in chapter 18, "Your own cluster" (``chapters/18_calibrate.ipynb``). The parts:

* :mod:`~scaleout.calibrate.records` - ``Log``, ``Row``, ``Result``.
* :mod:`~scaleout.calibrate.nccl_tests` - ``parse_nccl_tests`` (one table, or the one of
  ``collective=``), ``parse_nccl_tests_all`` (every table), ``format_nccl_tests``.
* :mod:`~scaleout.calibrate.fit` - ``fit_latency_bandwidth`` (Huber IRLS, held out).
* :mod:`~scaleout.calibrate.judge` - ``compare``: a log beside chapter 10's NCCL model,
  verdicts per size regime, checks, evidence from the log's NCCL INFO lines.
* :mod:`~scaleout.calibrate.correct` - ``fit_corrections``: per-regime factors, held out.
* :mod:`~scaleout.calibrate.gemm` - GEMM sweeps (``mamf-finder.py``, CSV, ``sweep``) and
  ``calibrate_ceiling`` against chapter 14's compute model.
* :mod:`~scaleout.calibrate.replan` - plans re-ranked on the calibrated machine.
* :mod:`~scaleout.calibrate.gloo` - the book's gloo benchmark in nccl-tests' columns.
* :mod:`~scaleout.calibrate.published` - the public logs the chapter judges, with sources.
* ``python -m scaleout.calibrate LOG`` - the command line (:mod:`~scaleout.calibrate.report`).
"""

from .correct import Correction, fit_corrections
from .fit import Fit, fit_latency_bandwidth
from .gemm import CeilingFit, Sweep, calibrate_ceiling, read_gemm_csv, read_mamf, sweep
from .gloo import gloo_log, time_collective
from .judge import Comparison, compare, evidence
from .nccl_tests import format_nccl_tests, parse_nccl_tests, parse_nccl_tests_all
from .records import COLLECTIVES, Log, Result, Row
from .replan import Simulated, calibrated_cluster, rerank, simulated
from .report import report

__all__ = [
    "COLLECTIVES", "CeilingFit", "Comparison", "Correction", "Fit", "Log", "Result", "Row",
    "Simulated", "Sweep", "calibrate_ceiling", "calibrated_cluster", "compare", "evidence",
    "fit_corrections", "fit_latency_bandwidth", "format_nccl_tests", "gloo_log",
    "parse_nccl_tests", "parse_nccl_tests_all", "read_gemm_csv", "read_mamf", "report",
    "rerank", "simulated", "sweep", "time_collective",
]  # fmt: skip
