"""What one tensor-parallel layer communicates, and what it costs on NVLink and NICs.

Sources: Shoeybi et al. 2019 (arXiv 1909.08053), Sec. 3: operators f and g, 2 all-reduces
forward and 2 backward per layer; Narayanan et al., SC21 (arXiv 2104.04473), Sec. 3:
8 b s h (t-1)/t values per GPU per layer, and the Appendix: 24 b s h^2 + 4 b s^2 h forward
FLOPs per layer; Korthikanti et al. 2022 (arXiv 2205.05198), Sec. 4.2.2: sequence
parallelism turns each all-reduce into a reduce-scatter and an all-gather. Megatron-LM's
code: ``megatron/core/tensor_parallel/mappings.py`` (``_CopyToModelParallelRegion`` is f,
``_ReduceFromModelParallelRegion`` is g) and ``layers.py``
(``LinearWithGradAccumulationAndAsyncCommunication``: with sequence parallelism the
column-parallel layer keeps only its input's sequence shard and all-gathers it again in
the backward pass for the weight gradient).

Symbols: t tensor-parallel GPUs, b micro-batch, s sequence length, h hidden size. Times
are seconds, sizes bytes; collective times come from NCCL's cost model
(:mod:`scaleout.nccl`, the default) or from :func:`scaleout.costmodel.collective_time`
with the link presets of :mod:`scaleout.hardware` (:func:`collective_seconds`). Limits:
:mod:`scaleout.tensor_parallel.sizes`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import checks, nccl
from .. import costmodel as M
from .. import hardware as H
from . import network
from .layers import MAX_HEADS
from .sizes import MAX_BATCH, MAX_HIDDEN, MAX_SEQ, MAX_T, divides, layer_sizes, t_size

# A DGX H100 server (8 H100 SXM GPUs on NVLink 4 through NVSwitch, one 400 Gb/s NIC per GPU),
# from the systems table of scaleout.hardware, which cites the DGX H100 guide.
GPUS_PER_SERVER = H.system("DGX H100").gpus_per_server
# The H100 SXM's dense BF16 peak lives in hardware (re-exported here for chapter 4's imports).
H100_SXM_BF16_DENSE_FLOPS = H.H100_SXM_BF16_DENSE_FLOPS
INTRA, INTER = "nvlink4-h100", "nic-400g"
# "nccl" prices with NCCL's own cost model (chapter 10); "flat-ring" is chapter 1's
# alpha-beta ring, and beyond one server the one-NIC teaching case (one ring whose every
# step runs at one NIC's speed; real NCCL stripes its rings over all the NICs of a server);
# "two-level" is the alpha-beta hierarchical all-reduce.
TOPOLOGIES = ("nccl", "flat-ring", "two-level")
COLLECTIVES = ("allreduce", "reducescatter", "allgather")
MAX_COUNT = 1_000  # collectives of one kind per pass, for a LayerTraffic record

# Megatron's conjugate operators (Shoeybi et al. 2019, Sec. 3; mappings.py above): what
# each does in the forward and in the backward pass. With sequence parallelism
# (Korthikanti et al. 2022, Sec. 4.2.2) f becomes an all-gather of the sequence shards
# (reduce-scatter backward) and g a reduce-scatter (all-gather backward). Korthikanti et
# al. call these two g and g-bar (and, without sequence parallelism, f and f-bar): their
# g is the book's f, at the entrance of a block.
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


def _counts(name: str, value) -> dict:
    if not isinstance(value, dict):
        raise checks.fail(name, "a dict {collective: count}", value)
    for key, count in value.items():
        checks.choice(f"{name} key", key, COLLECTIVES)
        checks.integer(f"{name}[{key!r}]", count, 0, MAX_COUNT)
    return value


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

    def __post_init__(self):
        t_size(self.t)
        checks.nonnegative("message_bytes", self.message_bytes)
        _counts("forward", self.forward)
        _counts("backward", self.backward)
        checks.nonnegative("bytes_per_gpu", self.bytes_per_gpu)

    @property
    def collectives(self) -> int:
        return sum(self.forward.values()) + sum(self.backward.values())


def layer_traffic(
    b, s, h, t, dtype_bytes=2, sequence_parallel=False, heads=None, regather_input=False
):
    """Counts and bytes per layer, derived from ``OPERATORS`` (or ``SP_OPERATORS``): one f
    and one g in each of the two blocks. Without sequence parallelism 2 all-reduces forward
    and 2 backward, bytes per GPU 8 b s h (t-1)/t x dtype (Narayanan et al. 2021, Sec. 3);
    with it 2 all-gathers + 2 reduce-scatters each way, the same bytes (Korthikanti et al.
    2022, Sec. 4.2.2), and t must also divide s.

    ``regather_input`` (sequence parallelism only) counts what Megatron-LM's implementation
    adds: each block's column-parallel layer saved only its input's sequence shard, so the
    backward pass all-gathers that input again for the weight gradient, one more all-gather
    per block (``LinearWithGradAccumulationAndAsyncCommunication.backward``): 10 instead of
    8 b s h (t-1)/t values per GPU.
    """
    b, s, h, t, dtype_bytes = layer_sizes(b, s, h, t, dtype_bytes)
    sequence_parallel = checks.boolean("sequence_parallel", sequence_parallel)
    regather_input = checks.boolean("regather_input", regather_input)
    if heads is not None:
        heads = checks.integer("heads", heads, 1, MAX_HEADS)
        if h % heads:
            raise checks.fail("heads", f"a divisor of h = {h}", heads)
        divides(t, heads, "the number of heads")
    if sequence_parallel:
        divides(t, s, "the sequence length s (sequence parallelism)")
    elif regather_input:
        raise checks.fail("regather_input", "False without sequence parallelism", True)
    ops = SP_OPERATORS if sequence_parallel else OPERATORS
    passes = {"forward": {}, "backward": {}}
    for _block in BLOCKS:
        for op in ("f", "g"):
            for direction, counts in passes.items():
                name = ops[op][direction]
                if name != "identity" and t > 1:
                    counts[name] = counts.get(name, 0) + 1
        if regather_input and t > 1:
            passes["backward"]["allgather"] += 1
    n = float(b * s * h) * dtype_bytes
    per_gpu = sum(
        count * M.busbw_factor(c, t) * n for p in passes.values() for c, count in p.items()
    )
    return LayerTraffic(t, n, passes["forward"], passes["backward"], per_gpu)


def _link(name: str, value) -> H.LinkPreset:
    return H.link(checks.choice(name, value, tuple(H.LINKS)))


def collective_seconds(
    collective,
    nbytes,
    t,
    *,
    gpus_per_server=None,
    intra=None,
    inter=None,
    topology="nccl",
    machine=None,
):
    """Seconds for a ``collective`` of n = ``nbytes`` (vectorised) on t GPUs that fill
    NVLink domains of ``gpus_per_server`` GPUs in order (a server's 8, or a whole rack's 72
    in a GB200 NVL72). Defaults: a DGX H100 (8 GPUs, ``intra="nvlink4-h100"``, one
    ``inter="nic-400g"`` NIC per GPU).

    ``topology``:

    * ``"nccl"`` (the default): NCCL's own cost model, release
      :data:`scaleout.nccl.constants.RELEASE` (chapter 10,
      :func:`scaleout.nccl.model.collective_seconds`), for a communicator of t GPUs, inside
      one NVLink domain or ``t / gpus_per_server`` whole servers (when g does not divide t,
      the regular group of :func:`scaleout.tensor_parallel.network.group_shape`). The
      machine is ``machine`` (an :class:`scaleout.nccl.topo.Topology` or a preset name of
      :data:`scaleout.nccl.topo.PRESETS`, whose ``gpus_per_node`` is the server size; then
      leave ``gpus_per_server``, ``intra`` and ``inter`` out) or the one
      :func:`scaleout.tensor_parallel.network.machine` builds from ``gpus_per_server``,
      ``intra`` and ``inter``.
    * ``"flat-ring"``: chapter 1's alpha-beta ring (:func:`scaleout.costmodel.collective_time`,
      ``"ring"``, gamma = 0) with the link presets of :mod:`scaleout.hardware`: for
      t <= gpus_per_server one ring on the ``intra`` link; beyond, **the one-NIC teaching
      case** ("what if one NIC"): one ring whose every step runs at one ``inter`` NIC, the
      slowest hop setting the pace. Real NCCL stripes its rings over all the NICs of a
      server; this case leaves that out and overstates the time up to g times.
    * ``"two-level"``: alpha-beta hierarchical all-reduce (Horovod's, not NCCL's):
      reduce-scatter inside each server, the collective across servers on 1/g of the data
      (each GPU on its own NIC, rails in parallel), all-gather inside (needs g | t).
    """
    collective = checks.choice("collective", collective, COLLECTIVES)
    topology = checks.choice("topology", topology, TOPOLOGIES)
    t = t_size(t)
    n = checks.array("nbytes", nbytes, low=0.0)
    if topology == "nccl":
        topo = _machine(gpus_per_server, intra, inter, machine)
        seconds = _nccl_seconds(collective, n, t, topo)
        return checks.as_output(checks.finite_result("the collective time", seconds))
    if machine is not None:
        raise checks.fail("machine", "None unless topology is 'nccl'", machine)
    g = checks.integer("gpus_per_server", GPUS_PER_SERVER if gpus_per_server is None
                       else gpus_per_server, 1, MAX_T)  # fmt: skip
    nv = _link("intra", INTRA if intra is None else intra)
    nic = _link("inter", INTER if inter is None else inter)

    def ring(name, size, p, link):
        return M.collective_time(name, "ring", size, p, link.alpha_s, link.beta_s_per_byte)

    if t <= g:
        seconds = ring(collective, n, t, nv)
    elif topology == "flat-ring":
        seconds = ring(collective, n, t, nic)
    else:
        if t % g:
            raise checks.fail("t", f"a multiple of gpus_per_server = {g} (two-level)", t)
        seconds = ring(collective, n / g, t // g, nic)
        if collective in ("allreduce", "reducescatter"):
            seconds = seconds + ring("reducescatter", n, g, nv)
        if collective in ("allreduce", "allgather"):
            seconds = seconds + ring("allgather", n, g, nv)
    return checks.as_output(checks.finite_result("the collective time", seconds))


def _machine(gpus_per_server, intra, inter, machine) -> nccl.Topology:
    """The machine of ``topology="nccl"``: ``machine`` if given (then no link arguments),
    else the one built from the links (:func:`scaleout.tensor_parallel.network.machine`)."""
    if machine is None:
        return network.machine(
            GPUS_PER_SERVER if gpus_per_server is None else gpus_per_server,
            INTRA if intra is None else intra,
            INTER if inter is None else inter,
        )
    topo = network.check_machine(machine)
    for name, value in (("intra", intra), ("inter", inter)):
        if value is not None:
            raise checks.fail(name, "None when machine is given (the machine has its links)",
                              value)  # fmt: skip
    if gpus_per_server is not None and gpus_per_server != topo.gpus_per_node:
        raise checks.fail("gpus_per_server", f"None or the machine's {topo.gpus_per_node}",
                          gpus_per_server)  # fmt: skip
    return topo


def _nccl_seconds(collective: str, n: np.ndarray, t: int, topo: nccl.Topology) -> np.ndarray:
    per_server, servers = network.group_shape(t, topo.gpus_per_node)
    seconds = np.zeros(n.shape)
    sent = n > 0  # an empty collective costs nothing (NCCL returns at once)
    if np.any(sent):
        seconds[sent] = nccl.collective_seconds(
            collective, n[sent], per_server, servers, machine=topo
        )
    return seconds


@dataclass(frozen=True)
class LayerSeconds:
    """Seconds of one layer and micro-batch, forward and backward."""

    forward: float
    backward: float

    def __post_init__(self):
        checks.nonnegative("forward", self.forward)
        checks.nonnegative("backward", self.backward)

    @property
    def total(self) -> float:
        return self.forward + self.backward


def layer_comm_seconds(
    b, s, h, t, dtype_bytes=2, sequence_parallel=False, regather_input=False, **links
):
    """Communication seconds of one layer per micro-batch: the collectives of
    :func:`layer_traffic`, each timed by :func:`collective_seconds` (``links``:
    gpus_per_server, intra, inter, topology, machine; NCCL's model by default). All of it,
    overlapped or not (:func:`scaleout.tensor_parallel.layer_overlap` splits it)."""
    unknown = sorted(set(links) - {"gpus_per_server", "intra", "inter", "topology", "machine"})
    if unknown:
        allowed = "keywords among gpus_per_server, intra, inter, topology, machine"
        raise checks.fail("links", allowed, unknown)
    traffic = layer_traffic(
        b, s, h, t, dtype_bytes, sequence_parallel, regather_input=regather_input
    )

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
    b = checks.integer("b", b, 1, MAX_BATCH)
    s = checks.integer("s", s, 1, MAX_SEQ)
    h = checks.integer("h", h, 1, MAX_HIDDEN)
    return 24.0 * b * s * h * h + 4.0 * b * s * s * h  # tied to transformer by a unit test


def layer_compute_seconds(b, s, h, t, peak_flops=H100_SXM_BF16_DENSE_FLOPS) -> LayerSeconds:
    """Ideal compute seconds per GPU at ``peak_flops``: forward 1/t of :func:`layer_flops`,
    backward twice that (no recomputation). A lower bound: real kernels run below peak."""
    t = t_size(t)
    peak_flops = checks.positive("peak_flops", peak_flops)
    forward = checks.finite_result("the compute time", layer_flops(b, s, h) / t / peak_flops)
    return LayerSeconds(forward, 2 * forward)


@dataclass(frozen=True)
class LinkRatio:
    """Per-GPU bandwidth inside the server (``intra``) against what leaves it (``inter``)."""

    intra_gb_per_s: float  # per direction
    inter_gb_per_s: float  # per direction

    def __post_init__(self):
        checks.positive("intra_gb_per_s", self.intra_gb_per_s)
        checks.positive("inter_gb_per_s", self.inter_gb_per_s)

    @property
    def like_for_like(self) -> float:
        """Per direction over per direction (= bidirectional over bidirectional)."""
        return checks.finite_result("the ratio", self.intra_gb_per_s / self.inter_gb_per_s)

    @property
    def bidirectional_over_per_direction(self) -> float:
        """The mixed-up ratio, a vendor's bidirectional NVLink over a NIC's per-direction rate."""
        return 2 * self.like_for_like

    @property
    def per_direction_over_bidirectional(self) -> float:
        return self.like_for_like / 2


def link_ratio(intra=INTRA, inter=INTER) -> LinkRatio:
    """NVLink against NIC per GPU from :mod:`scaleout.hardware` (H100: 450 and 50 GB/s per
    direction, so 900 GB/s bidirectional against 2 x 50 GB/s: 9x)."""
    return LinkRatio(_link("intra", intra).gb_per_s, _link("inter", inter).gb_per_s)
