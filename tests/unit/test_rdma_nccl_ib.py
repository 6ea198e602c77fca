"""NCCL's network transport: the work requests of one message and the receiver's flush,
as read from NCCL v2.27.3-1 (``scaleout.rdma.nccl_ib``)."""

from __future__ import annotations

import pytest

import scaleout.rdma as R


def test_adaptive_routing_is_on_for_infiniband_only():
    assert R.adaptive_routing_default("infiniband") is True
    assert R.adaptive_routing_default("roce") is False


def test_immediate_rides_on_the_data_only_below_the_threshold_or_without_adaptive_routing():
    t = R.NCCL_IB_AR_THRESHOLD
    assert t == 8192
    # InfiniBand (adaptive routing on): up to 8 KiB one write with immediate ...
    assert R.message_work_requests(t) == [("RDMA_WRITE_WITH_IMM", t)]
    # ... above it the data, then a separate 0-byte write with immediate.
    assert R.message_work_requests(t + 1) == [("RDMA_WRITE", t + 1), ("RDMA_WRITE_WITH_IMM", 0)]
    # RoCE (adaptive routing off by default): always one write with immediate.
    assert R.message_work_requests(2**20, link_layer="roce") == [("RDMA_WRITE_WITH_IMM", 2**20)]
    forced = R.message_work_requests(2**20, link_layer="roce", adaptive_routing=True)
    assert forced[-1] == ("RDMA_WRITE_WITH_IMM", 0)
    # Several receives grouped: their data, then their sizes (one int each) with immediate.
    grouped = R.message_work_requests([10, 20, 30], link_layer="roce")
    assert grouped == [("RDMA_WRITE", 10), ("RDMA_WRITE", 20), ("RDMA_WRITE", 30),
                       ("RDMA_WRITE_WITH_IMM", 12)]  # fmt: skip


def test_the_flush_is_for_ampere_and_earlier_simple_protocol_and_gpudirect():
    assert R.needs_flush(8.0) and R.needs_flush(7.0)
    assert not R.needs_flush(9.0) and not R.needs_flush(10.0)
    assert R.needs_flush(9.0, grace_c2c=True)
    assert R.needs_flush(9.0, data_direct_nic=True) and R.needs_flush(9.0, force=True)
    for protocol in ("ll", "ll128"):
        assert not R.needs_flush(8.0, protocol=protocol)
    assert not R.needs_flush(8.0, gpudirect=False)
    assert not R.needs_flush(8.0, bytes_received=0)


@pytest.mark.parametrize(
    "call",
    [
        lambda: R.message_work_requests(-1),
        lambda: R.message_work_requests([]),
        lambda: R.message_work_requests([1] * 9),
        lambda: R.message_work_requests(1, link_layer="ethernet"),
        lambda: R.needs_flush(float("nan")),
        lambda: R.needs_flush(9.0, protocol="LL256"),
    ],
)
def test_bad_input_is_a_value_error(call):
    with pytest.raises(ValueError):
        call()


def test_nccl_ib_defaults_are_nccls_constants(monkeypatch):
    from scaleout import data
    from scaleout.nccl import constants as C
    from scaleout.rdma import nccl_ib

    rows = {
        v.get("name"): v for v in data.load("nccl_constants") if v.get("name").startswith("ib_")
    }
    held = (R.NCCL_IB_TIMEOUT, R.NCCL_IB_RETRY_CNT, R.NCCL_IB_RNR_RETRY, R.NCCL_IB_AR_THRESHOLD)
    names = ("ib_timeout", "ib_retry_cnt", "ib_rnr_retry", "ib_ar_threshold")
    assert held == tuple(int(rows[n].value) for n in names) == (20, 7, 7, 8192)
    assert all(type(x) is int for x in held)
    assert {rows[n].locator for n in names} == {
        "src/transport/net_ib.cc:116", "src/transport/net_ib.cc:117",
        "src/transport/net_ib.cc:1246", "src/transport/net_ib.cc:122",
    }  # fmt: skip
    # read from the constants, not typed twice: a changed constant changes them
    changed = dict(C.CONSTANTS)
    changed["ib_timeout"] = C.Constant("ib_timeout", 18, C.CONSTANTS["ib_timeout"].source, "x")
    monkeypatch.setattr(nccl_ib._nccl, "CONSTANTS", changed)
    assert nccl_ib.ib_defaults()["ib-timeout"] == 18
