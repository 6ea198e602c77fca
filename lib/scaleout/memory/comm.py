"""Communication of ZeRO's stages: volume per step (ZeRO Sec. 7), bytes per collective and
dtype, and how much of it the computation hides.

Taught in chapter 6, "ZeRO sharding" (``chapters/06_zero.ipynb``); sources and units in
:mod:`scaleout.memory`.
"""

from __future__ import annotations

import numpy as np

from .. import checks, overlap
from .limits import _QUIET, COMM_PATTERN, MAX_LAYERS, _counts, _out, _reals, _stage


@_QUIET
def comm_volume(params, stage: int, dp=None):
    """Elements each rank sends per training step (psi units): 2 psi for plain DP and ZeRO
    stages 1-2, 3 psi for stage 3 (ZeRO section 7.2; see ``COMM_PATTERN``). With ``dp`` the
    ring algorithms' exact factor (dp - 1) / dp is applied."""
    psi, stage = _reals("params", params), _stage(stage)
    volume = psi * sum(v for _, _, v in COMM_PATTERN[stage])
    if dp is not None:
        n = _counts("dp", dp)
        volume = volume * (n - 1) / n
    return _out("volume", volume)


#: Bytes per element of the data types a collective carries.
DTYPE_BYTES = {"fp32": 4, "bf16": 2, "fp16": 2, "fp8": 1}


def comm_bytes(params, stage: int, param_dtype: str = "bf16", grad_dtype: str = "fp32", dp=None):
    """Bytes each rank sends per training step: :func:`comm_volume`'s elements, each
    collective at its own data type (parameter all-gathers in ``param_dtype``, gradient
    all-reduces and reduce-scatters in ``grad_dtype``).

    The defaults are Megatron-LM's bf16 training (bf16 parameters, gradients reduced in fp32:
    ``accumulate_allreduce_grads_in_fp32``) and TorchTitan's FSDP2 (``param_dtype`` bf16,
    ``reduce_dtype`` fp32). Then plain DP sends 8 psi bytes, ZeRO-1/2 6 psi and ZeRO-3 8 psi:
    ZeRO-3 costs 1.0x DP and 1.33x ZeRO-2, not the 1.5x of the element count."""
    psi, stage = _reals("params", params), _stage(stage)
    p_bytes = DTYPE_BYTES[checks.choice("param_dtype", param_dtype, tuple(DTYPE_BYTES))]
    g_bytes = DTYPE_BYTES[checks.choice("grad_dtype", grad_dtype, tuple(DTYPE_BYTES))]
    per_elem = sum(v * (p_bytes if what.startswith(("parameters", "updated")) else g_bytes)
                   for _, what, v in COMM_PATTERN[stage])  # fmt: skip
    volume = psi * per_elem
    if dp is not None:
        n = _counts("dp", dp)
        volume = volume * (n - 1) / n
    return _out("volume", volume)


@_QUIET
def exposed_comm_seconds(comm_seconds, compute_seconds, pieces=1):
    """Communication time that overlap cannot hide, in seconds.

    Communication and computation are each cut into ``pieces`` equal parts (ZeRO-3: one per
    layer and pass) on two resources, the network and the GPU; part i must be communicated
    before it is computed (all-gather, then compute), while part i + 1 is communicated
    during part i's compute. The step then takes c + (n - 1) max(c, k) + k for parts of
    c = C/n and k = K/n seconds, so the exposed communication (step minus compute) is

        max(C, K) - K + min(C, K) / n,

    never below C - K: overlap hides at most min(C, K). With one piece nothing overlaps
    (C); with many, C - K when communication is the longer, C/n (the first all-gather)
    when compute is. Vectorised.
    """
    c = checks.array("comm_seconds", comm_seconds, low=0.0)
    k = checks.array("compute_seconds", compute_seconds, low=0.0)
    n = _counts("pieces", pieces, MAX_LAYERS)
    return _out("exposed seconds", overlap.pieces(c, k, n))  # the rule lives in overlap


#: The forward pass's share of a ZeRO-3 micro-batch's communication and of its compute, one
#: third of each. Of the three psi-sized collectives the forward runs one all-gather, the
#: backward the other all-gather and the reduce-scatter; the backward costs about twice the
#: forward's FLOPs. The backward has the rest.
ZERO3_FORWARD_SHARE = 1.0 / 3.0


@_QUIET
def zero3_exposed_seconds(comm_seconds, compute_seconds, layers):
    """Communication of one ZeRO-3 micro-batch that layer-by-layer overlap leaves exposed.

    Each pass is its own pipeline of ``layers`` pieces (:func:`exposed_comm_seconds` with
    ``pieces=layers``): its first all-gather cannot overlap with anything (FSDP notes).
    The forward carries :data:`ZERO3_FORWARD_SHARE` of the communication ``comm_seconds``
    (C) and of the compute ``compute_seconds`` (K), the backward the rest; the result is the
    sum over the two passes. Both passes have the same ratio C/K, and the exposed time is
    homogeneous in (C, K), so the sum equals ``exposed_comm_seconds(C, K, layers)``:
    max(C, K) - K + min(C, K) / L. Vectorised.
    """
    c = checks.array("comm_seconds", comm_seconds, low=0.0)
    k = checks.array("compute_seconds", compute_seconds, low=0.0)
    _counts("layers", layers, MAX_LAYERS)
    f = ZERO3_FORWARD_SHARE
    forward = exposed_comm_seconds(f * c, f * k, layers)
    backward = exposed_comm_seconds((1 - f) * c, (1 - f) * k, layers)
    return _out("exposed seconds", np.asarray(forward) + backward)
