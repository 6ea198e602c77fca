"""The two V-shaped schedules: two model chunks per device, chunk 0 on stage r and chunk 1 on
stage 2p - 1 - r, so the last stage's forward turns back on the same device (no message).

* ``zb-v``: Qi et al., "Zero Bubble Pipeline Parallelism", ICLR 2024, section 6 (ZB-V), as
  PyTorch implements it: ``ScheduleZBVZeroBubble._calculate_single_rank_operations`` in
  ``torch/distributed/pipelining/schedules.py`` (torch 2.13). It plans max(2p - 1, m)
  micro-batches and drops those >= m.
* ``dualpipe-v``: DeepSeek-AI's DualPipe "cut in half" (DeepSeek-V3 technical report,
  arXiv:2412.19437, section 3.2.1; github.com/deepseek-ai/DualPipe ``dualpipev.py``), as
  ``ScheduleDualPipeV._calculate_single_rank_operations`` in the same file; its overlapped
  F+B pairs (``OVERLAP_F_B``) are expanded into their two parts, in order. Needs m >= 2p.

Kinds: ``F`` forward, ``B`` input gradient, ``W`` weight gradient, ``BW`` a full backward
(input and weight gradient in one operation). Each order is a plain loop over the device's
operations, a line-for-line port of PyTorch's, so a reader can set the two side by side;
``tests/unit/test_pipeline_vshape.py`` checks them equal for p = 2..8 and many m.
"""

from __future__ import annotations

from collections import deque


def _zbv_rank(p: int, m: int, r: int) -> list[tuple[str, int, int]]:
    """ZB-V's order on device ``r`` of ``p`` with ``m`` micro-batches: (kind, micro-batch,
    chunk). Inputs are trusted (see :func:`scaleout.pipeline.stage_order`)."""
    n = max(2 * p - 1, m)
    ops: list[tuple[str, int, int]] = []
    f0 = f1 = b0 = b1 = 0
    for _ in range(2 * (p - r) - 1):  # warm-up: chunk 0 forwards
        ops.append(("F", f0, 0))
        f0 += 1
    for _ in range(r):  # chunk 1 and chunk 0 forwards alternate
        ops += [("F", f1, 1), ("F", f0, 0)]
        f1, f0 = f1 + 1, f0 + 1
    for _ in range(p - r):  # chunk 1: forward, input gradient, weight gradient
        ops += [("F", f1, 1), ("B", b1, 1), ("W", b1, 1)]
        f1, b1 = f1 + 1, b1 + 1
    while f1 < f0 or f0 < n:  # steady state
        if f0 < n:
            ops.append(("F", f0, 0))
            f0 += 1
        ops += [("B", b0, 0), ("W", b0, 0), ("F", f1, 1), ("B", b1, 1), ("W", b1, 1)]
        b0, f1, b1 = b0 + 1, f1 + 1, b1 + 1
    w0, w1 = b0, b1
    for _ in range(r):  # cool-down: input gradients first, weight gradients late
        ops += [("B", b0, 0), ("B", b1, 1)]
        b0, b1 = b0 + 1, b1 + 1
    for _ in range(p - r):
        ops += [("B", b0, 0), ("W", w0, 0)]
        b0, w0 = b0 + 1, w0 + 1
    ops += [("W", j, 1) for j in range(w1, b1)]
    ops += [("W", j, 0) for j in range(w0, b0)]
    return [op for op in ops if op[1] < m]


def _dualpipev_rank(p: int, m: int, r: int) -> list[tuple[str, int, int]]:
    """DualPipe-V's order on device ``r`` of ``p`` with ``m >= 2p`` micro-batches: (kind,
    micro-batch, chunk), each overlapped F+B pair as its forward then its full backward."""
    ops: list[tuple[str, int, int]] = []
    count = {(c, k): 0 for c in (0, 1) for k in ("F", "B", "W")}
    pending: deque[tuple[int, int]] = deque()  # (chunk, micro-batch) of B's awaiting W

    def add(chunk, kind):
        key = (chunk, "B" if kind == "BW" else kind)
        j = count[key]
        ops.append((kind, j, chunk))
        if kind == "BW":
            count[chunk, "B"] += 1
            count[chunk, "W"] += 1
        else:
            if kind == "B":
                pending.append((chunk, j))
            count[key] = j + 1

    def weight():
        if pending:
            chunk, j = pending.popleft()
            ops.append(("W", j, chunk))
            count[chunk, "W"] += 1

    for _ in range(2 * (p - r - 1)):  # 1: F0
        add(0, "F")
    for _ in range(r + 1):  # 2: F0 F1
        add(0, "F")
        add(1, "F")
    for _ in range(p - r - 1):  # 3: B1 W1 F1 (zero bubble)
        add(1, "B")
        weight()
        add(1, "F")
    for _ in range(m - 2 * p + r + 1):  # 4: F0+B1, F1+B0 (overlapped pairs)
        add(0, "F")
        add(1, "BW")
        add(1, "F")
        add(0, "BW")
    for _ in range(p - r - 1):  # 5: B1, F1+B0
        add(1, "BW")
        add(1, "F")
        add(0, "BW")
    zb = False
    half = (r + 1) // 2
    for i in range(r + 1):  # 6: B1 B0, the second half split into B and W
        if i == half and r % 2 == 1:
            zb = True
        add(1, "B" if zb else "BW")
        if i == half and r % 2 == 0:
            zb = True
        add(0, "B" if zb else "BW")
    for _ in range(p - r - 1):  # 7: W B0
        weight()
        add(0, "B" if zb else "BW")
    for _ in range(r + 1):  # 8: W
        weight()
    return ops
