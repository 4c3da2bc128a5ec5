"""qkv.streaming_attention: the online softmax equals the materialised one."""

import tracemalloc

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import qkv
import qkv.streaming as streaming
from qkv import causal_mask, scaled_dot_product_attention, streaming_attention


def _random(shape, seed, dtype=np.float64):
    return np.random.default_rng(seed).normal(size=shape).astype(dtype)


@settings(max_examples=60, deadline=None)
@given(
    len_q=st.integers(1, 23),
    len_k=st.integers(1, 23),
    d_k=st.integers(1, 6),
    d_v=st.integers(1, 5),
    block_size=st.integers(1, 30),
    batch=st.sampled_from([(), (2,), (2, 3)]),
    seed=st.integers(0, 2**16),
)
def test_equals_materialised_attention(len_q, len_k, d_k, d_v, block_size, batch, seed):
    q = _random(batch + (len_q, d_k), seed)
    k = _random(batch + (len_k, d_k), seed + 1) * 3
    v = _random(batch + (len_k, d_v), seed + 2)
    expected, _ = scaled_dot_product_attention(q, k, v)
    got = streaming_attention(q, k, v, block_size=block_size)
    assert got.shape == expected.shape and got.dtype == np.float64
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12)


@settings(max_examples=60, deadline=None)
@given(
    length=st.integers(1, 40),
    len_q=st.integers(1, 40),
    block_size=st.integers(1, 17),
    seed=st.integers(0, 2**16),
)
def test_causal_equals_the_causal_mask(length, len_q, block_size, seed):
    q = _random((len_q, 4), seed)
    k, v = _random((length, 4), seed + 1), _random((length, 3), seed + 2)
    mask = np.tril(np.ones((len_q, length), dtype=bool))  # top-left, as torch's is_causal
    expected, _ = scaled_dot_product_attention(q, k, v, mask)
    got = streaming_attention(q, k, v, block_size=block_size, causal=True)
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12)


def test_causal_skips_blocks_above_the_diagonal():
    q, k, v = (_random((64, 8), s) for s in (1, 2, 3))
    expected, _ = scaled_dot_product_attention(q, k, v, causal_mask(64))
    got = streaming_attention(q, k, v, block_size=16, causal=True)
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12)
    # 4 query blocks of 16 read 1, 2, 3, 4 key blocks: 10 of the 16 score blocks.
    read = [streaming._key_blocks(start, start + 16, 64, 16, True) for start in range(0, 64, 16)]
    assert [len(blocks) for blocks in read] == [1, 2, 3, 4]
    assert read[1] == [(0, 16), (16, 32)]
    assert len(streaming._key_blocks(0, 64, 64, 16, False)) == 4  # not causal: every block
    assert streaming._key_blocks(0, 5, 64, 16, True) == [(0, 5)]  # stops at the last query


def test_float32_in_float32_out():
    q, k, v = (_random((50, 16), s, np.float32) for s in (4, 5, 6))
    got = streaming_attention(q, k, v, block_size=7)
    assert got.dtype == np.float32
    expected, _ = scaled_dot_product_attention(q, k, v)  # float64
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-5)


def test_other_dtypes_computed_in_float64():
    q = np.arange(6).reshape(2, 3)  # integers
    got = streaming_attention(q, q, q, block_size=1)
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, scaled_dot_product_attention(q, q, q)[0], atol=1e-12)


def test_scale_argument():
    q, k, v = (_random((9, 4), s) for s in (7, 8, 9))
    got = streaming_attention(q, k, v, block_size=2, scale=0.3)
    np.testing.assert_allclose(got, scaled_dot_product_attention(q, k, v, scale=0.3)[0], atol=1e-12)


def test_large_scores_stay_stable():
    # Scores of order 1e4: a naive exp would overflow; the running max keeps it finite.
    q = np.full((3, 2), 100.0)
    k = np.array([[100.0, 100.0], [99.0, 100.0], [-100.0, 0.0]])
    v = np.eye(3)
    got = streaming_attention(q, k, v, block_size=1)
    np.testing.assert_allclose(got, scaled_dot_product_attention(q, k, v)[0], atol=1e-12)


def test_empty_inputs():
    assert streaming_attention(np.zeros((0, 3)), np.ones((4, 3)), np.ones((4, 2))).shape == (0, 2)
    out = streaming_attention(np.ones((2, 3)), np.zeros((0, 3)), np.zeros((0, 5)))
    assert out.shape == (2, 5) and not out.any()  # nothing to attend to: zeros, as the full version


def test_never_holds_the_score_matrix():
    # L = 2048, d = 8: the full (L, L) float64 scores would be 32 MiB; the blocks stay far below.
    q, k, v = (_random((2048, 8), s) for s in (1, 2, 3))
    tracemalloc.start()
    streaming_attention(q, k, v, block_size=128)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    full_scores = 2048 * 2048 * 8
    assert peak < full_scores / 4, f"peak {peak:,} bytes"


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"block_size": 0}, ValueError, "block_size must be at least 1"),
        ({"block_size": -3}, ValueError, "block_size must be at least 1"),
        ({"block_size": 2.5}, TypeError, "block_size must be an integer"),
        ({"block_size": True}, TypeError, "block_size must be an integer"),
        ({"causal": "yes"}, TypeError, "causal must be True or False"),
        ({"scale": float("nan")}, ValueError, "scale must be finite"),
    ],
)
def test_bad_arguments_are_named(kwargs, error, message):
    x = np.ones((3, 2))
    with pytest.raises(error, match=message):
        streaming_attention(x, x, x, **kwargs)


def test_mismatched_shapes_are_named():
    with pytest.raises(ValueError, match="query and key must have the same last dimension d_k"):
        streaming_attention(np.ones((3, 2)), np.ones((3, 4)), np.ones((3, 4)))
    with pytest.raises(ValueError, match="key and value must have the same length L_k"):
        streaming_attention(np.ones((3, 2)), np.ones((3, 2)), np.ones((4, 2)))
    with pytest.raises(ValueError, match="query must have shape"):
        streaming_attention(np.ones(3), np.ones((3, 3)), np.ones((3, 3)))
    with pytest.raises(ValueError, match="value must be finite"):
        streaming_attention(np.ones((3, 2)), np.ones((3, 2)), np.full((3, 2), np.nan))


def test_overflowing_scores_name_the_arguments():
    with pytest.raises(ValueError, match=r"query @ key.T \* scale overflow float64 at score index \(0, 1\)"):
        streaming_attention(np.array([[1e200]]), np.array([[1.0], [-1e200]]), np.ones((2, 1)), block_size=1)
    big = np.array([[1e20]], dtype=np.float32)
    with pytest.raises(ValueError, match="overflow float32"):
        streaming_attention(big, big, np.ones((1, 1), np.float32))


def test_public_name():
    assert qkv.streaming_attention is streaming_attention


@pytest.mark.parametrize(
    ("shape", "block_size", "causal"),
    [((2048, 8), 2048, True), ((8, 1024, 8), 1024, False), ((8, 1024, 8), 1024, True)],
)
def test_one_block_of_scores_stays_within_the_limit(monkeypatch, shape, block_size, causal):
    # A causal block as tall as block_size >= L, or 8 heads of full blocks, used to
    # hold more than one limit's worth of scores; now the query rows shrink to fit.
    monkeypatch.setattr(streaming, "_BLOCK_SCORES", 256 * 1024)  # 2 MiB of float64 scores
    q, k, v = (_random(shape, s) for s in (1, 2, 3))
    mask = np.tril(np.ones(shape[-2:][:1] * 2, dtype=bool)) if causal else None
    expected, _ = scaled_dot_product_attention(q, k, v, mask)
    tracemalloc.start()
    got = streaming_attention(q, k, v, block_size=block_size, causal=causal)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12)
    output_bytes = got.nbytes
    assert peak < output_bytes + 4 * 256 * 1024 * 8, f"peak {peak:,} bytes"


def test_the_overflow_check_is_skipped_only_where_no_score_can_overflow():
    from qkv.attention import _max_row_norm

    # max|q| * max|k| * |scale| below half the dtype's limit: the blocks are not
    # scanned (no score can overflow); above it they are.
    assert _max_row_norm(np.array([[3.0, 4.0], [1.0, 0.0]])) == 5.0
    assert _max_row_norm(np.array([[1e300, 1e300]])) == np.inf  # the norm itself overflows: check
    assert _max_row_norm(np.empty((0, 3))) == 0.0
    big_but_finite = np.array([[1e18]], dtype=np.float32)  # bound 5e35: far below float32's 3.4e38
    out = streaming_attention(big_but_finite, big_but_finite, np.ones((1, 1), np.float32))
    assert out.dtype == np.float32 and out.tolist() == [[1.0]]
    # Near the limit the exact check runs and still names the first overflowing score.
    q = np.array([[2e19], [1.0]], dtype=np.float32)  # its score with itself, 4e38, overflows
    with pytest.raises(ValueError, match=r"overflow float32 at score index \(0, 0\)"):
        streaming_attention(q, q, np.ones((2, 1), np.float32), scale=1.0)


@pytest.mark.parametrize(
    ("q_value", "k_value", "scale", "dtype"),
    [
        (1e30, 1e-30, 1e10, np.float32),  # q * scale overflows, the scores' bound does not
        (1e-20, 1e-20, 1e39, np.float32),  # the scale itself is inf in float32
        (1e150, 1e-160, 1e160, np.float64),
    ],
)
@pytest.mark.filterwarnings("error")  # the ValueError alone, no RuntimeWarning on the way
def test_a_scale_that_overflows_the_queries_is_named_as_the_scores(q_value, k_value, scale, dtype):
    # A referee found these reported as an overflowing *value* once the block scan was skipped.
    q = np.array([[q_value]], dtype=dtype)
    k = np.array([[k_value]], dtype=dtype)
    with pytest.raises(ValueError, match=r"the attention scores query @ key.T \* scale overflow"):
        streaming_attention(q, k, np.ones((1, 1), dtype), scale=scale)
