"""Tests for qkv.alibi: the slopes of Press et al. 2021 and the causal bias.

The slopes are checked against the paper's reference code and against
BLOOM's ``build_alibi_tensor`` (Hugging Face transformers): a NumPy
transcription of each runs everywhere; the real transformers function runs
when transformers is installed (required in CI, see ``.ci/run``).
"""

import math

import numpy as np
import pytest

import qkv.alibi
from needs import require
from qkv import alibi_bias, alibi_slopes, causal_mask, scaled_dot_product_attention, softmax

TRANSFORMERS_HINT = (
    "torch or transformers is not installed; to run the BLOOM build_alibi_tensor "
    "cross-check: pip install torch==2.13.0 transformers==5.24.0"
)


def reference_get_slopes(n):
    """``get_slopes`` as written in ofirpress/attention_with_linear_biases,
    fairseq/models/transformer.py (the paper's reference code)."""

    def get_slopes_power_of_2(n):
        start = 2 ** (-(2 ** -(math.log2(n) - 3)))
        ratio = start
        return [start * ratio**i for i in range(n)]

    if math.log2(n).is_integer():
        return get_slopes_power_of_2(n)
    closest_power_of_2 = 2 ** math.floor(math.log2(n))
    return (
        get_slopes_power_of_2(closest_power_of_2)
        + reference_get_slopes(2 * closest_power_of_2)[0::2][: n - closest_power_of_2]
    )


def bloom_slopes(n_head):
    """The slope computation of BLOOM's ``build_alibi_tensor`` (transformers,
    models/bloom/modeling_bloom.py), transcribed to NumPy in float64."""
    closest_power_of_2 = 2 ** math.floor(math.log2(n_head))
    base = 2 ** (-(2 ** -(math.log2(closest_power_of_2) - 3)))
    slopes = base ** np.arange(1, 1 + closest_power_of_2)
    if closest_power_of_2 != n_head:
        extra_base = 2 ** (-(2 ** -(math.log2(2 * closest_power_of_2) - 3)))
        num_remaining_heads = min(closest_power_of_2, n_head - closest_power_of_2)
        extra_powers = np.arange(1, 1 + 2 * num_remaining_heads, 2)
        slopes = np.concatenate([slopes, extra_base**extra_powers])
    return slopes


class TestSlopes:
    def test_eight_heads_are_halvings(self):
        assert alibi_slopes(8).tolist() == [1 / 2**k for k in range(1, 9)]

    def test_six_heads_follow_the_non_power_of_two_rule(self):
        assert alibi_slopes(6).tolist() == [1 / 4, 1 / 16, 1 / 64, 1 / 256, 1 / 2, 1 / 8]

    def test_sixteen_heads_start_at_two_to_minus_half(self):
        slopes = alibi_slopes(16)
        np.testing.assert_allclose(slopes, [2 ** (-k / 2) for k in range(1, 17)], rtol=1e-15)
        np.testing.assert_allclose(slopes[1::2], alibi_slopes(8), rtol=1e-15)

    def test_one_head(self):
        assert alibi_slopes(1).tolist() == [1 / 256]

    @pytest.mark.parametrize("n", range(1, 65))
    def test_matches_reference_code(self, n):
        np.testing.assert_allclose(alibi_slopes(n), reference_get_slopes(n), rtol=1e-14, atol=0)

    @pytest.mark.parametrize("n", range(1, 65))
    def test_matches_bloom_logic(self, n):
        np.testing.assert_allclose(alibi_slopes(n), bloom_slopes(n), rtol=1e-14, atol=0)

    @pytest.mark.parametrize("n", [1, 2, 3, 5, 6, 7, 8, 12, 16, 24, 30, 32, 40, 64, 96, 112])
    def test_are_distinct_and_in_the_unit_interval(self, n):
        slopes = alibi_slopes(n)
        assert slopes.shape == (n,)
        assert np.all((slopes > 0) & (slopes < 1))
        assert len(set(slopes.tolist())) == n

    @pytest.mark.parametrize("bad", [1.0, 8.0, "8", None, True])
    def test_rejects_non_integers(self, bad):
        with pytest.raises(TypeError, match="num_heads must be an integer"):
            alibi_slopes(bad)

    @pytest.mark.parametrize("bad", [0, -1])
    def test_rejects_fewer_than_one_head(self, bad):
        with pytest.raises(ValueError, match="num_heads must be a positive integer"):
            alibi_slopes(bad)


class TestBias:
    def test_shape(self):
        assert alibi_bias(6, 5).shape == (6, 5, 5)

    @pytest.mark.parametrize("num_heads", [1, 6, 8])
    def test_past_is_minus_slope_times_distance(self, num_heads):
        length = 7
        bias = alibi_bias(num_heads, length)
        slopes = alibi_slopes(num_heads)
        for h in range(num_heads):
            for i in range(length):
                for j in range(i + 1):
                    assert bias[h, i, j] == -slopes[h] * (i - j)

    def test_sign_diagonal_zero_past_negative_future_minus_inf(self):
        bias = alibi_bias(4, 6)
        below = np.tril(np.ones((6, 6), dtype=bool), k=-1)
        above = np.triu(np.ones((6, 6), dtype=bool), k=1)
        assert np.all(bias[:, below] < 0)
        assert np.all(bias[:, above] == -np.inf)
        diagonal = np.diagonal(bias, axis1=1, axis2=2)
        assert diagonal.tolist() == [[0.0] * 6] * 4
        assert not np.any(np.signbit(diagonal))  # +0.0, not -0.0

    def test_further_back_is_penalised_more(self):
        row = alibi_bias(8, 10)[:, 9, :]  # the last query, all heads
        assert np.all(np.diff(row, axis=-1) > 0)  # rises towards the query itself

    def test_steeper_slope_penalises_more(self):
        bias = alibi_bias(8, 10)
        assert np.all(np.diff(bias[:, 9, 0]) > 0)  # heads ordered steep -> gentle for 8

    def test_is_the_causal_mask_too(self):
        bias = alibi_bias(3, 5)
        assert np.array_equal(np.isfinite(bias), np.broadcast_to(causal_mask(5), (3, 5, 5)))

    def test_softmax_equals_reference_form(self):
        """The reference code adds slopes * j (identical rows) to a -inf future mask;
        BLOOM adds slopes * j and masks the future. Softmax cannot tell them apart."""
        rng = np.random.default_rng(0)
        num_heads, length = 6, 9
        scores = rng.normal(size=(2, num_heads, length, length)) * 3
        slopes = alibi_slopes(num_heads)
        future = np.triu(np.full((length, length), -np.inf), k=1)
        reference = slopes[:, None, None] * np.arange(length)[None, None, :] + future
        np.testing.assert_allclose(
            softmax(scores + alibi_bias(num_heads, length)),
            softmax(scores + reference),
            rtol=0,
            atol=1e-15,
        )

    def test_as_float_mask_of_attention(self):
        rng = np.random.default_rng(1)
        num_heads, length, d_head = 4, 6, 3
        q, k, v = rng.normal(size=(3, num_heads, length, d_head))
        bias = alibi_bias(num_heads, length)
        out, weights = scaled_dot_product_attention(q, k, v, bias)
        scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(d_head) + bias
        np.testing.assert_allclose(weights, softmax(scores), atol=1e-15)
        assert np.all(weights[..., np.triu_indices(length, k=1)[0], np.triu_indices(length, k=1)[1]] == 0)
        np.testing.assert_allclose(out, weights @ v, atol=1e-15)

    @pytest.mark.parametrize(
        "kwargs, match",
        [
            ({"num_heads": 0, "num_positions": 4}, "num_heads must be a positive integer"),
            ({"num_heads": 2.0, "num_positions": 4}, "num_heads must be an integer"),
            ({"num_heads": 2, "num_positions": 0}, "num_positions must be a positive integer"),
            ({"num_heads": 2, "num_positions": -3}, "num_positions must be a positive integer"),
            ({"num_heads": 2, "num_positions": 4.0}, "num_positions must be an integer"),
            ({"num_heads": 2, "num_positions": True}, "num_positions must be an integer"),
        ],
    )
    def test_rejects_bad_arguments(self, kwargs, match):
        with pytest.raises((TypeError, ValueError), match=match):
            alibi_bias(**kwargs)

    def test_refuses_more_than_the_memory_limit(self):
        assert qkv.alibi.MAX_BIAS_ENTRIES == 2**26  # the documented 512 MiB of float64
        with pytest.raises(ValueError, match=r"num_positions=2897 with num_heads=8 .*MAX_BIAS_ENTRIES"):
            alibi_bias(8, 2897)  # 8 * 2897**2 = 67,141,672 > 2**26
        with pytest.raises(ValueError, match=r"num_positions=1000000 .*8,000,000,000,000 entries"):
            alibi_bias(8, 1_000_000)

    def test_limit_is_inclusive(self, monkeypatch):
        monkeypatch.setattr(qkv.alibi, "MAX_BIAS_ENTRIES", 2 * 4**2)
        assert alibi_bias(2, 4).shape == (2, 4, 4)  # exactly at the limit: allowed
        with pytest.raises(ValueError, match="num_positions=5"):
            alibi_bias(2, 5)


class TestAgainstTransformersBloom:
    """The real ``build_alibi_tensor`` from transformers (float32 slopes)."""

    @pytest.mark.parametrize("num_heads", [1, 3, 6, 8, 12, 16, 20, 64])
    def test_slopes_and_bias(self, num_heads):
        try:  # imported on use: transformers takes seconds to import
            import torch
            from transformers.models.bloom.modeling_bloom import build_alibi_tensor
        except ImportError:
            require(False, TRANSFORMERS_HINT)
        length = 7
        mask = torch.ones(1, length, dtype=torch.long)  # one sequence, no padding
        theirs = build_alibi_tensor(mask, num_heads, torch.float64).numpy()  # (h, 1, L)
        assert theirs.shape == (num_heads, 1, length)
        # Their row is slopes * j; its j = 1 entry is the slope. BLOOM computes
        # base**k in float32, so base's rounding (2**-24 relative) grows k-fold.
        rtol = num_heads * 2.0**-24
        np.testing.assert_allclose(alibi_slopes(num_heads), theirs[:, 0, 1], rtol=rtol, atol=0)
        # Their bias plus a causal mask gives our bias up to a constant per row.
        ours = alibi_bias(num_heads, length)
        future = np.triu(np.full((length, length), -np.inf), k=1)
        scores = np.random.default_rng(num_heads).normal(size=(num_heads, length, length))
        np.testing.assert_allclose(softmax(scores + ours), softmax(scores + theirs + future), rtol=0, atol=1e-6)
