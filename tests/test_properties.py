"""Property-based tests (hypothesis), deterministic and bounded in size."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from qkv import (
    cosine_similarity,
    cosine_similarity_matrix,
    embed,
    one_hot,
    scaled_dot_product_attention,
    self_attention,
    shift_matrix,
    sinusoidal_encoding,
    softmax,
)

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


# --- the whole float64 range ---------------------------------------------------

# Magnitudes from subnormal to 1e300 (and 0), both signs: scores reach far past 1.8e308.
wide = st.floats(min_value=-1e300, max_value=1e300, allow_nan=False, allow_infinity=False)
WIDE = settings(derandomize=True, max_examples=300, deadline=None, database=None)


@st.composite
def wide_attention_problem(draw):
    l_q, l_k = draw(st.integers(1, 3)), draw(st.integers(1, 4))
    d_k, d_v = draw(st.integers(1, 3)), draw(st.integers(1, 2))
    q = draw(arrays(np.float64, (l_q, d_k), elements=wide))
    k = draw(arrays(np.float64, (l_k, d_k), elements=wide))
    v = draw(arrays(np.float64, (l_k, d_v), elements=wide))
    scale = draw(st.one_of(st.none(), st.floats(min_value=1e-300, max_value=1e300)))
    return q, k, v, scale


def _cannot_overflow(q, k, scale):
    """True when every product and every partial sum of the scores stays far inside float64.

    Computed in exact rational arithmetic, independently of the code under test.
    """
    from fractions import Fraction

    s = Fraction(1 / math.sqrt(q.shape[-1]) if scale is None else scale)
    for row in q:
        for key in k:
            terms = [Fraction(float(a)) * Fraction(float(b)) for a, b in zip(row, key)]
            if sum(abs(t) for t in terms) * max(abs(s), 1) > Fraction(10) ** 300:
                return False
    return True


@WIDE
@given(wide_attention_problem())
def test_attention_weights_sum_to_one_or_the_call_refuses(problem):
    q, k, v, scale = problem
    try:
        out, weights = scaled_dot_product_attention(q, k, v, scale=scale)
    except ValueError as error:
        # The only refusal: the documented overflow error, in the user's words.
        assert "overflow float64" in str(error) or "overflows float64" in str(error)
        assert "query, key or scale" in str(error) or "make value smaller" in str(error)
        # ...and it happens only where float64 really runs out.
        assert not _cannot_overflow(q, k, scale)
        return
    assert np.all(weights >= 0.0)
    np.testing.assert_allclose(weights.sum(axis=-1), 1.0, rtol=1e-12)
    assert np.all(np.isfinite(out))


@WIDE
@given(
    arrays(np.float64, st.integers(1, 6), elements=small.filter(lambda t: abs(t) > 1e-3)),
    st.integers(-300, 300),
    st.integers(-300, 300),
)
def test_cosine_similarity_ignores_the_scale_of_each_vector(a, exp_a, exp_b):
    b = a[::-1].copy()
    expected = cosine_similarity(a, b)
    assert cosine_similarity(a * 10.0**exp_a, b * 10.0**exp_b) == pytest.approx(expected, abs=1e-12)
    sims = cosine_similarity_matrix(np.stack([a * 10.0**exp_a, b * 10.0**exp_b]))
    assert sims[0, 1] == pytest.approx(expected, abs=1e-12)
    assert np.diag(sims) == pytest.approx([1.0, 1.0], rel=1e-12)


@FAST
@given(
    st.integers(1, 8).flatmap(
        lambda d: st.tuples(arrays(np.float64, d, elements=finite), arrays(np.float64, d, elements=finite))
    )
)
def test_cosine_similarity_is_bit_for_bit_the_plain_formula_in_the_ordinary_range(pair):
    # Scaling by a power of two changes no digit: every printed similarity stays the same.
    a, b = pair
    if not (np.any(np.abs(a) > 1e-100) and np.any(np.abs(b) > 1e-100)):
        return  # the plain formula itself underflows there
    plain = float(a @ b) / (float(np.linalg.norm(a)) * float(np.linalg.norm(b)))
    plain = float(np.clip(plain, -1.0, 1.0))
    assert cosine_similarity(a, b) == plain
