"""Property-based tests (hypothesis), deterministic and bounded in size."""

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from qkv import embed, one_hot, self_attention, shift_matrix, sinusoidal_encoding, softmax

# derandomize: the same examples every run, so CI never flakes.
FAST = settings(derandomize=True, max_examples=60, deadline=None, database=None)

finite = st.floats(min_value=-50.0, max_value=50.0, allow_nan=False, allow_infinity=False)
small = st.floats(min_value=-3.0, max_value=3.0, allow_nan=False, allow_infinity=False)
shapes_2d = st.tuples(st.integers(1, 6), st.integers(1, 8))
even_d = st.integers(1, 32).map(lambda half: 2 * half)


@FAST
@given(arrays(np.float64, shapes_2d, elements=finite))
def test_softmax_rows_sum_to_one(x):
    w = softmax(x)
    assert np.all(w >= 0.0)
    np.testing.assert_allclose(w.sum(axis=-1), 1.0, rtol=1e-12)


@FAST
@given(
    arrays(np.float64, shapes_2d, elements=finite),
    st.lists(st.floats(-1e3, 1e3), min_size=6, max_size=6),
)
def test_softmax_unchanged_by_adding_a_constant_per_row(x, shifts):
    c = np.array(shifts[: x.shape[0]])[:, None]  # one constant per row
    np.testing.assert_allclose(softmax(x + c), softmax(x), atol=1e-12)


@st.composite
def attention_problem(draw):
    length = draw(st.integers(1, 6))
    d_model = draw(st.integers(1, 5))
    d_k = draw(st.integers(1, 4))
    d_v = draw(st.integers(1, 4))
    x = draw(arrays(np.float64, (length, d_model), elements=small))
    wq = draw(arrays(np.float64, (d_model, d_k), elements=small))
    wk = draw(arrays(np.float64, (d_model, d_k), elements=small))
    wv = draw(arrays(np.float64, (d_model, d_v), elements=small))
    perm = np.array(draw(st.permutations(range(length))))
    return x, wq, wk, wv, perm


@FAST
@given(attention_problem())
def test_self_attention_is_permutation_equivariant(problem):
    x, wq, wk, wv, perm = problem
    out, weights = self_attention(x, wq, wk, wv)
    out_p, weights_p = self_attention(x[perm], wq, wk, wv)
    np.testing.assert_allclose(out_p, out[perm], atol=1e-9)
    np.testing.assert_allclose(weights_p, weights[np.ix_(perm, perm)], atol=1e-12)


@FAST
@given(st.integers(1, 300), even_d, st.floats(1.5, 1e5))
def test_sinusoidal_bounded_with_fixed_row_norm(num_positions, d_model, base):
    pe = sinusoidal_encoding(num_positions, d_model, base=base)
    assert pe.shape == (num_positions, d_model)
    assert np.all(np.abs(pe) <= 1.0)
    np.testing.assert_allclose(np.linalg.norm(pe, axis=1), math.sqrt(d_model / 2), rtol=1e-12)


@FAST
@given(even_d, st.integers(0, 200), st.integers(-100, 100))
def test_shift_matrix_reproduces_later_rows(d_model, pos, k):
    pos = max(pos, -k)  # keep pos + k >= 0
    pe = sinusoidal_encoding(pos + max(k, 0) + 1, d_model)
    np.testing.assert_allclose(shift_matrix(k, d_model) @ pe[pos], pe[pos + k], atol=1e-9)


@FAST
@given(
    st.integers(1, 12).flatmap(
        lambda vocab: st.tuples(
            arrays(np.float64, (vocab, 3), elements=small),
            st.lists(st.integers(0, vocab - 1), min_size=0, max_size=10),
        )
    )
)
def test_one_hot_product_equals_lookup(problem):
    table, ids = problem
    np.testing.assert_allclose(one_hot(ids, table.shape[0]) @ table, embed(ids, table), atol=0)
