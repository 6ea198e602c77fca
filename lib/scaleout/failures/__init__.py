"""Failures, checkpoints and goodput: what a large job loses to broken hardware.

Taught in chapter 17 (``chapters/17_failures.ipynb``). One concept per file:

* :mod:`.intervals`: Young's and Daly's checkpoint intervals and the exact optimum;
* :mod:`.renewal`: the closed-form goodput (its derivation in the module docstring), the
  job's MTBF from per-component failure rates;
* :mod:`.simulate`: a Monte Carlo of whole jobs that the closed form is tested against;
* :mod:`.checkpoint`: checkpoint sizes from the ZeRO chapter's accounting, and the
  synchronous, asynchronous and in-memory ways to write them;
* :mod:`.published`: Llama 3's, BLOOM's and OPT's published numbers (``data/failures.csv``).
"""

from .checkpoint import STRATEGIES, CheckpointSize, Strategy, best, checkpoint_size, strategies
from .intervals import daly, lambert_w0, optimal_interval, young
from .renewal import goodput, job_mtbf_s, max_restart_s, rate_per_gpu_hour
from .simulate import JobResult, expected_events, simulate_job

__all__ = [
    "STRATEGIES",
    "CheckpointSize",
    "JobResult",
    "Strategy",
    "best",
    "checkpoint_size",
    "daly",
    "expected_events",
    "goodput",
    "job_mtbf_s",
    "lambert_w0",
    "max_restart_s",
    "optimal_interval",
    "rate_per_gpu_hour",
    "simulate_job",
    "strategies",
    "young",
]
