"""What NCCL's protocols put in a receive buffer, and how channels cross nodes: data for
the chapter's pictures (no timing, no plotting).

* :func:`protocol_frames` - a message written by the sender and read by the receiver, one
  frame per step, for LL (8-byte words: 4 bytes of data, 4 of flag), LL128 (128-byte
  lines: 120 bytes of data, 8 of flag; ``NCCL_LL128_LINESIZE``, ``device.h:106``) and
  Simple (the data, a fence, one flag). Each frame is a grid of 8-byte cells with a state.
* :func:`efficiency` - the share of the stored bytes that are data.
* :func:`ring_paths` - the order in which the channels of a two-node ring enter, cross and
  leave each node on a rail-optimized machine (each channel starts at a different NIC, as
  NCCL's search does by rotating the starting NIC, ``search.cc:653``), and the PXN route of
  one send to a GPU on another rail.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import checks

EMPTY, DATA, FLAG, READ, FENCE = range(5)
#: What a cell of the receive buffer holds, by state number.
STATES = ("empty", "data written", "flag", "read by the receiver", "fence")
CELL = 8  # bytes per cell in the pictures
ROW = 16  # cells per row: 128 bytes, one LL128 line
MAX_BYTES = 4096


def efficiency(protocol: str) -> float:
    """Data bytes / stored bytes: LL 4/8, LL128 120/128, Simple 1 (one flag per chunk)."""
    checks.choice("protocol", protocol, ("LL", "LL128", "Simple"))
    return {"LL": 0.5, "LL128": 120 / 128, "Simple": 1.0}[protocol]


@dataclass(frozen=True)
class Frame:
    """One step: ``cells[row, col]`` states (see :data:`STATES`) and what happens."""

    cells: np.ndarray
    caption: str

    def __post_init__(self):
        checks.array("cells", self.cells, ndim=2, low=0, high=len(STATES) - 1, integer=True)
        checks.text("caption", self.caption, 300)


def _grid(n_cells: int) -> np.ndarray:
    return np.full((-(-n_cells // ROW), ROW), EMPTY, dtype=np.int64)


def protocol_frames(protocol: str, nbytes: int = 512) -> list[Frame]:
    """The sender writing ``nbytes`` (a multiple of 8, at most 4096) and the receiver
    reading them, step by step (at most 24 frames)."""
    checks.choice("protocol", protocol, ("LL", "LL128", "Simple"))
    nbytes = checks.integer("nbytes", nbytes, 8, MAX_BYTES)
    if nbytes % CELL:
        raise checks.fail("nbytes", "a multiple of 8", nbytes)
    frames = []
    if protocol == "LL":  # every cell: 4 data bytes + 4 flag bytes, so 2 cells per 8 data
        cells = 2 * nbytes // CELL
        grid = _grid(cells)
        frames.append(Frame(grid.copy(), "empty buffer: every 8-byte word will hold 4 B of "
                            "data and a 4 B flag"))  # fmt: skip
        order = np.arange(cells)
        per = max(1, cells // 8)
        for start in range(0, cells, per):
            for i in order[start : start + per]:
                grid.flat[i] = DATA
            frames.append(Frame(grid.copy(), f"sender stores words {start}-"
                                f"{min(start + per, cells) - 1}: data and flag in one "
                                "8-byte store"))  # fmt: skip
            grid[grid == DATA] = READ
            frames.append(Frame(grid.copy(), "receiver sees each word's flag and takes "
                                "its data at once: no fence"))  # fmt: skip
    elif protocol == "LL128":  # lines of 16 cells: 15 data cells + 1 flag cell
        lines = -(-nbytes // 120)
        grid = np.full((lines, ROW), EMPTY, dtype=np.int64)
        frames.append(Frame(grid.copy(), "empty buffer: each 128-byte line will carry "
                            "120 B of data and an 8 B flag"))  # fmt: skip
        for line in range(lines):
            grid[line, :-1] = DATA
            frames.append(Frame(grid.copy(), f"a warp stores line {line}: 120 B of data"))
            grid[line, -1] = FLAG
            frames.append(Frame(grid.copy(), f"line {line}'s flag lands with it "
                                "(NVLink keeps the 128 B store whole)"))  # fmt: skip
            grid[line, :] = READ
            frames.append(Frame(grid.copy(), f"receiver reads line {line}"))
    else:  # Simple: data cells, then a fence, then one flag on its own line
        cells = nbytes // CELL
        grid = _grid(cells + ROW)  # an extra row holds the flag
        frames.append(Frame(grid.copy(), "empty buffer: data, then a separate flag"))
        per = max(1, cells // 6)
        for start in range(0, cells, per):
            for i in range(start, min(start + per, cells)):
                grid.flat[i] = DATA
            frames.append(Frame(grid.copy(), f"sender copies data cells {start}-"
                                f"{min(start + per, cells) - 1} (the receiver must not "
                                "read them yet)"))  # fmt: skip
        grid[-1, :] = FENCE
        frames.append(Frame(grid.copy(), "sender fences: all data visible before the flag"))
        grid[-1, :] = EMPTY
        grid[-1, 0] = FLAG
        frames.append(Frame(grid.copy(), "sender writes the flag"))
        grid.flat[:cells] = READ
        frames.append(Frame(grid.copy(), "receiver saw the flag, fenced, reads all data"))
    return frames


@dataclass(frozen=True)
class Channel:
    """One ring channel across two nodes: it enters node 0 through ``entry_nic`` at GPU
    ``order[0]``, visits ``order``, and leaves through ``exit_nic`` (on the same rail in
    node 1)."""

    index: int
    order: tuple
    entry_nic: int
    exit_nic: int

    def __post_init__(self):
        checks.integer("index", self.index, 0, 63)
        if not isinstance(self.order, tuple) or not self.order:
            raise checks.fail("order", "a non-empty tuple of GPU indices", self.order)
        for g in self.order:
            checks.integer("order", g, 0, 71)
        checks.integer("entry_nic", self.entry_nic, 0, 71)
        checks.integer("exit_nic", self.exit_nic, 0, 71)


def ring_paths(gpus: int = 8, nics: int = 8) -> list[Channel]:
    """Channels of a rail-optimized two-node ring, one per NIC: channel c enters at NIC c
    beside GPU ``c * gpus // nics`` and leaves through the NIC of the next GPU, so both
    NICs of a pair carry one entry and one exit (NCCL's cross-NIC rings)."""
    gpus = checks.integer("gpus", gpus, 2, 16)
    nics = checks.integer("nics", nics, 1, gpus)
    if gpus % nics:
        raise checks.fail("nics", f"a divisor of gpus={gpus}", nics)
    per = gpus // nics
    out = []
    for c in range(nics):
        first = c * per
        last = ((c + 1) % nics) * per
        middle = [g for g in range(gpus) if g not in (first, last)]
        out.append(Channel(c, (first, *middle, last), c, (c + 1) % nics))
    return out


def pxn_route(src_gpu: int, dst_gpu: int, gpus: int = 8) -> tuple:
    """The hops of one send from ``src_gpu`` on node 0 to ``dst_gpu`` on node 1 with PXN:
    over NVLink to the local GPU on the destination's rail, through that GPU's NIC, along
    the rail, into the destination."""
    gpus = checks.integer("gpus", gpus, 2, 16)
    src_gpu = checks.integer("src_gpu", src_gpu, 0, gpus - 1)
    dst_gpu = checks.integer("dst_gpu", dst_gpu, 0, gpus - 1)
    hops = [("gpu", 0, src_gpu)]
    if src_gpu != dst_gpu:
        hops.append(("gpu", 0, dst_gpu))  # NVLink to the rail's GPU
    hops += [("nic", 0, dst_gpu), ("nic", 1, dst_gpu), ("gpu", 1, dst_gpu)]
    return tuple(hops)
