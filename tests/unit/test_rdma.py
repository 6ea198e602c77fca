"""Tests for the scaleout.rdma package and viz.rdma: the QP state machine (the kernel's
table, SQD and SQE included), timers and NCCL's settings, the packets of a write, the
responder rules, and the packet-level simulator (both engines agree exactly; closed forms;
the properties of the three recovery strategies; the retry counter; every limit)."""

import math
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scaleout import rdma as R
from scaleout.rdma import SimConfig, simulate_fast, simulate_reference
from scaleout.rdma.config import FB_NACK, RX_DISCARDED

SLOW = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# ------------------------------------------------------------------ queue pairs
def fresh_attrs():
    return {
        "INIT": dict(PKEY_INDEX=0, PORT=1, ACCESS_FLAGS=("LOCAL_WRITE", "REMOTE_WRITE")),
        "RTR": dict(AV={"dgid": "fe80::2"}, PATH_MTU=4096, DEST_QPN=0x11, RQ_PSN=5,
                    MAX_DEST_RD_ATOMIC=1, MIN_RNR_TIMER=12),
        "RTS": dict(SQ_PSN=9, MAX_QP_RD_ATOMIC=1, RETRY_CNT=7, RNR_RETRY=7, TIMEOUT=14),
    }  # fmt: skip


def qp_in(state):
    if state == "SQE":  # only the NIC puts a (UD/UC) QP there: construct it in that state
        return R.QueuePair(1, state="SQE")
    qp = R.QueuePair(1)
    attrs = fresh_attrs()
    path = {"RESET": (), "INIT": ("INIT",), "RTR": ("INIT", "RTR"), "RTS": ("INIT", "RTR", "RTS"),
            "SQD": ("INIT", "RTR", "RTS", "SQD"), "ERR": ("INIT", "ERR")}[state]  # fmt: skip
    for s in path:
        qp.modify(s, **attrs.get(s, {}))
    return qp


def test_valid_path_reset_init_rtr_rts():
    qp = R.QueuePair(7)
    for state, attrs in fresh_attrs().items():
        qp.modify(state, **attrs)
        assert qp.state == state
    assert [h[:2] for h in qp.history] == [("RESET", "INIT"), ("INIT", "RTR"), ("RTR", "RTS")]
    assert qp.attrs["TIMEOUT"] == 14 and qp.attrs["DEST_QPN"] == 0x11
    qp.modify("ERR")
    qp.modify("RESET")
    assert qp.state == "RESET"


def test_required_attributes_match_the_man_page():
    # rdma-core ibv_modify_qp(3), IBV_QPT_RC table
    assert set(R.TRANSITIONS["RESET", "INIT"][0]) == {"PKEY_INDEX", "PORT", "ACCESS_FLAGS"}
    assert set(R.TRANSITIONS["INIT", "RTR"][0]) == {
        "AV",
        "PATH_MTU",
        "DEST_QPN",
        "RQ_PSN",
        "MAX_DEST_RD_ATOMIC",
        "MIN_RNR_TIMER",
    }
    assert set(R.TRANSITIONS["RTR", "RTS"][0]) == {
        "SQ_PSN", "MAX_QP_RD_ATOMIC", "RETRY_CNT", "RNR_RETRY", "TIMEOUT"}  # fmt: skip


ALL_PAIRS = [(a, b) for a in R.STATES for b in R.STATES]


@pytest.mark.parametrize("pair", [p for p in ALL_PAIRS if p not in R.TRANSITIONS])
def test_every_skipped_or_reversed_transition_is_rejected_and_changes_nothing(pair):
    fr, to = pair
    qp = qp_in(fr)
    before = (qp.state, dict(qp.attrs), list(qp.history))
    attrs = fresh_attrs().get(to, {})
    with pytest.raises(ValueError, match=f"no transition {fr} -> {to}"):
        qp.modify(to, **attrs)
    assert (qp.state, qp.attrs, qp.history) == before


MISSING = [(s, a) for s in ("INIT", "RTR", "RTS") for a in fresh_attrs()[s]]


@pytest.mark.parametrize("state,attr", MISSING)
def test_every_missing_attribute_is_rejected_and_changes_nothing(state, attr):
    prev = {"INIT": "RESET", "RTR": "INIT", "RTS": "RTR"}[state]
    qp = qp_in(prev)
    before = (qp.state, dict(qp.attrs))
    attrs = dict(fresh_attrs()[state])
    del attrs[attr]
    with pytest.raises(ValueError, match=f"missing \\['{attr}'\\]"):
        qp.modify(state, **attrs)
    assert (qp.state, qp.attrs) == before


def test_not_allowed_attribute_and_bad_values_change_nothing():
    qp = qp_in("INIT")
    with pytest.raises(ValueError, match="does not accept \\['SQ_PSN'\\]"):
        qp.modify("RTR", SQ_PSN=3, **fresh_attrs()["RTR"])
    for name, bad in (("PATH_MTU", 9000), ("RQ_PSN", 2**24), ("MIN_RNR_TIMER", 32),
                      ("AV", {"gid": 1})):  # fmt: skip
        attrs = dict(fresh_attrs()["RTR"], **{name: bad})
        with pytest.raises(ValueError, match=name):
            qp.modify("RTR", **attrs)
    assert qp.state == "INIT" and "PATH_MTU" not in qp.attrs
    with pytest.raises(ValueError, match="no transition INIT -> SQD"):
        qp.modify("SQD")
    for bad in ("DRAINED", ["RTR"], None):
        with pytest.raises(ValueError, match="state must be one of"):
            qp.modify(bad)


def test_the_transition_table_is_the_kernels():
    # drivers/infiniband/core/verbs.c, qp_state_table, RC entries: 22 valid pairs
    assert R.STATES == ("RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR")
    assert len(R.TRANSITIONS) == 22
    assert ("RESET", "ERR") not in R.TRANSITIONS  # the kernel refuses RESET -> ERR
    assert not [p for p in R.TRANSITIONS if p[1] == "SQE" and p[0] != "SQE"]  # NIC only
    assert {to for fr, to in R.TRANSITIONS if fr == "SQE"} == {"RESET", "ERR", "RTS"}
    assert all((s, "RESET") in R.TRANSITIONS for s in R.STATES)
    assert all((s, "ERR") in R.TRANSITIONS for s in R.STATES if s != "RESET")
    assert R.TRANSITIONS["RTS", "SQD"] == ((), ("EN_SQD_ASYNC_NOTIFY",))
    assert "TIMEOUT" in R.TRANSITIONS["SQD", "SQD"][1]  # change timers while drained


def test_sqd_and_sqe_paths_and_the_nic_moving_a_qp_to_err():
    qp = qp_in("RTS")
    qp.modify("SQD", EN_SQD_ASYNC_NOTIFY=True)
    qp.modify("SQD", TIMEOUT=18, RETRY_CNT=5)  # attributes that only SQD -> SQD may change
    qp.modify("RTS", CUR_STATE="SQD")
    assert qp.state == "RTS" and qp.attrs["TIMEOUT"] == 18
    with pytest.raises(ValueError, match="does not accept"):
        qp.modify("RTS", TIMEOUT=3)  # RTS -> RTS may not change the timeout
    sqe = qp_in("SQE")
    sqe.modify("RTS")
    assert sqe.state == "RTS"
    qp.nic_error("IBV_WC_RETRY_EXC_ERR")
    assert qp.state == "ERR" and qp.history[-1] == ("RTS", "ERR", "IBV_WC_RETRY_EXC_ERR")
    with pytest.raises(ValueError, match="state must be RTR, RTS, SQD or SQE"):
        R.QueuePair(2).nic_error()
    with pytest.raises(ValueError, match="status"):
        qp_in("RTS").nic_error("IBV_WC_SUCCESS")
    qp.modify("RESET")
    assert qp.state == "RESET"


def test_queue_pair_records_validate_their_fields():
    for kw, name in ((dict(qp_num=-1), "qp_num"), (dict(qp_num=2**24), "qp_num"),
                     (dict(qp_num=1, state="SQX"), "state"),
                     (dict(qp_num=1, attrs={"PORT": 0}), "PORT"),
                     (dict(qp_num=1, attrs={"NOPE": 1}), "attrs"),
                     (dict(qp_num=1, history=[("RESET", "INIT")]), "history")):  # fmt: skip
        with pytest.raises(ValueError, match=name):
            R.QueuePair(**kw)


def test_connect_rc_and_ack_timeout():
    qp = R.connect_rc(R.QueuePair(3), {"qp_num": 4, "psn": 77, "gid": "fe80::9"}, psn=11)
    assert qp.state == "RTS" and qp.attrs["RQ_PSN"] == 77 and qp.attrs["SQ_PSN"] == 11
    assert qp.attrs["TIMEOUT"] == R.NCCL_IB_TIMEOUT == 20  # NCCL's defaults
    assert qp.attrs["RETRY_CNT"] == R.NCCL_IB_RETRY_CNT == 7 == qp.attrs["RNR_RETRY"]
    assert R.local_ack_timeout_s(14) == pytest.approx(4.096e-6 * 16384)  # 67.1 ms
    assert math.isinf(R.local_ack_timeout_s(0))
    for bad in (-1, 32, 1.5, True, "4"):
        with pytest.raises(ValueError, match="timeout"):
            R.local_ack_timeout_s(bad)


def test_nccl_defaults_in_seconds():
    # 4.096 us * 2**20 per try; the first try and 7 retries before IBV_WC_RETRY_EXC_ERR
    assert R.local_ack_timeout_s(R.NCCL_IB_TIMEOUT) == pytest.approx(4.294967296)
    assert R.retry_exhausted_s(R.NCCL_IB_TIMEOUT, R.NCCL_IB_RETRY_CNT) == pytest.approx(34.36, 1e-3)
    assert R.retry_exhausted_s(14, 0) == R.local_ack_timeout_s(14)
    assert math.isinf(R.rnr_retries(7)) and R.rnr_retries(6) == 6
    with pytest.raises(ValueError, match="retry_cnt"):
        R.retry_exhausted_s(20, 8)


@pytest.mark.parametrize("peer", [{"qp_num": 4, "psn": 1}, {"qp_num": 4, "psn": -1, "gid": "x"},
                                  {"qp_num": "4", "psn": 1, "gid": "x"}, None, [],
                                  {"qp_num": 4, "psn": 1, "gid": ""}])  # fmt: skip
def test_connect_rc_with_a_malformed_peer_changes_nothing(peer):
    # Regression: a peer without 'gid' raised KeyError after INIT, leaving the QP half-modified.
    qp = R.QueuePair(3)
    with pytest.raises(ValueError, match="peer"):
        R.connect_rc(qp, peer, psn=1)
    assert (qp.state, qp.attrs, qp.history) == ("RESET", {}, [])


def test_connect_rc_is_all_or_nothing_when_a_late_step_is_refused():
    qp = R.QueuePair(3)
    with pytest.raises(ValueError, match="TIMEOUT"):
        R.connect_rc(qp, {"qp_num": 4, "psn": 1, "gid": "x"}, psn=1, timeout=32)
    assert (qp.state, qp.attrs, qp.history) == ("RESET", {}, [])
    with pytest.raises(ValueError, match="local"):
        R.connect_rc("qp", {"qp_num": 4, "psn": 1, "gid": "x"}, psn=1)


# ------------------------------------------------------------------ one write
@given(st.integers(1, 100_000), st.sampled_from(R.PATH_MTUS), st.integers(0, 2**24 - 1))
def test_write_packets_cover_the_message(length, mtu, psn):
    pk = R.write_packets(length, mtu, 0x1000, 7, psn)
    assert len(pk) == -(-length // mtu)
    assert sum(p.length for p in pk) == length
    assert [p.offset for p in pk] == [i * mtu for i in range(len(pk))]
    assert [p.psn for p in pk] == [(psn + i) % 2**24 for i in range(len(pk))]
    assert all(p.length <= mtu for p in pk)
    with_reth = [p for p in pk if p.reth is not None]
    assert with_reth == [pk[0]] and pk[0].reth == (0x1000, 7, length)
    ops = [p.opcode.split()[-1] for p in pk]
    assert ops == (["Only"] if len(pk) == 1 else ["First"] + ["Middle"] * (len(pk) - 2) + ["Last"])


def test_write_steps_and_bad_packet_inputs():
    steps = R.rdma_write_steps(10_000, 4096, 0xA000, 0x1000, 5, 42, start_psn=3)
    assert [who for who, _ in steps][0] == "application" and "PSN 3..5" in steps[2][1]
    assert "consumes no receive request" in steps[3][1]
    for kw, msg in ((dict(length=-1, mtu=4096), "length"), (dict(length=10, mtu=1500), "mtu"),
                    (dict(length=10, mtu=4096, immediate=2**32), "immediate"),
                    (dict(length=10, mtu=4096, rkey=-1), "rkey")):  # fmt: skip
        with pytest.raises(ValueError, match=msg):
            R.write_packets(**kw)


def test_write_with_immediate_ends_with_the_immediate_and_consumes_a_receive():
    # NCCL (ncclIbMultiSend) ends each message with RDMA_WRITE_WITH_IMM: the immediate
    # rides on the last packet and consumes one receive request at the target.
    pk = R.write_packets(10_000, 4096, 0x1000, 7, 5, immediate=10_000)
    assert [p.opcode for p in pk] == ["RDMA WRITE First", "RDMA WRITE Middle",
                                      "RDMA WRITE Last with Immediate"]  # fmt: skip
    assert [p.immediate for p in pk] == [None, None, 10_000]
    only = R.write_packets(0, 4096, immediate=0)  # NCCL's 0-byte WRITE_WITH_IMM
    assert len(only) == 1 and only[0].opcode == "RDMA WRITE Only with Immediate"
    assert only[0].length == 0 and only[0].reth == (0, 0, 0)
    steps = R.rdma_write_steps(10_000, 4096, 0xA000, 0x1000, 5, 42, immediate=1)
    assert "RDMA_WRITE_WITH_IMM" in steps[0][1] and "consumes one posted receive" in steps[3][1]
    with pytest.raises(ValueError, match="reth"):
        R.WritePacket(0, "RDMA WRITE Middle", 0, 10, (0, 0, 10))
    with pytest.raises(ValueError, match="immediate"):
        R.WritePacket(0, "RDMA WRITE Only", 0, 10, (0, 0, 10), immediate=3)


def test_packet_sizes_are_bounded():
    # Regression: write_packets(2**40, 4096) built a list of 2**28 objects.
    with pytest.raises(ValueError, match="length"):
        R.write_packets(2**40, 4096)
    with pytest.raises(ValueError, match="packets"):
        R.write_packets(2**31, 4096)  # the largest IB message: 2**19 packets, too many to list
    assert len(R.write_packets(2**28, 4096)) == 2**16  # the longest list


def test_responders_compare_psns_modulo_2_24_and_reject_bad_start_psns():
    top = R.PSN_MODULUS - 1
    accepted, naks = R.responder_go_back_n([top, 0, 2, 1], start_psn=top)
    assert accepted.tolist() == [1, 1, 0, 1] and naks == [1]  # wraps, NAKs PSN 1, not 2**24
    placed, missing = R.responder_ooo([top, 1], 3, start_psn=top)
    assert placed.tolist() == [1, 1] and missing == [0]
    for bad in (-1, 2**24, 1.0, "0"):  # regression: start_psn=-1 NAKed PSN -1
        with pytest.raises(ValueError, match="start_psn"):
            R.responder_go_back_n([0, 1], start_psn=bad)
    for bad in ([-1], [2**24], [[0, 1]], ["a"], [0.5]):
        with pytest.raises(ValueError, match="arrivals"):
            R.responder_go_back_n(bad)
    with pytest.raises(ValueError, match="bitmap"):
        R.responder_ooo([0], 4, bitmap=5)


def test_responders_on_a_hand_checked_sequence():
    accepted, naks = R.responder_go_back_n([0, 1, 3, 4, 2, 3, 4, 6, 5])
    assert accepted.tolist() == [1, 1, 0, 0, 1, 1, 1, 0, 1]
    assert naks == [2, 5]  # one NAK per gap, none for 4 while still waiting for 2
    placed, missing = R.responder_ooo([0, 1, 3, 4, 2, 3], 6)
    assert placed.tolist() == [1, 1, 1, 1, 1, 0] and missing == [5]
    placed, missing = R.responder_ooo([3, 0, 1, 2, 3], 4, bitmap=2)
    assert placed.tolist() == [0, 1, 1, 1, 1] and missing == []


@given(st.permutations(range(12)))
def test_ooo_places_any_order_and_go_back_n_keeps_a_prefix(order):
    placed, missing = R.responder_ooo(order, 12)
    assert placed.all() and missing == []
    accepted, naks = R.responder_go_back_n(order)
    kept = [p for p, a in zip(order, accepted, strict=True) if a]
    assert kept == list(range(len(kept)))  # only ever in order
    assert len(naks) <= 12 - accepted.sum() + 1


def test_data_path_times():
    t = R.data_path_times(1e9)
    assert t["gpudirect"] == pytest.approx(1e9 / 50e9)  # NIC-bound: 20 ms
    assert t["staged"] == pytest.approx(2e9 / 63e9 + 1e9 / 50e9)
    assert t["gpudirect"] < t["staged_pipelined"] < t["staged"]
    assert t["host_memory_bytes_staged"] == 2e9 and t["host_memory_bytes_gpudirect"] == 0
    for bad in (0, -1, float("inf"), "1e9", 1e19):
        with pytest.raises(ValueError, match="nbytes"):
            R.data_path_times(bad)
    with pytest.raises(ValueError, match="nic"):
        R.data_path_times(1e9, nic="nic-400g")


# ------------------------------------------------------------------ simulator: inputs
@pytest.mark.parametrize("kw,name", [
    (dict(loss=1.0), "loss"), (dict(loss=-0.1), "loss"), (dict(loss=float("nan")), "loss"),
    (dict(message_bytes=0), "message_bytes"), (dict(message_bytes=-5), "message_bytes"),
    (dict(mtu_bytes=0), "mtu_bytes"), (dict(mtu_bytes=2**17), "mtu_bytes"),
    (dict(message_bytes=2**40), "message_bytes"), (dict(window_packets=2**23 + 1), "window"),
    (dict(seed=2**63), "seed"), (dict(retry_cnt=8), "retry_cnt"), (dict(retry_cnt=-1), "retry"),
    (dict(bandwidth_gbps=1e-300), "bandwidth_gbps"), (dict(rto_s=1e300), "rto_s"),
    (dict(mtu_bytes=4096.0), "mtu_bytes"), (dict(loss="0.1"), "loss"),
    (dict(strategy=["go-back-n"]), "strategy"), (dict(loss_model={}), "loss_model"),
    (dict(window=5), "parameter"), (dict(timeline=1), "timeline"),
    (dict(bandwidth_gbps=0), "bandwidth_gbps"), (dict(rtt_s=-1e-6), "rtt_s"),
    (dict(strategy="tcp"), "strategy"), (dict(reorder=1.0), "reorder"),
    (dict(loss_model="gilbert"), "loss_model"), (dict(window_packets=0), "window_packets"),
    (dict(rto_s=1e-6), "rto_s"), (dict(loss=0.9, loss_model="bursty", burst_packets=2), "loss"),
    (dict(seed=-1), "seed"), (dict(burst_packets=0.5), "burst_packets"),
])  # fmt: skip
def test_bad_inputs_raise_value_error_naming_the_argument(kw, name):
    args = dict(message_bytes=4096 * 10)
    args.update(kw)
    with pytest.raises(ValueError, match=name):
        R.simulate(**args)


def test_a_message_shorter_than_one_mtu_is_one_short_packet():
    # Regression: SimConfig rejected mtu_bytes > message_bytes; a 1,000-byte write is one packet.
    cfg = SimConfig(1000)
    assert cfg.n_packets == 1 and cfg.tx_last_ps == 20_000  # 1000 B at 400 Gb/s: 20 ns
    for strategy in R.STRATEGIES:
        r = R.simulate(1000, strategy=strategy)
        assert r.ok and r.sent == 1 and r.completion_s == pytest.approx(20e-9 + 8e-6)
        assert_same(SimConfig(1000, strategy=strategy, loss=0.3, seed=2))


def test_limits_cover_the_books_million_packet_benchmark():
    assert SimConfig(4096 * 1_000_000).n_packets == 1_000_000 <= R.MAX_PACKETS
    assert SimConfig(256 * R.MAX_PACKETS, mtu_bytes=256).n_packets == R.MAX_PACKETS
    with pytest.raises(ValueError, match="message_bytes"):
        SimConfig(4096 * R.MAX_PACKETS + 1)
    with pytest.raises(ValueError, match="message_bytes"):  # regression: simulate(2**40) ran
        R.simulate(2**40)


def test_a_write_into_a_black_hole_fails_with_retry_exceeded_quickly():
    # Regression: simulate(1 << 20, loss=0.999999) did not return in 60 s. A real QP gives
    # up after its first try and RETRY_CNT retries, each waiting one local ACK timeout.
    start = time.perf_counter()
    r = R.simulate(1 << 20, loss=0.999999)
    assert time.perf_counter() - start < 30  # generous: the point is that it returns
    assert r.status == R.RETRY_EXCEEDED and r.qp_state == "ERR" and not r.ok
    assert r.timeouts == r.config.retry_cnt + 1 == 8 and r.goodput_gbps == 0
    assert r.completion_s == pytest.approx(R.retry_exhausted_s(5, 7))  # 8 x 131 us
    assert r.delivered_s is None
    assert_same(SimConfig(1 << 16, loss=0.999999, strategy="selective-repeat"))


@pytest.mark.parametrize("strategy,loss,seed", [("go-back-n", 0.2, 13),
                                                ("selective-repeat", 0.3, 0),
                                                ("ooo-bitmap", 0.3, 0)])  # fmt: skip
def test_the_retry_counter_restarts_on_progress(strategy, loss, seed):
    # With retry_cnt 0 the first retry (a timeout; for go-back-N also a rewind on a NAK)
    # fails the write. With 2 the same channel is survived although it times out more than
    # twice in all: the counter starts again whenever the cumulative ACK advances.
    kw = dict(loss=loss, rtt_s=2e-6, rto_s=20e-6, strategy=strategy, seed=seed)
    strict = assert_same(SimConfig(4096 * 300, retry_cnt=0, **kw))
    patient = assert_same(SimConfig(4096 * 300, retry_cnt=2, **kw))
    assert not strict.ok and strict.timeouts <= 1
    assert strict.timeline.events[-1][1] == "retry-exceeded"
    assert patient.ok and patient.timeouts > 3


def test_transmission_time_and_timeline_budgets_raise(monkeypatch):
    from scaleout.rdma import reference, results
    from scaleout.rdma.engine import sender

    cfg = SimConfig(4096 * 2000, loss=0.2, seed=1)
    for module in (reference, sender):
        monkeypatch.setattr(module, "MAX_TRANSMISSIONS", 1000)
    with pytest.raises(ValueError, match="MAX_TRANSMISSIONS"):
        simulate_fast(cfg)
    with pytest.raises(ValueError, match="MAX_TRANSMISSIONS"):
        simulate_reference(cfg)
    monkeypatch.undo()
    for module in (reference, sender):
        monkeypatch.setattr(module, "MAX_TIME_PS", 50_000_000)  # 50 us
    with pytest.raises(ValueError, match="MAX_TIME_S"):
        simulate_fast(cfg)
    with pytest.raises(ValueError, match="MAX_TIME_S"):
        simulate_reference(cfg)
    monkeypatch.undo()
    monkeypatch.setattr(results, "MAX_TIMELINE_TRANSMISSIONS", 500)
    with pytest.raises(ValueError, match="timeline must be False"):
        simulate_fast(cfg, timeline=True)


def test_fates_are_bounded():
    # Regression: Fates(...).ensure(float("inf")) looped forever.
    f = R.Fates(SimConfig(4096 * 10, loss=0.1))
    for bad in (float("inf"), 2**40, -1, 1.5, None):
        with pytest.raises(ValueError, match="k must be"):
            f.ensure(bad)
    f.ensure(10)
    assert f.size == f.CHUNK and len(f.lost) == f.CHUNK
    with pytest.raises(ValueError, match="config"):
        R.Fates({"loss": 0.1})


# ------------------------------------------------------------------ simulator: engines agree
def assert_same(cfg):
    a, b = simulate_reference(cfg, timeline=True), simulate_fast(cfg, timeline=True)
    for f in ("completion_s", "delivered_s", "sent", "retransmitted", "lost", "reordered",
              "timeouts", "status"):  # fmt: skip
        assert getattr(a, f) == getattr(b, f), f
    ta, tb = a.timeline, b.timeline
    for f in ("psn", "send_s", "retransmission", "arrive_s", "rx", "fb", "fb_s", "placed_s"):
        np.testing.assert_array_equal(getattr(ta, f), getattr(tb, f), err_msg=f)
    assert sorted(ta.events) == sorted(tb.events)
    return a


configs = st.builds(
    dict,
    message_bytes=st.one_of(st.integers(1, 120).map(lambda k: k * 1000 + 7), st.integers(1, 5000)),
    mtu_bytes=st.sampled_from([512, 1000, 4096]),
    bandwidth_gbps=st.sampled_from([100.0, 123.4, 400.0]),
    rtt_s=st.sampled_from([0.0, 0.7e-6, 2e-6, 5.3e-6]),
    loss=st.sampled_from([0.0, 0.003, 0.03, 0.15]),
    loss_model=st.sampled_from(["independent", "bursty"]),
    reorder=st.sampled_from([0.0, 0.02, 0.2]),
    reorder_delay_s=st.sampled_from([0.0, 0.2e-6, 1e-6, 4e-6]),
    strategy=st.sampled_from(R.STRATEGIES),
    window_packets=st.one_of(st.none(), st.integers(1, 40)),
    reorder_window_s=st.one_of(st.none(), st.sampled_from([0.0, 1e-6])),
    seed=st.integers(0, 10_000),
    retry_cnt=st.sampled_from([0, 1, 3, 7]),
)


@SLOW
@given(configs)
def test_fast_engine_equals_the_per_packet_reference(kw):
    kw["rto_s"] = 40e-6
    assert_same(SimConfig(**kw))


@pytest.mark.parametrize("strategy", R.STRATEGIES)
def test_engines_agree_on_a_lossy_reordering_transfer(strategy):
    r = assert_same(SimConfig(4096 * 300, rtt_s=3e-6, loss=0.02, reorder=0.05,
                              reorder_delay_s=1.5e-6, strategy=strategy, seed=4))  # fmt: skip
    assert r.lost > 0 and r.reordered > 0 and r.retransmitted > 0


# ------------------------------------------------------------------ simulator: properties
@pytest.mark.parametrize("strategy", R.STRATEGIES)
@pytest.mark.parametrize("message,mtu", [(4096 * 1000, 4096), (10_000_001, 1024), (700, 512)])
def test_no_loss_finishes_at_line_rate_plus_one_rtt(strategy, message, mtu):
    r = R.simulate(message, mtu_bytes=mtu, strategy=strategy, rtt_s=8e-6, seed=3)
    cfg = r.config
    ideal = (message * 8 / 400e9) + 8e-6  # message / bandwidth + RTT
    assert r.completion_s == pytest.approx(ideal, rel=1e-6)
    assert r.completion_s == R.ideal_completion_s(cfg)
    assert r.delivered_s == pytest.approx(r.completion_s - 4e-6, rel=1e-9)
    assert r.retransmitted == 0 and r.sent == r.packets and r.timeouts == 0


def test_window_of_one_bdp_plus_one_keeps_the_link_busy_and_one_less_does_not():
    cfg = SimConfig(4096 * 2000, rtt_s=8e-6)
    assert cfg.bdp_packets == 98  # ceil(8 us / 81.92 ns)
    full = R.simulate(4096 * 2000, rtt_s=8e-6, window_packets=cfg.bdp_packets + 1)
    short = R.simulate(4096 * 2000, rtt_s=8e-6, window_packets=cfg.bdp_packets)
    assert full.completion_s == R.ideal_completion_s(cfg)
    assert short.completion_s > full.completion_s * 1.005


@SLOW
@given(
    st.sampled_from(["selective-repeat", "ooo-bitmap"]),
    st.sampled_from([1e-3, 0.02, 0.2]),
    st.sampled_from(["independent", "bursty"]),
    st.integers(0, 10**6),
)
def test_selective_strategies_resend_exactly_the_lost_packets(strategy, loss, model, seed):
    r = R.simulate(4096 * 400, strategy=strategy, loss=loss, loss_model=model, rtt_s=4e-6,
                   seed=seed, timeline=True)  # fmt: skip
    tl = r.timeline
    resent, lost = np.sort(tl.psn[tl.retransmission]), np.sort(tl.psn[tl.lost])
    if r.ok:
        assert r.retransmitted == r.lost  # one resend per loss, nothing else
        np.testing.assert_array_equal(resent, lost)
    else:  # a long burst exhausted the retries: it stopped before resending every loss
        assert r.retransmitted <= r.lost and set(resent) <= set(lost)


@SLOW
@given(
    st.sampled_from([1e-4, 3e-3, 0.03, 0.2]),
    st.sampled_from(["independent", "bursty"]),
    st.sampled_from([1e-6, 8e-6]),
    st.one_of(st.none(), st.integers(1, 300)),
    st.integers(0, 10**6),
)
def test_go_back_n_never_resends_fewer_than_selective_repeat(loss, model, rtt, window, seed):
    kw = dict(loss=loss, loss_model=model, rtt_s=rtt, window_packets=window, seed=seed)
    g = R.simulate(4096 * 500, strategy="go-back-n", **kw)
    s = R.simulate(4096 * 500, strategy="selective-repeat", **kw)
    o = R.simulate(4096 * 500, strategy="ooo-bitmap", **kw)
    assert g.retransmitted >= s.retransmitted == o.retransmitted


@SLOW
@given(st.sampled_from([0.001, 0.05, 0.5]), st.integers(0, 2000), st.integers(0, 10**6))
def test_reordering_without_loss_out_of_order_placement_resends_nothing(reorder, delay_ns,
                                                                        seed):  # fmt: skip
    kw = dict(reorder=reorder, reorder_delay_s=delay_ns * 1e-9, rtt_s=8e-6, seed=seed)
    o = R.simulate(4096 * 400, strategy="ooo-bitmap", **kw)  # reorder window 2 us >= delay
    assert o.retransmitted == 0 and o.timeouts == 0 and o.lost == 0
    if o.reordered and delay_ns >= 100:  # a late packet overtaken by at least one other
        g = R.simulate(4096 * 400, strategy="go-back-n", **kw)
        s = R.simulate(4096 * 400, strategy="selective-repeat", **kw)
        assert g.retransmitted > 0 and s.retransmitted > 0


def test_late_packets_beyond_the_reorder_window_are_resent():
    kw = dict(reorder=0.05, reorder_delay_s=3e-6, rtt_s=8e-6, seed=2)
    o = R.simulate(4096 * 400, strategy="ooo-bitmap", **kw)
    assert 0 < o.retransmitted <= o.reordered  # the last late ones have no later packet


def test_same_seed_same_result_and_another_seed_differs():
    kw = dict(loss=0.02, reorder=0.05, strategy="go-back-n", timeline=True)
    a, b = R.simulate(4096 * 300, seed=11, **kw), R.simulate(4096 * 300, seed=11, **kw)
    c = R.simulate(4096 * 300, seed=12, **kw)
    assert a.completion_s == b.completion_s and a.sent == b.sent
    np.testing.assert_array_equal(a.timeline.send_s, b.timeline.send_s)
    assert (a.completion_s, a.sent) != (c.completion_s, c.sent)


def test_go_back_n_goodput_matches_its_closed_form():
    tx = 4096 * 8 / 400e9
    # At 3% loss a few hundred timeouts of 1600 packet-times each dominate: their count
    # varies by ~sqrt(count), hence the wider tolerance there.
    for loss, rel in ((1e-3, 0.02), (1e-2, 0.02), (3e-2, 0.08)):
        r = R.simulate(4096 * 200_000, loss=loss, rtt_s=25 * tx, seed=5)
        model = R.gbn_goodput_fraction(loss, 25 * tx, tx, r.config.rto_s)
        assert r.goodput_fraction == pytest.approx(model, rel=rel), loss
    with pytest.raises(ValueError, match="loss"):
        R.gbn_goodput_fraction(1.0, 1e-6, 1e-7, 1e-4)


def test_selective_repeat_with_two_bdp_bitmap_loses_only_the_lost_fraction():
    cfg = SimConfig(4096 * 100_000, rtt_s=2e-6)
    for loss in (1e-3, 1e-2):
        r = R.simulate(4096 * 100_000, strategy="selective-repeat", loss=loss, rtt_s=2e-6,
                       window_packets=2 * cfg.bdp_packets + 2, seed=9)  # fmt: skip
        ideal = cfg.message_bytes * 8 / 400e9 / R.ideal_completion_s(cfg)
        assert r.goodput_fraction == pytest.approx((1 - loss) * ideal, abs=0.01)


def test_bursty_losses_have_the_requested_rate_and_burst_length():
    f = R.Fates(SimConfig(4096 * 10, loss=0.02, loss_model="bursty", burst_packets=5, seed=1))
    f.ensure(2_000_000)
    lost = f.lost[:2_000_000]
    starts = np.flatnonzero(np.diff(lost.astype(int)) == 1)
    assert lost.mean() == pytest.approx(0.02, rel=0.1)
    assert lost.sum() / len(starts) == pytest.approx(5, rel=0.1)


def test_go_back_n_discards_and_naks_once_per_gap():
    r = R.simulate(4096 * 300, loss=0.02, rtt_s=3e-6, seed=1, timeline=True)
    tl = r.timeline
    assert (tl.rx == RX_DISCARDED).sum() > 0
    naks = np.flatnonzero(tl.fb == FB_NACK)
    assert 0 < len(naks) <= r.lost + r.timeouts + 1


def test_sweep_shapes_and_bad_name():
    sw = R.sweep("loss", [0.0, 0.01], message_bytes=4096 * 50, seed=1)
    assert sw.goodput_fraction.shape == (3, 2) and sw.strategies == R.STRATEGIES
    assert np.all(sw.sent_per_packet >= 1)
    with pytest.raises(ValueError, match="name"):
        R.sweep("strategy", [1], message_bytes=4096)
    for kw, name in ((dict(values=[]), "values"), (dict(values=[0.0] * 257), "values"),
                     (dict(strategies=()), "strategies"), (dict(strategies=("tcp",)), "strat"),
                     (dict(values=[0.0], message_bytes=None), "message_bytes"),
                     (dict(values=[0.0], window=3), "parameter")):  # fmt: skip
        args = dict(values=[0.0, 0.01], message_bytes=4096 * 5)
        args.update(kw)
        if args["message_bytes"] is None:
            del args["message_bytes"]
        with pytest.raises(ValueError, match=name):
            R.sweep("loss", **args)
    with pytest.raises(ValueError, match="integer"):  # integer fields take integers
        R.sweep("window_packets", [10.5], message_bytes=4096 * 5)


# ------------------------------------------------------------------ simulator: properties
realistic = st.fixed_dictionaries({
    "message_bytes": st.integers(1, 2_000_000),
    "mtu_bytes": st.sampled_from(R.PATH_MTUS),
    "bandwidth_gbps": st.floats(1.0, 1600.0),
    "rtt_s": st.floats(0.0, 50e-6),
    "loss": st.floats(0.0, 0.2),
    "reorder": st.floats(0.0, 0.3),
    "reorder_delay_s": st.floats(0.0, 10e-6),
    "strategy": st.sampled_from(R.STRATEGIES),
})  # fmt: skip


@SLOW
@given(realistic)
def test_finite_positive_inputs_give_finite_sane_results(kw):
    kw["rto_s"] = max(R.DEFAULT_RTO_S, 2 * kw["rtt_s"] + 1e-6)
    r = R.simulate(**kw)
    assert math.isfinite(r.completion_s) and r.completion_s > 0
    cfg = r.config  # times are whole picoseconds: bound by the ideal, not by exactly 1
    best = cfg.message_bytes * 8 / (cfg.bandwidth_gbps * 1e9) / R.ideal_completion_s(cfg)
    assert 0 <= r.goodput_fraction <= best * (1 + 1e-12)
    assert r.lost <= r.sent and r.retransmitted <= r.sent
    if r.ok:
        assert r.completion_s >= R.ideal_completion_s(r.config) * (1 - 1e-12)
        assert r.sent >= r.packets and 0 < r.delivered_s <= r.completion_s
    else:
        assert r.timeouts >= 1


@given(st.floats(0.0, 0.999), st.floats(0.0, 1e-3), st.floats(1e-9, 1e-5), st.floats(1e-6, 10.0))
def test_gbn_closed_form_is_a_fraction(loss, rtt, tx, rto):
    eta = R.gbn_goodput_fraction(loss, rtt, tx, rto)
    assert 0 <= eta <= 1 and math.isfinite(eta)
    assert R.gbn_goodput_fraction(0.0, rtt, tx, rto) == 1.0


@given(st.floats(1.0, 1e15), st.floats(1.0, 1e12))
def test_data_path_times_are_positive_and_ordered(nbytes, chunk):
    t = R.data_path_times(nbytes, chunk_bytes=chunk)
    assert 0 < t["gpudirect"] <= t["staged_pipelined"] <= t["staged"] * (1 + 1e-12)
    assert all(math.isfinite(v) and v >= 0 for v in t.values())


@given(st.integers(0, 31), st.integers(0, 7))
def test_retry_exhaustion_is_retry_cnt_plus_one_timeouts(timeout, retry_cnt):
    total = R.retry_exhausted_s(timeout, retry_cnt)
    if timeout == 0:
        assert math.isinf(total)
    else:
        assert total == pytest.approx((retry_cnt + 1) * 4.096e-6 * 2**timeout)


# ------------------------------------------------------------------ figures
def test_figures_build():
    from scaleout import viz
    from scaleout.viz import rdma as VR

    res = {
        s: R.simulate(
            4096 * 20,
            strategy=s,
            loss=0.05,
            seed=3,
            timeline=True,
            bandwidth_gbps=100,
            rtt_s=2.6e-6,
            rto_s=20e-6,
        )
        for s in R.STRATEGIES
    }
    fig = VR.transfer_animation(res, "loss 5%", frames=30)
    assert len(fig.frames) == 30 <= viz.MAX_FRAMES
    first, last = fig.frames[0], fig.frames[-1]
    assert first.data[0].marker.color != last.data[0].marker.color  # memory fills up
    assert first.layout.shapes[0].y0 < last.layout.shapes[0].y0  # the curtain moves
    viz.figure_spec(fig)
    for kind in ("gpudirect", "staged"):
        viz.figure_spec(VR.data_path_figure(kind))
    qp = R.connect_rc(R.QueuePair(1), {"qp_num": 2, "psn": 0, "gid": "x"}, psn=0)
    viz.figure_spec(VR.qp_state_figure(qp))
    viz.figure_spec(VR.time_sequence_figure(res["go-back-n"]))
    sw = R.sweep("loss", [1e-3, 1e-2], message_bytes=4096 * 50)
    viz.figure_spec(VR.goodput_vs_loss_figure({"a": sw}, {"a": ([1e-3], [0.9])}))
    d = R.sweep("reorder_delay_s", [1e-7, 1e-6], message_bytes=4096 * 50, reorder=0.1)
    p = R.sweep("reorder", [1e-3, 1e-2], message_bytes=4096 * 50)
    viz.figure_spec(VR.reorder_figure(p, d, 2e-6))
    with pytest.raises(ValueError, match="kind"):
        VR.data_path_figure("pcie")
    with pytest.raises(ValueError, match="timeline=True"):
        VR.time_sequence_figure(R.simulate(4096 * 20))
    with pytest.raises(ValueError, match="frames"):
        VR.transfer_animation(res, "loss 5%", frames=61)
    with pytest.raises(ValueError, match="results"):
        VR.transfer_animation({"tcp": res["go-back-n"]}, "x")
    with pytest.raises(ValueError, match="by_prob"):
        VR.reorder_figure(d, d, 2e-6)


def test_qp_figure_draws_the_kernels_transitions_and_no_reset_to_err():
    from scaleout.viz import rdma as VR

    qp = R.connect_rc(R.QueuePair(1), {"qp_num": 2, "psn": 0, "gid": "x"}, psn=0)
    fig = VR.qp_state_figure(qp.nic_error())
    arrows = [a.name for a in fig.layout.annotations if a.showarrow]
    assert "RESET->ERR" not in arrows and not any(a.endswith("->SQE") for a in arrows)
    drawn = {tuple(a.split("->")) for a in arrows}
    assert drawn == {p for p in R.TRANSITIONS if p[0] != p[1] and p[1] != "RESET"}
    assert set(fig.data[0].text) == set(R.STATES)
    assert "ERR" in fig.layout.title.text
    with pytest.raises(ValueError, match="qp"):
        VR.qp_state_figure("RTS")


def test_time_sequence_figure_draws_runs_not_packets():
    from scaleout import viz
    from scaleout.viz import rdma as VR

    clean = R.simulate(4 * 2**20, timeline=True)
    fig = VR.time_sequence_figure(clean)
    first = fig.data[0]
    assert len(first.x) == 3 and "(1024)" in first.name  # 1024 packets: one segment
    lossy = R.simulate(4 * 2**20, loss=3e-3, seed=1, timeline=True)
    spec = viz.figure_spec(VR.time_sequence_figure(lossy))
    counts = [int(t["name"].split("(")[1].split(")")[0].split(",")[0]) for t in spec["data"]]
    assert sum(counts) == lossy.sent  # every transmission is in exactly one group
    failed = R.simulate(1 << 16, loss=0.999999, timeline=True)
    assert "IBV_WC_RETRY_EXC_ERR" in VR.time_sequence_figure(failed).layout.title.text


# ----------------------------------------------------------------- published measurements
def test_published_loss_results_beside_the_simulator():
    from scaleout.rdma import published as RP

    by = {c.result.key: c for c in RP.compare()}
    assert set(by) == {r.key for r in RP.RESULTS} and len(by) == 3
    # the simulator's go-back-N is the specification's: better than the NICs that collapse
    assert by["wang2019-gbn"].verdict == "below" and by["rosr2025"].verdict == "above"
    assert by["wang2019-improved"].verdict == "inside"
    # every setup of the box ranks selective repeat above go-back-N at 1 % loss
    assert all(x > 1 for x in RP.simulated("sr_over_gbn", 0.01))
    sr = RP.simulated("goodput_fraction", 0.01, "selective-repeat")
    gbn = RP.simulated("goodput_fraction", 0.01, "go-back-n")
    assert len(sr) == len(gbn) == 4 and all(s > g for s, g in zip(sr, gbn, strict=True))
    with pytest.raises(ValueError, match="strategy must be one of"):
        RP.simulated("goodput_fraction", 0.01)
    with pytest.raises(ValueError, match="strategy must be None"):
        RP.LossResult("k", "s", "x", 0.01, "sr_over_gbn", 2.0, "about", "go-back-n")


def test_published_loss_results_are_rows_of_rdma_csv():
    """Issue 24: each LossResult's value and loss rate are rows of data/rdma.csv, with a
    references.bib key; the source's qualifier opens the value's note."""
    from scaleout import data
    from scaleout.rdma import published as RP

    rows = data.load("rdma")
    irn = [v for v in rows if v.get("result") == "irn2018"]  # IRN's abstract, read apart
    assert len(rows) == 2 * len(RP.RESULTS) + len(irn) and len(irn) == 4
    assert {v.source for v in irn} == {"mittal2018irn"} and {v.unit for v in irn} == {"%"}
    by = {v.get("quantity"): v.value for v in irn}
    assert RP.IRN_GAIN_OVER_PFC_PERCENT == (by["gain over PFC (low)"], by["gain over PFC (high)"])
    assert RP.IRN_NIC_OVERHEAD_PERCENT == (
        by["NIC resource overhead (low)"],
        by["NIC resource overhead (high)"],
    )
    for r in RP.RESULTS:
        mine = {v.get("quantity"): v for v in rows if v.get("result") == r.key}
        assert set(mine) == {r.quantity, "loss rate"}
        value, loss = mine[r.quantity], mine["loss rate"]
        assert (r.value, r.loss) == (value.value, loss.value)
        assert type(r.value) is float and type(r.loss) is float
        assert value.note == f"{r.qualifier}: {r.note}"
        assert r.source == f"{RP.CITATIONS[value.source]} ({value.locator})"
        assert r.system == value.get("system") and (r.strategy or "") == value.get("strategy")
