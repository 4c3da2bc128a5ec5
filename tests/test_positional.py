"""Tests for qkv.positional against the curriculum's numbers."""

import math

import numpy as np
import pytest

from qkv import (
    cosine_similarity,
    learned_positional_table,
    pair_frequencies,
    pair_wavelengths,
    positional_rows,
    shift_matrix,
    sinusoidal_encoding,
)

D6_TABLE = [
    [0.0000, 1.0000, 0.0000, 1.0000, 0.0000, 1.0000],
    [0.8415, 0.5403, 0.0464, 0.9989, 0.0022, 1.0000],
    [0.9093, -0.4161, 0.0927, 0.9957, 0.0043, 1.0000],
    [0.1411, -0.9900, 0.1388, 0.9903, 0.0065, 1.0000],
]


class TestSinusoidalValues:
    def test_d6_worked_example(self):
        pe = sinusoidal_encoding(4, 6)
        assert pe.shape == (4, 6) and pe.dtype == np.float64
        np.testing.assert_array_equal(pe.round(4), D6_TABLE)

    def test_d6_position_1_is_not_the_truncated_version(self):
        # A widely read version prints [0.84, 0.54, 0.04, 0.99, 0.01, 0.99].
        row = sinusoidal_encoding(2, 6)[1]
        assert row.round(2).tolist() == [0.84, 0.54, 0.05, 1.0, 0.0, 1.0]

    def test_d4_interleaved_not_halves(self):
        row = sinusoidal_encoding(2, 4)[1].round(4).tolist()
        assert row == [0.8415, 0.5403, 0.0100, 1.0000]
        assert row != [0.8415, 0.0100, 0.5403, 1.0000]  # the halves layout

    def test_halves_layout_is_a_permutation(self):
        pe = sinusoidal_encoding(10, 8)
        halves = np.concatenate([pe[:, 0::2], pe[:, 1::2]], axis=1)
        assert not np.allclose(halves, pe)
        np.testing.assert_allclose(halves[:, [0, 4, 1, 5, 2, 6, 3, 7]], pe)

    def test_even_dimensions_are_sine_odd_are_cosine(self):
        pe = sinusoidal_encoding(50, 8)
        pos = np.arange(50)[:, None]
        freqs = pair_frequencies(8)
        np.testing.assert_allclose(pe[:, 0::2], np.sin(pos * freqs))
        np.testing.assert_allclose(pe[:, 1::2], np.cos(pos * freqs))

    def test_position_zero_first(self):
        # 1-based positions would make row 0 equal to sin(1), cos(1), ...
        np.testing.assert_array_equal(sinusoidal_encoding(1, 8)[0], [0.0, 1.0] * 4)

    def test_exponent_uses_pair_index(self):
        # Mistakes: exponent i/d (pair index without the 2) or the dimension index.
        pe = sinusoidal_encoding(5, 6)
        wrong = np.sin(3 * 10000.0 ** (-1 / 6))  # pair 1 with exponent i/d
        assert not math.isclose(pe[3, 2], wrong, abs_tol=1e-6)
        assert pe[3, 2] == pytest.approx(np.sin(3 * 10000.0 ** (-2 / 6)))
        assert pe[3, 3] == pytest.approx(np.cos(3 * 10000.0 ** (-2 / 6)))

    def test_bounded_and_norm(self):
        for d in (4, 6, 16, 512):
            pe = sinusoidal_encoding(200, d)
            assert np.all(np.abs(pe) <= 1.0)
            np.testing.assert_allclose(np.linalg.norm(pe, axis=1), math.sqrt(d / 2))

    def test_every_position_distinct(self):
        pe = sinusoidal_encoding(1000, 16)
        assert np.unique(pe.round(10), axis=0).shape[0] == 1000

    def test_custom_base(self):
        pe = sinusoidal_encoding(3, 4, base=100.0)
        assert pe[2, 2] == pytest.approx(math.sin(2 / 10.0))


class TestFrequencies:
    def test_d6_frequencies(self):
        assert (1 / pair_frequencies(6)).round(4).tolist() == [1.0, 21.5443, 464.1589]

    def test_shape(self):
        assert pair_frequencies(512).shape == (256,)
        assert pair_wavelengths(512).shape == (256,)

    def test_first_pair_fastest(self):
        for d in (6, 16, 512):
            wl = pair_wavelengths(d)
            assert wl[0] == pytest.approx(2 * math.pi)
            assert np.all(np.diff(wl) > 0)  # slower and slower

    def test_last_pair_wavelengths(self):
        assert round(float(pair_wavelengths(16)[-1])) == 19869
        assert round(float(pair_wavelengths(512)[-1])) == 60611

    def test_wavelength_is_two_pi_over_frequency(self):
        np.testing.assert_allclose(pair_wavelengths(16, 500.0) * pair_frequencies(16, 500.0), 2 * math.pi)


class TestRelativePosition:
    @pytest.mark.parametrize("d, k, expected", [(512, 1, 0.9731), (512, 6, 0.7353), (6, 1, 0.8464), (6, 6, 0.9739)])
    def test_similarity_depends_on_offset_only(self, d, k, expected):
        pe = sinusoidal_encoding(200, d)
        for p in (0, 10, 50, 150):
            assert round(cosine_similarity(pe[p], pe[p + k]), 4) == expected

    def test_d6_offset_6_more_similar_than_offset_1(self):
        pe = sinusoidal_encoding(10, 6)
        assert cosine_similarity(pe[0], pe[6]) > cosine_similarity(pe[0], pe[1])

    def test_dot_product_symmetric_in_offset(self):
        pe = sinusoidal_encoding(100, 512)
        dots = [pe[10] @ pe[13], pe[50] @ pe[53], pe[10] @ pe[7]]
        assert [round(float(x), 4) for x in dots] == [211.7494] * 3

    @pytest.mark.parametrize("k", [1, 3, 7, -2, 0])
    def test_shift_matrix_moves_every_position(self, k):
        d = 16
        pe = sinusoidal_encoding(60, d)
        m = shift_matrix(k, d)
        assert m.shape == (d, d)
        for p in range(10, 40, 7):
            np.testing.assert_allclose(m @ pe[p], pe[p + k], atol=1e-12)

    def test_shift_matrix_error_is_tiny_at_d512(self):
        pe = sinusoidal_encoding(300, 512)
        m = shift_matrix(5, 512)
        err = np.max(np.abs(pe[5:] - pe[:-5] @ m.T))  # all positions at once
        assert err < 1e-12

    def test_shift_matrix_structure(self):
        m = shift_matrix(1, 4)
        c, s = math.cos(1.0), math.sin(1.0)
        np.testing.assert_allclose(m[:2, :2], [[c, s], [-s, c]])
        np.testing.assert_array_equal(m[:2, 2:], 0.0)
        np.testing.assert_array_equal(m[2:, :2], 0.0)
        np.testing.assert_allclose(m @ m.T, np.eye(4), atol=1e-15)  # a rotation

    def test_shift_matrix_zero_is_identity_and_inverse(self):
        np.testing.assert_allclose(shift_matrix(0, 8), np.eye(8))
        np.testing.assert_allclose(shift_matrix(3, 8) @ shift_matrix(-3, 8), np.eye(8), atol=1e-15)

    @pytest.mark.parametrize("k", [1.0, True, "1"])
    def test_shift_k_must_be_int(self, k):
        with pytest.raises(TypeError, match="k must be an integer"):
            shift_matrix(k, 8)


class TestSinusoidalErrors:
    @pytest.mark.parametrize("d_model", [1, 5, 7, 513])
    def test_odd_d_model(self, d_model):
        with pytest.raises(ValueError, match=rf"d_model must be even .*got d_model={d_model}"):
            sinusoidal_encoding(4, d_model)

    @pytest.mark.parametrize("d_model", [0, -2])
    def test_non_positive_d_model(self, d_model):
        with pytest.raises(ValueError, match=rf"d_model must be a positive integer, got {d_model}"):
            sinusoidal_encoding(4, d_model)

    @pytest.mark.parametrize("func", [pair_frequencies, pair_wavelengths, lambda d: shift_matrix(1, d)])
    def test_odd_d_model_everywhere(self, func):
        with pytest.raises(ValueError, match="d_model must be even"):
            func(3)

    @pytest.mark.parametrize("num_positions", [0, -1])
    def test_non_positive_num_positions(self, num_positions):
        with pytest.raises(ValueError, match=rf"num_positions must be a positive integer, got {num_positions}"):
            sinusoidal_encoding(num_positions, 4)

    @pytest.mark.parametrize("value", [4.0, True, "4"])
    def test_non_integer_sizes(self, value):
        with pytest.raises(TypeError, match="num_positions must be an integer"):
            sinusoidal_encoding(value, 4)
        with pytest.raises(TypeError, match="d_model must be an integer"):
            sinusoidal_encoding(4, value)

    @pytest.mark.parametrize("base", [1.0, 0.5, 0, -10.0])
    def test_base_must_exceed_one(self, base):
        with pytest.raises(ValueError, match="base must be greater than 1"):
            sinusoidal_encoding(4, 4, base=base)

    def test_base_not_finite(self):
        with pytest.raises(ValueError, match="base must be finite"):
            pair_frequencies(4, base=float("inf"))


class TestLearned:
    def test_shape_and_gpt2_parameter_count(self):
        table = learned_positional_table(1024, 768)
        assert table.shape == (1024, 768)
        assert table.size == 786_432

    def test_seeded_and_scaled(self):
        a = learned_positional_table(64, 32, seed=7)
        b = learned_positional_table(64, 32, seed=7)
        c = learned_positional_table(64, 32, seed=8)
        np.testing.assert_array_equal(a, b)
        assert not np.array_equal(a, c)
        big = learned_positional_table(512, 768, scale=0.02)
        assert abs(big.mean()) < 1e-3
        assert big.std() == pytest.approx(0.02, rel=0.01)
        assert learned_positional_table(100, 100, scale=1.0).std() == pytest.approx(1.0, rel=0.05)

    @pytest.mark.parametrize("scale, exc", [(0.0, ValueError), (-1.0, ValueError), ("x", TypeError)])
    def test_bad_scale(self, scale, exc):
        with pytest.raises(exc, match="scale must be"):
            learned_positional_table(4, 4, scale=scale)

    def test_odd_d_model_is_fine_for_learned(self):
        assert learned_positional_table(3, 5).shape == (3, 5)

    def test_bad_sizes(self):
        with pytest.raises(ValueError, match="max_len must be a positive integer"):
            learned_positional_table(0, 4)
        with pytest.raises(TypeError, match="d_model must be an integer"):
            learned_positional_table(4, 4.0)

    def test_positional_rows(self):
        table = learned_positional_table(512, 16)
        rows = positional_rows(table, 10)
        assert rows.shape == (10, 16)
        np.testing.assert_array_equal(rows, table[:10])
        rows[:] = 0.0
        assert np.all(table[:10] != 0.0)  # a copy

    def test_all_rows(self):
        table = learned_positional_table(8, 4)
        np.testing.assert_array_equal(positional_rows(table, 8), table)

    def test_past_max_len(self):
        table = learned_positional_table(512, 16)
        with pytest.raises(
            ValueError,
            match=r"num_positions=600 exceeds the table's max_len=512; a learned table has no row past max_len",
        ):
            positional_rows(table, 600)
        with pytest.raises(ValueError, match="num_positions=513 exceeds the table's max_len=512"):
            positional_rows(table, 513)

    def test_sinusoidal_has_no_such_limit(self):
        assert sinusoidal_encoding(600, 16).shape == (600, 16)

    def test_positional_rows_bad_input(self):
        with pytest.raises(ValueError, match="num_positions must be a positive integer"):
            positional_rows(np.zeros((4, 2)), 0)
        with pytest.raises(ValueError, match=r"table must have shape \(max_len, d_model\)"):
            positional_rows(np.zeros(4), 2)
        with pytest.raises(TypeError, match="table must contain real numbers"):
            positional_rows([["a"]], 1)
        with pytest.raises(ValueError, match="table must be finite"):
            positional_rows([[np.nan]], 1)


class TestLearnedSeedAndScale:
    @pytest.mark.parametrize(
        "seed, exc, message",
        [
            (-1, ValueError, "seed must be a non-negative integer or None, got -1"),
            (1.5, TypeError, "seed must be a non-negative integer or None, got 1.5 of type float"),
            (True, TypeError, "seed must be a non-negative integer or None, got True of type bool"),
            ("0", TypeError, "seed must be a non-negative integer or None, got '0' of type str"),
        ],
    )
    def test_bad_seed_names_seed(self, seed, exc, message):
        # Before: NumPy's "expected non-negative integer" / "SeedSequence expects int",
        # and True was silently taken as seed 1.
        with pytest.raises(exc, match=message):
            learned_positional_table(4, 4, seed=seed)

    def test_none_and_numpy_integers_are_seeds(self):
        assert learned_positional_table(4, 4, seed=None).shape == (4, 4)
        np.testing.assert_array_equal(
            learned_positional_table(4, 4, seed=np.int64(3)), learned_positional_table(4, 4, seed=3)
        )

    def test_default_scale_is_0_02(self):
        # Hugging Face's initializer_range, as the docstring says (OpenAI's GPT-2 code uses 0.01 for wpe).
        table = learned_positional_table(512, 768)
        assert table.std() == pytest.approx(0.02, rel=0.01)
        assert learned_positional_table(512, 768, scale=0.01).std() == pytest.approx(0.01, rel=0.01)


class TestSizeLimits:
    """Tables above qkv._checks.MAX_ARRAY_BYTES are refused at once, naming the arguments."""

    def test_sinusoidal_a_billion_positions(self):
        # Before: NumPy filled memory for many seconds, then raised MemoryError.
        with pytest.raises(
            ValueError,
            match=r"num_positions=1000000000 and d_model=512 would need a float64 array of shape "
            r"\(1000000000, 512\): 4,096,000,000,000 bytes \(3814\.7 GiB\), more than the limit "
            r"of 2,147,483,648 bytes \(2 GiB\) per array set by qkv\._checks\.MAX_ARRAY_BYTES",
        ):
            sinusoidal_encoding(10**9, 512)

    def test_sinusoidal_limit_is_the_documented_constant(self, monkeypatch):
        from qkv import _checks

        monkeypatch.setattr(_checks, "MAX_ARRAY_BYTES", 8 * 10 * 4)
        assert sinusoidal_encoding(10, 4).shape == (10, 4)  # 320 bytes: at the limit
        with pytest.raises(ValueError, match=r"num_positions=11 and d_model=4 would need .* 352 bytes"):
            sinusoidal_encoding(11, 4)

    def test_sinusoidal_still_checks_d_model_first(self):
        with pytest.raises(ValueError, match="d_model must be even"):
            sinusoidal_encoding(10**9, 513)

    @pytest.mark.parametrize("function", [pair_frequencies, pair_wavelengths])
    def test_frequencies_of_a_huge_d_model(self, function):
        with pytest.raises(
            ValueError, match=r"d_model=1000000000000 would need a float64 array of shape \(500000000000,\)"
        ):
            function(10**12)

    def test_shift_matrix_of_a_huge_d_model(self):
        with pytest.raises(
            ValueError,
            match=r"d_model=100000 would need a float64 array of shape \(100000, 100000\): "
            r"80,000,000,000 bytes",
        ):
            shift_matrix(1, 10**5)

    def test_learned_table_too_large(self):
        with pytest.raises(
            ValueError,
            match=r"max_len=1000000 and d_model=10000 would need a float64 array of shape "
            r"\(1000000, 10000\): 80,000,000,000 bytes",
        ):
            learned_positional_table(10**6, 10**4)
