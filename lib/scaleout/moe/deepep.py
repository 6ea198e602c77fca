"""DeepEP's measured all-to-alls, priced by the book's all-to-all model.

Taught in chapter 7. DeepEP (deepseek-ai/DeepEP) publishes dispatch and combine of its V1
kernels on H800 nodes (8 GPUs, about 160 GB/s of NVLink, one 400 Gb/s ConnectX-7 NIC per
GPU at about 50 GB/s); the rows are ``scaleout.moe.DEEPEP_MEASUREMENTS``. Pricing a
row takes two facts from DeepEP's code at the version that was measured.

**What moved over which link** (``AllToAllMeasurement.transport``). The *normal* kernels
send a token once per node over RDMA, to its rail peer, which forwards it over NVLink
(``"two-hop"``). The *low-latency* kernels send every (token, expert) copy on its own:
before PR #173 (May 2025) over RDMA to every other GPU, the node's own included
(``deep_ep/buffer.py`` set ``NVSHMEM_DISABLE_P2P=1``; ``"rdma"``); since then over NVLink
to the GPUs of the same node (``internode_ll.cu`` copies through the peer's mapped
memory when it has one) and over RDMA to the rest (``"nvlink+rdma"``).

**What DeepEP counts.** A reported bandwidth is bytes DeepEP counts over the measured
time, and it counts more than crosses the link named:

* low-latency (``tests/test_low_latency.py``): every selected copy of the rank, those to
  its own experts included (issue #141: "algorithm bandwidth", not the physical one);
  FP8 messages of ``hidden + hidden / 128 * 4 + 16`` bytes (values, one fp32 scale per
  128, a 16-byte header), BF16 of ``2 * hidden``; the test masks 10 random selections of
  the rank's ``128 x 8``.
* normal, across nodes (``tests/test_internode.py``): "RDMA" bytes are the rank's
  (token, node) pairs, its own node included (issue #51: about ``N / (N - 1)`` times what
  the NIC carries on N nodes); "NVL" bytes the tokens the rank receives, once each, its
  own included (``recv_x``). FP8 is ``hidden * (1 + 4 / 128)`` bytes, BF16 ``2 * hidden``.
  Inside one node (``tests/test_intranode.py``) only the NVL count exists.

**Pricing** (nothing fitted). Low-latency rows: an even all-to-all of the counted copies
(a rank's copies to itself stay in its memory) priced by
:func:`~scaleout.moe.alltoall_seconds` on the H800 network (``"nvlink+rdma"``) or on
:func:`~scaleout.moe.rdma_only` of it (``"rdma"``), against the measured time. Normal
rows: the routing DeepEP's test draws (:func:`~scaleout.moe.deepep_routing`), priced by
:func:`~scaleout.moe.two_hop_time`; DeepEP publishes no time for them, so the measured
time is what DeepEP counts for that routing over the bandwidth it reports.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import checks
from .cost import AllToAllTime, Network, alltoall_seconds, as_network, two_hop_time
from .published import (
    FP8_SCALE_BYTES_PER_ELEMENT,
    H800_NETWORK,
    LL_HEADER_BYTES,
    LL_MASKED_DRAWS,
    AllToAllMeasurement,
)
from .routing import route

#: Routed experts in the normal kernels' tests (``(256 // num_ranks) * num_ranks``).
TEST_EXPERTS = 256


def counted_copy_bytes(m: AllToAllMeasurement) -> float:
    """Bytes DeepEP counts per token copy of row ``m``: BF16 ``2 * hidden`` for a combine;
    FP8 ``hidden * (1 + 4 / 128)`` for a dispatch, plus the 16-byte header of the
    low-latency messages."""
    checks.instance("m", m, AllToAllMeasurement)
    if m.phase == "combine":
        return float(m.hidden * m.bytes_per_element)
    header = LL_HEADER_BYTES if m.kernel == "low-latency" else 0
    return m.hidden * (m.bytes_per_element + FP8_SCALE_BYTES_PER_ELEMENT) + header


def low_latency_copies(m: AllToAllMeasurement) -> float:
    """Copies a rank sends in the low-latency test, as DeepEP counts them (its own
    experts' included): ``tokens * k`` minus the expected number of distinct selections
    hit by ``LL_MASKED_DRAWS`` random masks."""
    checks.instance("m", m, AllToAllMeasurement)
    if m.kernel != "low-latency":
        raise checks.fail("m", "a low-latency row", m.kernel)
    n = m.tokens_per_rank * m.k
    return n - n * (1 - (1 - 1 / n) ** LL_MASKED_DRAWS)


def rdma_only(machine) -> Network:
    """``machine`` (a :class:`~scaleout.moe.Network`, or what
    :func:`~scaleout.moe.as_network` turns into one) with every GPU its own node: every
    byte to another GPU goes over its NIC (the low-latency kernels before PR #173)."""
    net = as_network(machine)
    return Network(1, net.nvlink_gb_per_s, net.network_gb_per_s, net.nvlink_alpha_s,
                   net.network_alpha_s, ("RDMA to every peer: " + net.source)[:1000],
                   net.per_peer_s)  # fmt: skip


@dataclass(frozen=True)
class LowLatencyPrice:
    """A low-latency row against the model: ``counted_bytes`` per rank as DeepEP counts
    them, and the ``model``'s all-to-all."""

    measurement: AllToAllMeasurement
    counted_bytes: float
    model: AllToAllTime

    def __post_init__(self):
        checks.instance("measurement", self.measurement, AllToAllMeasurement)
        checks.positive("counted_bytes", self.counted_bytes)
        checks.instance("model", self.model, AllToAllTime)

    @property
    def seconds(self) -> float:
        return self.model.seconds

    @property
    def measured_seconds(self) -> float:
        return self.measurement.microseconds * 1e-6

    @property
    def error(self) -> float:
        """The error, model over measured minus one; below zero the model is too fast."""
        return self.seconds / self.measured_seconds - 1

    @property
    def implied_bytes(self) -> float:
        """The published bandwidth times the published time (to compare with
        ``counted_bytes``: both are rounded)."""
        return self.measurement.gb_per_s * 1e9 * self.measured_seconds


def price_low_latency(m: AllToAllMeasurement, *, machine=H800_NETWORK) -> LowLatencyPrice:
    """Price low-latency row ``m`` on ``machine`` (a :class:`~scaleout.moe.Network` or
    what :func:`~scaleout.moe.as_network` turns into one; nodes of
    ``machine.gpus_per_node`` GPUs), or
    on :func:`~scaleout.moe.rdma_only` of it for the ``"rdma"`` rows: every rank sends
    its counted copies evenly to the ``ep`` ranks."""
    checks.instance("m", m, AllToAllMeasurement)
    net = as_network(machine)
    if m.kernel != "low-latency":
        raise checks.fail("m", "a low-latency row", m.kernel)
    on = rdma_only(net) if m.transport == "rdma" else net
    counted = low_latency_copies(m) * counted_copy_bytes(m)
    pairs = np.full((m.ep, m.ep), counted / m.ep)
    return LowLatencyPrice(m, counted, alltoall_seconds(pairs, machine=on))


def deepep_routing(ep, gpus_per_node=8, tokens_per_rank=4096, seed=0) -> np.ndarray:
    """(ep * tokens_per_rank, 8) the GPU of each copy as DeepEP's normal-kernel tests
    route: scores ``|N(0, 1)| + 1`` over ``TEST_EXPERTS`` experts, on several nodes
    only the ``min(nodes, 4)`` nodes with the best single score eligible, then the top 8;
    each rank's tokens drawn on their own (seeded)."""
    ep = checks.integer("ep", ep, 1, TEST_EXPERTS)
    g = checks.integer("gpus_per_node", gpus_per_node, 1, ep)
    if ep % g or TEST_EXPERTS % ep:
        raise checks.fail("ep", f"a divisor of {TEST_EXPERTS} and a multiple of {g}", ep)
    t = checks.integer("tokens_per_rank", tokens_per_rank, 1, 8192)
    seed = checks.integer("seed", seed, 0, 2**32 - 1)
    nodes = ep // g
    limit = dict(groups=nodes, max_groups=min(nodes, 4), group_top=1) if nodes > 1 else {}
    out = []
    for r in range(ep):
        z = np.abs(np.random.default_rng([seed, r]).standard_normal((t, TEST_EXPERTS))) + 1
        out.append(route(z, 8, gating="sigmoid", **limit).experts // (TEST_EXPERTS // ep))
    return np.concatenate(out)


@dataclass(frozen=True)
class NormalPrice:
    """A normal-kernel row against the model: the ``model``'s two-hop all-to-all of the
    test's routing, and what DeepEP counts per rank for that routing (mean over ranks):
    ``counted_rdma_bytes`` ((token, node) pairs, own node included; 0 inside one node)
    and ``counted_nvlink_bytes`` (tokens received, once each, own included)."""

    measurement: AllToAllMeasurement
    model: AllToAllTime
    counted_rdma_bytes: float
    counted_nvlink_bytes: float

    def __post_init__(self):
        checks.instance("measurement", self.measurement, AllToAllMeasurement)
        checks.instance("model", self.model, AllToAllTime)
        checks.nonnegative("counted_rdma_bytes", self.counted_rdma_bytes)
        checks.positive("counted_nvlink_bytes", self.counted_nvlink_bytes)

    @property
    def seconds(self) -> float:
        return self.model.seconds

    @property
    def counted_bytes(self) -> float:
        """What DeepEP counts for the link its row names."""
        m = self.measurement
        return self.counted_nvlink_bytes if m.link == "NVLink" else self.counted_rdma_bytes

    @property
    def measured_seconds(self) -> float:
        return self.counted_bytes / (self.measurement.gb_per_s * 1e9)

    @property
    def error(self) -> float:
        """The error, model over measured minus one; below zero the model is too fast."""
        return self.seconds / self.measured_seconds - 1

    @property
    def model_rdma_gb_per_s(self) -> float:
        """DeepEP's RDMA figure if the kernel took the model's time."""
        return self.counted_rdma_bytes / self.seconds / 1e9

    @property
    def model_nvlink_gb_per_s(self) -> float:
        """DeepEP's NVL figure if the kernel took the model's time."""
        return self.counted_nvlink_bytes / self.seconds / 1e9


def price_normal(m: AllToAllMeasurement, gpu=None, *, machine=H800_NETWORK) -> NormalPrice:
    """Price normal row ``m`` on ``machine`` (as in :func:`price_low_latency`): the two-hop
    dispatch (or, for a combine, the same bytes back) of ``gpu`` (default
    :func:`~scaleout.moe.deepep_routing` of ``m.ep`` ranks in nodes of
    ``machine.gpus_per_node``)."""
    checks.instance("m", m, AllToAllMeasurement)
    net = as_network(machine)
    if m.kernel != "normal":
        raise checks.fail("m", "a normal-kernel row", m.kernel)
    if gpu is None:
        gpu = deepep_routing(m.ep, net.gpus_per_node, m.tokens_per_rank)
    gpu = checks.array("gpu", gpu, ndim=2, integer=True, low=-1, high=m.ep - 1)
    if gpu.shape[0] % m.ep or gpu.shape[0] == 0:
        raise checks.fail("gpu", f"(tokens, k) with tokens a multiple of ep = {m.ep}", gpu.shape)
    t, g = gpu.shape[0], net.gpus_per_node
    if m.ep % g or t * m.ep > checks.MAX_ELEMENTS:
        raise checks.fail("m.ep", f"a multiple of {g} with tokens x ep <= {checks.MAX_ELEMENTS}",
                          m.ep)  # fmt: skip
    # the routing has t / ep tokens per rank; it stands for m.tokens_per_rank of them
    per_copy = counted_copy_bytes(m) * m.tokens_per_rank / (t // m.ep)
    model = two_hop_time(gpu, m.ep, per_copy, machine=net)
    hit = np.zeros((t, m.ep), dtype=bool)
    rows = np.repeat(np.arange(t), gpu.shape[1])
    hit[rows[gpu.ravel() >= 0], gpu.ravel()[gpu.ravel() >= 0]] = True
    pairs = hit.reshape(t, m.ep // g, g).any(axis=2).sum() if m.ep > g else 0
    rdma = float(pairs) / m.ep * per_copy
    nvl = float(hit.sum()) / m.ep * per_copy
    return NormalPrice(m, model, rdma, nvl)
