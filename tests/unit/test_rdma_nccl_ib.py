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


def test_nccl_ib_defaults_are_the_rows_of_the_data_file(monkeypatch):
    from scaleout import data
    from scaleout.rdma import nccl_ib

    rows = {v.key: v for v in data.load("nccl_ib")}
    assert set(rows) == {"ib-timeout", "ib-retry-cnt", "ib-rnr-retry", "ib-ar-threshold"}
    assert {v.source for v in rows.values()} == {"ncclnetib2273"}
    assert all(v.locator.startswith("src/transport/net_ib.cc line ") for v in rows.values())
    held = (R.NCCL_IB_TIMEOUT, R.NCCL_IB_RETRY_CNT, R.NCCL_IB_RNR_RETRY, R.NCCL_IB_AR_THRESHOLD)
    assert held == tuple(
        int(rows[k].value)
        for k in ("ib-timeout", "ib-retry-cnt", "ib-rnr-retry", "ib-ar-threshold")
    )
    assert all(type(x) is int for x in held)
    # The constants are read from the rows, not typed twice: an edited row changes them.
    edited = [
        v if v.key != "ib-timeout" else type(v)(**{**v.__dict__, "value": 18.0})
        for v in data.load("nccl_ib")
    ]
    monkeypatch.setattr(nccl_ib._data, "load", lambda name: edited)
    assert nccl_ib.ib_defaults()["ib-timeout"] == 18
