"""GPU counts: how many GPUs hold a model's bytes, and the smallest data-parallel degree at
which a model fits at each ZeRO stage.

Taught in chapter 6, "ZeRO sharding" (``chapters/06_zero.ipynb``); sources and units in
:mod:`scaleout.memory`.
"""

from __future__ import annotations

import numpy as np

from .. import checks
from .limits import DEFAULT_GPU_BYTES, SHARDED_FROM, _out, _reals, _stage
from .states import states_per_param


def gpus_to_hold(total_bytes, gpu_bytes=DEFAULT_GPU_BYTES, usable_fraction=1.0):
    """Fewest GPUs of ``gpu_bytes`` whose usable memory (``usable_fraction`` of it, in
    (0, 1]) adds up to ``total_bytes``: ceil(total / (gpu x fraction)). Vectorised."""
    total, gpu = _reals("total_bytes", total_bytes), _reals("gpu_bytes", gpu_bytes)
    frac = checks.array("usable_fraction", usable_fraction, low=0.0, high=1.0, low_open=True)
    return _out("GPUs", _ceil_div(total, gpu * frac))


def _ceil_div(num, den):
    """ceil(num / den) without float noise: 24e12 / 60e9 gives 400, not 401."""
    with np.errstate(over="ignore", invalid="ignore"):
        n = np.ceil(num / den)
        return np.where((n - 1) * den >= num * (1 - 1e-12), n - 1, n)


def min_dp_to_fit(params, stage, gpu_bytes=DEFAULT_GPU_BYTES, activation_bytes=0.0,
                  optimizer="adam", k=None, precision="mixed",
                  usable_fraction=1.0):  # fmt: skip
    """Smallest N_d at which model states + ``activation_bytes`` fit in ``usable_fraction``
    of ``gpu_bytes`` per device, or None if no N_d does (the unsharded part alone is too big).

    Solves replicated + sharded / N_d + activations <= usable for N_d, with the split of
    :func:`model_state_bytes`.
    """
    frac = checks.fraction("usable_fraction", usable_fraction, open_low=True)
    usable = checks.positive("gpu_bytes", gpu_bytes) * frac
    act = checks.nonnegative("activation_bytes", activation_bytes)
    psi = checks.positive("params", params)
    stage = _stage(stage)
    replicated = sharded = 0.0
    for s in states_per_param(optimizer, precision, k):
        if stage >= SHARDED_FROM[s.kind]:
            sharded += s.bytes_per_param * psi
        else:
            replicated += s.bytes_per_param * psi
    checks.finite_result("model-state bytes", replicated + sharded)
    room = usable - replicated - act
    if sharded == 0:
        return 1 if room >= 0 else None
    if room <= 0:
        return None
    need = float(_ceil_div(sharded, room))
    checks.finite_result("N_d", need)
    return max(1, int(need))
