"""A pipeline-parallel MLP on real processes, checked against the single-process model.

Run it under torchrun (gloo on CPU by default; ``--backend nccl`` uses ``cuda:LOCAL_RANK``)::

    torchrun --standalone --nproc-per-node 4 -m scaleout.demos.pipeline [--microbatches 8]

or, from a notebook, the same worker on forked CPU processes::

    from scaleout.dist import run
    from scaleout.demos.pipeline import check_pipeline
    run(check_pipeline, 4, kwargs={"name": "1f1b", "m": 8})   # one dict of checks per rank

The model is ``p * v`` blocks ``Linear(width, width) + tanh``; device r holds blocks
``c p + r`` for its chunks c = 0..v-1 (chapter 5's virtual stages). Activations go forward
and their gradients backward with ``isend``/``recv``: a send never waits for its receiver,
so no schedule can deadlock on it, and each message carries a tag naming its micro-batch,
chunk and direction. ``naive``, ``gpipe`` and ``1f1b`` are hand-written loops in the style
of Megatron-LM's ``schedules.py``; ``interleaved`` and ``zb-h1`` run the operation order of
:func:`scaleout.pipeline.stage_order`. Every rank also builds the whole model and checks:
its gradients and (last stage) outputs against the single-process model
(``torch.testing.assert_close``), its operation order against the simulated
:func:`scaleout.pipeline.schedule`, and the micro-batches of activations it held at peak
against :func:`scaleout.pipeline.peak_in_flight`. Rank 0 prints one line per schedule.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time

import torch
import torch.distributed as dist

from scaleout import checks
from scaleout import pipeline as P
from scaleout.demos.common import BACKENDS, default_device, init_from_env

HAND_WRITTEN = ("naive", "gpipe", "1f1b")


def build_blocks(n_blocks: int, width: int, seed: int = 0, dtype=torch.float64):
    """The model: ``n_blocks`` of Linear(width, width) + tanh, identical on every rank."""
    checks.integer("n_blocks", n_blocks, 1, 1 << 12)
    checks.integer("width", width, 1, 1 << 14)
    gen = torch.Generator().manual_seed(seed)
    blocks = []
    for _ in range(n_blocks):
        lin = torch.nn.Linear(width, width, dtype=dtype)
        with torch.no_grad():
            lin.weight.copy_(torch.randn(width, width, generator=gen, dtype=dtype) / width**0.5)
            lin.bias.copy_(0.1 * torch.randn(width, generator=gen, dtype=dtype))
        blocks.append(torch.nn.Sequential(lin, torch.nn.Tanh()))
    return blocks


def make_batch(batch: int, width: int, seed: int = 1, dtype=torch.float64):
    """Inputs and regression targets, shape (batch, width) each."""
    gen = torch.Generator().manual_seed(seed)
    return (torch.randn(batch, width, generator=gen, dtype=dtype),
            torch.randn(batch, width, generator=gen, dtype=dtype))  # fmt: skip


def loss_fn(out, target, batch: int):
    """Mean squared error over the *whole* batch: a micro-batch contributes its sum / (batch
    x width), so the micro-batch losses (and their gradients) add up to the batch's."""
    return ((out - target) ** 2).sum() / (batch * out.shape[-1])


def reference(blocks, x, y):
    """Single-process forward and backward: (loss, output, [grads of each block])."""
    model = torch.nn.Sequential(*[_clone(b) for b in blocks])
    out = model(x)
    loss = loss_fn(out, y, len(x))
    loss.backward()
    grads = [[q.grad.detach().clone() for q in b.parameters()] for b in model]
    return loss.detach(), out.detach(), grads


def _clone(block):
    import copy

    return copy.deepcopy(block)


class Stage:
    """One device of the pipeline: its chunks, its p2p messages, its log."""

    def __init__(self, rank, p, m, v, blocks, x, y):
        self.rank, self.p, self.m, self.v = rank, p, m, v
        self.n_vs, self.batch = p * v, len(x)
        self.chunks = [_clone(blocks[c * p + rank]).to(default_device()) for c in range(v)]
        self.xs, self.ys = x.tensor_split(m), y.tensor_split(m)
        self.saved, self.pending_w, self.sends = {}, {}, []
        self.log, self.intervals, self.outputs, self.losses = [], [], {}, {}
        self.held = self.peak = 0.0
        #: a context-manager factory ``span(name)`` around each operation's compute (e.g.
        #: ``torch.profiler.record_function``; names like 'F3', 'B3c1'), or None
        self.span = None

    def _span(self, phase: str, j: int, c: int):
        name = f"{phase}{j}" + (f"c{c}" if c else "")
        return contextlib.nullcontext() if self.span is None else self.span(name)

    def _tag(self, direction: int, j: int, to_vs: int) -> int:
        """Unique per message between two ranks: direction (0: activation, 1: gradient),
        receiving virtual stage and micro-batch."""
        return (direction * self.n_vs + to_vs) * self.m + j

    def _recv(self, like_shape, src, tag):
        buf = torch.empty(like_shape, dtype=self.xs[0].dtype, device=default_device())
        dist.recv(buf, src, tag=tag)
        return buf

    def _send(self, tensor, dst, tag):
        tensor = tensor.detach().contiguous()
        self.sends.append((dist.isend(tensor, dst, tag=tag), tensor))  # keep it alive

    def forward(self, j: int, c: int = 0):
        vs = c * self.p + self.rank  # virtual stage
        shape = self.xs[j].shape
        if vs == 0:
            inp = self.xs[j].to(default_device())
        else:
            inp = self._recv(shape, (vs - 1) % self.p, self._tag(0, j, vs)).requires_grad_()
        t0 = time.monotonic()
        with self._span("F", j, c):
            out = self.chunks[c](inp)  # (b, width)
            if vs == self.n_vs - 1:
                self.losses[j] = loss_fn(out, self.ys[j].to(out.device), self.batch)
                self.outputs[j] = out.detach().cpu()
        t1 = time.monotonic()
        if vs < self.n_vs - 1:
            self._send(out, (vs + 1) % self.p, self._tag(0, j, vs + 1))
        self.saved[(j, c)] = (inp, out)
        self._record("F", j, c, t0, t1, +1)

    def backward(self, j: int, c: int = 0, split: bool = False):
        """B: the gradient of the input; with ``split`` (zb-h1) the weight gradient is left
        for :meth:`weight` (its autograd graph is kept)."""
        vs = c * self.p + self.rank
        inp, out = self.saved[(j, c)]
        if vs == self.n_vs - 1:
            grad_out, out = None, self.losses.pop(j)
        else:
            grad_out = self._recv(out.shape, (vs + 1) % self.p, self._tag(1, j, vs))
        t0 = time.monotonic()
        params = list(self.chunks[c].parameters())
        with self._span("B", j, c):
            if split:  # input gradient only; keep the graph for W
                if vs > 0:
                    (gin,) = torch.autograd.grad(out, inp, grad_out, retain_graph=True)
                self.pending_w[(j, c)] = (out, grad_out, params)
            else:
                torch.autograd.backward(out, grad_out)
                gin = inp.grad if vs > 0 else None
        t1 = time.monotonic()
        if vs > 0:
            self._send(gin, (vs - 1) % self.p, self._tag(1, j, vs - 1))
        if split:
            self._record("B", j, c, t0, t1, 0)
        else:
            del self.saved[(j, c)]
            self._record("B", j, c, t0, t1, -1)

    def weight(self, j: int, c: int = 0):
        """W (zb-h1): the weight gradient of micro-batch j, accumulated into .grad."""
        out, grad_out, params = self.pending_w.pop((j, c))
        t0 = time.monotonic()
        with self._span("W", j, c):
            for q, g in zip(params, torch.autograd.grad(out, params, grad_out), strict=True):
                q.grad = g if q.grad is None else q.grad + g
        del self.saved[(j, c)]
        self._record("W", j, c, t0, time.monotonic(), -1)

    def _record(self, phase, j, c, t0, t1, held):
        self.log.append((phase, j, c))
        self.intervals.append((self.rank, phase, j, t0, t1))
        self.held += held / self.v
        self.peak = max(self.peak, self.held)

    def finish(self):
        for request, _ in self.sends:
            request.wait()
        self.sends.clear()


def run_schedule(stage: Stage, name: str) -> None:
    """Run one step of schedule ``name`` on ``stage``."""
    rank, p, m = stage.rank, stage.p, stage.m
    if name == "naive":  # one micro-batch in the pipeline at a time
        for j in range(m):
            stage.forward(j)
            stage.backward(j)
    elif name == "gpipe":  # all forwards, then all backwards
        for j in range(m):
            stage.forward(j)
        for j in range(m):
            stage.backward(j)
    elif name == "1f1b":  # Megatron-LM forward_backward_pipelining_without_interleaving
        warmup = min(p - rank - 1, m)
        for j in range(warmup):
            stage.forward(j)
        for i in range(m - warmup):
            stage.forward(warmup + i)
            stage.backward(i)
        for j in range(m - warmup, m):
            stage.backward(j)
    else:  # the library's order for interleaved and zb-h1
        for phase, j, c in P.stage_order(name, p, m, stage.v)[rank]:
            if phase == "F":
                stage.forward(j, c)
            elif phase == "B":
                stage.backward(j, c, split=name == "zb-h1")
            else:
                stage.weight(j, c)
    stage.finish()


def check_pipeline(rank, world_size, name="1f1b", m=8, v=None, width=16, batch=None, seed=0):
    """Run one step of ``name`` and check it on this rank; returns a dict: ``grad_err``,
    ``output_err`` (max abs differences to the single-process model), ``order_ok``,
    ``peak_ok`` (against the simulated schedule), ``log``, ``peak``, ``intervals``."""
    p = world_size
    v = (2 if name == "interleaved" else 1) if v is None else v
    batch = 2 * m if batch is None else batch
    checks.integer("batch", batch, m, 1 << 20)  # at least one sample per micro-batch
    blocks = build_blocks(p * v, width, seed)
    x, y = make_batch(batch, width, seed + 1)
    stage = Stage(rank, p, m, v, blocks, x, y)
    run_schedule(stage, name)
    _, ref_out, ref_grads = reference(blocks, x, y)
    grad_err = 0.0
    for c, chunk in enumerate(stage.chunks):
        for q, want in zip(chunk.parameters(), ref_grads[c * p + rank], strict=True):
            torch.testing.assert_close(q.grad.cpu(), want)
            grad_err = max(grad_err, float((q.grad.cpu() - want).abs().max()))
    output_err = 0.0
    if stage.outputs:  # the device that holds the last virtual stage
        out = torch.cat([stage.outputs[j] for j in range(m)])
        torch.testing.assert_close(out, ref_out)
        output_err = float((out - ref_out).abs().max())
    sched = P.schedule(name, p, m, v)
    return {
        "grad_err": grad_err, "output_err": output_err, "log": stage.log,
        "order_ok": stage.log == sched.ops(rank), "peak": stage.peak,
        "peak_ok": bool(abs(stage.peak - P.peak_in_flight(sched)[rank]) < 1e-9),
        "intervals": stage.intervals,
    }  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    """Entry point under torchrun; returns the exit status (0: every check passed)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=BACKENDS, default="gloo")
    parser.add_argument("--schedule", choices=(*P.SCHEDULES, "all"), default="all")
    parser.add_argument("--microbatches", type=int, default=8, help="m (>= 1)")
    parser.add_argument("--width", type=int, default=16, help="layer width (>= 1)")
    parser.add_argument("--timeout-s", type=float, default=60.0, help="per-message limit")
    args = parser.parse_args(argv)
    if args.microbatches < 1 or args.width < 1:
        parser.error("--microbatches and --width must be >= 1")
    rank, p = init_from_env(args.backend, args.timeout_s)
    device = default_device()  # collectives take tensors on the backend's device (nccl: CUDA)
    names = P.SCHEDULES if args.schedule == "all" else (args.schedule,)
    if args.microbatches % p:  # interleaved needs p | m
        names = tuple(n for n in names if n != "interleaved")
    failures = 0
    try:
        for name in names:
            try:
                res = check_pipeline(rank, p, name, args.microbatches, width=args.width)
                ok = res["order_ok"] and res["peak_ok"]
                err = max(res["grad_err"], res["output_err"])
            except AssertionError:
                ok, err = False, float("inf")
            summary = torch.tensor([0.0 if ok else 1.0, err], dtype=torch.float64, device=device)
            dist.all_reduce(summary, op=dist.ReduceOp.MAX)
            bad, err = bool(summary[0] > 0), float(summary[1])
            failures += bad or err == float("inf")
            if rank == 0:
                verdict = "MISMATCH" if bad or err == float("inf") else "ok"
                print(f"{name:<12} p={p} m={args.microbatches} grads/outputs vs single process "
                      f"max|err|={err:.1e}, op order and peak in flight vs simulation: "
                      f"{verdict}", flush=True)  # fmt: skip
    finally:
        dist.destroy_process_group()
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
