"""scaleout.transformer: parameter, FLOP and activation counts against the papers' formulas."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from scaleout import memory, planner
from scaleout import transformer as T
from scaleout.transformer import Transformer

gpt_shapes = st.tuples(
    st.integers(1, 128),  # layers
    st.sampled_from([1, 2, 4, 8, 16, 32]),  # heads
    st.integers(1, 256),  # head dim
    st.sampled_from([512, 2048, 8192]),  # seq
    st.integers(1000, 300_000),  # vocab
)


@given(gpt_shapes, st.integers(1, 4096))
def test_gpt_counts_are_narayanans_formulas(shape, batch):
    layers, heads, d, s, v = shape
    h = heads * d
    m = Transformer(layers, h, heads, seq=s, vocab=v)
    # Narayanan et al. 2021, Sec. 5.1: parameters and eq. 3 (full recomputation)
    params = 12 * layers * h**2 * (1 + 13 / (12 * h) + (v + s) / (12 * layers * h))
    assert math.isclose(m.params, params, rel_tol=1e-12)
    full = 96 * batch * s * layers * h**2 * (1 + s / (6 * h) + v / (16 * layers * h))
    assert math.isclose(m.step_flops(batch, "full"), full, rel_tol=1e-12)
    none = 72 * batch * s * layers * h**2 * (1 + s / (6 * h) + v / (12 * h * layers))
    assert math.isclose(m.step_flops(batch, "none"), none, rel_tol=1e-12)
    sel = none + 4 * batch * s * s * h * layers  # the attention core's forward again
    assert math.isclose(m.step_flops(batch, "selective"), sel, rel_tol=1e-12)
    assert math.isclose(float(T.gpt_params(layers, h, s, v)), params, rel_tol=1e-12)


@pytest.mark.parametrize(
    ("name", "billions"),
    [
        # Narayanan et al. Table 1's labels; GPT-3 "175B" is 174.6B by the same count
        ("1.7B", 1.7), ("3.6B", 3.6), ("7.5B", 7.5), ("18.4B", 18.4), ("39.1B", 39.1),
        ("76.1B", 76.1), ("145.6B", 145.6), ("310.1B", 310.1), ("529.6B", 529.6),
        ("GPT-3 175B", 174.6),
        # Llama 2 70B: 68.98B counted (69.0B as released); Llama 3, Table 3's 8B, 70B, 405B
        ("Llama 2 70B", 69.0), ("Llama 3 8B", 8.0), ("Llama 3 70B", 70.6),
        ("Llama 3 405B", 405.9),
    ],
)  # fmt: skip
def test_registry_parameter_counts(name, billions):
    assert round(T.MODELS[name].params / 1e9, 1) == billions
    assert T.model(name) is T.MODELS[name]


def test_one_trillion():
    assert round(T.MODELS["1T"].params / 1e12, 2) == 1.01


def test_mixtral_total_and_active_parameters():
    # Jiang et al. 2024 (arXiv 2401.04088): 46.7B parameters, 12.9B active per token
    mixtral = Transformer(32, 4096, 32, kv_heads=8, ffn=14336, swiglu=True, seq=4096,
                          vocab=32000, tied=False, positions=False, experts=8,
                          top_k=2)  # fmt: skip
    assert round(mixtral.params / 1e9, 1) == 46.7
    assert round(mixtral.active_params / 1e9, 1) == 12.9
    dense = Transformer(32, 4096, 32, kv_heads=8, ffn=14336, swiglu=True, seq=4096,
                        vocab=32000, tied=False, positions=False)  # fmt: skip
    # two experts a token: the MLP FLOPs twice, plus the router's 2 h E
    extra = mixtral.layer_forward_flops(1) - dense.layer_forward_flops(1)
    assert extra == 2 * 4096 * 14336 * 3 + 2 * 4096 * 8


def test_planner_model_reads_the_transformer():
    for pl, name in ((planner.GPT3, "GPT-3 175B"), (planner.LLAMA2_70B, "Llama 2 70B"),
                     (planner.LLAMA3_405B, "Llama 3 405B")):  # fmt: skip
        m = T.MODELS[name]
        assert pl.params == m.params
        assert pl.flops(1536, "full") == m.step_flops(1536, "full")


@given(st.integers(1, 64), st.sampled_from([1, 2, 4, 8]), st.sampled_from(T.RECOMPUTE),
       st.booleans(), st.booleans())  # fmt: skip
def test_activations_are_memorys(batch, tp, recompute, sp, flash):
    m = T.MODELS["GPT-3 175B"]
    got = m.activation_bytes_per_layer(batch, tp, recompute, sp, flash)
    want = memory.activation_bytes_per_layer(m.seq, batch, m.hidden, m.heads, recompute, tp,
                                             sp, flash)  # fmt: skip
    assert got == float(want)


def test_korthikanti_table2():
    # t = 1, no recomputation: s b h (34 + 5 a s / h)
    m = Transformer(2, 12288, 96)
    s, b, h, a = 2048, 1, 12288, 96
    assert m.activation_bytes_per_layer(1) == s * b * h * (34 + 5 * a * s / h)
    assert m.activation_bytes_per_layer(1, recompute="full") == 2 * s * b * h


def test_vectorised_step_flops():
    m = T.MODELS["GPT-3 175B"]
    got = m.step_flops(np.array([1, 2, 4]))
    assert np.allclose(got, [m.step_flops(b) for b in (1, 2, 4)], rtol=0, atol=0)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"heads": 7}, "heads must be a divisor of hidden"),
        ({"kv_heads": 3}, "kv_heads must be a divisor of heads"),
        ({"layers": 0}, "layers must be"),
        ({"experts": 4, "top_k": 5}, "top_k must be"),
        ({"tied": 1}, "tied must be"),
    ],
)
def test_bad_shapes_raise(kwargs, match):
    base = {"layers": 2, "hidden": 64, "heads": 8}
    with pytest.raises(ValueError, match=match):
        Transformer(**{**base, **kwargs})


def test_bad_calls_raise():
    m = Transformer(2, 64, 8)
    with pytest.raises(ValueError, match="recompute must be"):
        m.step_flops(1, "some")
    with pytest.raises(ValueError, match="batch must be"):
        m.step_flops(0)
    with pytest.raises(ValueError, match="model must be"):
        T.model("GPT-5")


# --- the other FLOP and parameter counts that must agree with this one ---------------------


@given(st.sampled_from([1, 2, 4]), st.sampled_from([128, 1024, 2048]),
       st.sampled_from([(4096, 32, 8, 14336, True), (12288, 96, 96, 49152, False),
                        (2304, 24, 24, 9216, False)]))  # fmt: skip
def test_layer_forward_flops_are_computes_and_tensor_parallels(b, s, shape):
    from scaleout import compute
    from scaleout import tensor_parallel as tp

    h, a, g, f, swiglu = shape
    m = Transformer(1, h, a, kv_heads=g, ffn=f, swiglu=swiglu, seq=s)
    layer = compute.Layer(h, a, s, kv_heads=g, ffn=f, swiglu=swiglu)
    assert layer.forward_flops(b) == m.layer_forward_flops(b * s)
    if g == a and f == 4 * h and not swiglu:
        assert tp.layer_flops(b, s, h) == m.layer_forward_flops(b * s)


@pytest.mark.parametrize("key", ["llama3-8b", "llama3-70b", "llama3-405b"])
def test_context_parallel_gemm_flops_are_the_layers_minus_the_attention_core(key):
    from scaleout import context_parallel as cp

    shape = cp.costs.MODELS[key]
    m = T.MODELS[{"llama3-8b": "Llama 3 8B", "llama3-70b": "Llama 3 70B",
                  "llama3-405b": "Llama 3 405B"}[key]]  # fmt: skip
    assert (shape.heads, shape.kv_heads, shape.hidden, shape.ffn, shape.layers) == (
        m.heads,
        m.g,
        m.hidden,
        m.f,
        m.layers,
    )
    s = 4096
    core = 4.0 * m.seq * m.hidden * s  # 4 s h per token (s the model's sequence), s tokens
    assert cp.layer_gemm_flops(s, key) == pytest.approx(m.layer_forward_flops(s) - core,
                                                         rel=1e-12)  # fmt: skip


def test_zero_and_tensor_parallel_eq3_are_this_count():
    from scaleout import zero_published as Z

    for run in Z.SC21_ZERO3:
        gpt = Transformer(run.layers, run.hidden, run.heads, seq=run.seq, vocab=run.vocab)
        assert Z.eq3_flops(run, run.batch) == gpt.step_flops(run.batch, "full")
        assert run.params == gpt.params


def test_moe_parameter_count_agrees_up_to_the_norms():
    # moe.placement counts RMSNorm scales only (2 h a layer); transformer counts scale and
    # bias for both norms (4 h), as Narayanan et al. do for a GPT
    from scaleout.moe import placement
    from scaleout.moe.published import MIXTRAL_8X7B as M

    count = placement.moe_parameters(M)
    m = Transformer(M.layers, M.hidden, 32, kv_heads=8, ffn=M.expert_ffn, swiglu=True,
                    vocab=M.vocab, tied=False, positions=False, experts=M.experts,
                    top_k=M.k)  # fmt: skip
    assert m.params == pytest.approx(count.total, rel=1e-4)
    assert m.active_params == pytest.approx(count.active, rel=1e-4)
