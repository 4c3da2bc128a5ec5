"""qkv.KVCache: decoding token by token equals causal attention."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from qkv import KVCache, causal_mask, scaled_dot_product_attention


@settings(max_examples=40, deadline=None)
@given(length=st.integers(1, 60), d_k=st.integers(1, 8), d_v=st.integers(1, 6), seed=st.integers(0, 2**16))
def test_decoding_equals_causal_attention(length, d_k, d_v, seed):
    rng = np.random.default_rng(seed)
    q, k = rng.normal(size=(2, length, d_k))
    v = rng.normal(size=(length, d_v))
    cache = KVCache(capacity=1)
    rows = []
    for i in range(length):
        cache.append(k[i], v[i])
        rows.append(cache.attend(q[i]))
    expected, _ = scaled_dot_product_attention(q, k, v, causal_mask(length))
    np.testing.assert_allclose(np.stack(rows), expected, rtol=0, atol=1e-12)


def test_several_rows_and_several_queries():
    rng = np.random.default_rng(1)
    q, k, v = rng.normal(size=(3, 10, 4))
    cache = KVCache()
    cache.append(k[:6], v[:6])
    cache.append(k[6:], v[6:])
    expected, _ = scaled_dot_product_attention(q, k, v)
    np.testing.assert_allclose(cache.attend(q), expected, atol=1e-12)
    np.testing.assert_allclose(cache.attend(q[2]), expected[2], atol=1e-12)
    np.testing.assert_allclose(
        cache.attend(q, scale=0.5), scaled_dot_product_attention(q, k, v, scale=0.5)[0], atol=1e-12
    )
    assert cache.keys.shape == (10, 4) and cache.values.shape == (10, 4)
    np.testing.assert_array_equal(cache.keys, k)


def test_capacity_doubles():
    cache = KVCache(capacity=2)
    capacities = []
    for i in range(9):
        cache.append([float(i)], [float(i)])
        capacities.append(cache.capacity)
    assert capacities == [2, 2, 4, 4, 8, 8, 8, 8, 16]
    assert len(cache) == 9
    assert cache.nbytes == 2 * 16 * 8  # keys and values, 16 rows of one float64
    cache.append(np.zeros((40, 1)), np.zeros((40, 1)))  # one append of many rows: one growth
    assert cache.capacity == 64 and len(cache) == 49


def test_growth_copies_amortised_rows(monkeypatch):
    copied = []
    original = KVCache._grow

    def counting(self, needed):
        copied.append(len(self))
        original(self, needed)

    monkeypatch.setattr(KVCache, "_grow", counting)
    cache = KVCache(capacity=1)
    for _ in range(1000):
        cache.append([1.0], [1.0])
    assert len(copied) == 10  # 1 -> 2 -> ... -> 1024
    assert sum(copied) < 2 * 1000


def test_views_are_read_only():
    cache = KVCache()
    cache.append([1.0, 2.0], [3.0])
    with pytest.raises(ValueError, match="read-only"):
        cache.keys[0, 0] = 5.0


def test_errors_name_the_argument():
    cache = KVCache()
    with pytest.raises(ValueError, match="query: the cache is empty; append"):
        cache.attend([1.0, 2.0])
    with pytest.raises(ValueError, match=r"key must be one row \(d_k,\) or rows \(n, d_k\)"):
        cache.append(np.ones((2, 2, 2)), np.ones((2, 2)))
    with pytest.raises(ValueError, match="key and value must have the same number of rows"):
        cache.append(np.ones((2, 3)), np.ones((3, 3)))
    cache.append([1.0, 2.0], [3.0])
    with pytest.raises(ValueError, match="key rows have d_k=3, but the cache holds rows with d_k=2"):
        cache.append([1.0, 2.0, 3.0], [1.0])
    with pytest.raises(ValueError, match="value rows have d_v=2, but the cache holds rows with d_v=1"):
        cache.append([1.0, 2.0], [1.0, 2.0])
    with pytest.raises(ValueError, match=r"query must have shape \(2,\) or \(n, 2\)"):
        cache.attend([1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="query must be finite"):
        cache.attend([np.nan, 1.0])
    with pytest.raises(TypeError, match="key must contain real numbers"):
        cache.append(["a", "b"], [1.0])
    with pytest.raises(ValueError, match="capacity must be at least 1"):
        KVCache(capacity=0)
    with pytest.raises(TypeError, match="capacity must be an integer"):
        KVCache(capacity=2.0)
    assert len(cache) == 1  # failed appends store nothing
