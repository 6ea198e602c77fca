"""With grouped-query attention, t must divide the KV heads too
(``scaleout.tensor_parallel.valid_tensor_parallel_sizes(..., kv_heads=)``)."""

from __future__ import annotations

import pytest

from scaleout import tensor_parallel as tp


def test_llama3_70b_allows_t_up_to_its_eight_kv_heads():
    # Llama 3 70B: h = 8192, 64 query heads, 8 KV heads (Llama 3 paper, Table 3).
    assert tp.valid_tensor_parallel_sizes(8192, 64, limit=72) == [1, 2, 4, 8, 16, 32, 64]
    assert tp.valid_tensor_parallel_sizes(8192, 64, limit=72, kv_heads=8) == [1, 2, 4, 8]


def test_multi_head_attention_is_the_default():
    for h, heads in ((12288, 96), (5120, 40)):
        assert tp.valid_tensor_parallel_sizes(h, heads, 64, kv_heads=heads) == (
            tp.valid_tensor_parallel_sizes(h, heads, 64)
        )


@pytest.mark.parametrize("kv", [0, 65, 7, 2.5, "8"])
def test_kv_heads_must_divide_the_heads(kv):
    with pytest.raises(ValueError, match="kv_heads"):
        tp.valid_tensor_parallel_sizes(8192, 64, kv_heads=kv)
