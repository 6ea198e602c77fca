"""RDMA between GPU servers: queue pairs, one RDMA write, lost packets (chapter 12).

* :class:`QueuePair` -- an RC queue pair's state machine. ``modify`` accepts exactly the
  transitions and attribute masks of the Linux kernel's ``ib_modify_qp_is_ok``
  (drivers/infiniband/core/verbs.c, ``qp_state_table``; the same required sets are tabled in
  rdma-core's ``ibv_modify_qp(3)``), and like ``ibv_modify_qp`` changes nothing when it
  refuses.
* :func:`write_packets`, :func:`rdma_write_steps` -- what one RDMA write puts on the wire:
  PSNs, opcodes, and the RETH (remote address, rkey, length) that only the first packet
  carries (InfiniBand Architecture Specification vol. 1, ch. 9; RoCEv2 = Annex A17).
* :func:`responder_go_back_n`, :func:`responder_ooo` -- the two receiver rules, applied to a
  sequence of arriving PSNs.
* :func:`simulate`, :func:`sweep` -- the packet-level simulator of :mod:`scaleout.rdma_sim`
  (model) and :mod:`scaleout.rdma_fast` (engine), plus closed forms to check it against.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field, replace

import numpy as np

from .hardware import LinkPreset, link
from .rdma_fast import simulate_fast
from .rdma_sim import STRATEGIES, SimConfig, SimResult

PSN_MODULUS = 1 << 24  # PSNs are 24-bit (BTH), they wrap
PATH_MTUS = (256, 512, 1024, 2048, 4096)  # IBV_MTU_256 .. IBV_MTU_4096
STATES = ("RESET", "INIT", "RTR", "RTS", "ERR")  # RC states modelled (SQD, SQE left out)
ACCESS = ("LOCAL_WRITE", "REMOTE_WRITE", "REMOTE_READ", "REMOTE_ATOMIC")

# (from, to) -> (required attributes, optional attributes), RC rows of qp_state_table.
TRANSITIONS = {
    ("RESET", "RESET"): ((), ()),
    ("RESET", "INIT"): (("PKEY_INDEX", "PORT", "ACCESS_FLAGS"), ()),
    ("INIT", "RESET"): ((), ()),
    ("INIT", "ERR"): ((), ()),
    ("INIT", "INIT"): ((), ("PKEY_INDEX", "PORT", "ACCESS_FLAGS")),
    ("INIT", "RTR"): (
        ("AV", "PATH_MTU", "DEST_QPN", "RQ_PSN", "MAX_DEST_RD_ATOMIC", "MIN_RNR_TIMER"),
        ("ALT_PATH", "ACCESS_FLAGS", "PKEY_INDEX"),
    ),
    ("RTR", "RESET"): ((), ()),
    ("RTR", "ERR"): ((), ()),
    ("RTR", "RTS"): (
        ("SQ_PSN", "MAX_QP_RD_ATOMIC", "RETRY_CNT", "RNR_RETRY", "TIMEOUT"),
        ("CUR_STATE", "ALT_PATH", "ACCESS_FLAGS", "MIN_RNR_TIMER", "PATH_MIG_STATE"),
    ),
    ("RTS", "RESET"): ((), ()),
    ("RTS", "ERR"): ((), ()),
    ("RTS", "RTS"): (
        (),
        ("CUR_STATE", "ACCESS_FLAGS", "ALT_PATH", "PATH_MIG_STATE", "MIN_RNR_TIMER"),
    ),  # fmt: skip
    ("ERR", "RESET"): ((), ()),
    ("ERR", "ERR"): ((), ()),
}
_RANGES = {"PKEY_INDEX": (0, 0xFFFF), "PORT": (1, 255), "DEST_QPN": (0, PSN_MODULUS - 1),
           "RQ_PSN": (0, PSN_MODULUS - 1), "SQ_PSN": (0, PSN_MODULUS - 1),
           "MAX_DEST_RD_ATOMIC": (0, 255), "MAX_QP_RD_ATOMIC": (0, 255),
           "MIN_RNR_TIMER": (0, 31), "TIMEOUT": (0, 31), "RETRY_CNT": (0, 7),
           "RNR_RETRY": (0, 7)}  # fmt: skip
ATTRIBUTES = tuple(sorted({a for req, opt in TRANSITIONS.values() for a in req + opt}))


def local_ack_timeout_s(timeout: int) -> float:
    """The RC retransmission timeout a QP's TIMEOUT attribute selects: 4.096 us * 2**timeout
    (rdma-core ``rdma_set_option(3)``, RDMA_OPTION_ID_ACK_TIMEOUT); 0 means infinite."""
    if isinstance(timeout, bool) or not isinstance(timeout, numbers.Integral):
        raise ValueError(f"timeout must be an integer in [0, 31], got {timeout!r}")
    if not 0 <= timeout <= 31:
        raise ValueError(f"timeout must be in [0, 31], got {timeout}")
    return math.inf if timeout == 0 else 4.096e-6 * 2**timeout


def _check_value(name, value):
    if name in _RANGES:
        lo, hi = _RANGES[name]
        if isinstance(value, bool) or not isinstance(value, numbers.Integral):
            raise ValueError(f"{name} must be an integer in [{lo}, {hi}], got {value!r}")
        if not lo <= value <= hi:
            raise ValueError(f"{name} must be in [{lo}, {hi}], got {value}")
    elif name == "PATH_MTU" and value not in PATH_MTUS:
        raise ValueError(f"PATH_MTU must be one of {PATH_MTUS} bytes, got {value!r}")
    elif name == "ACCESS_FLAGS" and not set(value) <= set(ACCESS):
        raise ValueError(f"ACCESS_FLAGS must be a subset of {ACCESS}, got {value!r}")
    elif name == "AV" and (not isinstance(value, dict) or "dgid" not in value):
        raise ValueError(
            f"AV (address vector) must be a dict with the peer's 'dgid', got {value!r}"
        )


@dataclass
class QueuePair:
    """A reliable-connected (RC) queue pair: its state and the attributes set so far."""

    qp_num: int
    state: str = "RESET"
    attrs: dict = field(default_factory=dict)
    history: list = field(default_factory=list)  # (from, to, attributes given)

    def modify(self, state: str, **attrs) -> QueuePair:
        """Move to ``state`` setting ``attrs`` (IBV_QP_* names without the prefix), like
        ``ibv_modify_qp(qp, attr, IBV_QP_STATE | mask)``. Raises ``ValueError`` naming the
        skipped state, the missing or the not-allowed attributes; then nothing changes."""
        if state not in STATES:
            raise ValueError(f"state must be one of {STATES}, got {state!r}")
        key = (self.state, state)
        if key not in TRANSITIONS:
            allowed = sorted(to for fr, to in TRANSITIONS if fr == self.state)
            raise ValueError(f"EINVAL: no transition {self.state} -> {state} for an RC QP; "
                             f"from {self.state} it may go to {allowed}")  # fmt: skip
        required, optional = TRANSITIONS[key]
        missing = [a for a in required if a not in attrs]
        if missing:
            raise ValueError(f"EINVAL: {self.state} -> {state} requires {list(required)}; "
                             f"missing {missing}")  # fmt: skip
        extra = [a for a in attrs if a not in required + optional]
        if extra:
            raise ValueError(f"EINVAL: {self.state} -> {state} does not accept {extra} "
                             f"(allowed: {list(required + optional)})")  # fmt: skip
        for name, value in attrs.items():
            _check_value(name, value)
        self.attrs.update(attrs)
        self.history.append((self.state, state, tuple(attrs)))
        self.state = state
        return self


def connect_rc(local: QueuePair, peer: dict, *, psn: int, mtu: int = 4096, timeout: int = 14,
               retry_cnt: int = 7, rnr_retry: int = 7) -> QueuePair:  # fmt: skip
    """RESET -> INIT -> RTR -> RTS with the peer's details (``peer``: 'qp_num', 'psn',
    'gid'), exchanged out of band, the way an application (or NCCL) connects a QP."""
    local.modify("INIT", PKEY_INDEX=0, PORT=1, ACCESS_FLAGS=("LOCAL_WRITE", "REMOTE_WRITE"))
    local.modify("RTR", AV={"dgid": peer["gid"], "sgid_index": 3, "is_global": True},
                 PATH_MTU=mtu, DEST_QPN=peer["qp_num"], RQ_PSN=peer["psn"],
                 MAX_DEST_RD_ATOMIC=1, MIN_RNR_TIMER=12)  # fmt: skip
    local.modify("RTS", SQ_PSN=psn, MAX_QP_RD_ATOMIC=1, RETRY_CNT=retry_cnt,
                 RNR_RETRY=rnr_retry, TIMEOUT=timeout)  # fmt: skip
    return local


@dataclass(frozen=True)
class WritePacket:
    """One request packet of an RDMA write (RC opcodes of the BTH)."""

    psn: int
    opcode: str  # "RDMA WRITE First" | "Middle" | "Last" | "Only"
    offset: int  # byte offset of the payload inside the message
    length: int  # payload bytes
    reth: tuple | None  # (remote address, rkey, message length): First and Only packets


def write_packets(length: int, mtu: int, remote_addr: int = 0, rkey: int = 0,
                  start_psn: int = 0) -> list[WritePacket]:  # fmt: skip
    """The packets of one RDMA write of ``length`` bytes at path MTU ``mtu`` bytes."""
    if isinstance(length, bool) or not isinstance(length, numbers.Integral) or length < 1:
        raise ValueError(f"length must be a positive integer (bytes), got {length!r}")
    if mtu not in PATH_MTUS:
        raise ValueError(f"mtu must be one of {PATH_MTUS} bytes, got {mtu!r}")
    if not 0 <= start_psn < PSN_MODULUS:
        raise ValueError(f"start_psn must be in [0, 2**24), got {start_psn}")
    n = -(-length // mtu)
    out = []
    for i in range(n):
        op = "Only" if n == 1 else "First" if i == 0 else "Last" if i == n - 1 else "Middle"
        reth = (remote_addr, rkey, length) if op in ("First", "Only") else None
        size = min(mtu, length - i * mtu)
        out.append(WritePacket((start_psn + i) % PSN_MODULUS, f"RDMA WRITE {op}", i * mtu, size,
                               reth))  # fmt: skip
    return out


def rdma_write_steps(length: int, mtu: int, local_addr: int, remote_addr: int, lkey: int,
                     rkey: int, start_psn: int = 0) -> list[tuple[str, str]]:  # fmt: skip
    """The steps of one RDMA write, as (who, what) pairs, from post to completion."""
    pk = write_packets(length, mtu, remote_addr, rkey, start_psn)
    last = pk[-1].psn
    return [
        ("application", f"ibv_post_send: WQE {{RDMA_WRITE, sge=(0x{local_addr:x}, {length} B, "
                        f"lkey {lkey}), remote 0x{remote_addr:x}, rkey {rkey}}}; doorbell"),
        ("requester NIC", f"reads the WQE, DMA-reads {length} B at 0x{local_addr:x} "
                          "(GPU memory over PCIe with GPUDirect RDMA)"),
        ("requester NIC", f"sends {len(pk)} packets, PSN {pk[0].psn}..{last}, <= {mtu} B each; "
                          "the first carries the RETH (remote address, rkey, length)"),
        ("responder NIC", "checks each PSN against its expected PSN, the rkey and bounds, and "
                          "DMA-writes the payload at remote address + offset (no CPU, no "
                          "receive WQE)"),
        ("responder NIC", f"acknowledges (cumulative ACK up to PSN {last})"),
        ("requester NIC", "on the ACK of the last PSN writes a completion (CQE); the "
                          "application sees it with ibv_poll_cq"),
    ]  # fmt: skip


def responder_go_back_n(arrivals, start_psn: int = 0) -> tuple[np.ndarray, list[int]]:
    """The InfiniBand RC responder on a sequence of arriving PSNs: which are accepted, and
    the NAKs (sequence error, one per gap, carrying the expected PSN) it sends."""
    expected, nak_pending = start_psn, False
    accepted, naks = np.zeros(len(arrivals), bool), []
    for i, psn in enumerate(arrivals):
        if psn == expected:
            accepted[i], expected, nak_pending = True, expected + 1, False
        elif psn > expected and not nak_pending:
            naks.append(expected)
            nak_pending = True
    return accepted, naks


def responder_ooo(arrivals, n: int, start_psn: int = 0, bitmap: int | None = None):
    """Out-of-order placement: every PSN inside [expected, expected + bitmap) is written to
    memory and marked in a bitmap. Returns (placed per arrival, missing PSNs)."""
    bitmap = n if bitmap is None else bitmap
    have = np.zeros(n + 1, bool)
    expected, placed = 0, np.zeros(len(arrivals), bool)
    for i, psn in enumerate(arrivals):
        j = psn - start_psn
        if expected <= j < min(n, expected + bitmap) and not have[j]:
            have[j] = placed[i] = True
            while have[expected]:
                expected += 1
    return placed, [start_psn + j for j in np.flatnonzero(~have[:n]).tolist()]


# ------------------------------------------------------------------ data paths
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
    """
    nic = link("nic-400g") if nic is None else nic
    pcie = link("pcie5-x16") if pcie is None else pcie
    if not nbytes > 0 or not chunk_bytes > 0:
        raise ValueError("nbytes and chunk_bytes must be > 0")
    b_nic, b_pcie = nic.gb_per_s * 1e9, pcie.gb_per_s * 1e9
    chunk = min(chunk_bytes, nbytes)
    slow = max(1 / b_nic, 1 / b_pcie)
    return {
        "gpudirect": nbytes * slow,
        "staged": nbytes / b_pcie + nbytes / b_nic + nbytes / b_pcie,
        "staged_pipelined": nbytes * slow + chunk * (2 / b_pcie + 1 / b_nic - slow),
        "host_memory_bytes_gpudirect": 0.0,
        "host_memory_bytes_staged": 2.0 * nbytes,
    }


# ------------------------------------------------------------------ simulation
def simulate(message_bytes: int, *, strategy: str = "go-back-n", timeline: bool = False,
             **params) -> SimResult:  # fmt: skip
    """Simulate one RDMA write (keywords of :class:`scaleout.rdma_sim.SimConfig`)."""
    return simulate_fast(SimConfig(message_bytes, strategy=strategy, **params), timeline)


@dataclass
class Sweep:
    """Results of :func:`sweep`: arrays of shape (strategies, values)."""

    name: str
    values: np.ndarray
    strategies: tuple
    goodput_fraction: np.ndarray
    goodput_gbps: np.ndarray
    sent_per_packet: np.ndarray
    retransmitted_per_packet: np.ndarray
    timeouts: np.ndarray


def sweep(name: str, values, strategies=STRATEGIES, **params) -> Sweep:
    """Simulate every strategy at every value of the SimConfig field ``name``."""
    if name not in SimConfig.__dataclass_fields__ or name in ("strategy", "message_bytes"):
        raise ValueError(f"name must be a SimConfig field other than strategy/message_bytes, "
                         f"got {name!r}")  # fmt: skip
    values = np.asarray(values)
    base = SimConfig(**params)
    shape = (len(strategies), len(values))
    out = {k: np.zeros(shape) for k in ("gf", "gb", "sp", "rp", "to")}
    for i, s in enumerate(strategies):
        for j, v in enumerate(values.tolist()):
            r = simulate_fast(replace(base, strategy=s, **{name: v}))
            out["gf"][i, j], out["gb"][i, j] = r.goodput_fraction, r.goodput_gbps
            out["sp"][i, j] = r.sent / r.packets
            out["rp"][i, j] = r.retransmitted / r.packets
            out["to"][i, j] = r.timeouts
    return Sweep(name, values, tuple(strategies), out["gf"], out["gb"], out["sp"], out["rp"],
                 out["to"])  # fmt: skip


def ideal_completion_s(config: SimConfig) -> float:
    """No loss, no reordering: (n-1) full packets + the last one back to back, plus one RTT."""
    return config.ideal_completion_ps() * 1e-12


def gbn_goodput_fraction(loss, rtt_s: float, tx_s: float, rto_s: float):
    """Go-back-N's long-run goodput over link bandwidth with independent losses ``loss``.

    Renewal argument on this model: a stream restarts at the lost PSN; it delivers X packets
    before the next loss, X ~ Geometric (mean (1-p)/p). If X >= 1 the NAK comes back
    (X + G + 2) tx + rtt after the restart (G further losses in a row, mean p/(1-p)); if
    the resent packet itself is lost (X = 0) the responder stays silent and the timeout
    fires rto after it. So (1-p) / (1 + p(1-p)(1 + rtt/tx) + p^2 rto/tx). Ignores message
    ends and window stalls; requires a window of at least one BDP.
    """
    p = np.asarray(loss, dtype=float)
    if np.any(p < 0) or np.any(p >= 1):
        raise ValueError(f"loss must be in [0, 1), got {loss!r}")
    if not (rtt_s >= 0 and tx_s > 0 and rto_s > 0):
        raise ValueError("rtt_s must be >= 0, tx_s and rto_s > 0 (seconds)")
    out = (1 - p) / (1 + p * (1 - p) * (1 + rtt_s / tx_s) + p**2 * rto_s / tx_s)
    return float(out) if out.ndim == 0 else out
