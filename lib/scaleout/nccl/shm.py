"""NCCL's LL and Simple protocols, run for real by two CPU processes over shared memory.

NCCL moves data between GPUs by storing it into a buffer the peer polls. Two ways to
tell the peer the data is there (``src/device/prims_ll.h``, ``prims_simple.h``):

* **LL** (low latency): every 8-byte store carries 4 bytes of data and a 4-byte flag (the
  step number). An aligned 8-byte store is seen whole or not at all, so a reader that sees
  the flag knows the data beside it is valid: no fence, no separate flag, but half the
  bytes are flags.
* **Simple**: bulk data, then a memory fence, then one flag; the reader waits for the
  flag, fences, then reads the data. Full bandwidth, but a fence and an extra dependent
  round trip per chunk.

Here the "GPUs" are two processes and the "link" is one ``multiprocessing.shared_memory``
block. :func:`ll_send`/:func:`ll_recv` and :func:`simple_send`/:func:`simple_recv` are the
two protocols; :func:`pingpong` bounces a message back and forth and reports the one-way
time, the bandwidth, whether every message arrived intact and how many torn words the
reader saw (an LL word whose flag is new but whose data is not: must be 0). The fence is a
``threading.Lock`` acquire/release pair, which POSIX defines as synchronizing memory;
large numpy copies use non-temporal stores that x86 does not keep in order, so Simple
needs it. Limits: messages of 4 bytes to 64 MiB, at most 100,000 round trips, a timeout on
every wait.
"""

from __future__ import annotations

import multiprocessing as mp
import threading
import time
from dataclasses import dataclass
from multiprocessing import shared_memory

import numpy as np

from .. import checks

MAX_BYTES = 64 * 2**20
MAX_ITERS = 100_000
LINE = 64  # bytes: each flag on its own cache line
_FENCE = threading.Lock()
_DISTINCT = 4  # messages cycle through this many payloads (each differs from the last)


def fence() -> None:
    """A full memory barrier (lock acquire and release synchronize memory in POSIX)."""
    _FENCE.acquire()
    _FENCE.release()


def payload(nbytes: int, step: int) -> np.ndarray:
    """The 4-byte words of message ``step``: distinct per step and per position, so a
    stale or torn word is always detected."""
    words = (nbytes + 3) // 4
    return (np.arange(words, dtype=np.uint32) * np.uint32(2654435761) + np.uint32(step)).astype(
        np.uint32
    )


class Link:
    """One direction of the shared block: an LL area (8-byte words), a Simple data area and
    a Simple flag, laid out in ``buf`` (a shared memory buffer) at ``offset``."""

    def __init__(self, buf, offset: int, nbytes: int):
        words = (nbytes + 3) // 4
        self.ll = np.ndarray((words,), np.uint64, buf, offset)
        data_at = offset + 8 * words + LINE
        self.data = np.ndarray((4 * words,), np.uint8, buf, data_at)
        self.flag = np.ndarray((1,), np.uint64, buf, data_at + 4 * words + LINE)

    @staticmethod
    def size(nbytes: int) -> int:
        words = (nbytes + 3) // 4
        return 8 * words + LINE + 4 * words + LINE + LINE


def ll_send(link: Link, data: np.ndarray, step: int) -> None:
    """LL: one 8-byte store per 4 bytes of data, its high half the flag ``step`` (one
    pass writing the shared words directly)."""
    if link.ll.size == 1:
        link.ll[0] = (step << 32) | int(data[0])  # one 8-byte store
        return
    np.add(data, np.uint64(step) << np.uint64(32), out=link.ll, casting="unsafe")


def ll_recv(link: Link, step: int, deadline: float) -> tuple[np.ndarray, int, int]:
    """Poll until every word carries flag ``step``; return (data, torn words, partial
    reads). A partial read (some words new, some old) is simply polled again; a torn word
    would be one whose flag is new but whose data belongs to another message (the caller
    checks the data against what was sent)."""
    partial = 0
    if link.ll.size == 1:  # one word: the load that sees the flag also brings the data
        while True:
            word = int(link.ll[0])
            if word >> 32 == step:
                return np.array([word & 0xFFFFFFFF], np.uint32), 0, 0
            if time.monotonic() > deadline:
                raise TimeoutError(f"LL message {step} did not arrive")
    while True:
        if int(link.ll[-1]) >> 32 == step:  # poll the last word: one load
            words = link.ll.copy().view(np.uint32)  # one snapshot: (data, flag) pairs
            if np.all(words[1::2] == step):
                return words[0::2].copy(), 0, partial
            partial += 1
        if time.monotonic() > deadline:
            raise TimeoutError(f"LL message {step} did not arrive")


def simple_send(link: Link, data: np.ndarray, step: int) -> None:
    """Simple: bulk copy, fence, then the flag."""
    if data.size == 1:
        link.data.view(np.uint32)[0] = int(data[0])
    else:
        link.data[:] = data.view(np.uint8)
    fence()
    link.flag[0] = step


def simple_recv(link: Link, step: int, deadline: float) -> np.ndarray:
    """Wait for the flag, fence, then read the data."""
    while int(link.flag[0]) != step:
        if time.monotonic() > deadline:
            raise TimeoutError(f"Simple message {step} did not arrive")
    fence()
    if link.data.size == 4:
        return np.array([int(link.data.view(np.uint32)[0])], np.uint32)
    return link.data.copy().view(np.uint32)


def _peer(name, rank, protocol, nbytes, iters, timeout, out):
    block = shared_memory.SharedMemory(name=name)
    links = []
    try:
        size = Link.size(nbytes)
        links = [Link(block.buf, 0, nbytes), Link(block.buf, size, nbytes)]
        send, recv = links[rank], links[1 - rank]
        messages = [payload(nbytes, step) for step in range(_DISTINCT)]
        deadline = time.monotonic() + timeout
        intact, torn, partial, rtt = True, 0, 0, []
        for step in range(1, iters + 1):
            sent = messages[step % _DISTINCT]
            t0 = time.perf_counter()
            if rank == 0:
                _send(protocol, send, sent, step)
            got, t, p = _recv(protocol, recv, step, deadline)
            if rank == 1:
                _send(protocol, send, got, step)  # echo what arrived
            rtt.append(time.perf_counter() - t0)
            ok = np.array_equal(got, sent)  # checked outside the timed part
            intact &= bool(ok)
            torn += t + (0 if ok else int(np.count_nonzero(got != sent)))
            partial += p
        out.put((rank, intact, torn, partial, rtt))
    finally:
        links.clear()  # release the views before closing the block
        block.close()


def _send(protocol, link, data, step):
    (ll_send if protocol == "ll" else simple_send)(link, data, step)


def _recv(protocol, link, step, deadline):
    if protocol == "ll":
        return ll_recv(link, step, deadline)
    return simple_recv(link, step, deadline), 0, 0


@dataclass(frozen=True)
class PingPong:
    """Result of :func:`pingpong`: median one-way ``seconds`` (half a round trip),
    ``gb_per_s`` of payload, ``intact`` (every message equal to what was sent),
    ``torn`` words seen (LL: flag new, data old) and ``partial`` LL reads re-polled."""

    protocol: str
    nbytes: int
    iters: int
    seconds: float
    gb_per_s: float
    intact: bool
    torn: int
    partial: int


def pingpong(protocol: str, nbytes: int, iters: int = 200, timeout: float = 60.0) -> PingPong:
    """Bounce ``nbytes`` between two processes ``iters`` times with ``protocol``
    ("ll" or "simple")."""
    checks.choice("protocol", protocol, ("ll", "simple"))
    nbytes = checks.integer("nbytes", nbytes, 4, MAX_BYTES)
    iters = checks.integer("iters", iters, 1, MAX_ITERS)
    timeout = checks.positive("timeout", timeout, 3600.0)
    ctx = mp.get_context("spawn")
    block = shared_memory.SharedMemory(create=True, size=2 * Link.size(nbytes))
    out = ctx.Queue()
    procs = [ctx.Process(target=_peer, args=(block.name, r, protocol, nbytes, iters, timeout,
                                             out), daemon=True) for r in (0, 1)]  # fmt: skip
    try:
        for p in procs:
            p.start()
        results = {}
        for _ in procs:
            rank, *rest = out.get(timeout=timeout + 30)
            results[rank] = rest
        for p in procs:
            p.join(timeout=10)
    finally:
        for p in procs:
            if p.is_alive():
                p.kill()
        block.close()
        block.unlink()
    intact = results[0][0] and results[1][0]
    torn = results[0][1] + results[1][1]
    partial = results[0][2] + results[1][2]
    one_way = float(np.median(results[0][3])) / 2
    return PingPong(protocol, nbytes, iters, one_way, nbytes / one_way / 1e9, intact, torn,
                    partial)  # fmt: skip
