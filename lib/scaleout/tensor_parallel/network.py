"""The machine NCCL prices a tensor-parallel collective on, built from the book's link presets.

:func:`scaleout.tensor_parallel.collective_seconds` takes its links as names from
:mod:`scaleout.hardware` (``intra``: an NVLink or PCIe preset, ``inter``: a NIC preset) and
a server size. For ``topology="nccl"`` it prices the collective with NCCL's own cost model
(:mod:`scaleout.nccl`, chapter 10) on the machine :func:`machine` builds from those three
values, a documented reduction of a real server to what NCCL's search reads:

* the GPU generation and NVLink link count come from the NVLink preset (V100, A100, H100,
  B200; P100 has no row in NCCL's model), NVLink SHARP (NVLS) from the generation (Hopper
  and later sit on third-generation NVSwitches);
* every other field comes from the preset server of that generation in
  :data:`scaleout.nccl.topo.PRESETS`: ``dgx-a100`` for V100 and A100 (PCIe gen 3 for V100),
  ``dgx-h100`` for H100 and for B200 servers of up to 8 GPUs (a DGX B200 has the DGX H100's
  eight 400 Gb/s NICs and x86 hosts), ``gb200-nvl72`` for B200 NVLink domains of more than
  8 GPUs, ``pcie`` for PCIe-only servers;
* ``gpus_per_server`` GPUs per server, each with its own NIC of the ``inter`` preset's speed
  (the convention of :mod:`scaleout.tensor_parallel`: "each GPU on its own NIC").

Pass an :class:`scaleout.nccl.topo.Topology` as ``machine=`` instead to price any other server.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .. import checks, nccl
from .. import hardware as H
from .. import machine as M
from .sizes import MAX_T

#: NVLink presets of :mod:`scaleout.hardware` -> NCCL's GPU name (:mod:`scaleout.machine`'s).
NVLINK_GPUS = M.NVLINK_GPUS
#: GPU rows of :data:`scaleout.hardware.GPUS` -> the NVLink preset of their SXM servers (the
#: GPU choice of chapter 4's explorer: it sets both the link and the compute peak).
GPU_NVLINK = {"V100-32GB": "nvlink2-v100", "A100-80GB": "nvlink3-a100", "H100-SXM": "nvlink4-h100",
              "B200": "nvlink5-b200"}  # fmt: skip
#: Base preset of :data:`scaleout.nccl.topo.PRESETS` per GPU (:mod:`scaleout.machine`'s).
BASE_PRESETS = M.BASE_PRESETS


@dataclass(frozen=True)
class GpuServer:
    """A GPU of :data:`scaleout.hardware.GPUS`, the NVLink preset of its servers (``intra``)
    and its dense 16-bit Tensor Core peak in FLOP/s (``peak_flops``: bf16, or fp16 on a GPU
    without bf16, the V100), as :func:`gpu_server` builds it."""

    gpu: str
    intra: str
    peak_flops: float

    def __post_init__(self):
        checks.choice("gpu", self.gpu, tuple(GPU_NVLINK))
        checks.choice("intra", self.intra, tuple(NVLINK_GPUS))
        checks.positive("peak_flops", self.peak_flops, 1e18)


def gpu_server(gpu: str = "H100-SXM") -> GpuServer:
    """The NVLink preset and dense 16-bit peak of ``gpu`` (a key of
    :data:`~scaleout.tensor_parallel.network.GPU_NVLINK`),
    both from :mod:`scaleout.hardware`: the peak is the GPU row's dense bf16 Tensor Core
    figure (fp16 where the GPU has no bf16)."""
    gpu = checks.choice("gpu", gpu, tuple(GPU_NVLINK))
    row = H.gpu(gpu)
    tflops = row.bf16_tflops if row.bf16_tflops is not None else row.fp16_tflops
    return GpuServer(gpu, GPU_NVLINK[gpu], tflops * 1e12)


def machine(gpus_per_server: int = 8, intra: str = "nvlink4-h100", inter: str = "nic-400g"):
    """One server of ``gpus_per_server`` GPUs linked by ``intra`` (an NVLink or PCIe preset
    of :mod:`scaleout.hardware`), each with one NIC of the ``inter`` preset, as an
    :class:`scaleout.nccl.topo.Topology` on one node: the topology of
    :func:`scaleout.machine.from_links` (see the module docstring). Cached."""
    return M.from_links(gpus_per_server, intra, inter).topology


def check_machine(value) -> nccl.Topology:
    """The topology of ``value``, an :class:`scaleout.nccl.topo.Topology` of one NVLink domain
    per node (its ``nodes`` field is ignored: the group decides), a
    :class:`scaleout.machine.Machine` or a preset name of :data:`scaleout.nccl.topo.PRESETS`
    (:func:`scaleout.machine.as_topology`)."""
    topo = M.as_topology(value)
    checks.integer("machine.gpus_per_node", topo.gpus_per_node, 1, MAX_T)
    return topo


def group_shape(t: int, gpus_per_server: int) -> tuple[int, int]:
    """(GPUs per server, servers) of a group of t GPUs filling servers of ``gpus_per_server``
    in order: (t, 1) inside one server, (g, t / g) when g divides t. NCCL's search (as the
    library replays it) covers regular groups only, so a group that would fill servers
    unevenly (12 GPUs on 8-GPU servers: 8 + 4) is priced as the regular group of the same
    size spread evenly, ``gcd(t, g)`` GPUs on each of ``t / gcd(t, g)`` servers (4 on each
    of 3): the same ranks and more NICs, a documented reduction, not NCCL's own layout."""
    t = checks.integer("t", t, 1, MAX_T)
    g = checks.integer("gpus_per_server", gpus_per_server, 1, MAX_T)
    if t <= g:
        return t, 1
    per = math.gcd(t, g)
    return per, t // per
