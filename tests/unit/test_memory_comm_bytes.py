"""Bytes, not elements: what each ZeRO stage sends per step at its collectives' data types
(``scaleout.memory.comm_bytes``)."""

from __future__ import annotations

import pytest

from scaleout import memory as M


def test_bf16_parameters_fp32_gradients_make_zero3_cost_what_plain_dp_does():
    assert [M.comm_bytes(1.0, s) for s in M.STAGES] == [8.0, 6.0, 6.0, 8.0]
    assert M.comm_bytes(1.0, 3) / M.comm_bytes(1.0, 0) == 1.0
    assert round(M.comm_bytes(1.0, 3) / M.comm_bytes(1.0, 2), 2) == 1.33


def test_one_dtype_everywhere_gives_the_element_ratio():
    for dtype, size in M.DTYPE_BYTES.items():
        got = [M.comm_bytes(1e9, s, dtype, dtype) for s in M.STAGES]
        assert got == [size * M.comm_volume(1e9, s) for s in M.STAGES]
    assert M.comm_bytes(100, 3, "fp16", "fp16", dp=4) == 2 * M.comm_volume(100, 3, dp=4)


def test_unknown_dtype_is_a_value_error():
    with pytest.raises(ValueError, match="param_dtype"):
        M.comm_bytes(1.0, 0, param_dtype="int4")
    with pytest.raises(ValueError, match="grad_dtype"):
        M.comm_bytes(1.0, 0, grad_dtype=None)
