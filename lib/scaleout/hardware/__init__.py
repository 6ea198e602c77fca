"""Link presets: PCIe, NVLink and NIC bandwidths per GPU, each with its source.

Units: GB = 1e9 bytes and Gb = 1e9 bits. ``gb_per_s`` is always *per direction*
(unidirectional); vendor NVLink figures are bidirectional (both directions added), so
the table stores half of them. NIC speeds such as 400 Gb/s are already per direction.
The ``alpha_s`` latencies are order-of-magnitude assumptions for the cost model, not
measurements; each preset's ``note`` says so.

Chapter 11 adds :class:`Bandwidth` (one value, read back only by naming unit *and*
direction) and the tables ``NVLINK_GENERATIONS``, ``NVSWITCH_GENERATIONS``, ``SYSTEMS``,
``PCIE_GENERATIONS`` and ``NIC_SPEEDS``; every row carries its source, and rows not
confirmed in a primary source are marked ``secondary``.

Every record checks its fields when it is built (:mod:`scaleout.checks`): a preset with
0 GB/s or a row whose per-GPU figure is not links x per link raises ``ValueError`` at
once, not a ``ZeroDivisionError`` later.


The package, in reading order: ``links`` (the link presets and unit conversions), ``units``
(:class:`Bandwidth`), ``interconnect`` (NVLink, NVSwitch, systems, PCIe and NIC tables) and
``gpus`` (one row per GPU).
"""

from . import gpus as _gpus
from .gpus import (
    GPU,
    GPU_DTYPES,
    GPU_FIELDS,
    MAX_SMS,
    MAX_TFLOPS,
    gpu,
)
from .interconnect import (
    NIC_SPEEDS,
    NVLINK_GENERATIONS,
    NVSWITCH_GENERATIONS,
    PCIE_GENERATIONS,
    SYSTEMS,
    NICSpeed,
    NVLinkGeneration,
    NVSwitchGeneration,
    PCIeGeneration,
    System,
    nvlink_generation,
    system,
)
from .links import (
    BITS_PER_BYTE,
    KINDS,
    LINKS,
    MAX_ALPHA_S,
    MAX_LINKS,
    LinkPreset,
    gbit_per_s_to_gbyte_per_s,
    gbyte_per_s_to_gbit_per_s,
    link,
)
from .units import (
    DIRECTIONS,
    UNITS,
    Bandwidth,
)

# The documented constants are bound here too: autodoc reads the ``#:`` comment of a
# constant in the module it documents (this one), not where the constant is defined.

#: Every GPU row, by name (read one with :func:`gpu`).
GPUS = _gpus.GPUS

#: The H100 SXM's dense BF16 peak in FLOP/s, from its row of ``GPUS`` (NVIDIA's H100 datasheet
#: quotes 1,979 TFLOPS *with sparsity*; dense matrices run at half of that): the default peak
#: of the tensor-parallel, expert-parallel and context-parallel cost models.
H100_SXM_BF16_DENSE_FLOPS = _gpus.H100_SXM_BF16_DENSE_FLOPS

__all__ = [
    "BITS_PER_BYTE",
    "Bandwidth",
    "DIRECTIONS",
    "GPU",
    "GPUS",
    "GPU_DTYPES",
    "GPU_FIELDS",
    "H100_SXM_BF16_DENSE_FLOPS",
    "KINDS",
    "LINKS",
    "LinkPreset",
    "MAX_ALPHA_S",
    "MAX_LINKS",
    "MAX_SMS",
    "MAX_TFLOPS",
    "NICSpeed",
    "NIC_SPEEDS",
    "NVLINK_GENERATIONS",
    "NVLinkGeneration",
    "NVSWITCH_GENERATIONS",
    "NVSwitchGeneration",
    "PCIE_GENERATIONS",
    "PCIeGeneration",
    "SYSTEMS",
    "System",
    "UNITS",
    "gbit_per_s_to_gbyte_per_s",
    "gbyte_per_s_to_gbit_per_s",
    "gpu",
    "link",
    "nvlink_generation",
    "system",
]
