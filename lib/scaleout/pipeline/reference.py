"""The orders of ``scaleout.pipeline.orders`` as plain loops, one operation at a time: the readable
reference the vectorised tables are tested equal to (as :mod:`scaleout.rdma.reference` is to
the fast engine). Same sources as the package docstring; the inputs are checked by
:func:`stage_order` here."""

from __future__ import annotations

from .orders import _check
from .vshape import _dualpipev_rank, _zbv_rank


def _schedule_table(m: int, v: int, group: int) -> list[tuple[int, int]]:
    """Megatron-Core's ``get_schedule_table``: (micro-batch, chunk) of a device's k-th
    chunk-forward, micro-batches in groups of ``group`` (the last group takes the rest)."""
    table = []
    start = 0
    while start < m:
        stop = m if start + group >= m else start + group
        for chunk in range(v):
            for j in range(start, stop):
                table.append((j, chunk))
        start = stop
    return table


def _rank_order(name: str, p: int, m: int, v: int, group: int | None, r: int):
    """The operations of device ``r``: a list of (kind, micro-batch, chunk)."""
    if name == "naive":
        return [op for j in range(m) for op in (("F", j, 0), ("B", j, 0))]
    if name == "gpipe":
        return [("F", j, 0) for j in range(m)] + [("B", j, 0) for j in range(m)]
    if name == "zb-v":
        return _zbv_rank(p, m, r)
    if name == "dualpipe-v":
        return _dualpipev_rank(p, m, r)
    if name == "interleaved":
        table = _schedule_table(m, v, group)
        forwards = [("F", j, c) for j, c in table]
        backwards = [("B", j, v - 1 - c) for j, c in table]  # chunks in reverse
        warm = min(2 * (p - 1 - r) + (v - 1) * group, m * v)
    else:  # 1f1b, zb-h1
        forwards = [("F", j, 0) for j in range(m)]
        backwards = [("B", j, 0) for j in range(m)]
        warm = min(p - 1 - r, m)
    ops = forwards[:warm]  # warm-up forwards
    weights = 0  # zb-h1: W's run so far; stage r postpones them by r micro-batches
    for i in range(len(backwards)):  # steady state: one forward, one backward
        if warm + i < len(forwards):
            ops.append(forwards[warm + i])
        ops.append(backwards[i])
        if name == "zb-h1" and i >= r:
            ops.append(("W", weights, 0))
            weights += 1
    if name == "zb-h1":  # drain the postponed W's
        ops += [("W", j, 0) for j in range(weights, m)]
    return ops


def stage_order(name: str, p: int, m: int, v: int = 1, group: int | None = None):
    """Every device's order, ``orders[r]``, built one operation at a time; the same
    arguments and checks as :func:`scaleout.pipeline.stage_order`."""
    name, p, m, v, group = _check(name, p, m, v, group)
    return [_rank_order(name, p, m, v, group, r) for r in range(p)]
