"""Tests for qkv.embeddings against the curriculum's numbers."""

import numpy as np
import pytest

from qkv import (
    cosine_similarity,
    cosine_similarity_matrix,
    embed,
    nearest_neighbours,
    one_hot,
    toy,
)


def _neighbours(word, k=3):
    return [(toy.VOCAB[i], round(s, 4)) for i, s in nearest_neighbours(toy.VOCAB.index(word), toy.EMBEDDINGS, k=k)]


class TestOneHot:
    def test_rows(self):
        assert one_hot([1, 0, 3], 4).tolist() == [
            [0.0, 1.0, 0.0, 0.0],
            [1.0, 0.0, 0.0, 0.0],
            [0.0, 0.0, 0.0, 1.0],
        ]

    def test_shape_and_dtype(self):
        out = one_hot(np.arange(15), 15)
        assert out.shape == (15, 15) and out.dtype == np.float64
        np.testing.assert_array_equal(out, np.eye(15))

    def test_lookup_is_a_one_hot_product(self):
        ids = toy.token_ids(["cat", "king", "cat", "bread"])
        np.testing.assert_array_equal(one_hot(ids, 15) @ toy.EMBEDDINGS, toy.EMBEDDINGS[ids])

    def test_different_one_hots_are_orthogonal(self):
        cat, dog = one_hot([0, 1], 15)
        assert cosine_similarity(cat, dog) == 0.0

    @pytest.mark.parametrize("ids", [[0, 15], [-1]])
    def test_out_of_range(self, ids):
        with pytest.raises(ValueError, match=r"token_ids contains id -?\d+ .*valid ids are 0 \.\. 14"):
            one_hot(ids, 15)

    @pytest.mark.parametrize("ids", [[0.0, 1.0], [True], ["cat"]])
    def test_non_integer_ids(self, ids):
        with pytest.raises(TypeError, match="token_ids must be integers"):
            one_hot(ids, 15)

    @pytest.mark.parametrize(
        "vocab_size, exc", [(0, ValueError), (-3, ValueError), (3.0, TypeError), (True, TypeError)]
    )
    def test_bad_vocab_size(self, vocab_size, exc):
        with pytest.raises(exc, match="vocab_size must be"):
            one_hot([0], vocab_size)


class TestEmbed:
    def test_row_lookup(self):
        ids = toy.token_ids(["queen", "cat"])
        assert embed(ids, toy.EMBEDDINGS).tolist() == [
            [0.05, 0.05, 0.0, 0.95],
            [0.9, 0.1, 0.0, 0.05],
        ]

    def test_shape_depends_on_length_not_vocab(self):
        out = embed([3] * 7, toy.EMBEDDINGS)
        assert out.shape == (7, 4)

    def test_static_same_row_everywhere(self):
        out = embed([12, 0, 12], toy.EMBEDDINGS)
        np.testing.assert_array_equal(out[0], out[2])

    def test_returns_copy_and_never_mutates(self):
        table = np.arange(12, dtype=float).reshape(4, 3)
        before = table.copy()
        out = embed([1, 1], table)
        out[:] = -99.0
        np.testing.assert_array_equal(table, before)
        assert not np.shares_memory(out, table)

    def test_works_on_read_only_table(self):
        assert not toy.EMBEDDINGS.flags.writeable
        out = embed([0], toy.EMBEDDINGS)
        assert out.flags.writeable

    def test_id_past_table(self):
        with pytest.raises(ValueError, match=r"id 15 at position 0.*valid ids are 0 \.\. 14 \(vocab_size=15\)"):
            embed([15], toy.EMBEDDINGS)

    def test_negative_id(self):
        with pytest.raises(ValueError, match=r"id -2 at position 1.*valid ids are 0 \.\. 14"):
            embed([0, -2], toy.EMBEDDINGS)

    @pytest.mark.parametrize("ids", [[1.0], np.array([0.0, 2.0]), [False, True], ["dog"]])
    def test_non_integer_ids(self, ids):
        with pytest.raises(TypeError, match=r"token_ids must be integers .*got an array of dtype"):
            embed(ids, toy.EMBEDDINGS)

    def test_table_wrong_rank(self):
        with pytest.raises(ValueError, match=r"table must have shape \(vocab_size, d_model\).*got shape \(4,\)"):
            embed([0], np.zeros(4))

    def test_table_non_numeric(self):
        with pytest.raises(TypeError, match="table must contain real numbers.*dtype <U1"):
            embed([0], [["a", "b"]])

    def test_table_with_nan(self):
        with pytest.raises(ValueError, match="table must be finite"):
            embed([0], [[np.nan, 1.0]])


class TestCosine:
    def test_cat_car_nearly_orthogonal(self):
        cat, car = toy.EMBEDDINGS[toy.token_ids(["cat", "car"])]
        assert round(cosine_similarity(cat, car), 4) == 0.0058

    def test_range_and_symmetry(self):
        a, b = [1.0, 2.0, 3.0], [-1.0, 0.5, 2.0]
        assert cosine_similarity(a, b) == pytest.approx(cosine_similarity(b, a))
        assert cosine_similarity(a, [-x for x in a]) == pytest.approx(-1.0)
        assert cosine_similarity(a, a) == 1.0

    def test_returns_python_float(self):
        assert type(cosine_similarity([1.0, 0.0], [1.0, 1.0])) is float

    def test_zero_vector(self):
        with pytest.raises(ValueError, match="undefined for a zero vector: b is all zeros"):
            cosine_similarity([1.0, 0.0], [0.0, 0.0])

    def test_length_mismatch(self):
        with pytest.raises(ValueError, match=r"a and b must have the same length d.*\(2,\) and \(3,\)"):
            cosine_similarity([1.0, 0.0], [1.0, 0.0, 0.0])

    def test_wrong_rank(self):
        with pytest.raises(ValueError, match=r"a must have shape \(d,\).*got shape \(1, 2\)"):
            cosine_similarity([[1.0, 0.0]], [1.0, 0.0])

    def test_non_numeric(self):
        with pytest.raises(TypeError, match="a must contain real numbers.*dtype object"):
            cosine_similarity(np.array([1, None], dtype=object), [1.0, 0.0])

    def test_inf(self):
        with pytest.raises(ValueError, match="b must be finite"):
            cosine_similarity([1.0, 0.0], [np.inf, 0.0])

    def test_matrix(self):
        sims = cosine_similarity_matrix(toy.EMBEDDINGS)
        assert sims.shape == (15, 15)
        np.testing.assert_allclose(np.diag(sims), 1.0)
        np.testing.assert_allclose(sims, sims.T)
        assert round(float(sims[0, 8]), 4) == 0.0058
        assert round(float(sims[0, 2]), 4) == 0.9985

    def test_matrix_matches_pairwise(self):
        sims = cosine_similarity_matrix(toy.EMBEDDINGS)
        assert sims[3, 11] == pytest.approx(cosine_similarity(toy.EMBEDDINGS[3], toy.EMBEDDINGS[11]))

    def test_matrix_zero_row(self):
        with pytest.raises(ValueError, match="row 1 of vectors is all zeros"):
            cosine_similarity_matrix([[1.0, 0.0], [0.0, 0.0]])

    def test_one_hot_rows_have_zero_similarity(self):
        sims = cosine_similarity_matrix(one_hot([0, 1, 2], 3))
        np.testing.assert_array_equal(sims, np.eye(3))


class TestNearestNeighbours:
    def test_cat(self):
        assert _neighbours("cat") == [("kitten", 0.9985), ("puppy", 0.9866), ("dog", 0.9770)]

    def test_car(self):
        assert _neighbours("car") == [("train", 0.9934), ("bike", 0.9921), ("bus", 0.9848)]

    def test_king_has_only_two_royal_neighbours(self):
        assert _neighbours("king", k=3) == [("queen", 0.9973), ("prince", 0.9952), ("dog", 0.3350)]

    def test_excludes_self_and_types(self):
        result = nearest_neighbours(0, toy.EMBEDDINGS, k=14)
        assert len(result) == 14
        assert 0 not in [i for i, _ in result]
        assert all(type(i) is int and type(s) is float for i, s in result)
        sims = [s for _, s in result]
        assert sims == sorted(sims, reverse=True)

    def test_ties_broken_by_id(self):
        table = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0], [2.0, 0.0]])
        assert [i for i, _ in nearest_neighbours(0, table, k=3)] == [2, 3, 1]

    @pytest.mark.parametrize("k", [0, -1])
    def test_k_not_positive(self, k):
        with pytest.raises(ValueError, match="k must be a positive integer"):
            nearest_neighbours(0, toy.EMBEDDINGS, k=k)

    def test_k_too_large(self):
        with pytest.raises(ValueError, match=r"k=15 is too large: the table has 15 rows, so at most k=14"):
            nearest_neighbours(0, toy.EMBEDDINGS, k=15)

    @pytest.mark.parametrize("k", [2.0, True])
    def test_k_not_int(self, k):
        with pytest.raises(TypeError, match="k must be an integer"):
            nearest_neighbours(0, toy.EMBEDDINGS, k=k)

    @pytest.mark.parametrize("token_id", [15, -1])
    def test_token_id_out_of_range(self, token_id):
        with pytest.raises(ValueError, match=rf"token_id={token_id} is out of range: valid ids are 0 \.\. 14"):
            nearest_neighbours(token_id, toy.EMBEDDINGS)

    @pytest.mark.parametrize("token_id", [0.0, "cat", True])
    def test_token_id_not_int(self, token_id):
        with pytest.raises(TypeError, match="token_id must be an integer"):
            nearest_neighbours(token_id, toy.EMBEDDINGS)

    def test_zero_row_in_table(self):
        with pytest.raises(ValueError, match="row 1 of table is all zeros"):
            nearest_neighbours(0, [[1.0, 0.0], [0.0, 0.0]], k=1)


class TestCosineAtTheEdgesOfFloat64:
    """Each vector is scaled (by a power of two) before its norm is taken."""

    def test_huge_vector_with_itself(self):
        # Before: the norm overflowed to inf and the result was NaN.
        assert cosine_similarity([1e200, 1e200], [1e200, 1e200]) == 1.0

    def test_huge_vectors_orthogonal_and_opposite(self):
        assert cosine_similarity([1e200, 0.0], [0.0, 1e-200]) == 0.0
        assert cosine_similarity([1e300, -1e300], [-1e300, 1e300]) == -1.0

    def test_largest_float_with_itself(self):
        top = np.finfo(np.float64).max
        assert cosine_similarity([top, top, top], [top, top, top]) == 1.0

    def test_tiny_vector_is_not_a_zero_vector(self):
        # Before: [1e-200] was called "all zeros": its squared norm underflows.
        assert cosine_similarity([1e-200], [1e-200]) == 1.0
        assert cosine_similarity([1e-200], [-3e-200]) == -1.0

    def test_subnormal_entries(self):
        tiny = 5e-324  # the smallest positive float64
        assert cosine_similarity([tiny, tiny], [tiny, 0.0]) == pytest.approx(np.sqrt(0.5), rel=1e-15)

    def test_mixed_magnitudes_match_the_ordinary_answer(self):
        a, b = np.array([3.0, 4.0]), np.array([4.0, 3.0])
        expected = cosine_similarity(a, b)  # 24/25
        assert expected == pytest.approx(0.96, rel=1e-15)
        assert cosine_similarity(a * 1e250, b * 1e-250) == expected

    def test_matrix_huge_row_has_self_similarity_one(self):
        # Before: a row of 1e200s had self-similarity 0.0.
        sims = cosine_similarity_matrix([[1e200, 1e200], [1.0, 0.0], [1e-200, 0.0]])
        # Within rounding, as for any row: [1, 1] / sqrt(2) squared sums to 1 - 2**-52.
        assert np.diag(sims) == pytest.approx([1.0, 1.0, 1.0], rel=1e-15)
        assert sims[1, 2] == 1.0  # [1, 0] and [1e-200, 0] point the same way
        assert sims[0, 1] == pytest.approx(np.sqrt(0.5), rel=1e-15)

    def test_matrix_tiny_row_is_not_a_zero_row(self):
        sims = cosine_similarity_matrix([[1e-200, 2e-200], [2.0, 4.0]])
        assert sims == pytest.approx(np.ones((2, 2)), rel=1e-15)

    def test_matrix_still_refuses_a_real_zero_row(self):
        with pytest.raises(ValueError, match="row 1 of vectors is all zeros"):
            cosine_similarity_matrix([[1e-200], [0.0]])

    def test_zero_vector_still_refused(self):
        with pytest.raises(ValueError, match="undefined for a zero vector: a is all zeros"):
            cosine_similarity([0.0, 0.0], [1e-200, 0.0])

    def test_nearest_neighbours_in_a_huge_table(self):
        # Id order and similarity order differ, so similarities that collapse to 0 would show.
        table = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.1]]) * 1e300
        assert [j for j, _ in nearest_neighbours(0, table, k=2)] == [2, 1]

    def test_matrix_of_no_rows(self):
        assert cosine_similarity_matrix(np.zeros((0, 3))).shape == (0, 0)


class TestOneHotSize:
    def test_refused_above_the_limit(self):
        with pytest.raises(
            ValueError,
            match=r"token_ids of length 1000 and vocab_size=1000000 would need a float64 array "
            r"of shape \(1000, 1000000\): 8,000,000,000 bytes",
        ):
            one_hot(np.zeros(1000, dtype=int), 10**6)

    def test_limit_is_the_documented_constant(self, monkeypatch):
        from qkv import _checks

        monkeypatch.setattr(_checks, "MAX_ARRAY_BYTES", 8 * 12)
        assert one_hot([0, 1, 2], 4).shape == (3, 4)  # 96 bytes: at the limit
        with pytest.raises(ValueError, match="vocab_size=5 would need"):
            one_hot([0, 1, 2], 5)

    def test_no_ids(self):
        assert one_hot([], 4).shape == (0, 4)


class TestSimilarityMatrixSize:
    def test_matrix_refused_above_the_limit(self):
        with pytest.raises(
            ValueError,
            match=r"the similarities of the 100000 rows of vectors would need a float64 array of "
            r"shape \(100000, 100000\): 80,000,000,000 bytes",
        ):
            cosine_similarity_matrix(np.ones((10**5, 2)))

    def test_nearest_neighbours_names_table(self, monkeypatch):
        from qkv import _checks

        monkeypatch.setattr(_checks, "MAX_ARRAY_BYTES", 8 * 15 * 15)
        assert len(nearest_neighbours(0, toy.EMBEDDINGS)) == 3  # 15 rows: at the limit
        with pytest.raises(ValueError, match="the similarities of the 16 rows of table would need"):
            nearest_neighbours(0, np.ones((16, 2)))
