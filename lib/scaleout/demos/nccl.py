"""All-reduce against size on real processes, read the way nccl-tests reads NCCL.

Run it under torchrun (gloo on CPU by default; ``--backend nccl`` uses ``cuda:LOCAL_RANK``
and then also prints what the book's model of NCCL predicts for ``--topology``)::

    torchrun --standalone --nproc-per-node 4 -m scaleout.demos.nccl [--max-bytes 4194304]
    torchrun --standalone --nproc-per-node 8 -m scaleout.demos.nccl --backend nccl \\
        --topology dgx-h100

or, from a notebook, the same worker on forked CPU processes::

    from scaleout.dist import run
    from scaleout.demos.nccl import time_allreduce
    run(time_allreduce, 2, args=([1024, 65536],))  # per rank: list of (bytes, seconds, ok)

Each size is timed as the median over ``rounds`` of the mean of back-to-back all-reduces
(the slowest rank's time, like nccl-tests), after a warm-up; every result is checked
against the exact sum of the ranks' inputs (small integers in float32).
"""

from __future__ import annotations

import argparse
import sys
import time

import torch
import torch.distributed as dist

from scaleout.demos.common import BACKENDS, default_device, init_from_env

MAX_BYTES = 2**30


def time_allreduce(rank: int, world_size: int, sizes, rounds: int = 5) -> list:
    """(bytes, seconds, correct) per size, for this rank (every rank returns the same)."""
    device = default_device()
    out = []
    for nbytes in sizes:
        x = torch.full((max(1, int(nbytes) // 4),), float(rank + 1), device=device)
        reps = max(2, min(20, 2**22 // max(int(nbytes), 1)))
        dist.all_reduce(x)  # warm-up (and NCCL's connection setup)
        per_round = []
        for _ in range(rounds):
            x.fill_(float(rank + 1))
            dist.barrier()
            start = time.perf_counter()
            for _ in range(reps):
                dist.all_reduce(x)
            if device.type == "cuda":
                torch.cuda.synchronize()
            elapsed = torch.tensor([(time.perf_counter() - start) / reps], device=device)
            dist.all_reduce(elapsed, op=dist.ReduceOp.MAX)
            per_round.append(float(elapsed.item()))
        x.fill_(float(rank + 1))
        dist.all_reduce(x)
        ok = bool(torch.all(x == world_size * (world_size + 1) / 2).item())
        per_round.sort()
        out.append((int(nbytes), per_round[len(per_round) // 2], ok))
    return out


def _parse(argv):
    parser = argparse.ArgumentParser(prog="python -m scaleout.demos.nccl", description=__doc__)
    parser.add_argument("--backend", choices=BACKENDS, default="gloo")
    parser.add_argument("--min-bytes", type=int, default=1024)
    parser.add_argument("--max-bytes", type=int, default=2**22)
    parser.add_argument("--topology", default="dgx-h100", help="preset for the model (nccl)")
    parser.add_argument("--nodes", type=int, default=1, help="servers, for the model (nccl)")
    args = parser.parse_args(argv)
    if not 4 <= args.min_bytes <= args.max_bytes <= MAX_BYTES:
        parser.error(f"need 4 <= --min-bytes <= --max-bytes <= {MAX_BYTES}")
    if args.nodes < 1:
        parser.error("--nodes must be >= 1")
    return args


def main(argv=None) -> int:
    args = _parse(sys.argv[1:] if argv is None else argv)
    rank, world = init_from_env(args.backend)
    sizes, n = [], args.min_bytes
    while n <= args.max_bytes:
        sizes.append(n)
        n *= 4
    rows = time_allreduce(rank, world, sizes)
    model = None
    if args.backend == "nccl" and rank == 0:
        from scaleout import nccl

        topo = nccl.topology(args.topology, nodes=args.nodes)
        model = nccl.predict("allreduce", [r[0] for r in rows], machine=topo.group(
            max(1, world // args.nodes), args.nodes))  # fmt: skip
    if rank == 0:
        factor = 2 * (world - 1) / world
        for i, (nbytes, seconds, ok) in enumerate(rows):
            line = (f"allreduce world_size={world} bytes={nbytes} time_us={seconds * 1e6:.1f} "
                    f"busbw_GBps={nbytes / seconds / 1e9 * factor:.3f} "
                    f"{'ok' if ok else 'MISMATCH'}")  # fmt: skip
            if model is not None:
                line += (f" model={model.algorithm[i]}/{model.protocol[i]} "
                         f"model_us={model.seconds[i] * 1e6:.1f}")  # fmt: skip
            print(line, flush=True)
    dist.destroy_process_group()
    return 0 if all(r[2] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
