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
needs it. Limits: messages of 4 bytes to 16 MiB, at most 100,000 round trips, a timeout
(1 s to 1 h) on every wait; :func:`ll_recv` and :func:`simple_recv` check their arguments
(a ``deadline`` at most an hour from now: a NaN or infinite one would poll forever).
"""

from __future__ import annotations

import functools
import json
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from multiprocessing import resource_tracker, shared_memory

import numpy as np

from .. import checks

MAX_BYTES = 16 * 2**20
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
    nbytes = checks.integer("nbytes", nbytes, 4, MAX_BYTES)
    step = checks.integer("step", step, 0, 2**32 - 1)
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


def _peer(name, rank, protocol, nbytes, iters, timeout):
    block = shared_memory.SharedMemory(name=name)
    # The parent owns the block: without this, Python < 3.13 unlinks it when a peer exits.
    resource_tracker.unregister(block._name, "shared_memory")
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
        return intact, torn, partial, rtt
    finally:
        links.clear()  # release the views before closing the block
        block.close()


def _recv_args(link, step, deadline):
    """A receive's arguments, checked: a Link, a 32-bit step, and a deadline (a
    ``time.monotonic()`` value) at most an hour away -- a NaN or infinite one would poll
    forever."""
    checks.instance("link", link, Link)
    step = checks.integer("step", step, 0, 2**32 - 1)
    deadline = checks.real("deadline", deadline, None, time.monotonic() + 3600.0)
    return step, deadline


def _checked(recv):
    """``recv`` with its arguments checked first (:func:`_recv_args`). The ping-pong's timed
    loop calls the unchecked original, ``recv.__wrapped__``, and the chapter prints its
    source (``inspect.getsource`` follows ``__wrapped__``)."""

    @functools.wraps(recv)
    def checked(link, step, deadline):
        return recv(link, *_recv_args(link, step, deadline))

    return checked


ll_recv = _checked(ll_recv)
simple_recv = _checked(simple_recv)


def _send(protocol, link, data, step):
    (ll_send if protocol == "ll" else simple_send)(link, data, step)


def _recv(protocol, link, step, deadline):
    if protocol == "ll":
        return ll_recv.__wrapped__(link, step, deadline)
    return simple_recv.__wrapped__(link, step, deadline), 0, 0


@dataclass(frozen=True)
class PingPong:
    """Result of :func:`pingpong`: one-way ``seconds`` (half the fastest round trip: other
    processes on the machine only ever add time),
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

    def __post_init__(self):
        checks.choice("protocol", self.protocol, ("ll", "simple"))
        checks.integer("nbytes", self.nbytes, 4, MAX_BYTES)
        checks.integer("iters", self.iters, 1, MAX_ITERS)
        checks.positive("seconds", self.seconds, 3600.0)
        checks.positive("gb_per_s", self.gb_per_s)
        checks.boolean("intact", self.intact)
        checks.integer("torn", self.torn, 0)
        checks.integer("partial", self.partial, 0)


def pingpong(protocol: str, nbytes: int, iters: int = 200, timeout: float = 60.0) -> PingPong:
    """Bounce ``nbytes`` between two processes ``iters`` times with ``protocol``
    ("ll" or "simple"). The two peers are fresh Python processes
    (``python -m scaleout.nccl.shm``); both are killed if they outlive ``timeout``."""
    checks.choice("protocol", protocol, ("ll", "simple"))
    nbytes = checks.integer("nbytes", nbytes, 4, MAX_BYTES)
    iters = checks.integer("iters", iters, 1, MAX_ITERS)
    timeout = checks.real("timeout", timeout, 1.0, 3600.0)
    block = shared_memory.SharedMemory(create=True, size=2 * Link.size(nbytes))
    procs = []
    try:
        for rank in (0, 1):
            cmd = [sys.executable, "-m", "scaleout.nccl.shm", block.name, str(rank), protocol,
                   str(nbytes), str(iters), repr(timeout)]  # fmt: skip
            procs.append(subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                          text=True))  # fmt: skip
        results = []
        for p in procs:
            out, err = p.communicate(timeout=timeout + 30)
            if p.returncode != 0:
                raise RuntimeError(f"a ping-pong peer failed: {err.strip()[-400:]}")
            results.append(json.loads(out))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        block.close()
        block.unlink()
    intact = results[0]["intact"] and results[1]["intact"]
    torn = results[0]["torn"] + results[1]["torn"]
    partial = results[0]["partial"] + results[1]["partial"]
    one_way = float(np.min(results[0]["rtt"])) / 2  # the best round trip: least disturbed
    return PingPong(protocol, nbytes, iters, one_way, nbytes / one_way / 1e9, intact, torn,
                    partial)  # fmt: skip


def _main(argv) -> None:
    name, rank, protocol, nbytes, iters, timeout = argv
    intact, torn, partial, rtt = _peer(name, int(rank), protocol, int(nbytes), int(iters),
                                       float(timeout))  # fmt: skip
    print(json.dumps({"intact": intact, "torn": torn, "partial": partial, "rtt": rtt}))


if __name__ == "__main__":
    _main(sys.argv[1:])
