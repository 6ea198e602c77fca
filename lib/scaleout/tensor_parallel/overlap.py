"""Which tensor-parallel collectives real systems hide behind a GEMM, and what stays exposed.

The schedules, their sources and the model: :func:`layer_overlap`.
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import checks
from .. import overlap as rules
from .traffic import (
    H100_SXM_BF16_DENSE_FLOPS,
    LayerSeconds,
    collective_seconds,
    layer_compute_seconds,
    layer_traffic,
)

OVERLAPS = rules.TP_OVERLAPS
# Forward FLOPs of each block's column- and row-parallel GEMMs, in units of b s h^2 (before
# the split by t): attention Q, K, V (h -> 3h) and its output projection (h -> h); MLP
# h -> 4h and 4h -> h. With the attention core (4 b s^2 h) they add up to layer_flops.
# The input-gradient and the weight-gradient GEMM of the backward pass cost as much each.
BLOCK_GEMMS = {"attention": (6, 2), "mlp": (8, 8)}


@dataclass(frozen=True)
class LayerOverlap:
    """One layer and micro-batch under one ``overlap`` schedule: the ideal ``compute``,
    all of the tensor-parallel communication (``comm``), and the part of it that is on the
    critical path (``exposed``), each forward and backward."""

    overlap: str
    compute: LayerSeconds
    comm: LayerSeconds
    exposed: LayerSeconds

    def __post_init__(self):
        checks.choice("overlap", self.overlap, OVERLAPS)
        for name in ("compute", "comm", "exposed"):
            checks.instance(name, getattr(self, name), LayerSeconds)
        for direction in ("forward", "backward"):
            if getattr(self.exposed, direction) > getattr(self.comm, direction) * (1 + 1e-12):
                raise checks.fail(
                    f"exposed.{direction}", "at most comm", getattr(self.exposed, direction)
                )

    @property
    def hidden(self) -> float:
        """Communication seconds that run beside a GEMM."""
        return self.comm.total - self.exposed.total

    @property
    def seconds(self) -> float:
        """Compute plus exposed communication, in seconds (the layer's time)."""
        return self.compute.total + self.exposed.total


def layer_overlap(
    b,
    s,
    h,
    t,
    overlap="megatron",
    sequence_parallel=False,
    dtype_bytes=2,
    peak_flops=H100_SXM_BF16_DENSE_FLOPS,
    **links,
) -> LayerOverlap:
    """Communication of one layer and micro-batch split into hidden and exposed seconds.

    ``links`` go to :func:`scaleout.tensor_parallel.collective_seconds`; ``peak_flops``
    sets the ideal GEMM times. With sequence parallelism and a real implementation
    (``"megatron"``, ``"pipelined"``) the input all-gather is redone in the backward pass
    (``layer_traffic(..., regather_input=True)``).

    A collective can run beside a GEMM only if neither needs the other's result. Three
    schedules, each what a real implementation does:

    * ``"none"``: every collective on the critical path (the book's own torch layers).
    * ``"megatron"``: Megatron-LM's default, ``LinearWithGradAccumulationAndAsyncCommunication``
      in ``megatron/core/tensor_parallel/layers.py``. In the backward pass of each
      column-parallel layer (Q/K/V, MLP up-projection) the input-gradient collective (f's
      all-reduce, or with sequence parallelism its reduce-scatter) is launched asynchronously
      and runs while the weight-gradient GEMM computes; with sequence parallelism the input's
      all-gather, redone in the backward pass, runs while the input-gradient GEMM computes.
      Every forward collective and g's backward all-gather stay exposed: the next GEMM needs
      their result.
    * ``"pipelined"``: Megatron-LM ``--tp-comm-overlap`` with Transformer Engine's userbuffers
      (``ub_overlap_ag``, ``ub_overlap_rs``, ``ub_bulk_dgrad``, ``ub_bulk_wgrad``; NeMo's
      "Communication Overlap" guide) and PyTorch's async tensor parallelism
      (``torch.distributed._symmetric_memory``: ``_pipelined_all_gather_and_consume``,
      ``_pipelined_produce_and_all2all``). The dependent collectives are split into t steps
      (point-to-point ring exchanges) and pipelined with the GEMM that consumes or produces
      them. Only with sequence parallelism (all-gather and reduce-scatter; Megatron-LM refuses
      ``--tp-comm-overlap`` without ``--sequence-parallel``).

    Model (the rules of :mod:`scaleout.overlap`, :func:`scaleout.overlap.tp_layer`): a
    collective of C seconds beside an independent GEMM of G seconds ("bulk") exposes
    max(0, C - G). Pipelined in t steps, the GEMM's first step runs on the local shard (or its
    last one produces the local shard) while the first exchange is in flight, so t - 1
    exchanges of C/(t-1) overlap G (t-1)/t of GEMM: exposed max(0, C - G (t-1)/t). GEMM times
    are ideal (FLOPs at ``peak_flops``); not modelled: the SMs and memory bandwidth that the
    communication kernels take from the GEMM, and the efficiency a GEMM loses when split.
    This is ideal overlap, not a bound either way: real GEMMs run below peak (more time to
    hide behind) and contend with the collectives (both slow down). Chapter 4 compares it
    with measured async-TP speedups (:func:`scaleout.tensor_parallel.published.async_tp_rows`).
    """
    overlap = checks.choice("overlap", overlap, OVERLAPS)
    sp = checks.boolean("sequence_parallel", sequence_parallel)
    if overlap == "pipelined" and not sp:
        raise checks.fail("sequence_parallel", "True for the pipelined overlap", sp)
    regather = sp and overlap != "none"
    traffic = layer_traffic(b, s, h, t, dtype_bytes, sp, regather_input=regather)
    compute = layer_compute_seconds(b, s, h, t, peak_flops)
    t = traffic.t
    if t == 1:
        zero = LayerSeconds(0.0, 0.0)
        return LayerOverlap(overlap, compute, zero, zero)
    sec = {
        c: float(collective_seconds(c, traffic.message_bytes, t, **links))
        for c in ("allreduce", "allgather", "reducescatter")
    }
    unit = compute.forward / (24.0 + 4.0 * s / h)  # seconds of b s h^2 / t FLOPs
    col = tuple(c * unit for c, _ in BLOCK_GEMMS.values())
    row = tuple(r * unit for _, r in BLOCK_GEMMS.values())
    fwd_exp, bwd_exp, fwd, bwd = rules.tp_layer(sec, col, row, t, sp, overlap, regather)
    comm, exposed = LayerSeconds(fwd, bwd), LayerSeconds(fwd_exp, bwd_exp)
    return LayerOverlap(overlap, compute, comm, exposed)
