"""The one set of overlap rules: how much of a collective a computation beside it hides.

Three rules, each what a real implementation does (the chapters give the sources):

* :func:`bulk` - a collective of C seconds beside an independent GEMM of G seconds (launched
  asynchronously, neither needs the other's result) exposes ``max(0, C - G)``.
* :func:`pipelined` - a dependent collective split into t steps and pipelined with the GEMM
  that consumes or produces it (Transformer Engine's userbuffers, PyTorch's async TP): the
  first step computes on the local shard while the first exchange is in flight, so t - 1
  exchanges overlap G (t-1)/t of GEMM: exposed ``max(0, C - G (t-1)/t)``.
* :func:`pieces` - C seconds of communication and K of compute each cut into n equal parts,
  part i communicated before it is computed while part i+1 is communicated during part i's
  compute (ZeRO-3/FSDP's per-layer gathers, DDP's gradient buckets): exposed
  ``max(C, K) - K + min(C, K) / n``.

:func:`tp_layer` applies them to the tensor-parallel collectives of one layer and
micro-batch (the schedules of :func:`scaleout.tensor_parallel.layer_overlap`, which the
planner's :func:`scaleout.planner.comm.tp_exposed` follows too; a test ties the two).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import checks

#: The tensor-parallel schedules (:func:`scaleout.tensor_parallel.layer_overlap`).
TP_OVERLAPS = ("none", "megatron", "pipelined")
#: How one collective meets its partner GEMM.
HOW = ("none", "bulk", "pipelined")
COLLECTIVES = ("allreduce", "allgather", "reducescatter")
#: Largest tensor-parallel size and number of pieces the rules take.
MAX_T, MAX_PIECES = 1024, 2**20


@dataclass(frozen=True)
class TPSchedule:
    """How one release of a framework runs its tensor-parallel collectives: ``overlap``
    (one of :data:`TP_OVERLAPS`) and whether, with sequence parallelism, the backward pass
    all-gathers each block's input again (``regather_with_sp``); ``source`` says where."""

    name: str
    overlap: str
    regather_with_sp: bool
    source: str

    def __post_init__(self):
        checks.text("name", self.name, 80)
        checks.choice("overlap", self.overlap, TP_OVERLAPS)
        checks.boolean("regather_with_sp", self.regather_with_sp)
        checks.text("source", self.source, 600)

    def regather(self, sp: bool) -> bool:
        """Whether a layer run with sequence parallelism ``sp`` re-gathers its input."""
        return checks.boolean("sp", sp) and self.regather_with_sp


#: Megatron-LM as Korthikanti et al. 2022 ran it, the one rule both chapter 14 (their
#: Table 4, :func:`scaleout.compute.validation.layer_rows`) and chapter 15 (their Table 5,
#: :mod:`scaleout.planner.published`) price their runs with. The paper: "we overlap
#: all-reduce communication with the linear weight's gradient computation". The code of
#: that time, Megatron-LM ``megatron/mpu/layers.py`` at commit 02bb1f5 (2022):
#: ``ColumnParallelLinearWithAsyncAllreduce.backward`` launches the input gradient's
#: all-reduce asynchronously and computes the weight gradient while it runs (on unless
#: ``--no-async-tensor-model-parallel-allreduce``); with sequence parallelism
#: ``ColumnParallelLinearWithSequenceParallelism.backward`` all-gathers the saved input
#: again, asynchronously beside the input-gradient GEMM, then reduce-scatters the input
#: gradient asynchronously beside the weight-gradient GEMM. The forward collectives are
#: synchronous. That is :func:`tp_work`'s ``"megatron"`` schedule with the re-gather.
MEGATRON_2022 = TPSchedule(
    "Megatron-LM 2022 (Korthikanti et al.)",
    "megatron",
    True,
    "korthikanti2022reducing; NVIDIA/Megatron-LM megatron/mpu/layers.py at commit "
    "02bb1f5c86fc8c36d4a96a2b7ebcf63d53219369 (ColumnParallelLinearWithAsyncAllreduce, "
    "ColumnParallelLinearWithSequenceParallelism)",
)


def _exposed(c: float, g: float, how: str, t: int) -> float:
    if how == "bulk":
        return max(0.0, c - g)
    if how == "pipelined":
        return max(0.0, c - g * (t - 1) / t)
    return c


def bulk(comm_s: float, compute_s: float) -> float:
    """Exposed seconds of a collective beside an independent computation."""
    c, k = checks.nonnegative("comm_s", comm_s), checks.nonnegative("compute_s", compute_s)
    return _exposed(c, k, "bulk", 1)


def pipelined(comm_s: float, compute_s: float, t: int) -> float:
    """Exposed seconds of a collective split in ``t`` steps with the GEMM it feeds."""
    c, k = checks.nonnegative("comm_s", comm_s), checks.nonnegative("compute_s", compute_s)
    return _exposed(c, k, "pipelined", checks.integer("t", t, 1, MAX_T))


def exposed(comm_s: float, compute_s: float, how: str, t: int = 1) -> float:
    """Exposed seconds under rule ``how`` (:data:`HOW`; ``"none"``: all of it)."""
    c, k = checks.nonnegative("comm_s", comm_s), checks.nonnegative("compute_s", compute_s)
    how = checks.choice("how", how, HOW)
    return _exposed(c, k, how, checks.integer("t", t, 1, MAX_T))


def pieces(comm_s, compute_s, n):
    """Exposed seconds of C communication and K compute cut into ``n`` dependent pieces,
    ``max(C, K) - K + min(C, K) / n`` (module docstring). Vectorised over C and K."""
    c = checks.array("comm_s", comm_s, low=0.0)
    k = checks.array("compute_s", compute_s, low=0.0)
    n = checks.array("n", n, low=1.0, high=float(MAX_PIECES))
    out = np.maximum(c, k) - k + np.minimum(c, k) / n
    return float(out) if np.ndim(out) == 0 else out


def _check_tp(sec, col, row, t, sp, overlap, regather):
    if not isinstance(sec, dict) or set(sec) != set(COLLECTIVES):
        raise checks.fail("sec", "a dict of allreduce, allgather, reducescatter seconds", sec)
    sec = {k: checks.nonnegative(k, sec[k]) for k in COLLECTIVES}
    pairs = []
    for name, pair in (("col", col), ("row", row)):
        if not isinstance(pair, tuple | list) or len(pair) != 2:
            raise checks.fail(name, "a pair of GEMM seconds (attention, MLP)", pair)
        pairs.append(tuple(checks.nonnegative(name, x) for x in pair))
    t = checks.integer("t", t, 1, MAX_T)
    sp = checks.boolean("sp", sp)
    overlap = checks.choice("overlap", overlap, TP_OVERLAPS)
    regather = checks.boolean("regather", regather)
    if regather and not sp:
        raise checks.fail("regather", "False without sequence parallelism", regather)
    return sec, pairs[0], pairs[1], t, sp, overlap, regather


def tp_work(sec: dict, col, row, sp: bool, overlap: str, regather: bool) -> dict:
    """The tensor-parallel collectives of one layer and micro-batch, each with its partner
    GEMM and rule: ``{"forward": [...], "backward": [...]}`` of (collective seconds, GEMM
    seconds, how). ``sec``: seconds of one all-reduce, all-gather and reduce-scatter;
    ``col``/``row``: per block (attention, MLP) the column- and row-parallel GEMM seconds.

    Without sequence parallelism: forward, g's all-reduce after the row-parallel GEMM
    (exposed); backward, f's all-reduce beside the column-parallel weight-gradient GEMM
    (``"megatron"``: bulk). With it: forward, f's all-gather before the column GEMM and g's
    reduce-scatter after the row GEMM (pipelined under ``"pipelined"``); backward, g's
    all-gather before the row GEMM's input gradient (pipelined), the input re-gather beside
    the input-gradient GEMM (bulk, when ``regather``) and f's reduce-scatter beside the
    weight-gradient GEMM (bulk unless ``"none"``)."""
    sec, col, row, _, sp, overlap, regather = _check_tp(sec, col, row, 2, sp, overlap, regather)
    return _tp_work(sec, col, row, sp, overlap, regather)


def _tp_work(sec, col, row, sp, overlap, regather) -> dict:
    real = overlap != "none"
    pipe = "pipelined" if overlap == "pipelined" else "none"
    work = {"forward": [], "backward": []}
    for g_col, g_row in zip(col, row, strict=True):
        if sp:
            work["forward"] += [(sec["allgather"], g_col, pipe)]
            work["forward"] += [(sec["reducescatter"], g_row, pipe)]
            work["backward"] += [(sec["allgather"], g_row, pipe)]
            if regather:
                work["backward"] += [(sec["allgather"], g_col, "bulk" if real else "none")]
            work["backward"] += [(sec["reducescatter"], g_col, "bulk" if real else "none")]
        else:
            work["forward"] += [(sec["allreduce"], g_row, "none")]
            work["backward"] += [(sec["allreduce"], g_col, "bulk" if real else "none")]
    return work


def tp_layer(sec: dict, col, row, t: int, sp: bool, overlap: str, regather: bool):
    """(forward exposed, backward exposed, forward total, backward total) seconds of the
    tensor-parallel collectives of one layer and micro-batch (:func:`tp_work`)."""
    sec, col, row, t, sp, overlap, regather = _check_tp(sec, col, row, t, sp, overlap, regather)
    if t == 1:
        return 0.0, 0.0, 0.0, 0.0
    work = _tp_work(sec, col, row, sp, overlap, regather)
    out = []
    for d in ("forward", "backward"):
        out.append(sum(_exposed(c, g, how, t) for c, g, how in work[d]))
    out += [sum(c for c, _, _ in work[d]) for d in ("forward", "backward")]
    return tuple(float(x) for x in out)
