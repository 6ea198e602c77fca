"""Tests for scaleout.rdma, rdma_sim, rdma_fast and viz.rdma: the QP state machine, the
packets of a write, the responder rules, and the packet-level simulator (both engines agree
exactly; closed forms; the properties of the three recovery strategies)."""

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scaleout import rdma as R
from scaleout.rdma_fast import simulate_fast
from scaleout.rdma_reference import simulate_reference
from scaleout.rdma_sim import FB_NACK, RX_DISCARDED, SimConfig

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
    qp = R.QueuePair(1)
    attrs = fresh_attrs()
    path = {"RESET": (), "INIT": ("INIT",), "RTR": ("INIT", "RTR"), "RTS": ("INIT", "RTR", "RTS"),
            "ERR": ("INIT", "ERR")}[state]  # fmt: skip
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
    with pytest.raises(ValueError, match="state must be one of"):
        qp.modify("SQD")


def test_connect_rc_and_ack_timeout():
    qp = R.connect_rc(R.QueuePair(3), {"qp_num": 4, "psn": 77, "gid": "fe80::9"}, psn=11)
    assert qp.state == "RTS" and qp.attrs["RQ_PSN"] == 77 and qp.attrs["SQ_PSN"] == 11
    assert R.local_ack_timeout_s(14) == pytest.approx(4.096e-6 * 16384)  # 67.1 ms
    assert math.isinf(R.local_ack_timeout_s(0))
    for bad in (-1, 32, 1.5, True):
        with pytest.raises(ValueError, match="timeout"):
            R.local_ack_timeout_s(bad)


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
    for kw, msg in ((dict(length=0, mtu=4096), "length"), (dict(length=10, mtu=1500), "mtu")):
        with pytest.raises(ValueError, match=msg):
            R.write_packets(**kw)


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
    with pytest.raises(ValueError):
        R.data_path_times(0)


# ------------------------------------------------------------------ simulator: inputs
@pytest.mark.parametrize("kw,name", [
    (dict(loss=1.0), "loss"), (dict(loss=-0.1), "loss"), (dict(loss=float("nan")), "loss"),
    (dict(message_bytes=0), "message_bytes"), (dict(message_bytes=-5), "message_bytes"),
    (dict(mtu_bytes=0), "mtu_bytes"), (dict(mtu_bytes=8192, message_bytes=4096), "mtu_bytes"),
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


# ------------------------------------------------------------------ simulator: engines agree
def assert_same(cfg):
    a, b = simulate_reference(cfg, timeline=True), simulate_fast(cfg, timeline=True)
    for f in ("completion_s", "delivered_s", "sent", "retransmitted", "lost", "reordered",
              "timeouts"):  # fmt: skip
        assert getattr(a, f) == getattr(b, f), f
    ta, tb = a.timeline, b.timeline
    for f in ("psn", "send_s", "retransmission", "arrive_s", "rx", "fb", "fb_s", "placed_s"):
        np.testing.assert_array_equal(getattr(ta, f), getattr(tb, f), err_msg=f)
    assert sorted(ta.events) == sorted(tb.events)
    return a


configs = st.builds(
    dict,
    message_bytes=st.integers(1, 120).map(lambda k: k * 1000 + 7),
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
)


@SLOW
@given(configs)
def test_fast_engine_equals_the_per_packet_reference(kw):
    if kw["mtu_bytes"] > kw["message_bytes"]:
        kw["mtu_bytes"] = kw["message_bytes"]
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
    assert r.retransmitted == r.lost  # one resend per loss, nothing else
    resent = np.sort(tl.psn[tl.retransmission])
    np.testing.assert_array_equal(resent, np.sort(tl.psn[tl.lost]))


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
    from scaleout.rdma_sim import Fates

    f = Fates(SimConfig(4096 * 10, loss=0.02, loss_model="bursty", burst_packets=5, seed=1))
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
    viz.figure_spec(VR.reorder_figure(sw, d, 2e-6))
    with pytest.raises(ValueError, match="kind"):
        VR.data_path_figure("pcie")


# ------------------------------------------------------------------ distributed
def _rdma_write_worker(rank, world_size, nbytes, mtu, seed):
    """The chapter's emulated RDMA write: QP info exchanged with all_gather_object, packets
    shuffled and two dropped by the "network", placed by PSN, holes NACKed and resent."""
    import torch
    import torch.distributed as dist

    n = -(-nbytes // mtu)
    mine = np.random.default_rng([seed, rank])
    me = {"qp_num": 0x100 + rank, "psn": int(mine.integers(2**24)), "gid": f"fe80::{rank}"}
    peers = [None] * world_size
    dist.all_gather_object(peers, me)
    qp = R.connect_rc(R.QueuePair(me["qp_num"]), peers[1 - rank], psn=me["psn"], mtu=mtu)
    net = np.random.default_rng(seed)
    order, dropped = net.permutation(n), set(net.choice(n, 2, replace=False).tolist())
    end = torch.tensor([-1, 0])
    if rank == 0:
        data = torch.from_numpy(mine.integers(0, 256, nbytes, dtype=np.uint8))
        packets = R.write_packets(nbytes, mtu, start_psn=me["psn"])

        def send(p):
            dist.send(torch.tensor([p.psn, p.length]), dst=1)
            dist.send(data[p.offset : p.offset + p.length].contiguous(), dst=1)

        for i in order:
            if i not in dropped:
                send(packets[i])
        dist.send(end, dst=1)
        count = torch.zeros(1, dtype=torch.int64)
        dist.recv(count, src=1)
        nack = torch.zeros(int(count), dtype=torch.int64)
        dist.recv(nack, src=1)
        for psn in nack.tolist():
            send(packets[(psn - me["psn"]) % 2**24])
        dist.send(end, dst=1)
        resent = sorted((psn - me["psn"]) % 2**24 for psn in nack.tolist())
        return {"data": data.numpy(), "nack": resent, "dropped": sorted(dropped), "state": qp.state}
    memory, bitmap = torch.zeros(nbytes, dtype=torch.uint8), np.zeros(n, bool)

    def burst():
        arrived = []
        while True:
            head = torch.zeros(2, dtype=torch.int64)
            dist.recv(head, src=0)
            psn, length = head.tolist()
            if psn < 0:
                return arrived
            payload = torch.empty(length, dtype=torch.uint8)
            dist.recv(payload, src=0)
            j = (psn - qp.attrs["RQ_PSN"]) % 2**24
            memory[j * mtu : j * mtu + length] = payload
            bitmap[j] = True
            arrived.append(j)

    first = burst()
    holes = np.flatnonzero(~bitmap).tolist()
    nack = torch.tensor([(qp.attrs["RQ_PSN"] + j) % 2**24 for j in holes], dtype=torch.int64)
    dist.send(torch.tensor([len(holes)]), dst=0)
    dist.send(nack, dst=0)
    burst()
    return {"memory": memory.numpy(), "first": first, "holes": holes, "state": qp.state}


@pytest.mark.parametrize("nbytes,mtu,seed", [(40_000, 4096, 7), (10_001, 1024, 3)])
def test_distributed_rdma_write_matches_the_single_process_reference(nbytes, mtu, seed):
    from scaleout.dist import run

    sender, target = run(_rdma_write_worker, nprocs=2, args=(nbytes, mtu, seed),
                         show_output=False)  # fmt: skip
    assert sender["state"] == target["state"] == "RTS"
    np.testing.assert_array_equal(target["memory"], sender["data"])
    n = -(-nbytes // mtu)
    placed, missing = R.responder_ooo(target["first"], n)
    assert placed.all() and missing == target["holes"] == sender["dropped"] == sender["nack"]
    accepted, _ = R.responder_go_back_n(target["first"])
    kept = [j for j, a in zip(target["first"], accepted, strict=True) if a]
    assert kept == list(range(len(kept)))
