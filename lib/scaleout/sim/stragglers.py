"""Slow GPUs: a fixed slowdown per rank, or jitter drawn per rank and step.

A slowdown factor multiplies every computation a GPU runs (its forward, backward and
optimizer kernels; not the wire time of its collectives, which the slowest member sets
anyway). The simulator groups a stage's tensor-parallel GPUs into one unit: they meet in a
collective inside every layer, so the unit runs at its slowest member's pace.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import checks

MAX_FACTOR = 100.0
MAX_GPUS = 1 << 24


@dataclass(frozen=True)
class Lognormal:
    """Per-rank jitter, drawn afresh each step: rank r's factor is exp(sigma z_r) with z_r
    standard normal (median 1; sigma = 0.05 gives a typical +-5%). ``floor``: no factor
    below it (a GPU is never faster than its nominal speed when floor = 1, the default)."""

    sigma: float
    floor: float = 1.0

    def __post_init__(self):
        checks.real("sigma", self.sigma, 0.0, 1.0)
        checks.real("floor", self.floor, 0.0, 1.0)

    def draw(self, n: int, rng: np.random.Generator) -> np.ndarray:
        n = checks.integer("n", n, 1, MAX_GPUS)
        rng = checks.instance("rng", rng, np.random.Generator, "a numpy Generator")
        z = rng.standard_normal(n)
        return np.maximum(np.exp(self.sigma * z), self.floor)


def factors(stragglers, gpus: int, rng: np.random.Generator) -> np.ndarray:
    """Slowdown of every rank for one step, shape (gpus,): 1 everywhere for None, the given
    factors for a {rank: factor} dict (factor in [1, MAX_FACTOR]: a straggler is slower, not
    faster), or a :class:`Lognormal` draw."""
    gpus = checks.integer("gpus", gpus, 1, MAX_GPUS)
    rng = checks.instance("rng", rng, np.random.Generator, "a numpy Generator")
    out = np.ones(gpus)
    if stragglers is None:
        return out
    if isinstance(stragglers, Lognormal):
        return stragglers.draw(gpus, rng)
    if not isinstance(stragglers, dict) or len(stragglers) > gpus:
        raise checks.fail(
            "stragglers", f"None, a Lognormal, or a dict of at most {gpus} rank: factor", stragglers
        )
    for rank, factor in stragglers.items():
        r = checks.integer("a rank of stragglers", rank, 0, gpus - 1)
        out[r] = checks.real(f"stragglers[{r}]", factor, 1.0, MAX_FACTOR)
    return out


def check(stragglers):
    """``stragglers`` validated as far as it can be without the GPU count."""
    if stragglers is None or isinstance(stragglers, Lognormal | dict):
        return stragglers
    raise checks.fail("stragglers", "None, a {rank: factor} dict or a sim.Lognormal", stragglers)
