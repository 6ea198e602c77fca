"""Process-group setup shared by the torchrun demos (``python -m scaleout.demos.<name>``).

torchrun exports RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT to every worker;
:func:`init_from_env` reads them (``init_method="env://"``). Every CUDA call is guarded, so
these helpers import and run on a CPU-only torch.
"""

from __future__ import annotations

import os
from datetime import timedelta

import torch
import torch.distributed as dist

BACKENDS = ("gloo", "nccl")
_TORCHRUN_ENV = ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")


def init_from_env(backend: str = "gloo", timeout_s: float = 60.0) -> tuple[int, int]:
    """Initialise the default process group from torchrun's environment; return (rank, p).

    gloo is pinned to loopback (``GLOO_SOCKET_IFNAME=lo``) unless the variable is already
    set; nccl binds this process to ``cuda:LOCAL_RANK``. ``timeout_s`` bounds every
    collective, so a rank that never arrives fails the run instead of hanging it.
    """
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    if not timeout_s > 0:
        raise ValueError(f"timeout_s must be > 0 seconds, got {timeout_s!r}")
    missing = [name for name in _TORCHRUN_ENV if name not in os.environ]
    if missing:
        raise RuntimeError(
            f"environment variables {missing} are not set: start this under torchrun, e.g. "
            "torchrun --standalone --nproc-per-node 4 -m scaleout.demos.collectives"
        )
    if backend == "gloo":
        os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    else:
        if not torch.cuda.is_available():
            raise ValueError("backend='nccl' needs CUDA GPUs; this torch sees none (use gloo)")
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    dist.init_process_group(backend, init_method="env://", timeout=timedelta(seconds=timeout_s))
    return dist.get_rank(), dist.get_world_size()


def default_device() -> torch.device:
    """Where this rank's tensors live: ``cuda:<current>`` under nccl, else the CPU."""
    if dist.is_initialized() and dist.get_backend() == "nccl":
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


def error_lines(errors: dict, world_size: int, tolerance: float, width: int) -> list[str]:
    """One line per check: its name, the world size, the worst error and ``ok``/``MISMATCH``.

    ``ok`` means the error is below ``tolerance``; ``width`` pads the names into a column.
    """
    lines = []
    for name, err in errors.items():
        verdict = "ok" if err < tolerance else "MISMATCH"
        lines.append(f"{name:<{width}} world_size={world_size} max|err|={err:.1e} {verdict}")
    return lines


def require_positive(parser, args, names: tuple[str, ...]) -> None:
    """Stop with argparse's usage error unless every option in ``names`` is at least 1."""
    for name in names:
        value = getattr(args, name)
        if value < 1:
            parser.error(f"--{name.replace('_', '-')} must be >= 1, got {value}")
