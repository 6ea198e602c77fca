"""scaleout.data_parallel: gradient averaging, DDP's buckets (against torch's own C++
bucketing), the step timeline. Real DDP on 4 CPU processes and under torchrun: tests/integration."""

import sys

import numpy as np
import pytest
import torch
import torch.distributed as dist
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.nn.parallel.distributed import _BucketCapacityConfig

from scaleout import costmodel as M
from scaleout import data_parallel as D
from scaleout import nccl, viz
from scaleout.demos import data_parallel as demo
from scaleout.viz import data_parallel as VD

SETTINGS = settings(max_examples=60, deadline=None)


# ------------------------------------------------------------------ gradient averaging


@st.composite
def grads_and_sizes(draw, equal=True):
    """Per-sample gradients (B, d) and p shard sizes adding up to B."""
    p = draw(st.integers(1, 8))
    d = draw(st.integers(1, 6))
    if equal:
        sizes = np.full(p, draw(st.integers(1, 6)))
    else:
        sizes = np.array(draw(st.lists(st.integers(1, 9), min_size=p, max_size=p)))
    seed = draw(st.integers(0, 2**32 - 1))
    g = np.random.default_rng(seed).standard_normal((int(sizes.sum()), d))
    return g, sizes


@given(grads_and_sizes(equal=True))
@SETTINGS
def test_averaged_gradients_equal_the_full_batch_gradient_for_equal_shards(case):
    g, sizes = case
    assert D.equivalence_error(g, sizes) < 1e-12
    dp = D.average_gradients(D.local_gradients(g, sizes))
    np.testing.assert_allclose(dp, np.tile(g.mean(0), (len(sizes), 1)), atol=1e-12)


@given(grads_and_sizes(equal=False))
@SETTINGS
def test_weighting_by_shard_size_gives_the_full_batch_gradient_for_any_split(case):
    g, sizes = case
    assert D.equivalence_error(g, sizes, weighted=True) < 1e-12


def test_unweighted_average_of_unequal_shards_is_not_the_full_batch_gradient():
    g = np.array([[1.0], [1.0], [1.0], [5.0]])  # shards [1, 1, 1] and [5]
    assert D.equivalence_error(g, [3, 1]) == pytest.approx(1.0)  # (1 + 5) / 2 - 8 / 4
    assert D.equivalence_error(g, [3, 1], weighted=True) == pytest.approx(0.0)


def test_shard_sizes_follow_array_split():
    np.testing.assert_array_equal(D.shard_sizes(10, 4), [3, 3, 2, 2])
    np.testing.assert_array_equal(D.shard_sizes(64, 4), [16] * 4)


@given(
    p=st.integers(1, 6),
    per_rank=st.integers(1, 5),
    steps=st.integers(1, 4),
    seed=st.integers(0, 2**32 - 1),
)
@SETTINGS
def test_data_parallel_sgd_trains_the_same_model_as_one_process(p, per_rank, steps, seed):
    rng = np.random.default_rng(seed)
    batches = [(rng.standard_normal((p * per_rank, 3)), rng.standard_normal(p * per_rank))]
    batches *= steps
    w0 = rng.standard_normal(3)
    one = D.data_parallel_sgd(D.squared_error_grads, w0, batches, 1, 0.1)
    many = D.data_parallel_sgd(D.squared_error_grads, w0, batches, p, 0.1)
    assert many.shape == (p, 3)
    np.testing.assert_allclose(many, np.tile(one, (p, 1)), rtol=1e-10, atol=1e-12)


def test_uneven_shards_need_weights_to_match_full_batch_training():
    rng = np.random.default_rng(0)
    batches = [(rng.standard_normal((10, 2)), rng.standard_normal(10))] * 3
    w0 = np.zeros(2)
    one = D.data_parallel_sgd(D.squared_error_grads, w0, batches, 1, 0.1)
    plain = D.data_parallel_sgd(D.squared_error_grads, w0, batches, 4, 0.1)  # 3, 3, 2, 2
    weighted = D.data_parallel_sgd(D.squared_error_grads, w0, batches, 4, 0.1, weighted=True)
    assert np.abs(plain - one).max() > 1e-6
    np.testing.assert_allclose(weighted, np.tile(one, (4, 1)), atol=1e-12)


# ------------------------------------------------------------------------ buckets


def torch_buckets(sizes_bytes, cap, first):
    """DDP's own C++ bucketing, called as the Reducer does when it rebuilds: tensors in
    gradient-ready (= reverse registration) order, limits [first cap, cap]."""
    tensors = [torch.empty(int(b) // 4) for b in sizes_bytes][::-1]  # float32
    indices = list(range(len(sizes_bytes)))[::-1]
    buckets, _ = dist._compute_bucket_assignment_by_size(
        tensors, [int(first), int(cap)], [False] * len(tensors), indices
    )
    return buckets


@given(
    numels=st.lists(st.integers(1, 5000), min_size=1, max_size=40),
    cap=st.integers(4, 40000),
    first=st.integers(4, 40000),
)
@SETTINGS
def test_buckets_match_pytorchs_own_bucketing(numels, cap, first):
    sizes = np.array(numels) * 4
    ours = D.assign_buckets(sizes, cap, first)
    assert [list(b) for b in ours.params] == torch_buckets(sizes, cap, first)


@given(
    sizes=st.lists(st.integers(1, 10**6), min_size=1, max_size=60),
    cap=st.integers(1, 3 * 10**6),
    first=st.integers(1, 3 * 10**6),
)
@SETTINGS
def test_buckets_cover_every_parameter_once_and_respect_the_cap(sizes, cap, first):
    sizes = np.array(sizes, dtype=float)
    b = D.assign_buckets(sizes, cap, first)
    order = np.concatenate(b.params)
    np.testing.assert_array_equal(order, np.arange(len(sizes))[::-1])  # each once, reversed
    np.testing.assert_array_equal(b.caps, [first] + [cap] * (len(b) - 1))
    for k, members in enumerate(b.params):
        assert b.nbytes[k] == sizes[members].sum()
        # The cap is reached only by the bucket's last parameter ...
        assert sizes[members[:-1]].sum() < b.caps[k]
        # ... and every bucket but the last is closed because it reached its cap.
        if k < len(b) - 1:
            assert b.nbytes[k] >= b.caps[k]
    np.testing.assert_array_equal(
        b.bucket_of()[order], np.repeat(range(len(b)), [len(m) for m in b.params])
    )


def test_bucket_caps_follow_ddp_in_torch_2_13():
    assert D.bucket_caps() == (dist._DEFAULT_FIRST_BUCKET_BYTES, 25 * 2**20)
    assert D.DEFAULT_FIRST_BUCKET_BYTES == dist._DEFAULT_FIRST_BUCKET_BYTES == 2**20
    for mb in (None, 0.25, 1, 25, 100):
        cfg = _BucketCapacityConfig.create(mb, None, False)
        assert D.bucket_caps(mb) == (cfg.first_bucket_bytes_cap, cfg.bucket_bytes_cap)


def test_first_iteration_limits_follow_torch_2_13():
    # DDP's own rule for the construction-time buckets: one bucket ([sys.maxsize]) unless
    # find_unused_parameters=True; an empty rebuild list lets the C++ Reducer use its
    # [first_bucket_bytes_cap, bucket_bytes_cap] when it rebuilds.
    default = _BucketCapacityConfig.create(None, None, False)
    assert default.compute_bucket_size_limits(False, False) == ([sys.maxsize], [])
    assert default.compute_bucket_size_limits(True, False) == ([sys.maxsize], [])
    assert default.compute_bucket_size_limits(False, True) == ([2**20, 25 * 2**20], [])
    explicit = _BucketCapacityConfig.create(1, None, False)
    assert explicit.compute_bucket_size_limits(False, True) == ([2**20], [])
    assert D.NO_CAP == sys.maxsize


def torch_initial_buckets(sizes_bytes, bucket_cap_mb):
    """DDP's construction-time buckets with find_unused_parameters=True, as
    ``_ddp_init_helper`` computes them: registration order, then the list reversed."""
    cfg = _BucketCapacityConfig.create(bucket_cap_mb, None, False)
    limits, _ = cfg.compute_bucket_size_limits(static_graph=False, find_unused_parameters=True)
    tensors = [torch.empty(int(b) // 4) for b in sizes_bytes]
    buckets, _ = dist._compute_bucket_assignment_by_size(tensors, limits, [False] * len(tensors))
    return list(reversed(buckets))


@given(
    numels=st.lists(st.integers(1, 400_000), min_size=1, max_size=30),
    cap_mb=st.sampled_from([None, 0.05, 0.25, 1, 2]),
    seed=st.integers(0, 2**32 - 1),
)
@SETTINGS
def test_ddp_buckets_match_torch_in_every_case(numels, cap_mb, seed):
    sizes = np.array(numels) * 4
    # Rebuilt in an arbitrary arrival order: torch's C++ rule given the same order.
    order = np.random.default_rng(seed).permutation(len(sizes))
    first, cap = D.bucket_caps(cap_mb)
    tensors = [torch.empty(int(sizes[i]) // 4) for i in order]
    want, _ = dist._compute_bucket_assignment_by_size(
        tensors, [first, cap], [False] * len(tensors), order.tolist()
    )
    got = D.ddp_buckets(sizes, cap_mb, arrival_order=order)
    assert [list(b) for b in got.params] == want
    unused = D.ddp_buckets(sizes, cap_mb, find_unused_parameters=True)
    assert [list(b) for b in unused.params] == torch_initial_buckets(sizes, cap_mb)
    never_rebuilt = D.ddp_buckets(sizes, cap_mb, rebuilt=False, find_unused_parameters=True)
    assert [list(b) for b in never_rebuilt.params] == [list(b) for b in unused.params]
    first, cap = D.bucket_caps(cap_mb)
    rebuilt = D.ddp_buckets(sizes, cap_mb)
    assert [list(b) for b in rebuilt.params] == torch_buckets(sizes, cap, first)
    one = D.ddp_buckets(sizes, cap_mb, rebuilt=False)
    assert len(one) == 1 and list(one.params[0]) == list(range(len(sizes)))
    assert not one.capped.any() and one.nbytes[0] == sizes.sum()


def test_ddp_buckets_of_the_chapters_mlp_with_find_unused_parameters():
    # The chapter's MLP (8 tensors), 0.25 MiB caps: what real DDP printed in torch 2.13.
    sizes = [65536, 1024, 262144, 1024, 262144, 1024, 10240, 40]
    b = D.ddp_buckets(sizes, 0.25, find_unused_parameters=True)
    assert [list(m) for m in b.params] == [[5, 6, 7], [3, 4], [0, 1, 2]]


def test_gradient_memory_and_allreduce_itemsize():
    assert D.gradient_memory(1.4e9).total_bytes == 2.8e9  # a copy in the buckets
    assert D.gradient_memory(1.4e9, gradient_as_bucket_view=True).total_bytes == 1.4e9
    assert D.allreduce_itemsize() == 4 and D.allreduce_itemsize("float32", "allreduce") == 4
    assert D.allreduce_itemsize("float32", "bf16_compress") == 2
    assert D.allreduce_itemsize("float32", "fp16_compress") == 2
    assert D.allreduce_itemsize("bfloat16") == 2


def test_data_parallel_groups_reproduce_megatrons_example():
    # megatron/core/parallel_state.py, initialize_model_parallel: 16 GPUs, t = 2, p = 4.
    groups = D.data_parallel_groups(16, 2, 4)
    assert groups.tolist() == [
        [0, 2], [1, 3], [4, 6], [5, 7], [8, 10], [9, 11], [12, 14], [13, 15]
    ]  # fmt: skip
    layout = D.ParallelLayout(1024, 8, 8, 1536)
    assert (layout.data, layout.groups, layout.samples_per_replica) == (16, 64, 96)
    assert layout.micro_batches == 96 and D.ParallelLayout(1024, 8, 8, 1536, 2).micro_batches == 48
    assert layout.gradient_bytes(64e9, 4) == 4e9


@given(
    t=st.sampled_from([1, 2, 4, 8]),
    p=st.integers(1, 8),
    d=st.integers(1, 16),
)
@SETTINGS
def test_data_parallel_groups_partition_the_ranks_by_stage_and_tensor_rank(t, p, d):
    groups = D.data_parallel_groups(t * p * d, t, p)
    assert groups.shape == (t * p, d)
    np.testing.assert_array_equal(np.sort(groups.ravel()), np.arange(t * p * d))
    tensor_rank, stage = groups % t, groups // (t * d)  # Megatron's tp-cp-ep-dp-pp order
    assert np.all(tensor_rank == tensor_rank[:, :1]) and np.all(stage == stage[:, :1])


# ---------------------------------------------------- regressions (issue: robustness)


def test_tiny_caps_terminate_with_one_bucket_per_parameter():
    # Looped forever: taken + limit == taken in float64 appended empty buckets.
    b = D.assign_buckets([1.0] * 3, bucket_cap_bytes=1e-17, first_bucket_cap_bytes=1e-17)
    assert [list(m) for m in b.params] == [[2], [1], [0]]
    tl = D.step_timeline(
        [1e6] * 3, [1e-3] * 3, 4, 1e-6, 1e-9, bucket_cap_bytes=1e-300, first_bucket_cap_bytes=1e-300
    )
    assert len(tl.buckets) == 3
    with pytest.raises(ValueError, match="n_params"):
        D.uniform_model_timelines(1e24, 96, 64, 3e-6, 2e-11)
    with pytest.raises(ValueError, match="bytes_per_param"):
        D.uniform_model_timelines(350e6, 96, 64, 3e-6, 2e-11, bytes_per_param=1e18)


@given(
    sizes=st.lists(st.floats(1e-3, 1e12), min_size=1, max_size=50),
    cap=st.floats(1e-300, 1e20),
    first=st.floats(1e-300, 1e20),
)
@SETTINGS
def test_every_bucket_holds_at_least_one_parameter_for_any_positive_caps(sizes, cap, first):
    b = D.assign_buckets(sizes, cap, first)
    assert 1 <= len(b) <= len(sizes) and all(len(m) >= 1 for m in b.params)
    np.testing.assert_array_equal(np.concatenate(b.params), np.arange(len(sizes))[::-1])


@given(
    n_params=st.floats(1e5, 1e13),
    n_layers=st.integers(1, 400),
    world_size=st.integers(1, 65536),
    alpha=st.floats(0, 1e-3),
    gb_per_s=st.floats(0.1, 2000),
    cap_mb=st.one_of(st.none(), st.floats(0.01, 4096)),
    tokens=st.floats(1, 1e7),
    flops=st.floats(1e9, 1e16),
    k=st.integers(1, 64),
)
@SETTINGS
def test_timelines_are_finite_and_nonnegative_for_realistic_inputs(
    n_params, n_layers, world_size, alpha, gb_per_s, cap_mb, tokens, flops, k
):
    naive, ddp = D.uniform_model_timelines(
        n_params, n_layers, world_size, alpha, 1 / (gb_per_s * 1e9),
        bucket_cap_mb=cap_mb, tokens=tokens, flops_per_s=flops,
    )  # fmt: skip
    for tl in (naive, ddp):
        values = [tl.step_s, tl.comm_s, tl.exposed_comm_s, tl.backward_s, tl.forward_s]
        assert all(np.isfinite(v) and v >= 0 for v in values)
        assert np.all(np.isfinite(tl.end_s)) and np.all(tl.end_s >= tl.start_s)
    acc = D.accumulation(ddp, k, no_sync=True)
    assert np.isfinite(acc.step_s) and acc.step_s >= ddp.step_s - 1e-12
    assert acc.allreduces == len(ddp.buckets)


def test_infinite_caps_make_one_bucket():
    b = D.assign_buckets([3, 5, 7], np.inf, np.inf)
    assert len(b) == 1 and b.nbytes[0] == 15 and list(b.params[0]) == [2, 1, 0]


def test_a_tensor_larger_than_the_cap_gets_its_own_bucket():
    b = D.assign_buckets([10, 100, 10], 50, 5)
    assert [list(m) for m in b.params] == [[2], [1], [0]]
    np.testing.assert_array_equal(b.nbytes, [10, 100, 10])


# ------------------------------------------------------------------------ timeline


def loop_timeline(sizes, compute, p, alpha, beta, cap, first):
    """The recurrence written as a loop: start_k = max(ready_k, end_{k-1})."""
    b = D.assign_buckets(sizes, cap, first)
    ready_param = np.array([sum(compute[i:]) for i in range(len(sizes))])
    ends, starts, end = [], [], 0.0
    for members, n in zip(b.params, b.nbytes, strict=True):
        start = max(ready_param[members].max(), end)
        end = start + M.collective_time("allreduce", "ring", n, p, alpha, beta)
        starts.append(start)
        ends.append(end)
    return np.array(starts), np.array(ends)


@st.composite
def models(draw):
    n = draw(st.integers(1, 40))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 10**7, n).astype(float)
    compute = rng.uniform(0, 1e-3, n)
    p = draw(st.integers(1, 512))
    alpha = draw(st.floats(0, 1e-4))
    beta = draw(st.floats(1e-12, 1e-8))
    cap = draw(st.sampled_from([1e3, 1e5, 1e6, 1e7, 1e8, np.inf]))
    first = draw(st.sampled_from([1e3, 2**20, 1e7, np.inf]))
    return sizes, compute, p, alpha, beta, cap, first


@given(models())
@SETTINGS
def test_timeline_respects_readiness_order_and_bounds(model):
    sizes, compute, p, alpha, beta, cap, first = model
    tl = D.step_timeline(
        sizes, compute, p, alpha, beta, bucket_cap_bytes=cap, first_bucket_cap_bytes=first
    )
    assert np.all(tl.start_s >= tl.ready_s - 1e-15)  # never before the bucket is ready
    assert np.all(tl.start_s[1:] >= tl.end_s[:-1] - 1e-15)  # one all-reduce at a time
    for k, members in enumerate(tl.buckets.params):
        assert tl.ready_s[k] == pytest.approx(tl.grad_ready_s[members].max())
    assert tl.backward_s == pytest.approx(compute.sum())
    assert 0.0 <= tl.exposed_comm_s <= tl.comm_s * (1 + 1e-12) + 1e-15
    assert tl.step_s == pytest.approx(tl.forward_s + tl.backward_s + tl.exposed_comm_s)
    starts, ends = loop_timeline(sizes, compute, p, alpha, beta, cap, first)
    np.testing.assert_allclose(tl.start_s, starts, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(tl.end_s, ends, rtol=1e-12, atol=1e-15)


@given(models())
@SETTINGS
def test_naive_timeline_exposes_the_whole_all_reduce_and_buckets_never_lose(model):
    sizes, compute, p, alpha, beta, cap, first = model
    naive = D.naive_timeline(sizes, compute, p, alpha, beta)
    total = M.collective_time("allreduce", "ring", sizes.sum(), p, alpha, beta)
    assert len(naive.buckets) == 1
    assert naive.start_s[0] == pytest.approx(compute.sum())
    assert naive.exposed_comm_s == pytest.approx(total)
    # Buckets can only lose to one all-reduce by the latency of their extra messages.
    ddp = D.step_timeline(
        sizes, compute, p, alpha, beta, bucket_cap_bytes=cap, first_bucket_cap_bytes=first
    )
    extra_latency = (len(ddp.buckets) - 1) * M.collective_time("allreduce", "ring", 0, p, alpha, 0)
    assert ddp.exposed_comm_s <= naive.exposed_comm_s + extra_latency + 1e-12


def test_timeline_worked_example():
    # Two parameters of 1e6 bytes, 1 ms of backward each, p = 2, alpha = 0, 1 GB/s:
    # each bucket all-reduce = 2 (1/2) 1e6 / 1e9 = 1 ms.
    tl = D.step_timeline(
        [1e6, 1e6], [1e-3, 1e-3], 2, 0.0, 1e-9, bucket_cap_bytes=1e6, first_bucket_cap_bytes=1e6
    )
    np.testing.assert_allclose(tl.ready_s, [1e-3, 2e-3])
    np.testing.assert_allclose(tl.start_s, [1e-3, 2e-3])
    np.testing.assert_allclose(tl.end_s, [2e-3, 3e-3])
    assert tl.exposed_comm_s == pytest.approx(1e-3) and tl.comm_s == pytest.approx(2e-3)
    naive = D.naive_timeline([1e6, 1e6], [1e-3, 1e-3], 2, 0.0, 1e-9)
    assert naive.exposed_comm_s == pytest.approx(2e-3)


def test_accumulation_counts_and_times():
    tl = D.step_timeline(
        [1e6] * 4,
        [1e-3] * 4,
        8,
        1e-6,
        1e-9,
        bucket_cap_bytes=2e6,
        first_bucket_cap_bytes=2e6,
        forward_s=2e-3,
    )
    assert len(tl.buckets) == 2
    quiet = D.accumulation(tl, 4, no_sync=True)
    loud = D.accumulation(tl, 4, no_sync=False)
    assert (quiet.allreduces, loud.allreduces) == (2, 8)
    assert quiet.comm_s == pytest.approx(tl.comm_s) and loud.comm_s == pytest.approx(4 * tl.comm_s)
    assert quiet.step_s == pytest.approx(3 * (tl.forward_s + tl.backward_s) + tl.step_s)
    assert loud.step_s == pytest.approx(4 * tl.step_s)
    assert D.accumulation(tl, 1).step_s == pytest.approx(tl.step_s)


def test_model_size_helpers():
    layers = D.uniform_layers(1e9, 100)
    assert layers.shape == (100,) and layers.sum() == pytest.approx(1e9)
    # 4 FLOPs per parameter per token: 1e9 params, 1000 tokens at 1e15 FLOP/s = 4 ms.
    assert D.backward_seconds(layers, 1000, 1e15).sum() == pytest.approx(4e-3)
    naive, ddp = D.uniform_model_timelines(1e9, 100, 64, 3e-6, 1 / 50e9)
    assert naive.forward_s == pytest.approx(naive.backward_s / 2)
    assert naive.buckets.nbytes.sum() == pytest.approx(2e9)  # bf16 gradients
    assert ddp.exposed_comm_s < naive.exposed_comm_s


def test_the_explorer_recomputes_1000_layers_one_bucket_each():
    # How fast it does so is bench/bench_data_parallel.py's table (no wall-time asserts in
    # tests): here, that 1,000 layers of 1 MB each give 1,000 buckets whose step is consistent.
    naive, bucketed = D.uniform_model_timelines(1e9, 1000, 64, 3e-6, 1 / 50e9, bucket_cap_mb=1)
    assert len(naive.buckets) == 1 and len(bucketed.buckets) == 1000
    assert naive.step_s == pytest.approx(naive.forward_s + naive.backward_s + naive.comm_s)
    assert bucketed.forward_s + bucketed.backward_s <= bucketed.step_s < naive.step_s * 2


# ------------------------------------------------------------ NCCL-priced timelines


def test_dp_network_is_the_group_nccl_sees():
    one = D.dp_network(64)
    assert (one.gpus_per_node, one.nodes, one.nics_per_node) == (1, 64, 1)
    full = D.dp_network(64, gpus_per_server=8)
    assert full == nccl.topology("dgx-h100", nodes=8)
    assert D.dp_network(4, gpus_per_server=8) == nccl.PRESETS["dgx-h100"].group(4, 1)
    slow = D.dp_network(16, machine="dgx-a100", nic_gbps=100)
    assert (slow.gpu, slow.nic_gbps, slow.ranks) == ("A100", 100.0, 16)
    with pytest.raises(ValueError, match="world_size must be a multiple of gpus_per_server"):
        D.dp_network(12, gpus_per_server=8)
    with pytest.raises(ValueError, match="machine must be"):
        D.dp_network(8, machine="dgx-z")


def test_nccl_timeline_prices_every_bucket_with_nccls_model():
    layers = D.uniform_layers(350e6, 96) * 2
    backward = D.backward_seconds(layers / 2, 16384, 400e12)
    net = D.dp_network(64)
    tl = D.step_timeline(layers, backward, 64, machine=net)
    want = nccl.predict("allreduce", tl.buckets.nbytes, machine=net).seconds
    np.testing.assert_allclose(tl.end_s - tl.start_s, want, rtol=1e-12)
    naive, ddp = D.uniform_model_timelines(350e6, 96, 64, machine=net)
    assert naive.comm_s == pytest.approx(nccl.predict("allreduce", 700e6, machine=net).seconds)
    assert len(ddp.buckets) == 25 and ddp.exposed_comm_s < 0.1 * naive.exposed_comm_s
    # one GPU per server: close to one NIC's alpha-beta ring at 700 MB (NCCL's channels
    # run at the GPU's 48 GB/s PCIe link); eight per server: NCCL stripes over 8 NICs
    nic = M.collective_time("allreduce", "ring", 700e6, 64, 3e-6, 1 / 50e9)
    assert 1.0 < naive.comm_s / nic < 1.15
    full, _ = D.uniform_model_timelines(350e6, 96, 64, machine=D.dp_network(64, 8))
    assert nic / full.comm_s > 6


@given(
    n_params=st.floats(1e6, 1e12),
    n_layers=st.integers(1, 400),
    world_size=st.sampled_from([1, 2, 8, 64, 1024, 16384]),
    g=st.sampled_from([1, 8]),
    cap_mb=st.one_of(st.none(), st.floats(0.01, 4096)),
    gbps=st.sampled_from([100.0, 200.0, 400.0]),
)
@SETTINGS
def test_nccl_timelines_are_finite_and_never_beat_the_nic(
    n_params, n_layers, world_size, g, cap_mb, gbps
):
    net = D.dp_network(world_size, gpus_per_server=min(g, world_size), nic_gbps=gbps)
    naive, ddp = D.uniform_model_timelines(n_params, n_layers, world_size, machine=net,
                                           bucket_cap_mb=cap_mb)  # fmt: skip
    for tl in (naive, ddp):
        assert np.all(np.isfinite(tl.end_s)) and np.all(tl.end_s >= tl.start_s)
        assert np.isfinite(tl.step_s) and tl.exposed_comm_s >= 0
    if net.nodes > 1:  # every server's g NICs carry 2(N-1)/N of each bucket, at best
        bound = (
            2
            * (net.nodes - 1)
            / net.nodes
            * ddp.buckets.nbytes
            / (net.gpus_per_node * gbps / 8 * 1e9)
        )
        assert np.all(ddp.end_s - ddp.start_s >= bound)


def test_the_network_and_the_alpha_beta_link_exclude_each_other():
    net = D.dp_network(4)
    with pytest.raises(ValueError, match="alpha_s must be None when machine is given"):
        D.step_timeline([1e6], [1e-3], 4, 3e-6, None, machine=net)
    with pytest.raises(ValueError, match="world_size must be the machine's 4 ranks"):
        D.step_timeline([1e6], [1e-3], 8, machine=net)
    with pytest.raises(ValueError, match="gamma_s_per_byte must be 0"):
        D.step_timeline([1e6], [1e-3], 4, machine=net, gamma_s_per_byte=1e-12)
    with pytest.raises(ValueError, match="alpha_s and beta_s_per_byte must be both given"):
        D.step_timeline([1e6], [1e-3], 4)
    with pytest.raises(ValueError, match="machine must be an nccl.Topology"):
        D.naive_timeline([1e6], [1e-3], 4, machine=42)
    with pytest.raises(ValueError, match="world_size must be the machine's 8 ranks"):
        D.naive_timeline([1e6], [1e-3], 4, machine="dgx-h100")  # one server of 8 GPUs
    by_name = D.naive_timeline([1e6], [1e-3], 8, machine="dgx-h100")
    assert (
        by_name.step_s
        == D.naive_timeline([1e6], [1e-3], 8, machine=nccl.PRESETS["dgx-h100"]).step_s
    )
    with pytest.raises(ValueError, match="nbytes must be"):  # NCCL's size limit, 2**50 bytes
        D.naive_timeline([2.0**51], [1e-3], 4, machine=net)


# ------------------------------------------------------------------------ bad inputs


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: D.assign_buckets([], 10, 10), "param_bytes must be a non-empty 1-D"),
        (lambda: D.assign_buckets([1, 0], 10, 10), "param_bytes must be finite real values > 0"),
        (lambda: D.assign_buckets([1, -3], 10, 10), "param_bytes"),
        (lambda: D.assign_buckets([1, 2], 0, 10), "bucket_cap_bytes must be a number .* > 0"),
        (lambda: D.assign_buckets([1, 2], 10, -1), "first_bucket_cap_bytes"),
        (lambda: D.assign_buckets([1, np.nan], 10, 10), "param_bytes"),
        (lambda: D.assign_buckets([2.0**53, 1e6]), "at most 9.007e\\+15 bytes in all"),
        (lambda: D.bucket_caps(0), "bucket_cap_mb must be a finite number in"),
        (lambda: D.bucket_caps(-25), "bucket_cap_mb"),
        (lambda: D.bucket_caps(1e-9), "bucket_cap_mb"),
        (lambda: D.bucket_caps("25"), "bucket_cap_mb"),
        (lambda: D.step_timeline([1], [1e-3], 0, 1e-6, 1e-9), "world_size must be an integer in"),
        (lambda: D.step_timeline([1], [1e-3], 2.5, 1e-6, 1e-9), "world_size"),
        (lambda: D.step_timeline([1], [1e-3], 2**17, 1e-6, 1e-9), "world_size"),
        (lambda: D.step_timeline([1, 2], [1e-3], 2, 1e-6, 1e-9), "one entry per parameter"),
        (lambda: D.step_timeline([1], [-1.0], 2, 1e-6, 1e-9), "backward_s"),
        (lambda: D.step_timeline([1], [1.0], 2, -1e-6, 1e-9), "alpha"),
        (lambda: D.step_timeline([1], [1.0], 2, 1e-6, 1e-9, bucket_cap_bytes=0), "bucket_cap"),
        (lambda: D.step_timeline([1], [1.5e308], 2, 0, 1e-9, forward_s=1.5e308), "stay finite"),
        (lambda: D.shard_sizes(10, 0), "world_size must be an integer in"),
        (lambda: D.shard_sizes(0, 2), "batch_size must be an integer in"),
        (lambda: D.shard_sizes(10, 10**18), "world_size"),
        (lambda: D.local_gradients(np.ones((4, 2)), [2, 1]), "add up to the batch size 4"),
        (lambda: D.local_gradients(np.ones((4, 2)), [4, 0]), "integer values >= 1"),
        (lambda: D.local_gradients(np.ones((4, 2)), [[1], [1, 2]]), "sizes"),
        (lambda: D.average_gradients(np.ones((2, 3)), [1]), "sizes must be 2 positive"),
        (lambda: D.average_gradients(np.ones((2, 3)), "ab"), "sizes"),
        (lambda: D.average_gradients([[1e308], [1e308]]), "stay finite"),
        (lambda: D.uniform_layers(1e9, 0), "n_layers must be an integer in"),
        (lambda: D.uniform_layers(1e9, 2**31), "n_layers"),
        (lambda: D.uniform_layers(0, 10), "n_params must be a finite number in"),
        (lambda: D.backward_seconds([1.0], 0, 1e12), "tokens"),
        (lambda: D.backward_seconds([1e15], 1e300, 1e-300), "stay finite"),
        (lambda: D.accumulation(D.naive_timeline([1], [1], 2, 0, 1e-9), 0), "k must be"),
        (lambda: D.accumulation(None, 2), "timeline must be a data_parallel.StepTimeline"),
        (
            lambda: D.data_parallel_sgd(
                D.squared_error_grads, [0.0], [(np.ones((2, 1)), np.ones(2))], 4, 0.1
            ),
            "at least world_size=4 samples",
        ),
        (lambda: D.data_parallel_sgd(D.squared_error_grads, [0.0], [], 1, 0.0), "lr"),
        (lambda: D.data_parallel_sgd(None, [0.0], [], 1, 0.1), "per_sample_grads must be callable"),
        (lambda: D.data_parallel_sgd(D.squared_error_grads, [0.0], None, 1, 0.1), "batches"),
        (lambda: D.data_parallel_sgd(D.squared_error_grads, [0.0], [], 2**31, 0.1), "world_size"),
        (
            lambda: D.data_parallel_sgd(
                D.squared_error_grads, [0.0], [(np.ones((2, 1)), np.ones(2))] * 2, 1, 1e300
            ),
            "stay finite",
        ),
        (lambda: D.ddp_buckets([1, 2], rebuilt=1), "rebuilt must be True or False"),
        (lambda: D.ddp_buckets([1, 2], arrival_order=[0, 0]), "arrival_order must be a perm"),
        (lambda: D.gradient_memory(-1), "grad_bytes"),
        (lambda: D.allreduce_itemsize("fp8"), "param_dtype must be one of"),
        (lambda: D.allreduce_itemsize("float32", ["bf16_compress"]), "comm_hook must be one of"),
        (lambda: D.ParallelLayout(1000, 8, 8, 1536), "world_size must be a multiple of"),
        (lambda: D.ParallelLayout(1024, 8, 8, 1000), "global_batch must be a multiple of"),
        (lambda: D.ParallelLayout(1024, 8, 8, 1536, micro_batch=0), "micro_batch"),
        (lambda: D.data_parallel_groups(16, 3, 4), "world_size must be a multiple of"),
        (lambda: D.Buckets((np.array([0]), np.array([0])), [1, 1], [1, 1]), "exactly once"),
        (lambda: D.Buckets((np.array([0]),), [np.nan], [1]), "nbytes"),
        (lambda: D.Accumulation(2, -1.0, 2, 0.0, 0.0), "step_s"),
        (lambda: VD.bucket_colors(0), "n must be an integer in"),
        (lambda: VD.bucket_colors(3_000_000), "n must be an integer in"),
        (
            lambda: VD.timeline_animation(
                *D.uniform_model_timelines(1e6, 4, 2, 0, 1e-9), frames=61
            ),
            "frames",
        ),
        (lambda: VD.timeline_figure(None, None), "naive must be a data_parallel.StepTimeline"),
        (lambda: VD.gradient_average_figure(np.ones((3, 3)), [0, 0]), "rank_grads"),
    ],
)
def test_bad_inputs_raise_value_error_naming_the_argument(call, match):
    with pytest.raises(ValueError, match=match):
        call()


# ------------------------------------------------------------------------ figures


def test_figures_build_with_axis_titles_and_bounded_animation():
    naive, ddp = D.uniform_model_timelines(350e6, 96, 64, 3e-6, 1 / 50e9)
    anim = VD.timeline_animation(naive, ddp)
    assert 2 <= len(anim.frames) <= viz.MAX_FRAMES
    assert "ms" in anim.layout.xaxis.title.text
    # The bars are stored once, in the figure; frames only move the veil and the line.
    # One backward bar and one all-reduce bar per bucket: naive has 1 bucket, DDP 25.
    assert len(ddp.buckets) == 25 and len(anim.data[0].x) == len(anim.data[1].x) == 1 + 25
    assert all(f.data[0].x is None for f in anim.frames)
    # A bucket's backward bar spans exactly its parameters' compute.
    last = ddp.buckets.params[-1]
    np.testing.assert_allclose(anim.data[0].x[-1], ddp.compute_s[last].sum() * 1e3)
    assert anim.frames[1].data[2].base[0] > anim.frames[0].data[2].base[0]
    t_end = max(naive.end_s[-1], ddp.end_s[-1]) * 1e3
    assert anim.frames[-1].data[3].x[0] == pytest.approx(t_end, rel=1e-4)
    still = VD.timeline_figure(naive, ddp)
    assert "ms" in still.layout.xaxis.title.text
    names = [f"p{i}" for i in range(8)]
    fig = VD.bucket_figure(names, [4096] * 8, D.assign_buckets([4096] * 8, 8192, 4096))
    assert "KiB" in fig.layout.xaxis.title.text
    g = np.random.default_rng(0).standard_normal((4, 2))
    arrows = VD.gradient_average_figure(g, g.mean(0))
    assert arrows.layout.xaxis.title.text and arrows.layout.yaxis.title.text
    for i, f in enumerate((anim, still, fig, arrows)):
        viz.FigureOutput(f, f"dp-test-{i}")._repr_mimebundle_()  # serialisable


# ------------------------------------------------------------------------ distributed


def test_demo_rejects_bad_arguments_before_starting():
    with pytest.raises(SystemExit) as info:
        demo.main(["--steps", "0"])
    assert info.value.code == 2


def test_chapter_example_placement_one_gpu_and_nic_per_server_priced_by_nccl():
    # Regression (review of chapter 2): the example's text, code and asserts use one
    # placement: 64 DGX H100 servers, one GPU and its own 400 Gb/s NIC each, reached over
    # PCIe Gen5 (48 GB/s), which is what binds NCCL's ring channels.
    from scaleout import compute

    net = D.dp_network(64)
    assert (net.gpus_per_node, net.nics_per_node, net.nodes, net.nic_gbps) == (1, 1, 64, 400.0)
    assert net.pcie_bw == 48.0 and nccl.predict("allreduce", 700e6, machine=net).algorithm == "ring"
    # the compute rate comes from chapter 14's model (GPT-3 Medium layer, 16,384 tokens)
    layer = compute.Layer(hidden=1024, heads=16, seq=2048)
    rate = compute.layer_time(layer, 8, "H100-SXM").tflops_per_gpu * 1e12
    assert 500e12 < rate < compute.published.mamf("NVIDIA H100 SXM").tflops * 1e12
    naive, ddp = D.uniform_model_timelines(350e6, 96, 64, machine=net, flops_per_s=rate,
                                           bucket_cap_mb=400)  # fmt: skip
    # 400 MiB caps: the last bucket waits for the first bucket's all-reduce, which ends
    # after the backward pass
    assert ddp.end_s[0] > ddp.backward_s and ddp.start_s[1] == pytest.approx(ddp.end_s[0])
    assert naive.backward_s == pytest.approx(4 * 350e6 * 16384 / rate)
