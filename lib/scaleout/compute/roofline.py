"""The roofline: a kernel takes at least max(FLOPs / peak, bytes / bandwidth).

Williams, Waterman and Patterson, "Roofline: An Insightful Visual Performance Model for
Multicore Architectures" (CACM 2009): a kernel doing F FLOPs on B bytes of memory traffic
has arithmetic intensity I = F / B FLOPs per byte; on a processor with peak P FLOP/s and
memory bandwidth W bytes/s it reaches at most min(P, I W) FLOP/s, so it takes at least
max(F / P, B / W) seconds. Below the *ridge* intensity P / W a kernel is memory-bound,
above it compute-bound. Taught in chapter 14 (``chapters/14_compute.ipynb``).

All functions are vectorised over numpy arrays; units are FLOPs, bytes, seconds, FLOP/s
and bytes/s.
"""

from __future__ import annotations

from .. import checks

#: Bytes per element of each data type (tf32 operands are stored as fp32).
DTYPE_BYTES = {"fp32": 4, "tf32": 4, "bf16": 2, "fp16": 2, "fp8": 1}
MAX_RATE = 1e21  # FLOP/s or bytes/s: a zettaFLOP/s is far beyond any one device


def _work(name, value):
    return checks.array(name, value, low=0.0)


def arithmetic_intensity(flops, bytes_moved):
    """FLOPs per byte moved: ``flops / bytes_moved`` (``bytes_moved`` > 0). Vectorised."""
    f = _work("flops", flops)
    b = checks.array("bytes_moved", bytes_moved, low=0.0, low_open=True)
    return checks.as_output(checks.finite_result("intensity", f / b))


def ridge_intensity(peak_flops, bytes_per_s):
    """The intensity P / W (FLOPs per byte) at which the two limits of the roofline meet."""
    p = checks.positive("peak_flops", peak_flops, MAX_RATE)
    ridge = p / checks.positive("bytes_per_s", bytes_per_s, MAX_RATE)
    return checks.finite_result("ridge intensity", ridge)


def attainable_flops(intensity, peak_flops, bytes_per_s):
    """The roofline: min(P, I W) FLOP/s for arithmetic intensity ``intensity``. Vectorised."""
    i = checks.array("intensity", intensity, low=0.0)
    p = checks.positive("peak_flops", peak_flops, MAX_RATE)
    w = checks.positive("bytes_per_s", bytes_per_s, MAX_RATE)
    return checks.as_output(checks.finite_result("attainable FLOP/s", (i * w).clip(max=p)))


def roofline_seconds(flops, bytes_moved, peak_flops, bytes_per_s):
    """The roofline's lower bound on time: max(flops / P, bytes / W). Vectorised."""
    f, b = _work("flops", flops), _work("bytes_moved", bytes_moved)
    p = checks.positive("peak_flops", peak_flops, MAX_RATE)
    w = checks.positive("bytes_per_s", bytes_per_s, MAX_RATE)
    out = (f / p).clip(min=b / w)
    return checks.as_output(checks.finite_result("roofline time", out))
