"""How NCCL moves the bytes: its cost model, rebuilt from one pinned release.

Chapter 10 ("How NCCL moves the bytes") builds on this package. NCCL (release
:data:`~scaleout.nccl.constants.RELEASE`) prices every collective before it runs it: it
searches the machine for channels (:mod:`~scaleout.nccl.search`), turns them into a
latency and a bandwidth per algorithm and protocol (:mod:`~scaleout.nccl.tuning`, every
constant in :mod:`~scaleout.nccl.constants` with its file and line), and runs the pair
with the smallest predicted time (:mod:`~scaleout.nccl.model`). Topologies:
:mod:`~scaleout.nccl.topo`; all-to-all and send/recv, which NCCL does not price:
:mod:`~scaleout.nccl.p2p`; the LL and Simple protocols on CPU processes:
:mod:`~scaleout.nccl.shm`.
"""

from .constants import CONSTANTS, RELEASE
from .model import (
    ALGORITHMS,
    ALL_COLLECTIVES,
    COLLECTIVES,
    PROTOCOLS,
    Prediction,
    Tuning,
    collective_seconds,
    predict,
    tune,
    tuning_text,
)
from .topo import PRESETS, Topology, topology

__all__ = [
    "ALGORITHMS",
    "ALL_COLLECTIVES",
    "COLLECTIVES",
    "CONSTANTS",
    "PRESETS",
    "PROTOCOLS",
    "RELEASE",
    "Prediction",
    "Topology",
    "Tuning",
    "collective_seconds",
    "predict",
    "topology",
    "tune",
    "tuning_text",
]
