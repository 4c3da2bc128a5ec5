"""Tests for qkv.attention against the curriculum's numbers."""

import math
import re
import warnings

import numpy as np
import pytest

from qkv import (
    causal_mask,
    scaled_dot_product_attention,
    self_attention,
    sinusoidal_encoding,
    softmax,
    toy,
)

MONEY = ["money", "bank", "grows"]
RIVER = ["river", "bank", "flows"]


def _attend(words, positions=False, mask=None):
    x = toy.bank_sentence(words)
    if positions:
        x = x + sinusoidal_encoding(len(words), 4)
    return self_attention(x, toy.W_QUERY, toy.W_KEY, toy.W_VALUE, mask=mask)


@pytest.fixture
def no_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        yield


class TestSoftmax:
    def test_stable_for_large_scores(self, no_warnings):
        assert softmax([1000.0, 1001.0, 1002.0]).round(4).tolist() == [0.0900, 0.2447, 0.6652]

    def test_naive_version_overflows(self):
        with np.errstate(over="ignore", invalid="ignore"):
            x = np.array([1000.0, 1001.0, 1002.0])
            naive = np.exp(x) / np.exp(x).sum()
        assert np.all(np.isnan(naive))

    def test_optimizer_costs_need_a_minus_sign(self):
        costs = np.array([10.0, 20.0, 30.0])
        assert softmax(-costs / 10).round(4).tolist() == [0.6652, 0.2447, 0.0900]
        assert int(np.argmax(softmax(costs))) == 2  # all weight on the worst plan

    def test_rows_sum_to_one_along_axis(self):
        x = np.arange(12.0).reshape(3, 4)
        np.testing.assert_allclose(softmax(x).sum(axis=-1), 1.0)
        np.testing.assert_allclose(softmax(x, axis=0).sum(axis=0), 1.0)

    def test_minus_inf_gets_zero_weight(self, no_warnings):
        out = softmax([0.0, -np.inf, 0.0])
        assert out.tolist() == [0.5, 0.0, 0.5]

    def test_all_minus_inf_row_is_zeros(self, no_warnings):
        out = softmax([[1.0, 2.0], [-np.inf, -np.inf]])
        assert out[1].tolist() == [0.0, 0.0]
        assert out[0].sum() == pytest.approx(1.0)

    @pytest.mark.parametrize("bad", [np.nan, np.inf])
    def test_rejects_nan_and_plus_inf(self, bad):
        with pytest.raises(ValueError, match=r"x must not contain NaN or \+inf"):
            softmax([0.0, bad])

    def test_rejects_non_numeric(self):
        with pytest.raises(TypeError, match="x must contain real numbers.*dtype <U1"):
            softmax(["a", "b"])

    def test_saturation_without_scaling(self):
        # Unscaled scores with spread ~8 (d_k = 64) push softmax towards one-hot.
        scores = np.array([16.0, 8.0, 0.0, -8.0])
        assert softmax(scores).max() > 0.999
        assert softmax(scores / 8).max() < 0.7


class TestBankExample:
    @pytest.mark.parametrize("words", [MONEY, RIVER])
    def test_scores(self, words):
        x = toy.bank_sentence(words)
        scores = (x @ toy.W_QUERY) @ (x @ toy.W_KEY).T
        assert scores.tolist() == [[4.0, 0.0, 2.0], [4.0, 0.0, 2.0], [2.0, 0.0, 2.0]]

    @pytest.mark.parametrize("words", [MONEY, RIVER])
    def test_bank_weights(self, words):
        _, weights = _attend(words)
        assert weights.shape == (3, 3)
        assert weights[1].round(4).tolist() == [0.6652, 0.0900, 0.2447]
        np.testing.assert_allclose(weights.sum(axis=1), 1.0)

    def test_contextual_bank_differs_by_sentence(self):
        money_out, _ = _attend(MONEY)
        river_out, _ = _attend(RIVER)
        assert money_out[1].round(4).tolist() == [1.5752, 0.0, 0.1801, 0.2447]
        assert river_out[1].round(4).tolist() == [0.0, 1.5752, 0.1801, 0.2447]

    def test_static_embedding_is_the_same(self):
        assert toy.bank_sentence(MONEY)[1].tolist() == [0.0, 0.0, 2.0, 0.0]
        assert toy.bank_sentence(RIVER)[1].tolist() == [0.0, 0.0, 2.0, 0.0]

    def test_word_order_does_not_matter_without_positions(self):
        out, _ = _attend(["grows", "money", "bank"])
        ref, _ = _attend(MONEY)
        np.testing.assert_allclose(out[2], ref[1])

    def test_with_sinusoidal_positions(self):
        money_out, _ = _attend(MONEY, positions=True)
        river_out, _ = _attend(RIVER, positions=True)
        assert money_out[1].round(4).tolist() == [1.8920, 0.7128, 0.1630, 1.1770]
        assert river_out[1].round(4).tolist() == [0.2625, 2.2799, 0.2078, 1.1947]

    def test_positions_make_order_matter(self):
        out, _ = _attend(["grows", "money", "bank"], positions=True)
        ref, _ = _attend(MONEY, positions=True)
        assert not np.allclose(out[2], ref[1])

    def test_naive_attention(self):
        # Q = K = V = X: no parameters, symmetric scores, bank mostly attends to itself.
        x = toy.bank_sentence(MONEY)
        out, weights = scaled_dot_product_attention(x, x, x)
        assert weights[1].round(4).tolist() == [0.1065, 0.7870, 0.1065]
        scores = x @ x.T
        np.testing.assert_array_equal(scores, scores.T)
        # Each word attends to itself at least as much as to any other; "grows"
        # ties with "money" (x.y = |x|^2 = 2), so "mostly itself" is only >=.
        np.testing.assert_array_equal(np.diag(weights), weights.max(axis=1))
        assert weights[2].round(4).tolist() == [0.4223, 0.1554, 0.4223]
        np.testing.assert_allclose(out, weights @ x)

    def test_token_need_not_attend_most_to_itself(self):
        _, weights = _attend(MONEY)
        assert int(np.argmax(weights[1])) == 0  # bank looks at money, not itself


class TestScaledDotProductAttention:
    def test_matches_formula(self):
        rng = np.random.default_rng(0)
        q, k, v = rng.normal(size=(4, 8)), rng.normal(size=(6, 8)), rng.normal(size=(6, 3))
        out, weights = scaled_dot_product_attention(q, k, v)
        scores = q @ k.T / math.sqrt(8)
        expected_w = np.exp(scores) / np.exp(scores).sum(axis=1, keepdims=True)
        np.testing.assert_allclose(weights, expected_w)
        np.testing.assert_allclose(out, expected_w @ v)
        assert out.shape == (4, 3) and weights.shape == (4, 6)

    def test_custom_scale(self):
        q = np.array([[1.0, 0.0, 0.0]])
        values = np.array([[1.0], [2.0], [3.0]])
        results = [
            round(float(scaled_dot_product_attention(q, np.eye(3), values, scale=beta)[0][0, 0]), 4)
            for beta in (1, 5, 10, 20)
        ]
        assert results == [1.6358, 1.0199, 1.0001, 1.0]

    def test_batch_broadcasting(self):
        rng = np.random.default_rng(1)
        q = rng.normal(size=(2, 1, 3, 4))
        k = rng.normal(size=(5, 5, 4))  # broadcasts against (2, 1)
        v = rng.normal(size=(1, 5, 2))
        out, weights = scaled_dot_product_attention(q, k, v)
        assert out.shape == (2, 5, 3, 2) and weights.shape == (2, 5, 3, 5)
        o, w = scaled_dot_product_attention(q[1, 0], k[3], v[0])
        np.testing.assert_allclose(out[1, 3], o)
        np.testing.assert_allclose(weights[1, 3], w)

    def test_bool_mask_true_means_may_attend(self):
        q, k = np.ones((2, 2)), np.eye(2)
        v = np.array([[1.0, 0.0], [0.0, 1.0]])
        mask = np.array([[True, False], [True, True]])
        out, weights = scaled_dot_product_attention(q, k, v, mask)
        assert weights[0].tolist() == [1.0, 0.0]
        assert weights[1].tolist() == [0.5, 0.5]
        assert out[0].tolist() == [1.0, 0.0]

    def test_float_mask_is_added(self):
        rng = np.random.default_rng(2)
        q, k, v = rng.normal(size=(3, 4)), rng.normal(size=(3, 4)), rng.normal(size=(3, 2))
        bias = rng.normal(size=(3, 3))
        _, weights = scaled_dot_product_attention(q, k, v, bias)
        np.testing.assert_allclose(weights, softmax(q @ k.T / 2 + bias))

    def test_float_mask_minus_inf_equals_bool_mask(self):
        rng = np.random.default_rng(3)
        q, k, v = rng.normal(size=(4, 4)), rng.normal(size=(4, 4)), rng.normal(size=(4, 2))
        bool_mask = causal_mask(4)
        float_mask = np.where(bool_mask, 0.0, -np.inf)
        a = scaled_dot_product_attention(q, k, v, bool_mask)
        b = scaled_dot_product_attention(q, k, v, float_mask)
        np.testing.assert_allclose(a[0], b[0])
        np.testing.assert_allclose(a[1], b[1])

    def test_mask_broadcasts_over_batch(self):
        rng = np.random.default_rng(4)
        q, k, v = rng.normal(size=(2, 3, 4)), rng.normal(size=(2, 3, 4)), rng.normal(size=(2, 3, 4))
        out, weights = scaled_dot_product_attention(q, k, v, causal_mask(3))
        assert np.all(np.triu(weights[0], 1) == 0.0) and np.all(np.triu(weights[1], 1) == 0.0)
        key_padding = np.array([True, True, False])  # (L_k,) broadcasts to (..., L_q, L_k)
        _, w = scaled_dot_product_attention(q, k, v, key_padding)
        assert np.all(w[..., 2] == 0.0)

    @pytest.mark.parametrize("blocked", [False, -np.inf])
    def test_fully_masked_row_is_zero_not_nan(self, blocked, no_warnings):
        rng = np.random.default_rng(5)
        q, k, v = rng.normal(size=(3, 4)), rng.normal(size=(5, 4)), rng.normal(size=(5, 2))
        if blocked is False:
            mask = np.ones((3, 5), dtype=bool)
            mask[1] = False
        else:
            mask = np.zeros((3, 5))
            mask[1] = -np.inf
        out, weights = scaled_dot_product_attention(q, k, v, mask)
        assert weights[1].tolist() == [0.0] * 5
        assert out[1].tolist() == [0.0, 0.0]
        assert not np.any(np.isnan(out))
        np.testing.assert_allclose(weights[[0, 2]].sum(axis=1), 1.0)

    def test_fully_masked_row_is_not_uniform_over_padding(self):
        q, k = np.zeros((1, 2)), np.zeros((3, 2))
        v = np.array([[1.0], [2.0], [3.0]])
        out, _ = scaled_dot_product_attention(q, k, v, np.zeros((1, 3), dtype=bool))
        assert out.tolist() == [[0.0]]  # not the mean 2.0

    def test_does_not_mutate_inputs(self):
        q = np.ones((2, 2))
        before = q.copy()
        scaled_dot_product_attention(q, q, q, np.array([[True, False], [True, True]]))
        np.testing.assert_array_equal(q, before)


class TestAttentionErrors:
    @pytest.mark.parametrize(
        "arg, shapes",
        [
            ("query", [(4,), (3, 4), (3, 2)]),
            ("key", [(2, 4), (4,), (3, 2)]),
            ("value", [(2, 4), (3, 4), (3,)]),
        ],
    )
    def test_wrong_rank(self, arg, shapes):
        arrays = [np.ones(s) for s in shapes]
        with pytest.raises(ValueError, match=rf"{arg} must have shape \(\.\.\., L_.*\(at least 2-D\), got shape"):
            scaled_dot_product_attention(*arrays)

    def test_d_k_mismatch(self):
        with pytest.raises(
            ValueError,
            match=r"query and key must have the same last dimension d_k.*\(d_k=4\).*\(d_k=3\)",
        ):
            scaled_dot_product_attention(np.ones((2, 4)), np.ones((3, 3)), np.ones((3, 2)))

    def test_key_value_length_mismatch(self):
        with pytest.raises(ValueError, match=r"key and value must have the same length L_k.*\(L_k=3\).*\(L_k=5\)"):
            scaled_dot_product_attention(np.ones((2, 4)), np.ones((3, 4)), np.ones((5, 2)))

    def test_batch_dims_do_not_broadcast(self):
        with pytest.raises(
            ValueError,
            match=r"batch dimensions do not broadcast: query \(2, 3, 4\), key \(3, 3, 4\)",
        ):
            scaled_dot_product_attention(np.ones((2, 3, 4)), np.ones((3, 3, 4)), np.ones((3, 3, 4)))

    @pytest.mark.parametrize("mask_shape", [(3, 2), (2, 3, 5), (4,)])
    def test_mask_does_not_broadcast(self, mask_shape):
        with pytest.raises(
            ValueError,
            match=rf"mask of shape {re.escape(str(mask_shape))} does not broadcast to the attention scores shape \(2, 5\)",
        ):
            scaled_dot_product_attention(
                np.ones((2, 4)), np.ones((5, 4)), np.ones((5, 2)), np.ones(mask_shape, dtype=bool)
            )

    @pytest.mark.parametrize("arg", ["query", "key", "value"])
    @pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
    def test_nan_or_inf_in_inputs(self, arg, bad):
        arrays = {"query": np.ones((2, 4)), "key": np.ones((3, 4)), "value": np.ones((3, 2))}
        arrays[arg][0, 0] = bad
        with pytest.raises(ValueError, match=rf"{arg} must be finite, but it contains NaN or inf"):
            scaled_dot_product_attention(**arrays)

    @pytest.mark.parametrize("bad", [np.nan, np.inf])
    def test_nan_or_plus_inf_in_float_mask(self, bad):
        mask = np.zeros((2, 3))
        mask[0, 1] = bad
        with pytest.raises(ValueError, match=r"mask must not contain NaN or \+inf"):
            scaled_dot_product_attention(np.ones((2, 4)), np.ones((3, 4)), np.ones((3, 2)), mask)

    def test_integer_mask_refused(self):
        with pytest.raises(TypeError, match=r"mask must be boolean .* got dtype int64; .*mask.astype\(bool\)"):
            scaled_dot_product_attention(
                np.ones((2, 4)), np.ones((3, 4)), np.ones((3, 2)), np.ones((2, 3), dtype=np.int64)
            )

    @pytest.mark.parametrize("arg", ["query", "key", "value"])
    @pytest.mark.parametrize("bad", [np.array([["a"]]), np.array([[1, None]], dtype=object)])
    def test_non_numeric(self, arg, bad):
        arrays = {"query": np.ones((1, 1)), "key": np.ones((1, 1)), "value": np.ones((1, 1))}
        arrays[arg] = bad
        with pytest.raises(TypeError, match=rf"{arg} must contain real numbers, got an array of dtype {bad.dtype}"):
            scaled_dot_product_attention(**arrays)

    def test_bad_scale(self):
        with pytest.raises(TypeError, match="scale must be a real number"):
            scaled_dot_product_attention(np.ones((1, 1)), np.ones((1, 1)), np.ones((1, 1)), scale="2")
        with pytest.raises(ValueError, match="scale must be finite"):
            scaled_dot_product_attention(np.ones((1, 1)), np.ones((1, 1)), np.ones((1, 1)), scale=np.inf)


class TestCausalMask:
    def test_values(self):
        assert causal_mask(3).tolist() == [
            [True, False, False],
            [True, True, False],
            [True, True, True],
        ]
        assert causal_mask(3).dtype == bool

    def test_first_token_sees_only_itself(self):
        _, weights = _attend(MONEY, mask=causal_mask(3))
        assert weights[0].tolist() == [1.0, 0.0, 0.0]
        assert np.all(np.triu(weights, 1) == 0.0)

    @pytest.mark.parametrize("length, exc", [(0, ValueError), (-1, ValueError), (2.0, TypeError)])
    def test_bad_length(self, length, exc):
        with pytest.raises(exc, match="length must be"):
            causal_mask(length)


class TestPermutation:
    """Without positions, self-attention is permutation equivariant, not invariant."""

    def setup_method(self):
        rng = np.random.default_rng(6)
        self.x = rng.normal(size=(5, 4))
        self.w = [rng.normal(size=(4, 3)), rng.normal(size=(4, 3)), rng.normal(size=(4, 2))]
        self.perm = np.array([3, 0, 4, 1, 2])

    def test_equivariant(self):
        out, weights = self_attention(self.x, *self.w)
        out_p, weights_p = self_attention(self.x[self.perm], *self.w)
        np.testing.assert_allclose(out_p, out[self.perm])
        np.testing.assert_allclose(weights_p, weights[np.ix_(self.perm, self.perm)])
        assert not np.allclose(out_p, out)  # the output rows did move

    def test_pooled_mean_invariant(self):
        out, _ = self_attention(self.x, *self.w)
        out_p, _ = self_attention(self.x[self.perm], *self.w)
        np.testing.assert_allclose(out_p.mean(axis=0), out.mean(axis=0))

    def test_causal_mask_breaks_the_symmetry(self):
        mask = causal_mask(5)
        out, _ = self_attention(self.x, *self.w, mask=mask)
        out_p, _ = self_attention(self.x[self.perm], *self.w, mask=mask)
        assert not np.allclose(out_p, out[self.perm])

    def test_positions_break_the_symmetry(self):
        pe = sinusoidal_encoding(5, 4)
        out, _ = self_attention(self.x + pe, *self.w)
        out_p, _ = self_attention(self.x[self.perm] + pe, *self.w)
        assert not np.allclose(out_p, out[self.perm])


class TestSelfAttention:
    def test_equals_sdpa_on_projections(self):
        rng = np.random.default_rng(7)
        x = rng.normal(size=(4, 6))
        wq, wk, wv = rng.normal(size=(6, 3)), rng.normal(size=(6, 3)), rng.normal(size=(6, 5))
        out, weights = self_attention(x, wq, wk, wv)
        ref_out, ref_w = scaled_dot_product_attention(x @ wq, x @ wk, x @ wv)
        np.testing.assert_allclose(out, ref_out)
        np.testing.assert_allclose(weights, ref_w)
        assert out.shape == (4, 5)

    def test_x_wrong_rank(self):
        with pytest.raises(ValueError, match=r"x must have shape \(L, d_model\) \(2-D\), got shape \(4,\)"):
            self_attention(np.ones(4), toy.W_QUERY, toy.W_KEY, toy.W_VALUE)

    @pytest.mark.parametrize("arg", ["w_query", "w_key", "w_value"])
    def test_projection_rows_must_match_d_model(self, arg):
        ws = {"w_query": toy.W_QUERY, "w_key": toy.W_KEY, "w_value": toy.W_VALUE}
        ws[arg] = np.ones((3, 4))
        with pytest.raises(
            ValueError,
            match=rf"{arg} must have shape \(d_model, d_.\) with d_model=4 rows.*got shape \(3, 4\)",
        ):
            self_attention(np.ones((2, 4)), **ws)

    def test_projection_wrong_rank(self):
        with pytest.raises(ValueError, match=r"w_key must have shape \(d_model, d_k\) \(2-D\)"):
            self_attention(np.ones((2, 4)), toy.W_QUERY, np.ones(4), toy.W_VALUE)

    def test_query_key_width_mismatch(self):
        with pytest.raises(
            ValueError,
            match=r"w_query and w_key must have the same number of columns d_k.*\(4, 4\) and \(4, 3\)",
        ):
            self_attention(np.ones((2, 4)), toy.W_QUERY, np.ones((4, 3)), toy.W_VALUE)

    def test_value_width_may_differ(self):
        out, _ = self_attention(np.ones((2, 4)), toy.W_QUERY, toy.W_KEY, np.ones((4, 7)))
        assert out.shape == (2, 7)

    def test_nan_in_x(self):
        with pytest.raises(ValueError, match="x must be finite"):
            self_attention([[np.nan, 0, 0, 0]], toy.W_QUERY, toy.W_KEY, toy.W_VALUE)

    def test_non_numeric_weights(self):
        with pytest.raises(TypeError, match="w_value must contain real numbers.*dtype object"):
            self_attention(np.ones((2, 4)), toy.W_QUERY, toy.W_KEY, np.array([[None] * 4] * 4))

    def test_mask_must_fit(self):
        with pytest.raises(ValueError, match=r"mask of shape \(4, 4\) does not broadcast .* \(3, 3\)"):
            _attend(MONEY, mask=causal_mask(4))


class TestOverflow:
    """Scores beyond float64's range are refused in the user's words, never returned wrong."""

    OVERFLOW = (
        r"the attention scores query @ key\.T \* scale overflow float64 at score index "
        r"\(0, 0\) \(\|score\| > 1\.8e308, or inf - inf inside a dot product\), so their "
        r"softmax cannot be computed: make query, key or scale smaller"
    )

    def test_planted_query_1e200_against_key_minus_1e200(self, no_warnings):
        # Before: the score -1e400 became -inf, the row passed for a fully masked
        # one and the weights came back [0.0], summing to 0.
        with pytest.raises(ValueError, match=self.OVERFLOW):
            scaled_dot_product_attention([[1e200]], [[-1e200]], [[1.0]])

    def test_planted_two_keys(self, no_warnings):
        with pytest.raises(ValueError, match=self.OVERFLOW):
            scaled_dot_product_attention([[1e200]], [[-1e200], [-1e200]], [[1.0], [2.0]])

    def test_positive_overflow(self, no_warnings):
        # Before: +inf reached softmax, whose error named its own argument "x".
        with pytest.raises(ValueError, match=self.OVERFLOW):
            scaled_dot_product_attention([[1e200]], [[1e200], [1.0]], [[1.0], [2.0]])

    def test_inf_minus_inf_inside_the_dot_product(self, no_warnings):
        # The true score is 1e400 - 1e400 = 0, but float64 computes inf - inf = NaN.
        with pytest.raises(ValueError, match=self.OVERFLOW):
            scaled_dot_product_attention([[1e200, 1e200]], [[1e200, -1e200]], [[1.0]])

    def test_overflow_from_scale_names_scale(self, no_warnings):
        with pytest.raises(ValueError, match="make query, key or scale smaller"):
            scaled_dot_product_attention([[1e154]], [[1e154]], [[1.0]], scale=1e300)

    def test_index_of_the_first_bad_score_in_a_batch(self):
        q = np.ones((2, 2, 1))
        q[1, 0, 0] = 1e200
        k = np.ones((2, 3, 1))
        k[1, 2, 0] = -1e200
        with pytest.raises(ValueError, match=r"at score index \(1, 0, 2\)"):
            scaled_dot_product_attention(q, k, np.ones((2, 3, 1)))

    def test_mask_that_overflows_the_scores(self, no_warnings):
        with pytest.raises(
            ValueError,
            match=r"adding mask to the attention scores query @ key\.T \* scale overflows "
            r"float64 at score index \(0, 1\): block a key with -inf",
        ):
            scaled_dot_product_attention([[1.0]], [[0.0], [1e308]], [[1.0], [2.0]], np.array([[0.0, 1e308]]), scale=1.0)

    def test_mask_of_large_negative_values_that_overflows(self, no_warnings):
        # -1e308 + -1e308 is -inf in float64: it would pass for a blocked key.
        with pytest.raises(ValueError, match="adding mask to the attention scores"):
            scaled_dot_product_attention([[1.0]], [[-1e308]], [[1.0]], np.array([[-1e308]]), scale=1.0)

    def test_output_that_overflows_names_value(self, no_warnings):
        # Eleven equal weights of 1/11 over the largest float64 round past it.
        top = np.finfo(np.float64).max
        with pytest.raises(
            ValueError,
            match=r"the output weights @ value overflows float64 at index \(0, 0\).*"
            r"make value smaller",
        ):
            scaled_dot_product_attention(np.zeros((1, 1)), np.zeros((11, 1)), np.full((11, 1), top))

    def test_huge_but_finite_scores_are_computed(self, no_warnings):
        # Scores of +/-1e300 are in range: the softmax is exact and sums to 1.
        out, weights = scaled_dot_product_attention([[1e150]], [[1e150], [-1e150]], [[1.0], [2.0]], scale=1.0)
        assert weights.tolist() == [[1.0, 0.0]]
        assert out.tolist() == [[1.0]]

    def test_self_attention_projection_overflow_names_x_and_the_matrix(self, no_warnings):
        ok = [[1.0]]
        for name, args in (
            ("w_query", ([[1e200]], ok, ok)),
            ("w_key", (ok, [[1e200]], ok)),
            ("w_value", (ok, ok, [[1e200]])),
        ):
            with pytest.raises(
                ValueError,
                match=rf"x @ {name} overflows float64 at index \(0, 0\) \(it holds inf or NaN\): "
                rf"make x or {name} smaller",
            ):
                self_attention([[1e200]], *args)

    def test_self_attention_score_overflow_names_the_projections(self, no_warnings):
        with pytest.raises(
            ValueError,
            match=r"the attention scores \(x @ w_query\) @ \(x @ w_key\)\.T \* scale overflow "
            r"float64.*make x @ w_query, x @ w_key or scale smaller",
        ):
            self_attention([[1e200]], [[1e100]], [[-1e100]], [[1.0]])

    def test_self_attention_needs_a_query_column(self):
        with pytest.raises(ValueError, match=r"w_query and w_key must have at least one column"):
            self_attention(np.ones((2, 3)), np.ones((3, 0)), np.ones((3, 0)), np.ones((3, 2)))


class TestEmptyInputs:
    """Empty inputs give the formula's empty (or zero) result, never NumPy's reduction error."""

    @pytest.mark.parametrize("shape, axis", [((0,), -1), ((2, 0), -1), ((0, 3), -1), ((0, 3), 0)])
    def test_softmax_of_nothing_is_empty(self, shape, axis, no_warnings):
        out = softmax(np.zeros(shape), axis=axis)
        assert out.shape == shape
        assert out.dtype == np.float64

    def test_softmax_of_an_empty_list(self):
        assert softmax([]).tolist() == []

    def test_softmax_bad_axis_on_empty_input_names_axis(self):
        with pytest.raises(np.exceptions.AxisError, match="axis 2"):
            softmax(np.zeros((2, 0)), axis=2)

    def test_no_keys_is_like_a_fully_masked_row(self, no_warnings):
        out, weights = scaled_dot_product_attention(np.ones((2, 3)), np.ones((0, 3)), np.ones((0, 4)))
        assert weights.shape == (2, 0)
        assert out.tolist() == [[0.0] * 4, [0.0] * 4]

    def test_no_queries_gives_no_rows(self, no_warnings):
        out, weights = scaled_dot_product_attention(np.ones((0, 3)), np.ones((5, 3)), np.ones((5, 4)))
        assert out.shape == (0, 4)
        assert weights.shape == (0, 5)

    def test_empty_batch(self, no_warnings):
        out, weights = scaled_dot_product_attention(np.ones((0, 2, 3)), np.ones((0, 5, 3)), np.ones((0, 5, 4)))
        assert out.shape == (0, 2, 4)
        assert weights.shape == (0, 2, 5)

    def test_self_attention_on_an_empty_sentence(self, no_warnings):
        out, weights = self_attention(np.zeros((0, 4)), toy.W_QUERY, toy.W_KEY, toy.W_VALUE)
        assert out.shape == (0, 4)
        assert weights.shape == (0, 0)

    def test_self_attention_on_the_toy_empty_sentence(self, no_warnings):
        out, _ = self_attention(toy.bank_sentence([]), toy.W_QUERY, toy.W_KEY, toy.W_VALUE)
        assert out.shape == (0, 4)


class TestSizeLimits:
    """Arrays above qkv._checks.MAX_ARRAY_BYTES are refused before anything is allocated."""

    def test_causal_mask_of_100000_positions(self):
        with pytest.raises(
            ValueError,
            match=r"length=100000 would need a bool array of shape \(100000, 100000\): "
            r"10,000,000,000 bytes \(9\.3 GiB\), more than the limit of 2,147,483,648 bytes "
            r"\(2 GiB\) per array set by qkv\._checks\.MAX_ARRAY_BYTES",
        ):
            causal_mask(10**5)

    def test_causal_mask_limit_is_the_documented_constant(self, monkeypatch):
        from qkv import _checks

        monkeypatch.setattr(_checks, "MAX_ARRAY_BYTES", 100)
        assert causal_mask(10).shape == (10, 10)  # 100 bytes: at the limit
        with pytest.raises(ValueError, match=r"length=11 would need .* 121 bytes"):
            causal_mask(11)

    def test_scores_of_100000_queries(self):
        x = np.ones((10**5, 1))
        with pytest.raises(
            ValueError,
            match=r"the attention scores query @ key\.T \* scale would need a float64 array "
            r"of shape \(100000, 100000\): 80,000,000,000 bytes",
        ):
            scaled_dot_product_attention(x, x, x)

    def test_scores_count_the_broadcast_batch(self, monkeypatch):
        from qkv import _checks

        monkeypatch.setattr(_checks, "MAX_ARRAY_BYTES", 8 * 2 * 3 * 4)
        q, k = np.ones((2, 3, 1)), np.ones((1, 4, 1))
        assert scaled_dot_product_attention(q, k, np.ones((4, 1)))[1].shape == (2, 3, 4)
        with pytest.raises(ValueError, match=r"shape \(3, 3, 4\): 288 bytes"):
            scaled_dot_product_attention(np.ones((3, 3, 1)), k, np.ones((4, 1)))

    def test_self_attention_scores_name_x(self):
        w = np.ones((1, 1))
        with pytest.raises(
            ValueError, match=r"the attention scores \(x @ w_query\) @ \(x @ w_key\)\.T \* scale would need"
        ):
            self_attention(np.ones((10**5, 1)), w, w, w)
