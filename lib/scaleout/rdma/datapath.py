"""GPU memory to GPU memory between servers: GPUDirect RDMA against a copy staged through
host memory (chapter 12). Only the *data* path: with either, a CPU thread (NCCL's proxy
thread) still posts every work request and polls every completion."""

from __future__ import annotations

from .. import checks
from ..hardware import LinkPreset, link

MAX_BYTES = 1e18  # an exabyte: beyond any single transfer


def _link(name: str, value, default: str) -> LinkPreset:
    preset = link(default) if value is None else checks.instance(name, value, LinkPreset)
    checks.positive(f"{name}.gb_per_s", preset.gb_per_s, 1e9)
    return preset


def data_path_times(
    nbytes: float,
    nic: LinkPreset | None = None,
    pcie: LinkPreset | None = None,
    chunk_bytes: float = 4 * 2**20,
) -> dict:
    """Seconds to move ``nbytes`` from a GPU to a GPU in another server, per direction.

    ``gpudirect``: the NIC reads GPU memory over PCIe peer-to-peer and the remote NIC writes
    GPU memory: limited by the slower of NIC and PCIe. ``staged``: GPU -> host bounce buffer
    (PCIe), NIC reads host memory and sends, remote NIC writes host memory, host -> GPU
    (PCIe); copies in sequence. ``staged_pipelined``: the same in ``chunk_bytes`` chunks, so
    the stages overlap: the slowest stage plus one chunk through the other two. Also the
    bytes each server's host memory moves (written once and read once when staged).
    Defaults: ``hardware.link("nic-400g")`` and ``link("pcie5-x16")``.
    """
    nbytes = checks.positive("nbytes", nbytes, MAX_BYTES)
    chunk_bytes = checks.positive("chunk_bytes", chunk_bytes, MAX_BYTES)
    nic, pcie = _link("nic", nic, "nic-400g"), _link("pcie", pcie, "pcie5-x16")
    b_nic, b_pcie = nic.gb_per_s * 1e9, pcie.gb_per_s * 1e9
    chunk = min(chunk_bytes, nbytes)
    slow = max(1 / b_nic, 1 / b_pcie)
    out = {
        "gpudirect": nbytes * slow,
        "staged": nbytes / b_pcie + nbytes / b_nic + nbytes / b_pcie,
        "staged_pipelined": nbytes * slow + chunk * (2 / b_pcie + 1 / b_nic - slow),
        "host_memory_bytes_gpudirect": 0.0,
        "host_memory_bytes_staged": 2.0 * nbytes,
    }
    checks.finite_result("data_path_times", list(out.values()))
    return out
