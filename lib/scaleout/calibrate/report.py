"""The text report the command line prints: a log's table beside the model, and verdicts."""

from __future__ import annotations

import numpy as np

from .. import checks
from .correct import fit_corrections
from .fit import fit_latency_bandwidth
from .judge import compare
from .records import Log


def _size(n: float) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            return f"{n / scale:g} {unit}"
    return f"{n:g} B"


def report(log: Log, nodes: int = 1, *, machine="dgx-h100", **kwargs) -> str:
    """The table (size, measured and model busbw, ratio, model's algorithm/protocol,
    regime), the verdicts, the line fit and the held-out corrections, as text, for ``log``
    on ``nodes`` servers of ``machine`` (``kwargs`` go to
    :func:`~scaleout.calibrate.judge.compare`)."""
    checks.instance("log", log, Log)
    out = []
    c = compare(log, nodes, machine=machine, **kwargs)
    t = c.topology
    out.append(f"{c.collective} on {t.ranks} ranks: {t.nodes} x {t.gpus_per_node} {t.gpu} "
               f"({t.name}), measured vs chapter 10's NCCL model")  # fmt: skip
    out.append(f"{'size':>10}  {'busbw':>8}  {'model':>8}  {'ratio':>6}  {'algo/proto':<16} regime")
    for i, n in enumerate(c.nbytes):
        out.append(f"{_size(n):>10}  {c.measured_gb_per_s[i]:8.2f}  {c.model_gb_per_s[i]:8.2f}  "
                   f"{c.ratio[i]:6.2f}  {c.algorithm[i] + '/' + c.protocol[i]:<16} "
                   f"{c.regime[i]}")  # fmt: skip
    for reg, (med, word, items) in c.verdicts().items():
        out.append(f"{reg}: median ratio {med:.2f}: {word}")
        out += [f"  check: {x}" for x in items]
    for e in c.evidence:
        out.append(f"log: {e}")
    try:
        fit = fit_latency_bandwidth(log)
        out.append(f"fit (every other size): latency {fit.latency_s * 1e6:.1f} us, bandwidth "
                   f"{fit.bandwidth_bytes_per_s / 1e9:.2f} GB/s (algbw); held-out median "
                   f"|error| {fit.held_out_median_abs:.1%}")  # fmt: skip
        corr = fit_corrections(c)
        out.append(f"corrections: {corr.summary}")
        raw = float(np.median(np.abs(corr.raw_err)))
        cor = float(np.median(np.abs(corr.corrected_err)))
        out.append(f"held-out median |error| of the model's time: {raw:.1%} before, "
                   f"{cor:.1%} after")  # fmt: skip
    except ValueError as e:
        out.append(f"no line fit or correction: {e}")
    return "\n".join(out)
