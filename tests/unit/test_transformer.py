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
