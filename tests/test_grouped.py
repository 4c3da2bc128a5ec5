"""qkv.grouped_query_attention: query head h reads key/value head h // group.

Cross-checked two ways: against qkv.scaled_dot_product_attention over the
key/value heads repeated (no torch needed), and against PyTorch 2.13's
``F.scaled_dot_product_attention(..., enable_gqa=True)`` in float64 (through
tests/support/needs.py: skipped without torch locally, a failure under CI=true).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import qkv
from needs import require_modules
from qkv import grouped_query_attention, scaled_dot_product_attention


def repeated(x: np.ndarray, group: int) -> np.ndarray:
    """Each key/value head ``group`` times in a row: torch's repeat_interleave on the head axis."""
    return np.repeat(x, group, axis=-3)


@settings(max_examples=60, deadline=None)
@given(
    heads_kv=st.integers(1, 4),
    group=st.integers(1, 4),
    len_q=st.integers(1, 6),
    len_k=st.integers(1, 7),
    d=st.integers(1, 5),
    d_v=st.integers(1, 4),
    batch=st.sampled_from([(), (2,), (2, 3)]),
    masked=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_equals_multi_head_attention_over_repeated_heads(heads_kv, group, len_q, len_k, d, d_v, batch, masked, seed):
    rng = np.random.default_rng(seed)
    heads_q = heads_kv * group
    q = rng.normal(size=(*batch, heads_q, len_q, d))
    k = rng.normal(size=(*batch, heads_kv, len_k, d))
    v = rng.normal(size=(*batch, heads_kv, len_k, d_v))
    mask = rng.random((*batch, heads_q, len_q, len_k)) < 0.6 if masked else None  # some rows fully masked
    out, weights = grouped_query_attention(q, k, v, mask)
    expected_out, expected_weights = scaled_dot_product_attention(q, repeated(k, group), repeated(v, group), mask)
    assert out.shape == (*batch, heads_q, len_q, d_v) and weights.shape == (*batch, heads_q, len_q, len_k)
    np.testing.assert_allclose(out, expected_out, rtol=0, atol=1e-12)
    np.testing.assert_allclose(weights, expected_weights, rtol=0, atol=1e-12)


def test_query_head_h_reads_key_value_head_h_over_group():
    # Key/value head j holds the constant value j: every output entry says which head was read.
    heads_q, heads_kv = 6, 3
    rng = np.random.default_rng(0)
    q, k = rng.normal(size=(heads_q, 2, 4)), rng.normal(size=(heads_kv, 5, 4))
    v = np.broadcast_to(np.arange(heads_kv, dtype=float)[:, None, None], (heads_kv, 5, 1))
    out, _ = grouped_query_attention(q, k, v)
    np.testing.assert_allclose(out[:, 0, 0], [0, 0, 1, 1, 2, 2], atol=1e-12)


def test_the_two_ends_are_multi_head_and_multi_query_attention():
    rng = np.random.default_rng(1)
    q, k, v = rng.normal(size=(3, 4, 3, 5))  # three (H, L, d) = (4, 3, 5) arrays
    mha = scaled_dot_product_attention(q, k, v)
    gqa = grouped_query_attention(q, k, v)  # H_kv == H_q
    np.testing.assert_array_equal(gqa[0], mha[0])
    one_k, one_v = k[:1], v[:1]  # H_kv == 1: every query head reads head 0
    mqa = grouped_query_attention(q, one_k, one_v)
    np.testing.assert_allclose(mqa[0], scaled_dot_product_attention(q, one_k, one_v)[0], atol=1e-12)


def test_masks_broadcast_and_fully_masked_rows_give_zeros():
    rng = np.random.default_rng(2)
    q, k, v = rng.normal(size=(2, 4, 3, 5)), rng.normal(size=(2, 2, 6, 5)), rng.normal(size=(2, 2, 6, 3))
    keep = np.array([True, True, True, False, False, True])  # (L_k,): a key-padding mask
    out, weights = grouped_query_attention(q, k, v, keep)
    assert not weights[..., 3:5].any()
    causal = np.tril(np.ones((3, 6), dtype=bool))
    np.testing.assert_allclose(
        grouped_query_attention(q, k, v, causal)[0],
        scaled_dot_product_attention(q, repeated(k, 2), repeated(v, 2), causal)[0],
        atol=1e-12,
    )
    nothing = np.ones((4, 3, 6), dtype=bool)
    nothing[1, 2] = False  # query head 1, row 2 may read nothing
    out, weights = grouped_query_attention(q, k, v, nothing)
    assert not out[:, 1, 2].any() and not weights[:, 1, 2].any() and np.isfinite(out).all()
    bias = rng.normal(size=(4, 3, 6))  # a float mask is added to the scores
    np.testing.assert_allclose(
        grouped_query_attention(q, k, v, bias, scale=0.4)[0],
        scaled_dot_product_attention(q, repeated(k, 2), repeated(v, 2), bias, scale=0.4)[0],
        atol=1e-12,
    )


def test_batch_dimensions_broadcast():
    rng = np.random.default_rng(3)
    q = rng.normal(size=(2, 1, 4, 3, 5))
    k, v = rng.normal(size=(3, 2, 6, 5)), rng.normal(size=(1, 2, 6, 2))
    out, weights = grouped_query_attention(q, k, v)
    assert out.shape == (2, 3, 4, 3, 2) and weights.shape == (2, 3, 4, 3, 6)
    np.testing.assert_allclose(out, scaled_dot_product_attention(q, repeated(k, 2), repeated(v, 2))[0], atol=1e-12)


def test_no_keys_or_no_queries():
    out, weights = grouped_query_attention(np.ones((4, 2, 3)), np.ones((2, 0, 3)), np.ones((2, 0, 5)))
    assert out.shape == (4, 2, 5) and not out.any() and weights.shape == (4, 2, 0)
    out, weights = grouped_query_attention(np.ones((4, 0, 3)), np.ones((2, 5, 3)), np.ones((2, 5, 5)))
    assert out.shape == (4, 0, 5) and weights.shape == (4, 0, 5)


def test_public_name():
    assert qkv.grouped_query_attention is grouped_query_attention
    assert "grouped_query_attention" in qkv.__all__


@pytest.mark.parametrize(
    ("q_shape", "k_shape", "v_shape", "message"),
    [
        ((4, 3), (2, 5, 3), (2, 5, 3), r"query must have shape \(\.\.\., H_q, L_q, d\) \(at least 3-D\)"),
        ((4, 2, 3), (5, 3), (2, 5, 3), r"key must have shape \(\.\.\., H_kv, L_k, d\)"),
        ((4, 2, 3), (2, 5, 3), (5, 3), r"value must have shape \(\.\.\., H_kv, L_k, d_v\)"),
        ((4, 2, 3), (3, 5, 3), (3, 5, 3), r"key has H_kv=3 heads, which must divide query's H_q=4 heads"),
        ((2, 2, 3), (4, 5, 3), (4, 5, 3), r"key has H_kv=4 heads, which must divide query's H_q=2"),
        ((0, 2, 3), (2, 5, 3), (2, 5, 3), r"query must have at least one head \(H_q >= 1\)"),
        ((4, 2, 3), (0, 5, 3), (0, 5, 3), r"key must have at least one head \(H_kv >= 1\)"),
        ((4, 2, 3), (2, 5, 3), (1, 5, 3), r"value must have as many heads as key"),
        ((4, 2, 3), (2, 5, 4), (2, 5, 3), r"query and key must have the same last dimension d"),
        ((4, 2, 0), (2, 5, 0), (2, 5, 3), r"d must be at least 1"),
        ((4, 2, 3), (2, 5, 3), (2, 6, 3), r"key and value must have the same length L_k"),
        ((2, 4, 2, 3), (3, 2, 5, 3), (3, 2, 5, 3), r"batch dimensions do not broadcast"),
    ],
)
def test_bad_shapes_name_the_argument(q_shape, k_shape, v_shape, message):
    with pytest.raises(ValueError, match=message):
        grouped_query_attention(np.ones(q_shape), np.ones(k_shape), np.ones(v_shape))


def test_other_bad_input_names_the_argument():
    q, k, v = np.ones((4, 2, 3)), np.ones((2, 5, 3)), np.ones((2, 5, 3))
    with pytest.raises(ValueError, match=r"mask of shape \(3, 5\) does not broadcast to the attention weights "):
        grouped_query_attention(q, k, v, np.ones((3, 5), dtype=bool))
    with pytest.raises(ValueError, match=r"\(\.\.\., H_q, L_q, L_k\)"):
        grouped_query_attention(q, k, v, np.ones((2, 2, 5), dtype=bool))  # the H_kv heads: too few
    with pytest.raises(TypeError, match="mask must be boolean"):
        grouped_query_attention(q, k, v, np.ones((2, 5), dtype=int))
    with pytest.raises(ValueError, match="mask must not contain NaN"):
        grouped_query_attention(q, k, v, np.full((2, 5), np.nan))
    with pytest.raises(ValueError, match="query must be finite"):
        grouped_query_attention(np.full((4, 2, 3), np.nan), k, v)
    with pytest.raises(TypeError, match="key must contain real numbers"):
        grouped_query_attention(q, np.full((2, 5, 3), "a"), v)
    with pytest.raises(ValueError, match="scale must be finite"):
        grouped_query_attention(q, k, v, scale=float("inf"))
    with pytest.raises(TypeError, match="scale must be a real number"):
        grouped_query_attention(q, k, v, scale="0.5")
    with pytest.raises(ValueError, match=r"the attention scores query @ key.T \* scale overflow"):
        grouped_query_attention(np.full((4, 2, 3), 1e200), np.full((2, 5, 3), 1e200), v)


# --- PyTorch 2.13, enable_gqa=True -------------------------------------------------------------


def torch_gqa(q, k, v, mask=None, scale=None):
    """torch's output and, through an identity value matrix, its weights (float64)."""
    require_modules("torch")
    import torch
    import torch.nn.functional as F

    t = [torch.from_numpy(np.ascontiguousarray(a)) for a in (q, k, v)]
    m = None if mask is None else torch.from_numpy(np.ascontiguousarray(mask))
    out = F.scaled_dot_product_attention(*t, attn_mask=m, scale=scale, enable_gqa=True)
    eye = torch.eye(k.shape[-2], dtype=torch.float64).expand(*t[1].shape[:-2], -1, -1).contiguous()
    weights = F.scaled_dot_product_attention(t[0], t[1], eye, attn_mask=m, scale=scale, enable_gqa=True)
    return out.numpy(), weights.numpy()


@pytest.mark.parametrize("heads_kv", [1, 2, 6])
@pytest.mark.parametrize("batch", [(), (3,), (2, 3)])
@pytest.mark.parametrize("mask_kind", [None, "bool", "causal", "float"])
def test_equals_torch_enable_gqa(heads_kv, batch, mask_kind):
    require_modules("torch")
    rng = np.random.default_rng([heads_kv, len(batch), [None, "bool", "causal", "float"].index(mask_kind)])
    heads_q, len_q, len_k = 6, 4, 7
    q = rng.normal(size=(*batch, heads_q, len_q, 8))
    k = rng.normal(size=(*batch, heads_kv, len_k, 8))
    v = rng.normal(size=(*batch, heads_kv, len_k, 3))
    mask = {
        None: None,
        "bool": rng.random((*batch, heads_q, len_q, len_k)) < 0.6,
        "causal": np.tril(np.ones((len_q, len_k), dtype=bool)),
        "float": rng.normal(size=(heads_q, len_q, len_k)),
    }[mask_kind]
    if mask_kind == "bool":
        mask[..., 0] = True  # every row attendable here; fully masked rows have their own test
    ours = grouped_query_attention(q, k, v, mask)
    theirs = torch_gqa(q, k, v, mask)
    for a, b in zip(ours, theirs, strict=True):
        assert a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_equals_torch_with_a_scale_and_fully_masked_rows():
    require_modules("torch")
    rng = np.random.default_rng(9)
    q, k, v = rng.normal(size=(2, 4, 3, 5)), rng.normal(size=(2, 2, 6, 5)), rng.normal(size=(2, 2, 6, 4))
    mask = rng.random((2, 4, 3, 6)) < 0.5
    mask[0, 1, 2] = False  # a row with nothing to read: torch 2.13 returns zeros, as qkv does
    ours = grouped_query_attention(q, k, v, mask, scale=0.3)
    theirs = torch_gqa(q, k, v, mask, scale=0.3)
    assert not theirs[0][0, 1, 2].any() and not np.isnan(theirs[0]).any()
    for a, b in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_a_gather_too_large_is_refused_before_it_is_made():
    """Re-review 8a, W4: one key head read by many query heads is gathered into an array of its
    own; a huge one ended in a raw MemoryError ("Unable to allocate 64.0 GiB"). Now refused up
    front with the library's size limit, naming the argument."""
    key = np.broadcast_to(np.zeros((1, 1, 1)), (1, 2**20, 1))  # a view: no memory of its own
    query = np.zeros((2**13, 1, 1))
    with pytest.raises(
        ValueError, match=r"^key gathered for H_q=8192 heads would need a float64 array of shape \(8192, 1048576, 1\)"
    ):
        qkv.grouped_query_attention(query, key, key)
