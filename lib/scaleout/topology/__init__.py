"""A GPU cluster as a graph of links: paths, transfer bandwidths and per-link loads.

Chapter 11 ("NVLink, NVSwitch and the cluster network") builds on this module. The model:

* GPUs sit in servers; the GPUs of one NVLink domain (one server, or several servers
  joined by NVLink switches as in GB200 NVL72) reach each other through a non-blocking
  NVSwitch fabric: a transfer from GPU a to GPU b loads a's NVLink port (out) and b's
  (in), each ``nvlink_gb_per_s`` per direction (all of a GPU's links together). The
  point-to-point NVLink meshes of DGX-1 are not modelled.
* Everything else leaves through NICs (``nics_per_server``, GPUs share them evenly) to
  leaf switches and, between leaves, through a spine. The spine is one non-blocking
  aggregate (ECMP assumed perfectly balanced); a leaf's uplink to it carries the leaf's
  NIC bandwidth divided by ``oversubscription``. The GPU-NIC PCIe hop is not modelled.
* ``rail_optimized``: NIC i of every server of a group of ``servers_per_leaf`` servers goes
  to leaf i of that group, the "rail" (NVIDIA DGX SuperPOD reference architecture:
  traffic on a rail is one switch away, traffic between rails or groups crosses the
  spine). Otherwise all NICs of ``servers_per_leaf`` servers share one top-of-rack leaf.

Links are directed: bandwidths are per direction. A traffic pattern is a sequence of
phases, each a set of concurrent flows (src GPU, dst GPU, bytes). This module says *where
the bytes go* (:func:`link_loads`, :func:`tier_bytes`). Its time, :func:`traffic_time`, is
per phase ``steps * alpha`` plus the busiest link's bytes over that link's bandwidth: the
**fluid bound** that pipelined collectives (chunked rings and trees) approach. For one ring
this is exactly the alpha-beta ring cost of :mod:`scaleout.costmodel` (Thakur et al. 2005).
It is a floor on the time of the pattern it prices, not a prediction, and it assumes what
every pattern here does: the GPUs do the reduction. In-network reduction (NVLS in the
NVSwitches, SHARP in InfiniBand switches) sends each byte once and beats that floor; the
bounds of both kinds are :func:`allreduce_bound`. What NCCL actually takes (its channels at
a per-channel speed below the link's, its protocols, its choice between ring, tree and NVLS,
chapter 10) is :func:`nccl_allreduce_scenarios`, NCCL's own cost model
(:mod:`scaleout.nccl`), priced beside the fluid bound.

The patterns: tensor-parallel rings inside a server (:func:`tp_allreduce`), pipeline sends
(:func:`pp_send`), data-parallel rings, binary and double binary trees over servers
(:func:`dp_allreduce`), and three ways to all-reduce over every GPU: NCCL's flat ring, one
ring per channel striped over the NICs (:func:`flat_ring_allreduce`; with one channel it is
the labelled "what if one NIC" case), and the hierarchical scheme of Horovod and BlueConnect
(:func:`hierarchical_allreduce`), a different algorithm that NCCL does not use.

Limits (``ValueError`` beyond them): at most ``MAX_GPUS`` = 65,536 GPUs in a cluster (the
book's largest case), ``MAX_CHANNELS`` = 64 channels, ``MAX_FLOWS`` = 2**21 flows in one
traffic pattern (65,536 GPUs x 32 channels).


The package, in reading order: ``records`` (links, flows, paths, timings, traffic; the limits),
``cluster`` (the cluster and its paths), ``loads`` (link loads, tier bytes, the fluid bound),
``patterns`` (the traffic patterns) and ``scenarios`` (all-reduce scenarios, bounds, NCCL's
model beside them).
"""

from . import scenarios as _scenarios
from .cluster import (
    Cluster,
)
from .loads import (
    link_loads,
    tier_bytes,
    traffic_time,
)
from .patterns import (
    dp_allreduce,
    dp_groups,
    flat_ring_allreduce,
    hierarchical_allreduce,
    pp_send,
    ring_allreduce,
    tp_allreduce,
)
from .records import (
    DP_ALGORITHMS,
    LINK_KINDS,
    MAX_ALPHA_S,
    MAX_CHANNELS,
    MAX_FLOWS,
    MAX_GPUS,
    MAX_STEPS,
    TIERS,
    Flow,
    Link,
    Path,
    Timing,
    Traffic,
)
from .scenarios import (
    SCENARIOS,
    allreduce_bound,
    allreduce_scenarios,
    nccl_allreduce_scenarios,
    nccl_machine,
)

# The documented constants are bound here too: autodoc reads the ``#:`` comment of a
# constant in the module it documents (this one), not where the constant is defined.

#: The scenarios of :func:`nccl_allreduce_scenarios` (NCCL's model, chapter 10).
NCCL_SCENARIOS = _scenarios.NCCL_SCENARIOS

__all__ = [
    "Cluster",
    "DP_ALGORITHMS",
    "Flow",
    "LINK_KINDS",
    "Link",
    "MAX_ALPHA_S",
    "MAX_CHANNELS",
    "MAX_FLOWS",
    "MAX_GPUS",
    "MAX_STEPS",
    "NCCL_SCENARIOS",
    "Path",
    "SCENARIOS",
    "TIERS",
    "Timing",
    "Traffic",
    "allreduce_bound",
    "allreduce_scenarios",
    "dp_allreduce",
    "dp_groups",
    "flat_ring_allreduce",
    "hierarchical_allreduce",
    "link_loads",
    "nccl_allreduce_scenarios",
    "nccl_machine",
    "pp_send",
    "ring_allreduce",
    "tier_bytes",
    "tp_allreduce",
    "traffic_time",
]
