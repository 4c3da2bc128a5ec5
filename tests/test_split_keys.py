"""qkv.partial_attention and qkv.merge_attention: attention over pieces of the
keys, merged, equals attention over all of them (the split-key / Flash-Decoding
merge, a partial and a finalize aggregate)."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import qkv
from qkv import merge_attention, partial_attention, scaled_dot_product_attention, streaming_attention


def naive_lse(q, k, scale, mask=None):
    """log(sum(exp(score))) written out, for moderate scores; -inf where a row reads nothing."""
    scores = (q @ np.swapaxes(k, -1, -2)) * scale
    exps = np.exp(scores) if mask is None else np.where(mask, np.exp(scores), 0.0)
    with np.errstate(divide="ignore"):
        return np.log(exps.sum(axis=-1))


def split_points(draw_cuts, len_k):
    cuts = sorted(set(draw_cuts))
    return [0, *[c for c in cuts if 0 < c < len_k], len_k]


@settings(max_examples=80, deadline=None)
@given(
    len_q=st.integers(1, 6),
    len_k=st.integers(1, 24),
    d=st.integers(1, 5),
    d_v=st.integers(1, 4),
    batch=st.sampled_from([(), (2,), (2, 3)]),
    cuts=st.lists(st.integers(0, 24), max_size=6),
    masked=st.booleans(),
    seed=st.integers(0, 2**16),
    data=st.data(),
)
def test_merging_random_splits_equals_full_attention(len_q, len_k, d, d_v, batch, cuts, masked, seed, data):
    rng = np.random.default_rng(seed)
    q = rng.normal(size=(*batch, len_q, d))
    k = rng.normal(size=(*batch, len_k, d)) * 2
    v = rng.normal(size=(*batch, len_k, d_v))
    mask = rng.random((*batch, len_q, len_k)) < 0.5 if masked else None  # fully masked rows and parts occur
    points = split_points(cuts, len_k)
    parts = []
    for start, stop in itertools.pairwise(points):
        piece_mask = None if mask is None else mask[..., start:stop]
        parts.append(partial_attention(q, k[..., start:stop, :], v[..., start:stop, :], piece_mask))
    full_out, full_lse = partial_attention(q, k, v, mask)
    order = data.draw(st.permutations(range(len(parts))))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no RuntimeWarning from -inf anywhere
        merged_out, merged_lse = merge_attention([parts[i] for i in order])
    assert merged_out.shape == (*batch, len_q, d_v) and merged_lse.shape == (*batch, len_q)
    np.testing.assert_allclose(merged_out, full_out, rtol=0, atol=1e-12)
    np.testing.assert_allclose(merged_lse, full_lse, rtol=0, atol=1e-12)  # -inf where -inf
    # The full partial is ordinary attention with its log-sum-exp, computed here independently.
    np.testing.assert_allclose(full_out, scaled_dot_product_attention(q, k, v, mask)[0], rtol=0, atol=1e-12)
    np.testing.assert_allclose(full_lse, naive_lse(q, k, 1 / np.sqrt(d), mask), rtol=0, atol=1e-12)
    # Any order of the parts gives the same bits (no two parts tie on lse with random data).
    np.testing.assert_array_equal(merge_attention(parts[::-1])[0], merge_attention(parts)[0])


def test_every_order_of_three_parts():
    rng = np.random.default_rng(0)
    q, k, v = rng.normal(size=(3, 4)), rng.normal(size=(12, 4)), rng.normal(size=(12, 2))
    parts = [partial_attention(q, k[s], v[s]) for s in (slice(0, 2), slice(2, 9), slice(9, 12))]
    results = [merge_attention(list(p)) for p in itertools.permutations(parts)]
    for out, lse in results[1:]:
        np.testing.assert_array_equal(out, results[0][0])
        np.testing.assert_array_equal(lse, results[0][1])
    np.testing.assert_allclose(results[0][0], scaled_dot_product_attention(q, k, v)[0], atol=1e-12)


def test_one_key_per_part_is_the_streaming_fold():
    # Single-key parts: output = that value row, lse = its score; merging them is the online softmax.
    rng = np.random.default_rng(1)
    q, k, v = rng.normal(size=(2, 3)), rng.normal(size=(9, 3)), rng.normal(size=(9, 4))
    parts = [partial_attention(q, k[i : i + 1], v[i : i + 1]) for i in range(9)]
    np.testing.assert_allclose(parts[4][0], np.broadcast_to(v[4], (2, 4)), atol=1e-15)
    np.testing.assert_allclose(parts[4][1], q @ k[4] / np.sqrt(3), atol=1e-15)
    out, _ = merge_attention(parts)
    np.testing.assert_allclose(out, streaming_attention(q, k, v, block_size=1), rtol=0, atol=1e-12)


@pytest.mark.filterwarnings("error")
def test_fully_masked_rows_and_parts():
    rng = np.random.default_rng(2)
    q, k, v = rng.normal(size=(3, 4)), rng.normal(size=(6, 4)), rng.normal(size=(6, 2))
    mask = np.ones((3, 6), dtype=bool)
    mask[1] = False  # row 1 reads nothing anywhere
    mask[0, 3:] = False  # row 0 reads nothing in the second part
    first = partial_attention(q, k[:3], v[:3], mask[:, :3])
    second = partial_attention(q, k[3:], v[3:], mask[:, 3:])
    assert second[1][0] == -np.inf and not second[0][0].any()
    assert first[1][1] == -np.inf and not first[0][1].any()
    out, lse = merge_attention([first, second])
    full_out, full_lse = partial_attention(q, k, v, mask)
    np.testing.assert_allclose(out, full_out, atol=1e-12)
    assert lse[1] == -np.inf and not out[1].any()
    np.testing.assert_allclose(lse, full_lse, atol=1e-12)
    # Parts that are all masked: zeros and -inf, no NaN and no warning.
    nothing = partial_attention(q, k, v, np.zeros((3, 6), dtype=bool))
    out, lse = merge_attention([nothing, nothing, nothing])
    assert not out.any() and out.shape == (3, 2) and (lse == -np.inf).all()
    # A part over no keys at all (L_k = 0) adds nothing either.
    empty = partial_attention(q, k[:0], v[:0])
    assert (empty[1] == -np.inf).all() and not empty[0].any()
    np.testing.assert_array_equal(merge_attention([empty, first])[0], merge_attention([first])[0])


def test_a_float_mask_and_a_scale_count_in_the_lse():
    rng = np.random.default_rng(3)
    q, k, v = rng.normal(size=(2, 3)), rng.normal(size=(5, 3)), rng.normal(size=(5, 2))
    bias = rng.normal(size=(2, 5))
    out, lse = partial_attention(q, k, v, bias, scale=0.7)
    np.testing.assert_allclose(lse, np.log(np.exp(q @ k.T * 0.7 + bias).sum(axis=-1)), atol=1e-12)
    parts = [
        partial_attention(q, k[:2], v[:2], bias[:, :2], scale=0.7),
        partial_attention(q, k[2:], v[2:], bias[:, 2:], scale=0.7),
    ]
    np.testing.assert_allclose(merge_attention(parts)[0], out, atol=1e-12)


def test_large_scores_stay_stable():
    # Scores near 1e4: exp overflows if the lse is not shifted; the merge shifts by the largest.
    q = np.array([[100.0, 100.0]])
    k = np.array([[100.0, 100.0], [99.0, 100.0], [-100.0, 0.0], [50.0, 50.0]])
    v = np.eye(4)
    parts = [partial_attention(q, k[:1], v[:1], scale=1.0), partial_attention(q, k[1:], v[1:], scale=1.0)]
    out, lse = merge_attention(parts)
    np.testing.assert_allclose(out, scaled_dot_product_attention(q, k, v, scale=1.0)[0], atol=1e-12)
    assert np.isclose(lse[0], 20000 + np.log1p(np.exp(-100.0)))


def test_parts_may_be_lists_tuples_or_an_iterator():
    rng = np.random.default_rng(4)
    q, k, v = rng.normal(size=(2, 3)), rng.normal(size=(4, 3)), rng.normal(size=(4, 2))
    parts = [partial_attention(q, k[:2], v[:2]), partial_attention(q, k[2:], v[2:])]
    expected = merge_attention(parts)[0]
    np.testing.assert_array_equal(merge_attention(iter(parts))[0], expected)
    np.testing.assert_array_equal(merge_attention([list(p) for p in parts])[0], expected)
    np.testing.assert_array_equal(merge_attention(tuple((o.tolist(), s.tolist()) for o, s in parts))[0], expected)


def test_public_names():
    assert qkv.partial_attention is partial_attention and qkv.merge_attention is merge_attention
    assert {"partial_attention", "merge_attention"} <= set(qkv.__all__)


def _part(shape=(2, 3)):
    return np.zeros(shape), np.zeros(shape[:-1])


@pytest.mark.parametrize(
    ("parts", "error", "message"),
    [
        ([], ValueError, "parts must hold at least one .* got an empty sequence"),
        (iter([]), ValueError, "parts must hold at least one"),
        (None, TypeError, "parts must be a sequence of \\(output, lse\\) pairs .* got NoneType"),
        (np.zeros((2, 2, 3)), TypeError, "parts must be a sequence .* got ndarray"),
        ([np.zeros((2, 3))], TypeError, r"parts\[0\] must be a pair \(output, lse\) .* got ndarray"),
        ([(np.zeros((2, 3)),)], TypeError, r"parts\[0\] must be a pair .* got tuple of length 1"),
        (
            [_part(), _part((2, 4))],
            ValueError,
            r"parts\[1\]'s output has shape \(2, 4\) but parts\[0\]'s has shape \(2, 3\)",
        ),
        ([_part(), _part((3, 3))], ValueError, r"parts\[1\]'s output has shape \(3, 3\)"),
        ([(np.zeros((2, 3)), np.zeros(3))], ValueError, r"parts\[0\]'s lse must have shape \(\.\.\., L_q\) = \(2,\)"),
        ([(np.zeros(3), np.zeros(()))], ValueError, r"parts\[0\]'s output must have shape \(\.\.\., L_q, d_v\)"),
        ([(np.full((2, 3), np.nan), np.zeros(2))], ValueError, r"parts\[0\]'s output must be finite"),
        ([_part(), (np.zeros((2, 3)), [0.0, np.nan])], ValueError, r"parts\[1\]'s lse must not contain NaN or \+inf"),
        ([(np.zeros((2, 3)), [np.inf, 0.0])], ValueError, r"parts\[0\]'s lse must not contain NaN or \+inf"),
        ([(np.zeros((2, 3)), ["a", "b"])], TypeError, r"parts\[0\]'s lse must contain real numbers"),
    ],
)
def test_bad_parts_are_named(parts, error, message):
    with pytest.raises(error, match=message):
        merge_attention(parts)


def test_an_overflowing_merge_is_named():
    # Weights that sum to 1 + rounding, times the largest float64: the sum rounds past it.
    big = np.full((1, 1), np.finfo(np.float64).max)
    lse = [
        -0.258572545473924,
        1.5834728788021222,
        1.3203609870818391,
        0.6333526228249152,
        -2.2035098806466507,
        0.05202897425988651,
    ]
    with pytest.raises(ValueError, match="merging the parts overflows float64 at output index"):
        merge_attention([(big, np.array([x])) for x in lse])


def test_partial_attention_refuses_what_scaled_dot_product_attention_refuses():
    x = np.ones((3, 2))
    with pytest.raises(ValueError, match="query and key must have the same last dimension d_k"):
        partial_attention(x, np.ones((3, 4)), np.ones((3, 4)))
    with pytest.raises(ValueError, match="key and value must have the same length L_k"):
        partial_attention(x, x, np.ones((4, 2)))
    with pytest.raises(ValueError, match=r"query must have shape \(\.\.\., L_q, d_k\)"):
        partial_attention(np.ones(2), x, x)
    with pytest.raises(ValueError, match=r"mask of shape \(2,\) does not broadcast"):
        partial_attention(x, x, x, np.ones(2, dtype=bool))
    with pytest.raises(TypeError, match="mask must be boolean"):
        partial_attention(x, x, x, np.ones((3, 3), dtype=int))
    with pytest.raises(ValueError, match="scale must be finite"):
        partial_attention(x, x, x, scale=float("nan"))
    with pytest.raises(ValueError, match="value must be finite"):
        partial_attention(x, x, np.full((3, 2), np.inf))
    with pytest.raises(ValueError, match=r"the attention scores query @ key.T \* scale overflow"):
        partial_attention(np.full((1, 1), 1e200), np.full((1, 1), 1e200), np.ones((1, 1)))
