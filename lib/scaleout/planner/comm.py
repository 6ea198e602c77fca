"""The communication of a 3D-parallel step, priced with NCCL's own model (:mod:`scaleout.nccl`).

Rank layout: Megatron's order, tensor-parallel ranks adjacent, then data, then pipeline
(``megatron/core/parallel_state.py``, ``initialize_model_parallel``), on servers of ``g``
GPUs. So:

* **TP** (per layer and micro-batch): a group of ``t`` consecutive GPUs, inside one NVLink
  domain while ``t <= g`` (beyond: ``t / g`` servers, one group per node's g GPUs).
  Without sequence parallelism two all-reduces forward and two backward of the b s h
  activations; with it two all-gathers and two reduce-scatters each way
  (:func:`scaleout.tensor_parallel.layer_traffic`), plus Megatron's re-gather of each
  block's input in the backward pass when the implementation overlaps.
* **PP** (per micro-batch and chunk boundary, each way): one activation of b s h values to
  the next stage, ``t d`` ranks away: another server once ``t d >= g``. Megatron's
  scatter-gather (Narayanan et al. 2021, Sec. 4.1): each of the ``t`` GPUs sends 1/t of
  it across nodes (NCCL's p2p, :func:`scaleout.nccl.p2p.sendrecv_us`, every GPU on its
  own rail), then an NVLink all-gather rebuilds it; with sequence parallelism the
  activation is already split (no all-gather).
* **DP** (per step): the ``d`` ranks of a group are ``t`` apart: ``max(1, g / t)`` of them
  per server. The ``t p`` groups run at once, each on the NICs of its GPUs
  (:meth:`scaleout.nccl.topo.Topology.group`); NCCL picks the algorithm and protocol.

Exposure (what the step waits for) follows what the systems do (``tp_exposed``,
``dp_exposed``); see the functions.
"""

from __future__ import annotations

import functools

from .. import checks, nccl
from .. import memory as MEM
from ..nccl import p2p
from .model import MAX_BATCH, MAX_DIM, MAX_GPUS, MAX_SEQ, Cluster

DTYPE = 2  # bytes of a 16-bit activation or parameter
#: Megatron-Core's default gradient bucket holds max(40M, 1M x d) parameters
#: (``megatron/core/distributed/distributed_data_parallel.py`` line 134 at d98e8a6).
BUCKET_PARAMS, BUCKET_PARAMS_PER_RANK = 40_000_000, 1_000_000


def _group(t_or_stride: int, size: int, g: int) -> tuple[int, int]:
    """(GPUs per node, nodes) of a group of ``size`` ranks spaced ``t_or_stride`` apart."""
    per_node = max(1, min(size, g // t_or_stride)) if t_or_stride < g else 1
    return per_node, -(-size // per_node)


@functools.lru_cache(maxsize=65536)
def _collective(cluster: Cluster, name: str, nbytes: float, per_node: int, nodes: int) -> float:
    """Seconds of one NCCL collective over ``per_node`` GPUs on each of ``nodes`` servers."""
    if per_node * nodes == 1 or nbytes <= 0:
        return 0.0
    topo = cluster.topo(max(nodes, 1))
    return float(nccl.collective_seconds(name, float(nbytes), per_node, nodes, machine=topo))


def _tp_group(cluster: Cluster, t: int) -> tuple[int, int]:
    g = cluster.gpus_per_node
    return (t, 1) if t <= g else (g, t // g)


def tp_seconds(cluster: Cluster, b: int, s: int, h: int, t: int) -> dict:
    """Seconds of one TP all-reduce, all-gather and reduce-scatter of b s h values."""
    b, s, h, t = _sizes(cluster, b, s, h, t)
    n = float(b) * s * h * DTYPE
    per, nodes = _tp_group(cluster, t)
    return {c: _collective(cluster, c, n, per, nodes)
            for c in ("allreduce", "allgather", "reducescatter")}  # fmt: skip


def _sizes(cluster, b, s, h, t):
    checks.instance("cluster", cluster, Cluster)
    b = checks.integer("b", b, 1, MAX_BATCH)
    s = checks.integer("s", s, 1, MAX_SEQ)
    h = checks.integer("h", h, 1, MAX_DIM)
    t = checks.integer("t", t, 1, 1024)
    g = cluster.gpus_per_node
    if (g % t and t % g) or t > cluster.gpus:
        raise checks.fail("t", f"a divisor or multiple of {g}, at most {cluster.gpus}", t)
    return b, s, h, t


def _bulk(c: float, gemm: float) -> float:
    """A collective beside an independent GEMM exposes what the GEMM cannot cover."""
    return max(0.0, c - gemm)


def tp_exposed(sec: dict, col, row, t: int, sp: bool, overlap: str, regather=None):
    """(forward exposed, backward exposed, forward total, backward total) seconds of the
    TP collectives of one layer and micro-batch, under ``overlap`` (the rules of
    :func:`scaleout.tensor_parallel.layer_overlap`): ``"none"`` all on the critical path;
    ``"megatron"`` the backward input-gradient collective of each column-parallel GEMM
    beside its weight-gradient GEMM (and, with SP, the input re-gather beside the
    input-gradient GEMM); ``"pipelined"`` (SP only) the forward all-gather and reduce-
    scatter, and the backward all-gather, split in t steps with their GEMM: exposed
    ``max(0, C - G (t-1)/t)``. ``col``/``row``: per-block GEMM seconds (attention, MLP).
    ``regather`` (SP only; ``None``: yes unless ``overlap="none"``): the backward pass
    all-gathers each block's input again, beside the input-gradient GEMM when overlapped,
    on the critical path with ``overlap="none"``."""
    if not isinstance(sec, dict) or set(sec) != {"allreduce", "allgather", "reducescatter"}:
        raise checks.fail("sec", "a dict of allreduce, allgather, reducescatter seconds", sec)
    # At most 1e9 s each (decades): the sums below then never overflow to inf (and inf -
    # inf to NaN).
    ar, ag, rs = (checks.nonnegative(k, sec[k], 1e9) for k in ("allreduce", "allgather",
                                                               "reducescatter"))  # fmt: skip
    for name, pair in (("col", col), ("row", row)):
        if not isinstance(pair, tuple | list) or len(pair) != 2:
            raise checks.fail(name, "a pair of GEMM seconds (attention, MLP)", pair)
        for x in pair:
            checks.nonnegative(name, x, 1e9)
    t = checks.integer("t", t, 1, 1024)
    sp = checks.boolean("sp", sp)
    checks.choice("overlap", overlap, ("none", "megatron", "pipelined"))
    if regather is None:
        regather = sp and overlap != "none"
    regather = checks.boolean("regather", regather)
    if regather and not sp:
        raise checks.fail("regather", "None or False without sequence parallelism", regather)
    if not regather and sp and overlap != "none":
        raise checks.fail("regather", "None or True with Megatron's or TE's overlap", regather)
    if t == 1:
        return 0.0, 0.0, 0.0, 0.0
    piped = (t - 1) / t
    fwd_exp = bwd_exp = fwd_tot = bwd_tot = 0.0
    for gc, gr in zip(col, row, strict=True):
        if not sp:
            fwd_tot += ar
            bwd_tot += ar
            fwd_exp += ar
            bwd_exp += ar if overlap == "none" else _bulk(ar, gc)
            continue
        fwd_tot += ag + rs
        bwd_tot += ag + rs + (ag if regather else 0.0)
        if overlap == "pipelined":
            fwd_exp += max(0.0, ag - gc * piped) + max(0.0, rs - gr * piped)
            bwd_exp += max(0.0, ag - gr * piped)
        else:
            fwd_exp += ag + rs
            bwd_exp += ag
        if overlap != "none":
            bwd_exp += _bulk(ag, gc) + _bulk(rs, gc)
        else:
            bwd_exp += rs + (ag if regather else 0.0)
    return fwd_exp, bwd_exp, fwd_tot, bwd_tot


def pp_seconds(cluster: Cluster, b: int, s: int, h: int, t: int, d: int, sp: bool,
               scatter_gather: bool) -> float:  # fmt: skip
    """Seconds of one stage-to-stage activation transfer (one direction)."""
    b, s, h, t = _sizes(cluster, b, s, h, t)
    d = checks.integer("d", d, 1, MAX_GPUS)
    sp, scatter_gather = checks.boolean("sp", sp), checks.boolean("scatter_gather", scatter_gather)
    g = cluster.gpus_per_node
    n = float(b) * s * h * DTYPE
    across = t * d >= g and cluster.gpus > g
    topo = cluster.topo(2 if across else 1)
    split = sp or scatter_gather
    send = float(p2p.sendrecv_us(n / t if split else n, same_node=not across, machine=topo)) * 1e-6
    gather = 0.0
    if scatter_gather and not sp and t > 1:
        per, nodes = _tp_group(cluster, t)
        gather = _collective(cluster, "allgather", n, per, nodes)
    return send + gather


def dp_seconds(cluster: Cluster, t: int, d: int, zero: int, grad_bytes: float,
               param_bytes: float) -> float:  # fmt: skip
    """Seconds of one step's gradient (and parameter) traffic over the DP group: ZeRO-0
    an all-reduce of the gradients; ZeRO-1/2 (Megatron's distributed optimizer) a
    reduce-scatter of the gradients and an all-gather of the updated 16-bit parameters;
    ZeRO-3 one micro-batch's all-gathers (forward and backward) and reduce-scatter (the
    caller multiplies by the micro-batches)."""
    checks.instance("cluster", cluster, Cluster)
    t = checks.integer("t", t, 1, 1024)
    d = checks.integer("d", d, 1, MAX_GPUS)
    if t * d > cluster.gpus:
        raise checks.fail("t * d", f"at most {cluster.gpus} GPUs", t * d)
    checks.choice("zero", zero, MEM.STAGES)
    grad_bytes = checks.nonnegative("grad_bytes", grad_bytes, 2.0**50)
    param_bytes = checks.nonnegative("param_bytes", param_bytes, 2.0**50)
    if d == 1:
        return 0.0
    per, nodes = _group(t, d, cluster.gpus_per_node)
    if zero == 0:
        return _collective(cluster, "allreduce", grad_bytes, per, nodes)
    rs = _collective(cluster, "reducescatter", grad_bytes, per, nodes)
    ag = _collective(cluster, "allgather", param_bytes, per, nodes)
    return rs + (2 * ag if zero == 3 else ag)


def buckets(params: float, d: int) -> int:
    """Megatron-Core's gradient buckets for ``params`` parameters on one GPU."""
    params = checks.nonnegative("params", params, 1e15)
    d = checks.integer("d", d, 1, MAX_GPUS)
    size = max(BUCKET_PARAMS, BUCKET_PARAMS_PER_RANK * d)
    return max(1, -(-int(params) // size))


def dp_exposed(comm: float, window: float, pieces: int, overlap: bool) -> float:
    """DP seconds the step waits for: all of it without overlap (Megatron's 2021 "local"
    DDP reduced after the backward); with bucketed overlap (PyTorch DDP, Megatron-Core
    ``overlap_grad_reduce``: chapter 2's timeline) the buckets reduce during the last
    micro-batch's backward (``window`` seconds) and at least the last bucket is exposed:
    :func:`scaleout.memory.exposed_comm_seconds`."""
    comm = checks.nonnegative("comm", comm, 1e9)
    window = checks.nonnegative("window", window, 1e9)
    pieces = checks.integer("pieces", pieces, 1, 2**20)
    overlap = checks.boolean("overlap", overlap)
    if comm == 0.0:
        return 0.0
    if not overlap:
        return comm
    return float(MEM.exposed_comm_seconds(comm, window, pieces))
