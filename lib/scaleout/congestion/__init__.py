"""Congestion and lossless Ethernet: ECMP collisions, queue pairs, spraying and adaptive
routing, DCQCN, PFC and the fabrics that avoid the spine.

Chapter 14 ("Congestion and lossless Ethernet") builds on this package, one concept a file:
:mod:`~scaleout.congestion.ecmp` (balls into bins), :mod:`~scaleout.congestion.fairshare`
(max-min fair rates), :mod:`~scaleout.congestion.collective` (a ring on a leaf-spine fabric
routed per flow, per packet or per flowlet), :mod:`~scaleout.congestion.qps` (how NCCL opens
and uses several queue pairs per connection, from its source), :mod:`~scaleout.congestion.dcqcn`
(DCQCN's fluid model), :mod:`~scaleout.congestion.pfc` (a switch port with priority flow
control), :mod:`~scaleout.congestion.fabrics` (fat-tree sizing, rail-only, multi-plane),
:mod:`~scaleout.congestion.published` (published numbers, ``data/congestion.csv``) and
:mod:`~scaleout.demos.incast` (a real incast over a veth pair, where the machine allows).
"""

from .collective import CollectiveResult, Fabric, cluster_of, collective_under_ecmp, spines_of
from .ecmp import busiest_path_slowdown, ecmp_expected_max, ecmp_loads, enumerate_expected_max
from .fairshare import jain_index, max_min_rates

__all__ = [
    "CollectiveResult",
    "Fabric",
    "busiest_path_slowdown",
    "cluster_of",
    "collective_under_ecmp",
    "ecmp_expected_max",
    "ecmp_loads",
    "enumerate_expected_max",
    "jain_index",
    "max_min_rates",
    "spines_of",
]
