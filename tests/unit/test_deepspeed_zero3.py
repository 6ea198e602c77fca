"""DeepSpeed v0.3.13's ZeRO-3 calls (scaleout.deepspeed_zero3), priced with NCCL's model."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scaleout import deepspeed_zero3 as DS
from scaleout import memory as M
from scaleout import nccl


def test_release_defaults():
    # v0.3.13 deepspeed/runtime/zero/constants.py lines 62, 65, 94, 100
    assert (DS.REDUCE_BUCKET_SIZE, DS.ALLGATHER_BUCKET_SIZE) == (500_000_000, 500_000_000)
    assert (DS.PREFETCH_BUCKET_SIZE, DS.PARAM_PERSISTENCE_THRESHOLD) == (50_000_000, 100_000)
    assert DS.RELEASE == "v0.3.13" and len(DS.RELEASE_COMMIT) == 40


def test_defaults_are_the_rows_of_deepspeed_csv():
    from scaleout import data

    rows = data.load("deepspeed")
    v0313 = {v.get("name"): v for v in rows if v.get("release") == DS.RELEASE}
    for name, value in (
        ("reduce_bucket_size", DS.REDUCE_BUCKET_SIZE),
        ("allgather_bucket_size", DS.ALLGATHER_BUCKET_SIZE),
        ("stage3_prefetch_bucket_size", DS.PREFETCH_BUCKET_SIZE),
        ("stage3_param_persistence_threshold", DS.PARAM_PERSISTENCE_THRESHOLD),
    ):
        assert value == v0313[name].value and type(value) is int
        assert v0313[name].source == "deepspeedv0313"
    current = [v for v in rows if v.get("release") == "config.py"]
    assert len(current) == len(DS.ZERO3_CONFIG_DEFAULTS) == 4
    for v in current:
        assert DS.ZERO3_CONFIG_DEFAULTS[v.get("name")] == v.value
        assert v.source == "deepspeedzeroconfig"
    assert DS.ZERO3_CONFIG_DEFAULTS["stage3_max_reuse_distance"] == 10**9


def test_gpt_parameters_count_megatrons_gpt():
    p = DS.gpt_parameters(96, 12288, 2048, 51200)
    assert p.size == 2 + 12 * 96 + 2
    gpt = M.Transformer("175B", 96, 12288, 96, 2048, 51200)
    assert int(p.sum()) == gpt.params + 2 * 12288  # + the final layer norm
    assert p[2 + 2] == 3 * 12288**2  # the fused QKV weight of layer 0


def test_calls_one_per_tensor():
    p = DS.gpt_parameters(96, 12288, 2048, 51200)
    c = DS.calls(p)
    # gathered: two embeddings and four weight matrices per layer, forward then backward
    assert c.allgather.size == 2 * (2 + 4 * 96)
    assert np.array_equal(c.allgather[: c.allgather.size // 2][::-1],
                          c.allgather[c.allgather.size // 2 :])  # fmt: skip
    assert (c.allgather >= DS.PARAM_PERSISTENCE_THRESHOLD).all()
    # every gradient reduce-scattered, persistent tensors too
    assert c.reducescatter.size == p.size and int(c.reducescatter.sum()) == int(p.sum())
    assert c.per_step == int(p[p < DS.PARAM_PERSISTENCE_THRESHOLD].sum())
    assert c.count == 1928
    # threshold 0: nothing persists
    assert DS.calls(p, 0).per_step == 0 and DS.calls(p, 0).allgather.size == 2 * p.size


def test_per_call_costs_more_than_whole_calls_and_more_with_ranks():
    c = DS.calls(DS.gpt_parameters(96, 12288, 2048, 51200))
    ratio = []
    for nodes in (48, 96, 192):
        topo = nccl.topology("dgx-a100", nodes=nodes)
        ratio.append(DS.seconds(c, machine=topo) / DS.whole_model_seconds(c, machine=topo))
    assert all(r > 1 for r in ratio) and ratio[0] < ratio[1] < ratio[2]
    assert round(ratio[2], 1) == 2.4


@settings(max_examples=25, deadline=None)
@given(layers=st.integers(1, 8), hidden=st.integers(64, 4096), nodes=st.integers(1, 16))
def test_seconds_is_the_sum_of_the_calls(layers, hidden, nodes):
    c = DS.calls(DS.gpt_parameters(layers, hidden, 512, 1000))
    topo = nccl.topology("dgx-a100", nodes=nodes)
    one_by_one = sum(
        nccl.predict("allgather", 2 * int(n), machine=topo).seconds for n in c.allgather
    )
    one_by_one += sum(nccl.predict("reducescatter", 2 * int(n), machine=topo).seconds
                      for n in c.reducescatter)  # fmt: skip
    if c.per_step:
        one_by_one += nccl.predict("allgather", 2 * c.per_step, machine=topo).seconds
    assert DS.seconds(c, machine=topo) == pytest.approx(float(one_by_one), rel=1e-9)
    # never below the three whole-model calls' bandwidth term minus their latency
    assert DS.seconds(c, machine=topo) > 0


def test_bad_input():
    with pytest.raises(ValueError, match="layers"):
        DS.gpt_parameters(0, 128, 128, 128)
    with pytest.raises(ValueError, match="params"):
        DS.calls([])
    with pytest.raises(ValueError, match="params"):
        DS.calls([0, 5])
    with pytest.raises(ValueError, match="persistence_threshold"):
        DS.calls([5], -1)
    with pytest.raises(ValueError, match="call_list"):
        DS.seconds([1, 2], machine="dgx-a100")


def test_without_contiguous_gradients_buckets_are_all_reduced():
    p = DS.gpt_parameters(96, 12288, 2048, 51200)
    c = DS.calls(p, contiguous_gradients=False)
    assert c.reducescatter.size == 0 and int(c.allreduce.sum()) == int(p.sum())
    # a bucket never exceeds the cap unless it is one gradient larger than the cap
    big = set(p[p > DS.REDUCE_BUCKET_SIZE].tolist())
    assert all(b <= DS.REDUCE_BUCKET_SIZE or b in big for b in c.allreduce.tolist())
    assert c.allreduce.size == 482
    one = DS.calls([10, 20, 30], contiguous_gradients=False, reduce_bucket_size=45)
    assert one.allreduce.tolist() == [30, 30]  # backward order: 30 | 20 + 10


@settings(max_examples=40, deadline=None)
@given(sizes=st.lists(st.integers(1, 10**6), min_size=1, max_size=40), cap=st.integers(1, 10**6))
def test_buckets_partition_the_gradients_in_backward_order(sizes, cap):
    c = DS.calls(sizes, contiguous_gradients=False, reduce_bucket_size=cap)
    assert int(c.allreduce.sum()) == sum(sizes)
    # greedy: a bucket plus the first gradient of the next one would overflow the cap
    rest = list(reversed(sizes))
    for b in c.allreduce.tolist()[:-1]:
        taken = 0
        while taken < b:
            taken += rest.pop(0)
        assert taken == b and b + rest[0] > cap
