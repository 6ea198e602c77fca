"""Model states on a pipeline: bytes per parameter, GPU memory, the fewest GPUs that hold a
model, and how layers are cut into stages (chapter 3)."""

from __future__ import annotations

import numpy as np

from .. import checks, hardware, memory
from .orders import MAX_STAGES

# Model states per parameter in bytes. Training: the three accountings of scaleout.memory
# (memory.bytes_per_param, with their sources): the ZeRO paper's mixed-precision Adam
# (Rajbhandari et al., SC20, section 3.1: 2 + 2 + 12), Megatron's bf16 (its fp32 gradient
# buffer replaces the bf16 gradient: 2 + 4 + 12) and fp16 (fp16 gradients plus an fp32 copy
# in the optimizer: 2 + 2 + 4 + 12), per Megatron-Core's distributed-optimizer guide.
# Inference keeps only the weights: 2 bytes in bf16, 4 in fp32.
BYTES_PER_PARAM = {
    "bf16 weights only (inference)": 2.0,
    "fp32 weights only": 4.0,
    "ZeRO paper: mixed-precision Adam": memory.bytes_per_param("adam", "mixed"),
    "Megatron bf16: fp32 gradients": memory.bytes_per_param("adam", "megatron-bf16"),
    "Megatron fp16: fp16 gradients + fp32 copy": memory.bytes_per_param("adam", "megatron-fp16"),
}
# Memory per GPU in GB (1e9 bytes), read from hardware's GPU table (its datasheet sources).
GPU_MEMORY_GB = {
    label: hardware.gpu(name).memory_gb
    for label, name in (
        ("V100 32GB", "V100-32GB"),
        ("A100 80GB", "A100-80GB"),
        ("H100 80GB", "H100-SXM"),
        ("H200", "H200"),
    )
}
#: The GPU memory in GB assumed when none is named (an H100 SXM's 80 GB).
DEFAULT_GPU_GB = hardware.gpu("H100-SXM").memory_gb


def model_state_bytes(params, bytes_per_param=16):
    """Bytes of model states: parameters x bytes per parameter (vectorised over params)."""
    params = checks.array("params", params, low=0)
    bpp = checks.positive("bytes_per_param", bytes_per_param)
    with np.errstate(over="ignore"):  # reported below, as the library's error
        out = params * bpp
    return checks.as_output(checks.finite_result("params x bytes_per_param", out))


def min_gpus(params, bytes_per_param=16, gpu_gb=DEFAULT_GPU_GB) -> int:
    """Fewest GPUs of ``gpu_gb`` GB whose memory holds the model states (ignoring
    activations, buffers and fragmentation, so a lower bound)."""
    params = checks.positive("params", params)
    gpu_bytes = checks.positive("gpu_gb", gpu_gb) * 1e9
    need = checks.finite_result("the GPU count", model_state_bytes(params, bytes_per_param)
                                / gpu_bytes)  # fmt: skip
    return int(np.ceil(need))


def layer_owners(n_layers, p) -> np.ndarray:
    """Which of p stages owns each layer when n_layers are cut into p contiguous, balanced
    pieces (the first n_layers % p stages get one more layer)."""
    n_layers = checks.integer("n_layers", n_layers, 1, 1 << 20)
    p = checks.integer("p", p, 1, MAX_STAGES)
    if p > n_layers:
        raise checks.fail("p", f"<= n_layers = {n_layers} (a stage needs a layer)", p)
    return np.repeat(np.arange(p), [len(a) for a in np.array_split(np.arange(n_layers), p)])
