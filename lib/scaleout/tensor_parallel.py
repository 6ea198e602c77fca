"""Tensor parallelism: split GEMMs, Megatron's MLP and attention, and what they communicate.

Taught in chapters/04_tensor_parallel.ipynb. Sources: Shoeybi et al., "Megatron-LM" (arXiv
1909.08053, Sec. 3: column then row split of the MLP, attention split by heads, operators
f and g); Narayanan et al., SC21 (arXiv 2104.04473: Sec. 3 counts 2 all-reduces of b s h
elements forward and 2 backward per layer, 8 b s h (t-1)/t elements per GPU; Sec. 4.1 the
scatter/gather between pipeline stages; Appendix, 24 b s h^2 + 4 b s^2 h forward FLOPs per
layer); Korthikanti et al., "Reducing Activation Recomputation in Large Transformer Models"
(arXiv 2205.05198, Sec. 4.2.2: sequence parallelism, all-reduce = reduce-scatter +
all-gather). Megatron-LM's own code: ``megatron/core/tensor_parallel/mappings.py``
(``_CopyToModelParallelRegion`` is f, ``_ReduceFromModelParallelRegion`` is g).

Symbols: t tensor-parallel GPUs, b micro-batch, s sequence length, h hidden size, a heads.
Arrays are numpy; times are seconds, sizes bytes. Collective times come from
:func:`scaleout.costmodel.collective_time` with link presets of :mod:`scaleout.hardware`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from . import collectives as C
from . import costmodel as M
from . import hardware as H

# A DGX H100 server (8 H100 SXM GPUs on NVLink 4 through NVSwitch, one 400 Gb/s ConnectX-7
# NIC per GPU), from the systems table of scaleout.hardware, which cites the DGX H100 guide.
GPUS_PER_SERVER = H.system("DGX H100").gpus_per_server
# NVIDIA H100 Tensor Core GPU datasheet: H100 SXM BF16 Tensor Core 1,979 TFLOPS *with
# sparsity*; dense matrices run at half of that.
H100_SXM_BF16_DENSE_FLOPS = 1979e12 / 2
INTRA, INTER = "nvlink4-h100", "nic-400g"
TOPOLOGIES = ("flat-ring", "two-level")

# Megatron's conjugate operators (Shoeybi et al. 2019, Sec. 3; mappings.py above): what
# each does in the forward and in the backward pass. With sequence parallelism
# (Korthikanti et al. 2022, Sec. 4.2.2) f becomes an all-gather of the sequence shards
# (reduce-scatter backward) and g a reduce-scatter (all-gather backward).
OPERATORS = {
    "f": {"forward": "identity", "backward": "allreduce"},
    "g": {"forward": "allreduce", "backward": "identity"},
}
SP_OPERATORS = {
    "f": {"forward": "allgather", "backward": "reducescatter"},
    "g": {"forward": "reducescatter", "backward": "allgather"},
}
# Each block of a transformer layer is f -> column-parallel GEMM(s) -> ... -> row-parallel
# GEMM -> g: one f and one g per block, two blocks per layer.
BLOCKS = ("attention", "mlp")


def _int(name: str, value, low: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < low:
        raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
    return int(value)


def _divides(t: int, size: int, what: str) -> None:
    if size % t:
        raise ValueError(f"t must divide {what} = {size}, got t = {t}")


def shard_slice(size: int, t: int, rank: int) -> slice:
    """The contiguous 1/t of ``size`` that ``rank`` holds; t must divide size."""
    size, t = _int("size", size), _int("t", t)
    _divides(t, size, "the split dimension")
    if not 0 <= rank < t:
        raise ValueError(f"rank must lie in [0, {t}), got {rank!r}")
    width = size // t
    return slice(rank * width, (rank + 1) * width)


@dataclass(frozen=True)
class Shard:
    """What one rank holds of X (m, k) and Y (k, n) and which block of Z = X Y it computes:
    (row slice, column slice) each; in the row split its Z block is a partial sum."""

    rank: int
    x: tuple[slice, slice]
    y: tuple[slice, slice]
    z: tuple[slice, slice]


def matmul_shards(mode: str, m: int, k: int, n: int, t: int) -> list[Shard]:
    """Per-rank blocks of Z = X Y split t ways (Shoeybi et al. 2019, Sec. 3, eqs. 2-3).

    ``"column"``: Y split by columns, X replicated; rank i computes column block i of Z
    (combine: all-gather). ``"row"``: X split by columns and Y by rows; rank i computes a
    full-size partial Z_i = X_i Y_i (combine: all-reduce, Z = sum_i Z_i).
    """
    if mode not in ("column", "row"):
        raise ValueError(f"mode must be 'column' or 'row', got {mode!r}")
    m, k, n, t = (_int(name, v) for name, v in (("m", m), ("k", k), ("n", n), ("t", t)))
    every = slice(None)
    shards = []
    for r in range(t):
        if mode == "column":
            cols = shard_slice(n, t, r)
            shards.append(Shard(r, (every, every), (every, cols), (every, cols)))
        else:
            inner = shard_slice(k, t, r)
            shards.append(Shard(r, (every, inner), (inner, every), (every, every)))
    return shards


@dataclass(frozen=True)
class SplitResult:
    """Per-rank local results (t, ...) and the combined result every rank ends with."""

    partials: np.ndarray
    output: np.ndarray
    combine: str  # "allgather" (concatenate) or "allreduce" (sum)


def _matrices(x, y):
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if x.ndim < 2 or y.ndim != 2 or x.shape[-1] != y.shape[0]:
        raise ValueError(f"need x (..., m, k) and y (k, n), got {x.shape} and {y.shape}")
    return x, y


def column_parallel_matmul(x, y, t: int) -> SplitResult:
    """Z = X Y with Y split by columns: partials (t, ..., m, n/t), output their concatenation."""
    x, y = _matrices(x, y)
    shards = matmul_shards("column", x.shape[-2], y.shape[0], y.shape[1], t)
    partials = np.stack([x @ y[s.y] for s in shards])  # rank i: X Y_i
    return SplitResult(partials, np.concatenate(list(partials), axis=-1), "allgather")


def row_parallel_matmul(x, y, t: int) -> SplitResult:
    """Z = X Y with X split by columns, Y by rows: partials (t, ..., m, n), output their sum."""
    x, y = _matrices(x, y)
    shards = matmul_shards("row", x.shape[-2], y.shape[0], y.shape[1], t)
    partials = np.stack([x[..., s.x[1]] @ y[s.y] for s in shards])  # rank i: X_i Y_i
    return SplitResult(partials, partials.sum(axis=0), "allreduce")


def gelu(x):
    """GeLU, tanh form (Hendrycks & Gimpel, arXiv 1606.08415, Sec. 2; torch's
    ``F.gelu(x, approximate="tanh")``): 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))."""
    x = np.asarray(x, dtype=np.float64)
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))


def mlp(x, w1, b1, w2, b2):
    """Dense MLP: GeLU(x w1 + b1) w2 + b2; x (..., h), w1 (h, f), w2 (f, h)."""
    return gelu(np.asarray(x) @ w1 + b1) @ w2 + b2


def megatron_mlp(x, w1, b1, w2, b2, t: int) -> SplitResult:
    """The MLP on t ranks (Shoeybi et al. 2019, Sec. 3, Fig. 3a): w1, b1 split by columns,
    GeLU applied locally, w2 split by rows; the partials (t, ..., h) are summed by g's
    all-reduce, then b2 (replicated) is added once. t must divide f = w1.shape[1]."""
    x, w1, w2 = (np.asarray(a, dtype=np.float64) for a in (x, w1, w2))
    b1, b2 = np.asarray(b1, dtype=np.float64), np.asarray(b2, dtype=np.float64)
    if w1.ndim != 2 or w2.shape != w1.shape[::-1] or x.shape[-1] != w1.shape[0]:
        raise ValueError(
            f"need x (..., h), w1 (h, f), w2 (f, h); got {x.shape}, {w1.shape}, {w2.shape}"
        )
    t = _int("t", t)
    _divides(t, w1.shape[1], "the MLP width f")
    cols = [shard_slice(w1.shape[1], t, r) for r in range(t)]
    partials = np.stack([gelu(x @ w1[:, c] + b1[c]) @ w2[c] for c in cols])  # (t, ..., h)
    return SplitResult(partials, partials.sum(axis=0) + b2, "allreduce")


def _check_heads(h: int, heads: int, t: int = 1) -> int:
    heads, t = _int("heads", heads), _int("t", t)
    if h % heads:
        raise ValueError(f"heads must divide h = {h}, got heads = {heads}")
    _divides(t, heads, "the number of heads")
    return h // heads  # head dimension d


def _softmax(z):
    z = z - z.max(axis=-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


def _attend(x, wq, wk, wv, nheads: int, d: int, causal: bool):
    """Heads side by side: (..., s, nheads * d). Head j uses columns j*d:(j+1)*d."""
    s = x.shape[-2]

    def split(w):  # (..., s, nheads*d) -> (..., nheads, s, d)
        return np.swapaxes((x @ w).reshape(*x.shape[:-1], nheads, d), -2, -3)

    q, k, v = split(wq), split(wk), split(wv)
    scores = q @ np.swapaxes(k, -1, -2) / math.sqrt(d)  # (..., nheads, s, s)
    if causal:
        scores = np.where(np.triu(np.ones((s, s), dtype=bool), 1), -np.inf, scores)
    out = _softmax(scores) @ v  # (..., nheads, s, d)
    return np.swapaxes(out, -2, -3).reshape(*x.shape[:-1], nheads * d)


def attention(x, wq, wk, wv, wo, heads: int, causal: bool = True):
    """Dense multi-head self-attention without biases (Vaswani et al. 2017, Sec. 3.2):
    x (..., s, h), wq/wk/wv/wo (h, h); softmax(q k^T / sqrt(d)) v per head, then x wo."""
    x = np.asarray(x, dtype=np.float64)
    d = _check_heads(x.shape[-1], heads)
    return _attend(x, wq, wk, wv, heads, d, causal) @ wo


def tensor_parallel_attention(x, wq, wk, wv, wo, heads: int, t: int, causal=True):
    """Attention split by heads (Shoeybi et al. 2019, Sec. 3, Fig. 3b): rank i holds heads
    i a/t .. (i+1) a/t, i.e. columns of wq, wk, wv and rows of wo; partials (t, ..., s, h)
    are summed by g. t must divide the head count."""
    x = np.asarray(x, dtype=np.float64)
    h = x.shape[-1]
    d = _check_heads(h, heads, t)
    rows = [shard_slice(h, t, r) for r in range(t)]
    partials = np.stack(
        [_attend(x, wq[:, c], wk[:, c], wv[:, c], heads // t, d, causal) @ wo[c] for c in rows]
    )
    return SplitResult(partials, partials.sum(axis=0), "allreduce")


def valid_tensor_parallel_sizes(h: int, heads: int, limit: int = 64) -> list[int]:
    """Every t <= limit that divides both h and the head count (and so 4h)."""
    h, heads, limit = _int("h", h), _int("heads", heads), _int("limit", limit)
    return [t for t in range(1, limit + 1) if h % t == 0 and heads % t == 0]


# ---------------------------------------------------------------- communication model


def _sizes(b, s, h, t, dtype_bytes):
    b, s, h, t = (_int(name, v) for name, v in (("b", b), ("s", s), ("h", h), ("t", t)))
    _divides(t, h, "h")
    if isinstance(dtype_bytes, bool) or not (
        isinstance(dtype_bytes, int | float) and dtype_bytes > 0
    ):
        raise ValueError(f"dtype_bytes must be a number > 0, got {dtype_bytes!r}")
    return b, s, h, t, float(dtype_bytes)


@dataclass(frozen=True)
class LayerTraffic:
    """Collectives of one transformer layer on t GPUs for one micro-batch.

    ``forward``/``backward`` map a collective to how many run; each moves a tensor of
    ``message_bytes`` = b s h x dtype bytes (the costmodel's n: the all-reduce buffer, the
    reduce-scatter input, the all-gather output). ``bytes_per_gpu`` is what one GPU sends
    in a ring algorithm, forward plus backward.
    """

    t: int
    message_bytes: float
    forward: dict
    backward: dict
    bytes_per_gpu: float

    @property
    def collectives(self) -> int:
        return sum(self.forward.values()) + sum(self.backward.values())


def layer_traffic(b, s, h, t, dtype_bytes=2, sequence_parallel=False, heads=None):
    """Counts and bytes per layer, derived from ``OPERATORS`` (or ``SP_OPERATORS``): one f
    and one g in each of the two blocks. Without sequence parallelism 2 all-reduces forward
    and 2 backward, bytes per GPU 8 b s h (t-1)/t x dtype (Narayanan et al. 2021, Sec. 3);
    with it 2 all-gathers + 2 reduce-scatters each way, the same bytes (Korthikanti et al.
    2022, Sec. 4.2.2), and t must also divide s."""
    b, s, h, t, dtype_bytes = _sizes(b, s, h, t, dtype_bytes)
    if heads is not None:
        _check_heads(h, heads, t)
    if sequence_parallel:
        _divides(t, s, "the sequence length s (sequence parallelism)")
    ops = SP_OPERATORS if sequence_parallel else OPERATORS
    passes = {"forward": {}, "backward": {}}
    for _block in BLOCKS:
        for op in ("f", "g"):
            for direction, counts in passes.items():
                name = ops[op][direction]
                if name != "identity" and t > 1:
                    counts[name] = counts.get(name, 0) + 1
    n = b * s * h * dtype_bytes
    per_gpu = sum(
        count * M.busbw_factor(c, t) * n for p in passes.values() for c, count in p.items()
    )
    return LayerTraffic(t, n, passes["forward"], passes["backward"], per_gpu)


def collective_seconds(
    collective,
    nbytes,
    t,
    *,
    gpus_per_server=GPUS_PER_SERVER,
    intra=INTRA,
    inter=INTER,
    topology="flat-ring",
):
    """Seconds for a ring ``collective`` of n = ``nbytes`` on t GPUs that fill servers of
    ``gpus_per_server`` GPUs in order.

    t <= gpus_per_server: one ring on the ``intra`` link (NVLink via NVSwitch).
    Beyond, ``"flat-ring"``: one ring whose every step runs at the ``inter`` link (a NIC),
    the slowest hop setting the pace. ``"two-level"``: reduce-scatter inside each server,
    the collective across servers on 1/g of the data (each GPU on its own NIC, rails in
    parallel), all-gather inside (needs g | t). Every term is
    :func:`scaleout.costmodel.collective_time` (``"ring"``, gamma = 0).
    """
    if collective not in ("allreduce", "reducescatter", "allgather"):
        raise ValueError(
            f"collective must be allreduce, reducescatter or allgather, got {collective!r}"
        )
    if topology not in TOPOLOGIES:
        raise ValueError(f"topology must be one of {TOPOLOGIES}, got {topology!r}")
    t, g = _int("t", t), _int("gpus_per_server", gpus_per_server)
    nv, nic = H.link(intra), H.link(inter)

    def ring(name, n, p, link):
        return M.collective_time(name, "ring", n, p, link.alpha_s, link.beta_s_per_byte)

    if t <= g:
        return ring(collective, nbytes, t, nv)
    if topology == "flat-ring":
        return ring(collective, nbytes, t, nic)
    if t % g:
        raise ValueError(f"two-level needs t to be a multiple of gpus_per_server = {g}, got {t}")
    servers, part = t // g, np.asarray(nbytes, dtype=np.float64) / g
    seconds = ring(collective, part, servers, nic)
    if collective in ("allreduce", "reducescatter"):
        seconds = seconds + ring("reducescatter", nbytes, g, nv)
    if collective in ("allreduce", "allgather"):
        seconds = seconds + ring("allgather", nbytes, g, nv)
    return seconds


@dataclass(frozen=True)
class LayerSeconds:
    forward: float
    backward: float

    @property
    def total(self) -> float:
        return self.forward + self.backward


def layer_comm_seconds(b, s, h, t, dtype_bytes=2, sequence_parallel=False, **links):
    """Communication seconds of one layer per micro-batch: the collectives of
    :func:`layer_traffic`, each timed by :func:`collective_seconds` (``links``:
    gpus_per_server, intra, inter, topology). Not overlapped with compute."""
    traffic = layer_traffic(b, s, h, t, dtype_bytes, sequence_parallel)

    def seconds(counts):
        return float(
            sum(
                k * collective_seconds(c, traffic.message_bytes, t, **links)
                for c, k in counts.items()
            )
        )

    return LayerSeconds(seconds(traffic.forward), seconds(traffic.backward))


def layer_flops(b, s, h) -> float:
    """Forward FLOPs of one transformer layer, 24 b s h^2 + 4 b s^2 h (Narayanan et al.
    2021, Appendix); the backward pass costs twice the forward."""
    b, s, h = (_int(name, v) for name, v in (("b", b), ("s", s), ("h", h)))
    return 24.0 * b * s * h * h + 4.0 * b * s * s * h


def layer_compute_seconds(b, s, h, t, peak_flops=H100_SXM_BF16_DENSE_FLOPS) -> LayerSeconds:
    """Ideal compute seconds per GPU at ``peak_flops``: forward 1/t of :func:`layer_flops`,
    backward twice that (no recomputation). A lower bound: real kernels run below peak."""
    t = _int("t", t)
    if not peak_flops > 0:
        raise ValueError(f"peak_flops must be > 0, got {peak_flops!r}")
    forward = layer_flops(b, s, h) / t / peak_flops
    return LayerSeconds(forward, 2 * forward)


@dataclass(frozen=True)
class LinkRatio:
    """Per-GPU bandwidth inside the server (``intra``) against what leaves it (``inter``)."""

    intra_gb_per_s: float  # per direction
    inter_gb_per_s: float  # per direction

    @property
    def like_for_like(self) -> float:
        """Per direction over per direction (= bidirectional over bidirectional)."""
        return self.intra_gb_per_s / self.inter_gb_per_s

    @property
    def bidirectional_over_per_direction(self) -> float:
        """The mixed-up ratio, a vendor's bidirectional NVLink over a NIC's per-direction rate."""
        return 2 * self.intra_gb_per_s / self.inter_gb_per_s

    @property
    def per_direction_over_bidirectional(self) -> float:
        return self.intra_gb_per_s / (2 * self.inter_gb_per_s)


def link_ratio(intra=INTRA, inter=INTER) -> LinkRatio:
    """NVLink against NIC per GPU from :mod:`scaleout.hardware` (H100: 450 and 50 GB/s per
    direction, so 900 GB/s bidirectional against 2 x 50 GB/s: 9x)."""
    return LinkRatio(H.link(intra).gb_per_s, H.link(inter).gb_per_s)


# ------------------------------------------------------ scatter-gather between stages


@dataclass(frozen=True)
class StageTransfer:
    """Sending one stage's output (b s h x dtype bytes, replicated on t GPUs after g) to
    the next pipeline stage on another server; GPU i sends to GPU i there, on its rail."""

    t: int
    tensor_bytes: float
    per_rail_full: float  # every GPU sends the whole tensor
    per_rail_scatter_gather: float  # every GPU sends 1/t of it ...
    allgather_bytes_per_gpu: float  # ... and the receivers' ring all-gather sends this each

    @property
    def cross_server_full(self) -> float:
        return self.t * self.per_rail_full

    @property
    def cross_server_scatter_gather(self) -> float:
        return self.t * self.per_rail_scatter_gather

    @property
    def saving(self) -> float:
        """Cross-server bytes without scatter-gather over those with it (equals t)."""
        return self.cross_server_full / self.cross_server_scatter_gather


def stage_transfer(b, s, h, t, dtype_bytes=2, gpus_per_server=GPUS_PER_SERVER) -> StageTransfer:
    """Bytes with and without Megatron's scatter-gather (Narayanan et al. 2021, Sec. 4.1;
    Megatron-LM ``--scatter-gather-tensors-in-pipeline``). The all-gather runs on NVLink,
    so t <= gpus_per_server."""
    b, s, h, t, dtype_bytes = _sizes(b, s, h, t, dtype_bytes)
    if t > _int("gpus_per_server", gpus_per_server):
        raise ValueError(
            f"t must be <= gpus_per_server = {gpus_per_server} (the all-gather "
            f"runs inside one server), got {t}"
        )
    n = b * s * h * dtype_bytes
    return StageTransfer(t, n, n, n / t, M.busbw_factor("allgather", t) * n)


def stage_transfer_seconds(b, s, h, t, dtype_bytes=2, intra=INTRA, inter=INTER):
    """(seconds without, seconds with scatter-gather): rails run in parallel, each send
    alpha + bytes beta on the NIC (costmodel's broadcast on p = 2), plus the NVLink ring
    all-gather of the whole tensor for scatter-gather."""
    st = stage_transfer(b, s, h, t, dtype_bytes)
    nv, nic = H.link(intra), H.link(inter)

    def send(nbytes):
        return M.collective_time(
            "broadcast", "binomial", nbytes, 2, nic.alpha_s, nic.beta_s_per_byte
        )

    gather = M.collective_time(
        "allgather", "ring", st.tensor_bytes, t, nv.alpha_s, nv.beta_s_per_byte
    )
    return send(st.per_rail_full), send(st.per_rail_scatter_gather) + gather


def stage_transfer_schedule(t: int, n: int, scatter_gather: bool = True) -> list[C.Step]:
    """Steps on 2t ranks: 0..t-1 are stage k's server (each holds the whole n-element
    tensor), t..2t-1 the next stage's. Without scatter-gather, in step j rank i sends chunk
    j to rank t+i (t steps: all of it). With it, rank i sends only chunk i (one step), then
    a ring all-gather among t..2t-1 (:func:`scaleout.collectives.ring_allgather_schedule`).
    Replay with :func:`scaleout.collectives.replay`; count with ``bytes_sent_per_rank``."""
    t, n = _int("t", t), _int("n", n)
    _divides(t, n, "n")
    bounds = C.chunk_bounds(n, t)

    def rail(chunk_of):
        return C.Step(
            "rail",
            tuple(
                C.Transfer(i, t + i, c, int(bounds[c]), int(bounds[c + 1] - bounds[c]), False)
                for i in range(t)
                for c in [chunk_of(i)]
            ),
        )

    if not scatter_gather:
        return [rail(lambda i, j=j: j) for j in range(t)]
    shifted = [
        C.Step(
            "all-gather",
            tuple(
                C.Transfer(tr.src + t, tr.dst + t, tr.chunk, tr.offset, tr.count, tr.reduce)
                for tr in step.transfers
            ),
        )
        for step in C.ring_allgather_schedule(t, n)
    ]
    return [rail(lambda i: i)] + shifted
