"""Checkpoint intervals: Young's, Daly's, and the exact optimum of the goodput model.

Taught in chapter 17, "Failures, checkpoints and goodput" (``chapters/17_failures.ipynb``).
Units: seconds. ``checkpoint_s`` (C) is the time the job stops to write one checkpoint,
``mtbf_s`` (M) the job's mean time between failures; an *interval* (tau) is the compute time
between two checkpoints (the checkpoint itself not included).

Sources:

* J. W. Young, "A first order approximation to the optimum checkpoint interval",
  Communications of the ACM 17(9), 1974: tau = sqrt(2 C M), from minimising the expected
  time lost per failure to first order.
* J. T. Daly, "A higher order estimate of the optimum checkpoint interval for restart
  dumps", Future Generation Computer Systems 22(3), 2006, eq. (37):
  tau = sqrt(2 C M) [1 + (1/3) sqrt(C / 2M) + (1/9) (C / 2M)] - C  for C < 2M,
  tau = M  for C >= 2M.
* The exact optimum of the exponential model of
  :func:`scaleout.failures.renewal.goodput` (the model Daly's paper expands): maximising
  tau / (e^((tau + C)/M) - 1) gives e^((tau + C)/M) (1 - tau/M) = 1, whose solution is
  tau = M (1 + W0(-e^(-1 - C/M))) with W0 the principal branch of Lambert's W. The restart
  time does not move the optimum.

Every function is vectorised over numpy arrays of at most ``checks.MAX_ELEMENTS`` values and
takes finite, positive seconds up to :data:`MAX_SECONDS`.
"""

from __future__ import annotations

import numpy as np

from .. import checks

#: Largest time any argument may be (100 years, in seconds).
MAX_SECONDS = 100 * 365.25 * 86400.0


def _seconds(name: str, x, *, zero_ok: bool = False) -> np.ndarray:
    return checks.array(name, x, low=0.0, high=MAX_SECONDS, low_open=not zero_ok)


def _out(name: str, x):
    x = np.asarray(x, dtype=np.float64)
    checks.finite_result(name, x)
    return float(x) if x.ndim == 0 else x


def young(checkpoint_s, mtbf_s):
    """Young's interval sqrt(2 C M) in seconds (Young 1974). Vectorised."""
    c, m = _seconds("checkpoint_s", checkpoint_s), _seconds("mtbf_s", mtbf_s)
    return _out("interval", np.sqrt(2.0 * c * m))


def daly(checkpoint_s, mtbf_s):
    """Daly's higher-order interval in seconds (Daly 2006, eq. 37).

    sqrt(2 C M) [1 + sqrt(C/2M)/3 + (C/2M)/9] - C in its regime C < 2M; M beyond it (when
    a checkpoint takes longer than two MTBFs, checkpoint once per MTBF). Vectorised.
    """
    c, m = _seconds("checkpoint_s", checkpoint_s), _seconds("mtbf_s", mtbf_s)
    r = c / (2.0 * m)
    tau = np.sqrt(2.0 * c * m) * (1.0 + np.sqrt(r) / 3.0 + r / 9.0) - c
    return _out("interval", np.where(c < 2.0 * m, tau, m))


def lambert_w0(z):
    """Principal branch W0 of Lambert's W for real z in [-1/e, 0] (the range the optimum
    needs), by a branch-point series start and Halley's iteration; vectorised."""
    z = checks.array("z", z, low=-1.0 / np.e - 1e-15, high=0.0)
    return _out("W0", _w0_from_gap(np.maximum(np.e * z + 1.0, 0.0)))


def _w0_from_gap(gap: np.ndarray) -> np.ndarray:
    """W0(z) from gap = e z + 1 in [0, 1] (passing the gap keeps precision near -1/e)."""
    z = (gap - 1.0) / np.e
    p = np.sqrt(2.0 * gap)
    # the series about the branch point (Corless et al. 1996, eq. 4.22), then Halley's
    # iteration where it is not already exact to rounding
    w = -1.0 + p - p**2 / 3.0 + 11.0 / 72.0 * p**3 - 43.0 / 540.0 * p**4
    w = np.where(gap > 0.5, np.log1p(z), w)
    refine = gap > 1e-6
    for _ in range(6):  # cubic convergence: 6 steps from either start reach rounding
        ew = np.exp(w)
        f = w * ew - z
        wp1 = np.where(refine, w + 1.0, 1.0)
        denom = ew * wp1 - (w + 2.0) * f / (2.0 * wp1)
        step = np.where(refine & (denom != 0), f / np.where(denom != 0, denom, 1.0), 0.0)
        w = w - step
    return w


def optimal_interval(checkpoint_s, mtbf_s):
    """The interval that maximises :func:`scaleout.failures.renewal.goodput` exactly:
    M (1 + W0(-e^(-1 - C/M))) seconds. Vectorised."""
    c, m = _seconds("checkpoint_s", checkpoint_s), _seconds("mtbf_s", mtbf_s)
    ratio = c / m
    gap = -np.expm1(-ratio)  # e z + 1 with z = -e^(-1 - C/M), kept precise for small C/M
    return _out("interval", m * (1.0 + _w0_from_gap(gap)))
