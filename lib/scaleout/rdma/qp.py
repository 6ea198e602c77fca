"""Queue pairs: the RC state machine, its timers and what NCCL sets (chapter 12).

:class:`~scaleout.rdma.QueuePair` models one reliable-connected (RC) queue pair.
:meth:`~scaleout.rdma.QueuePair.modify` accepts exactly the RC rows of the Linux kernel's
transition table: ``qp_state_table`` and ``ib_modify_qp_is_ok`` in
drivers/infiniband/core/verbs.c, every state (RESET, INIT, RTR, RTS, SQD, SQE, ERR), each
transition's required and optional attributes. Like ``ibv_modify_qp`` it changes nothing
when it refuses (rdma-core ``ibv_modify_qp(3)``, NOTES). Two states are not reached through
``modify`` alone: the NIC itself moves a QP to ERR when a work request completes in error
(:meth:`~scaleout.rdma.QueuePair.nic_error`, e.g. the transport retry counter ran out:
``IBV_WC_RETRY_EXC_ERR``), and to SQE (send queue error) only for UD and UC QPs; an RC QP
that fails goes to ERR. The table has no transition *into* SQE and none from RESET to ERR.

Timers: a QP's TIMEOUT attribute t sets the local ACK timeout, 4.096 us * 2**t
(:func:`~scaleout.rdma.local_ack_timeout_s`; rdma-core ``rdma_set_option(3)``,
RDMA_OPTION_ID_ACK_TIMEOUT; 0 means wait forever); RETRY_CNT is how many times the
requester resends before it reports ``IBV_WC_RETRY_EXC_ERR`` ("transport retry counter
exceeded", rdma-core libibverbs/enum_strs.c ``ibv_wc_status_str``); RNR_RETRY 7 means
retry forever after receiver-not-ready NAKs (InfiniBand Architecture Specification vol. 1,
ch. 9). NCCL's defaults are ``NCCL_IB_TIMEOUT`` and ``NCCL_IB_RETRY_CNT``.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field

from .. import checks
from .nccl_ib import ib_defaults

_IB = ib_defaults()

PSN_MODULUS = 1 << 24  # PSNs and QP numbers are 24-bit (BTH)
PATH_MTUS = (256, 512, 1024, 2048, 4096)  # IBV_MTU_256 .. IBV_MTU_4096
STATES = ("RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR")
ACCESS = ("LOCAL_WRITE", "REMOTE_WRITE", "REMOTE_READ", "REMOTE_ATOMIC")
PATH_MIG_STATES = ("MIGRATED", "REARM", "ARMED")
# What the NIC reports when it moves a QP to ERR (enum ibv_wc_status, libibverbs/verbs.h).
NIC_ERRORS = ("IBV_WC_RETRY_EXC_ERR", "IBV_WC_RNR_RETRY_EXC_ERR", "IBV_WC_REM_ACCESS_ERR",
              "IBV_WC_LOC_PROT_ERR", "IBV_WC_REM_OP_ERR")  # fmt: skip

#: NCCL's defaults for every QP it connects (:func:`~scaleout.rdma.nccl_ib.ib_defaults`):
#: NCCL_PARAM(IbTimeout, "IB_TIMEOUT", 20) and NCCL_PARAM(IbRetryCnt, "IB_RETRY_CNT", 7) in
#: src/transport/net_ib.cc (release 2.27.3; TIMEOUT was 14 up to 2.13, 18 from 2.14, 20 from
#: 2.23); ``ncclIbRtsQp`` sets rnr_retry = 7 unconditionally.
NCCL_IB_TIMEOUT = _IB["ib-timeout"]
NCCL_IB_RETRY_CNT = _IB["ib-retry-cnt"]
NCCL_IB_RNR_RETRY = _IB["ib-rnr-retry"]
RNR_RETRY_INFINITE = 7

_CUR = ("CUR_STATE",)
_RTS_OPT = ("CUR_STATE", "ALT_PATH", "ACCESS_FLAGS", "MIN_RNR_TIMER", "PATH_MIG_STATE")
_SQD_SQD_OPT = ("PORT", "AV", "TIMEOUT", "RETRY_CNT", "RNR_RETRY", "MAX_QP_RD_ATOMIC",
                "MAX_DEST_RD_ATOMIC", "ALT_PATH", "ACCESS_FLAGS", "PKEY_INDEX",
                "MIN_RNR_TIMER", "PATH_MIG_STATE")  # fmt: skip
#: (from, to) -> (required attributes, optional attributes): the RC entries of the kernel's
#: qp_state_table. A pair that is not a key is not a transition (EINVAL).
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
    ("RTR", "RTS"): (("SQ_PSN", "MAX_QP_RD_ATOMIC", "RETRY_CNT", "RNR_RETRY", "TIMEOUT"), _RTS_OPT),
    ("RTS", "RESET"): ((), ()),
    ("RTS", "ERR"): ((), ()),
    ("RTS", "RTS"): ((), _RTS_OPT),
    ("RTS", "SQD"): ((), ("EN_SQD_ASYNC_NOTIFY",)),
    ("SQD", "RESET"): ((), ()),
    ("SQD", "ERR"): ((), ()),
    ("SQD", "RTS"): ((), _RTS_OPT),
    ("SQD", "SQD"): ((), _SQD_SQD_OPT),
    ("SQE", "RESET"): ((), ()),
    ("SQE", "ERR"): ((), ()),
    ("SQE", "RTS"): ((), ()),  # RC has no optional attributes here (UD/UC do)
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
    """Seconds one try waits for an ACK: 4.096 us * 2**timeout; ``math.inf`` for 0
    (rdma-core ``rdma_set_option(3)``, RDMA_OPTION_ID_ACK_TIMEOUT). The NIC may round up:
    this is the minimum."""
    timeout = checks.integer("timeout", timeout, 0, 31)
    return math.inf if timeout == 0 else 4.096e-6 * 2**timeout


def retry_exhausted_s(timeout: int, retry_cnt: int) -> float:
    """Seconds from sending a packet that is never answered to ``IBV_WC_RETRY_EXC_ERR``:
    the first try and ``retry_cnt`` retries each wait one local ACK timeout. With NCCL's
    defaults (20, 7): at least 8 * 4.29 s = 34.4 s (each timeout is a minimum). ``math.inf``
    for timeout 0."""
    retry_cnt = checks.integer("retry_cnt", retry_cnt, 0, 7)
    return (retry_cnt + 1) * local_ack_timeout_s(timeout)


def rnr_retries(rnr_retry: int) -> float:
    """How many times a requester resends after receiver-not-ready NAKs before it reports
    ``IBV_WC_RNR_RETRY_EXC_ERR``: ``rnr_retry``, except 7, which means forever (``math.inf``)."""
    rnr_retry = checks.integer("rnr_retry", rnr_retry, 0, 7)
    return math.inf if rnr_retry == RNR_RETRY_INFINITE else float(rnr_retry)


def _check_value(name: str, value):
    if name in _RANGES:
        lo, hi = _RANGES[name]
        checks.integer(name, value, lo, hi)
    elif name == "PATH_MTU":
        checks.choice("PATH_MTU", value, PATH_MTUS)
    elif name == "ACCESS_FLAGS":
        flags = checks.instance("ACCESS_FLAGS", value, (tuple, list), f"a tuple of {ACCESS}")
        for flag in flags:
            checks.choice("ACCESS_FLAGS", flag, ACCESS)
    elif name in ("AV", "ALT_PATH"):
        if not isinstance(value, dict) or not isinstance(value.get("dgid"), str):
            raise checks.fail(name, "an address vector: a dict with the peer's 'dgid'", value)
    elif name == "CUR_STATE":
        checks.choice("CUR_STATE", value, STATES)
    elif name == "PATH_MIG_STATE":
        checks.choice("PATH_MIG_STATE", value, PATH_MIG_STATES)
    elif name == "EN_SQD_ASYNC_NOTIFY":
        checks.boolean("EN_SQD_ASYNC_NOTIFY", value)


def _check_history(history):
    checks.instance("history", history, list)
    for entry in history:
        ok = isinstance(entry, tuple) and len(entry) == 3
        ok = ok and all(isinstance(s, str) and s in STATES for s in entry[:2])
        what = entry[2] if ok else None
        names = isinstance(what, tuple) and all(isinstance(a, str) for a in what)
        ok = ok and (isinstance(what, str) or names)
        if not ok:
            raise checks.fail("history", "a list of (from state, to state, attributes) tuples",
                              entry)  # fmt: skip


@dataclass
class QueuePair:
    """A reliable-connected (RC) queue pair: its number, state and the attributes set so far.

    ``history`` lists (from, to, what): ``what`` is the tuple of attribute names given to
    ``modify``, or the error status when the NIC moved the QP (``nic_error``).
    """

    qp_num: int
    state: str = "RESET"
    attrs: dict = field(default_factory=dict)
    history: list = field(default_factory=list)

    def __post_init__(self):
        self.qp_num = checks.integer("qp_num", self.qp_num, 0, PSN_MODULUS - 1)
        self.state = checks.choice("state", self.state, STATES)
        checks.instance("attrs", self.attrs, dict)
        for name, value in self.attrs.items():
            checks.choice("attrs", name, ATTRIBUTES)
            _check_value(name, value)
        _check_history(self.history)

    def modify(self, state: str, **attrs) -> QueuePair:
        """Move to ``state`` setting ``attrs`` (IBV_QP_* names without the prefix), like
        ``ibv_modify_qp(qp, attr, IBV_QP_STATE | mask)``. Raises ``ValueError`` naming the
        refused transition, the missing or the not-allowed attributes or a bad value; then
        nothing changes."""
        state = checks.choice("state", state, STATES)
        key = (self.state, state)
        if key not in TRANSITIONS:
            allowed = sorted(to for fr, to in TRANSITIONS if fr == self.state)
            raise ValueError(f"state must be one of {allowed} from {self.state} (EINVAL: no "
                             f"transition {self.state} -> {state} for an RC QP)")  # fmt: skip
        required, optional = TRANSITIONS[key]
        missing = [a for a in required if a not in attrs]
        if missing:
            raise ValueError(f"attributes must include {list(required)} for {self.state} -> "
                             f"{state} (EINVAL: missing {missing})")  # fmt: skip
        extra = [a for a in attrs if a not in required + optional]
        if extra:
            allowed = list(required + optional)
            raise ValueError(f"attributes must be among {allowed} for {self.state} -> {state} "
                             f"(EINVAL: does not accept {extra})")  # fmt: skip
        for name, value in attrs.items():
            _check_value(name, value)
        self.attrs.update(attrs)
        self.history.append((self.state, state, tuple(attrs)))
        self.state = state
        return self

    def nic_error(self, status: str = "IBV_WC_RETRY_EXC_ERR") -> QueuePair:
        """The NIC moves the QP to ERR because a work request completed with ``status``
        (no ``ibv_modify_qp`` involved): from RTR, RTS or SQD; the application sees the
        status in ``ibv_poll_cq`` and every outstanding work request flushed."""
        status = checks.choice("status", status, NIC_ERRORS)
        if self.state not in ("RTR", "RTS", "SQD", "SQE"):
            raise checks.fail("state", "RTR, RTS, SQD or SQE for the NIC to report an error",
                              self.state)  # fmt: skip
        self.history.append((self.state, "ERR", status))
        self.state = "ERR"
        return self


def _peer(peer) -> dict:
    what = "a dict with 'qp_num' and 'psn' (integers below 2**24) and 'gid' (a string)"
    if not isinstance(peer, dict) or not {"qp_num", "psn", "gid"} <= set(peer):
        raise checks.fail("peer", what, peer)
    for key in ("qp_num", "psn"):
        if not checks.is_integer(peer[key]) or not 0 <= peer[key] < PSN_MODULUS:
            raise checks.fail("peer", what, peer)
    if not isinstance(peer["gid"], str) or not peer["gid"]:
        raise checks.fail("peer", what, peer)
    return peer


def connect_rc(local: QueuePair, peer: dict, *, psn: int, mtu: int = 4096,
               timeout: int = NCCL_IB_TIMEOUT, retry_cnt: int = NCCL_IB_RETRY_CNT,
               rnr_retry: int = NCCL_IB_RNR_RETRY) -> QueuePair:  # fmt: skip
    """RESET -> INIT -> RTR -> RTS with the peer's details (``peer``: 'qp_num', 'psn',
    'gid'), exchanged out of band, the way an application (or NCCL: ``ncclIbRtrQp``,
    ``ncclIbRtsQp``) connects a QP; defaults are NCCL's. All or nothing: if any step
    would be refused, ``local`` is left exactly as it was."""
    checks.instance("local", local, QueuePair)
    peer = _peer(peer)
    trial = copy.deepcopy(local)
    trial.modify("INIT", PKEY_INDEX=0, PORT=1, ACCESS_FLAGS=("LOCAL_WRITE", "REMOTE_WRITE"))
    trial.modify("RTR", AV={"dgid": peer["gid"], "sgid_index": 3, "is_global": True},
                 PATH_MTU=mtu, DEST_QPN=peer["qp_num"], RQ_PSN=peer["psn"],
                 MAX_DEST_RD_ATOMIC=1, MIN_RNR_TIMER=12)  # fmt: skip
    trial.modify("RTS", SQ_PSN=psn, MAX_QP_RD_ATOMIC=1, RETRY_CNT=retry_cnt,
                 RNR_RETRY=rnr_retry, TIMEOUT=timeout)  # fmt: skip
    local.state, local.attrs, local.history = trial.state, trial.attrs, trial.history
    return local
