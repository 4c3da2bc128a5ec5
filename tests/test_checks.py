"""Tests for qkv._checks, the shared validation helpers."""

import numpy as np
import pytest

from qkv import _checks


class TestAsFloatArray:
    def test_converts_lists_and_ints_to_float64(self):
        arr = _checks.as_float_array([[1, 2], [3, 4]], "x")
        assert arr.dtype == np.float64
        assert arr.tolist() == [[1.0, 2.0], [3.0, 4.0]]

    def test_accepts_bool(self):
        assert _checks.as_float_array([True, False], "x").tolist() == [1.0, 0.0]

    @pytest.mark.parametrize(
        "value, dtype_text",
        [
            (np.array([1, 2], dtype=object), "object"),
            (["a", "b"], "<U1"),
            (np.array([1 + 2j]), "complex128"),
        ],
    )
    def test_rejects_non_numeric_naming_argument_and_dtype(self, value, dtype_text):
        with pytest.raises(TypeError, match=rf"query must contain real numbers.*dtype {dtype_text}"):
            _checks.as_float_array(value, "query")

    def test_ragged_input_names_argument(self):
        with pytest.raises(ValueError, match="table could not be converted to an array"):
            _checks.as_float_array([[1.0, 2.0], [3.0]], "table")


class TestFinite:
    @pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
    def test_rejects_nan_and_inf(self, bad):
        with pytest.raises(ValueError, match="key must be finite.*NaN or inf"):
            _checks.as_finite_float_array([1.0, bad], "key")

    def test_finite_passes(self):
        _checks.check_finite(np.array([0.0, -1e300]), "x")


class TestNdim:
    def test_wrong_rank_names_expected_and_actual_shape(self):
        with pytest.raises(ValueError, match=r"x must have shape \(L, d_model\) \(2-D\), got shape \(3,\) \(1-D\)"):
            _checks.check_ndim(np.zeros(3), "x", 2, "(L, d_model)")

    def test_min_ndim(self):
        with pytest.raises(
            ValueError,
            match=r"query must have shape \(\.\.\., L_q, d_k\) \(at least 2-D\), got shape \(4,\)",
        ):
            _checks.check_min_ndim(np.zeros(4), "query", 2, "(..., L_q, d_k)")
        _checks.check_min_ndim(np.zeros((2, 3, 4)), "query", 2, "(..., L_q, d_k)")


class TestIntegers:
    @pytest.mark.parametrize("value", [1, 7, np.int64(3), np.uint8(2)])
    def test_positive_int_accepts_ints(self, value):
        result = _checks.check_positive_int(value, "d_model")
        assert result == int(value) and type(result) is int

    @pytest.mark.parametrize("value", [True, False, np.bool_(True), 2.0, "4", None])
    def test_positive_int_rejects_non_integers(self, value):
        with pytest.raises(TypeError, match="d_model must be an integer"):
            _checks.check_positive_int(value, "d_model")

    @pytest.mark.parametrize("value", [0, -1, -512])
    def test_positive_int_rejects_non_positive(self, value):
        with pytest.raises(ValueError, match=rf"d_model must be a positive integer, got {value}"):
            _checks.check_positive_int(value, "d_model")

    def test_check_int_allows_negative(self):
        assert _checks.check_int(-3, "k") == -3

    @pytest.mark.parametrize("value", [True, 1j, "x", None])
    def test_real_number_rejects(self, value):
        with pytest.raises(TypeError, match="base must be a real number"):
            _checks.check_real_number(value, "base")

    def test_real_number_rejects_nan(self):
        with pytest.raises(ValueError, match="base must be finite"):
            _checks.check_real_number(float("nan"), "base")


class TestTokenIds:
    def test_valid_ids(self):
        ids = _checks.as_token_ids([0, 4, 2], 5)
        assert ids.tolist() == [0, 4, 2]
        assert ids.dtype.kind == "i"

    def test_empty_list_is_fine(self):
        assert _checks.as_token_ids([], 5).shape == (0,)

    @pytest.mark.parametrize(
        "ids, dtype_text",
        [
            ([1.0, 2.0], "float64"),
            ([True, False], "bool"),
            (["cat"], "<U3"),
            (np.array([1], dtype=object), "object"),
        ],
    )
    def test_non_integer_ids(self, ids, dtype_text):
        with pytest.raises(TypeError, match=rf"token_ids must be integers.*dtype {dtype_text}"):
            _checks.as_token_ids(ids, 5)

    def test_out_of_range_names_id_position_and_range(self):
        with pytest.raises(
            ValueError,
            match=r"id 5 at position 1, which is out of range: valid ids are 0 \.\. 4 \(vocab_size=5\)",
        ):
            _checks.as_token_ids([0, 5, 9], 5)

    def test_negative_id(self):
        with pytest.raises(ValueError, match=r"id -1 at position 0.*valid ids are 0 \.\. 4"):
            _checks.as_token_ids([-1], 5)

    def test_must_be_1d(self):
        with pytest.raises(ValueError, match=r"token_ids must have shape \(L,\)"):
            _checks.as_token_ids([[0, 1]], 5)

    def test_single_token_id(self):
        assert _checks.check_token_id(np.int32(3), 4) == 3
        with pytest.raises(ValueError, match=r"token_id=4 is out of range: valid ids are 0 \.\. 3"):
            _checks.check_token_id(4, 4)
        with pytest.raises(TypeError, match="token_id must be an integer"):
            _checks.check_token_id(True, 4)


class TestArrayBytes:
    def test_at_the_limit_passes_one_byte_more_fails(self, monkeypatch):
        monkeypatch.setattr(_checks, "MAX_ARRAY_BYTES", 80)
        _checks.check_array_bytes((10,), np.float64, "n=10")
        _checks.check_array_bytes((80,), bool, "n=80")
        with pytest.raises(
            ValueError,
            match=r"n=81 would need a bool array of shape \(81,\): 81 bytes \(0\.0 GiB\), more than "
            r"the limit of 80 bytes \(7\.45058e-08 GiB\) per array set by qkv\._checks\.MAX_ARRAY_BYTES",
        ):
            _checks.check_array_bytes((81,), bool, "n=81")

    def test_default_limit_is_2_gib(self):
        assert _checks.MAX_ARRAY_BYTES == 2 * 1024**3
        _checks.check_array_bytes((2**28,), np.float64, "n")  # exactly 2 GiB: allowed
        with pytest.raises(ValueError, match=r"n would need a float64 array of shape \(268435457,\)"):
            _checks.check_array_bytes((2**28 + 1,), np.float64, "n")

    def test_huge_shapes_do_not_overflow_the_count(self):
        # 10**12 * 10**12 * 8 is far past int64: counted with Python ints, not NumPy's.
        with pytest.raises(ValueError, match=r"8,000,000,000,000,000,000,000,000 bytes"):
            _checks.check_array_bytes((10**12, 10**12), np.float64, "n")


class TestSeed:
    @pytest.mark.parametrize("value", [0, 7, np.int64(3), np.uint32(2)])
    def test_accepts_non_negative_integers(self, value):
        result = _checks.check_seed(value)
        assert result == int(value) and type(result) is int

    def test_none(self):
        assert _checks.check_seed(None) is None
        with pytest.raises(TypeError, match="seed must be a non-negative integer, got None"):
            _checks.check_seed(None, allow_none=False)

    @pytest.mark.parametrize("value", [True, np.bool_(False), 1.5, 2.0, "3", [1]])
    def test_rejects_non_integers(self, value):
        with pytest.raises(TypeError, match="seed must be a non-negative integer or None, got"):
            _checks.check_seed(value)

    def test_rejects_negative(self):
        with pytest.raises(ValueError, match="random_state must be a non-negative integer or None, got -1"):
            _checks.check_seed(-1, "random_state")
