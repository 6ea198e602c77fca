"""One RDMA write on the wire, and the two receiver rules (chapter 12).

* :func:`~scaleout.rdma.write_packets`, :func:`~scaleout.rdma.rdma_write_steps` -- what
  one RDMA write puts on the wire: PSNs, opcodes, the RETH (remote address, rkey, length)
  that only the first packet carries, and the immediate data that only the last one carries
  when the write is an ``RDMA_WRITE_WITH_IMM`` (InfiniBand Architecture Specification
  vol. 1, ch. 9, the RC opcodes of the BTH; RoCEv2 = its Annex A17).
* :func:`~scaleout.rdma.responder_go_back_n`, :func:`~scaleout.rdma.responder_ooo` -- the
  classic responder (accept only the expected PSN, NAK once per gap) and out-of-order
  placement with a bitmap, applied to a sequence of arriving PSNs. PSNs are 24-bit and
  compared modulo 2**24, with the IB rule that a PSN less than 2**23 ahead of the expected
  one is "ahead", the rest "behind" (a duplicate).

Limits: one message is at most ``MAX_MESSAGE_BYTES`` (2**31, the InfiniBand maximum
message size) and a packet list at most ``MAX_LISTED_PACKETS`` entries; arrival sequences
hold at most ``MAX_ARRIVALS`` PSNs.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import checks
from .qp import PATH_MTUS, PSN_MODULUS

MAX_MESSAGE_BYTES = 2**31
MAX_LISTED_PACKETS = 2**16  # Python objects, one per packet: a 256 MiB write at 4096 B
MAX_ARRIVALS = 2**20
_HALF = PSN_MODULUS // 2
OPCODES = ("RDMA WRITE First", "RDMA WRITE Middle", "RDMA WRITE Last",
           "RDMA WRITE Last with Immediate", "RDMA WRITE Only",
           "RDMA WRITE Only with Immediate")  # fmt: skip


@dataclass(frozen=True)
class WritePacket:
    """One request packet of an RDMA write (RC opcodes of the BTH).

    ``reth`` (remote address, rkey, message length) only on First and Only packets;
    ``immediate`` (32 bits, ImmDt) only on the "with Immediate" ones.
    """

    psn: int
    opcode: str
    offset: int  # byte offset of the payload inside the message
    length: int  # payload bytes
    reth: tuple | None
    immediate: int | None = None

    def __post_init__(self):
        checks.integer("psn", self.psn, 0, PSN_MODULUS - 1)
        checks.choice("opcode", self.opcode, OPCODES)
        checks.integer("offset", self.offset, 0, MAX_MESSAGE_BYTES)
        checks.integer("length", self.length, 0, max(PATH_MTUS))
        first = self.opcode.split()[2] in ("First", "Only")
        if first:
            ok = isinstance(self.reth, tuple) and len(self.reth) == 3
            ok = ok and all(checks.is_integer(v) and 0 <= v < 2**64 for v in self.reth)
            if not ok:
                raise checks.fail("reth", "(remote address, rkey, length) on a First or Only "
                                  "packet", self.reth)  # fmt: skip
        elif self.reth is not None:
            raise checks.fail("reth", "None on a Middle or Last packet", self.reth)
        if "Immediate" in self.opcode:
            checks.integer("immediate", self.immediate, 0, 2**32 - 1)
        elif self.immediate is not None:
            raise checks.fail("immediate", "None without a 'with Immediate' opcode",
                              self.immediate)  # fmt: skip


def _check_write(length, mtu, start_psn, immediate):
    length = checks.integer("length", length, 0, MAX_MESSAGE_BYTES)
    mtu = checks.choice("mtu", mtu, PATH_MTUS)
    start_psn = checks.integer("start_psn", start_psn, 0, PSN_MODULUS - 1)
    if immediate is not None:
        immediate = checks.integer("immediate", immediate, 0, 2**32 - 1)
    n = max(1, -(-length // mtu))  # a zero-byte write is one packet
    if n > MAX_LISTED_PACKETS:
        raise checks.fail("length", f"at most {MAX_LISTED_PACKETS} packets of {mtu} B "
                          f"({MAX_LISTED_PACKETS * mtu} bytes) to be listed", length)  # fmt: skip
    return length, mtu, start_psn, immediate, n


def write_packets(length: int, mtu: int, remote_addr: int = 0, rkey: int = 0, start_psn: int = 0,
                  immediate: int | None = None) -> list[WritePacket]:  # fmt: skip
    """The packets of one RDMA write of ``length`` bytes at path MTU ``mtu`` bytes; with
    ``immediate`` (a 32-bit value) it is an RDMA_WRITE_WITH_IMM, whose last packet carries
    it. A write of 0 bytes is one packet (NCCL sends one to signal completion)."""
    length, mtu, start_psn, immediate, n = _check_write(length, mtu, start_psn, immediate)
    remote_addr = checks.integer("remote_addr", remote_addr, 0, 2**64 - 1)
    rkey = checks.integer("rkey", rkey, 0, 2**32 - 1)
    out = []
    for i in range(n):
        op = "Only" if n == 1 else "First" if i == 0 else "Last" if i == n - 1 else "Middle"
        last = i == n - 1
        imm = immediate if last else None
        if imm is not None:
            op += " with Immediate"
        reth = (remote_addr, rkey, length) if i == 0 else None
        size = min(mtu, length - i * mtu)
        out.append(WritePacket((start_psn + i) % PSN_MODULUS, f"RDMA WRITE {op}", i * mtu, size,
                               reth, imm))  # fmt: skip
    return out


def rdma_write_steps(length: int, mtu: int, local_addr: int, remote_addr: int, lkey: int,
                     rkey: int, start_psn: int = 0,
                     immediate: int | None = None) -> list[tuple[str, str]]:  # fmt: skip
    """The steps of one RDMA write, as (who, what) pairs, from post to completion."""
    local_addr = checks.integer("local_addr", local_addr, 0, 2**64 - 1)
    lkey = checks.integer("lkey", lkey, 0, 2**32 - 1)
    pk = write_packets(length, mtu, remote_addr, rkey, start_psn, immediate)
    last = pk[-1].psn
    op = "RDMA_WRITE" if immediate is None else f"RDMA_WRITE_WITH_IMM, imm {immediate}"
    if immediate is None:
        target = (
            "DMA-writes the payload at remote address + offset; a plain write consumes "
            "no receive request and the responder's application sees no completion"
        )
    else:
        target = ("DMA-writes the payload at remote address + offset; the immediate "
                  "consumes one posted receive request, and once every PSN up to the last is "
                  "in place the NIC writes a completion (CQE, with the immediate) on the "
                  "responder's receive CQ")  # fmt: skip
    return [
        ("application", f"ibv_post_send: WQE {{{op}, sge=(0x{local_addr:x}, {length} B, "
                        f"lkey {lkey}), remote 0x{remote_addr:x}, rkey {rkey}}}; doorbell"),
        ("requester NIC", f"reads the WQE, DMA-reads {length} B at 0x{local_addr:x} "
                          "(GPU memory over PCIe with GPUDirect RDMA)"),
        ("requester NIC", f"sends {len(pk)} packets, PSN {pk[0].psn}..{last}, <= {mtu} B each; "
                          "the first carries the RETH (remote address, rkey, length)"),
        ("responder NIC", "checks each PSN against its expected PSN, the rkey and bounds; "
                          + target),
        ("responder NIC", f"acknowledges (cumulative ACK up to PSN {last})"),
        ("requester NIC", "on the ACK of the last PSN writes a completion (CQE) on the send "
                          "CQ; the application (NCCL: its proxy thread) sees it with "
                          "ibv_poll_cq"),
    ]  # fmt: skip


def _arrivals(arrivals) -> np.ndarray:
    return checks.array("arrivals", arrivals, ndim=1, integer=True, low=0,
                        high=PSN_MODULUS - 1, empty=True, max_size=MAX_ARRIVALS)  # fmt: skip


def responder_go_back_n(arrivals, start_psn: int = 0) -> tuple[np.ndarray, list[int]]:
    """The InfiniBand RC responder on a sequence of arriving PSNs (24-bit): which are
    accepted, and the NAKs (PSN sequence error, one per gap, carrying the expected PSN)."""
    psns = _arrivals(arrivals).tolist()
    expected = checks.integer("start_psn", start_psn, 0, PSN_MODULUS - 1)
    nak_pending = False
    accepted, naks = np.zeros(len(psns), bool), []
    for i, psn in enumerate(psns):
        ahead = (psn - expected) % PSN_MODULUS
        if ahead == 0:
            accepted[i], expected, nak_pending = True, (expected + 1) % PSN_MODULUS, False
        elif ahead < _HALF and not nak_pending:  # beyond the expected PSN: a gap
            naks.append(expected)
            nak_pending = True
    return accepted, naks


def responder_ooo(arrivals, n: int, start_psn: int = 0, bitmap: int | None = None):
    """Out-of-order placement of an ``n``-packet message starting at ``start_psn``: every
    PSN inside [expected, expected + bitmap) is written to memory and marked in a bitmap
    (``bitmap`` packets, default ``n``). Returns (placed per arrival, missing PSNs)."""
    psns = _arrivals(arrivals).tolist()
    n = checks.integer("n", n, 1, MAX_ARRIVALS)
    start_psn = checks.integer("start_psn", start_psn, 0, PSN_MODULUS - 1)
    bitmap = n if bitmap is None else checks.integer("bitmap", bitmap, 1, n)
    have = np.zeros(n + 1, bool)
    expected, placed = 0, np.zeros(len(psns), bool)
    for i, psn in enumerate(psns):
        j = (psn - start_psn) % PSN_MODULUS
        if expected <= j < min(n, expected + bitmap) and not have[j]:
            have[j] = placed[i] = True
            while have[expected]:
                expected += 1
    missing = np.flatnonzero(~have[:n])
    return placed, ((missing + start_psn) % PSN_MODULUS).tolist()
