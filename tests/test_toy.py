"""Tests for qkv.toy: the curriculum's canonical data, exactly as specified."""

import numpy as np
import pytest

import qkv
from qkv import toy

CURRICULUM_TABLE = {
    "cat": [0.90, 0.10, 0.00, 0.05],
    "dog": [0.85, 0.05, 0.10, 0.20],
    "kitten": [0.95, 0.10, 0.00, 0.00],
    "puppy": [0.90, 0.05, 0.10, 0.15],
    "apple": [0.05, 0.90, 0.00, 0.05],
    "banana": [0.00, 0.95, 0.05, 0.00],
    "bread": [0.00, 0.85, 0.10, 0.10],
    "cheese": [0.15, 0.85, 0.00, 0.05],
    "car": [0.00, 0.00, 0.95, 0.10],
    "bus": [0.05, 0.00, 0.90, 0.25],
    "train": [0.00, 0.05, 0.95, 0.20],
    "bike": [0.10, 0.00, 0.85, 0.05],
    "king": [0.10, 0.05, 0.05, 0.95],
    "queen": [0.05, 0.05, 0.00, 0.95],
    "prince": [0.15, 0.00, 0.10, 0.90],
}


class TestVocabulary:
    def test_ids_and_vectors(self):
        assert toy.VOCAB == tuple(CURRICULUM_TABLE)
        assert len(toy.VOCAB) == 15
        for i, (word, vector) in enumerate(CURRICULUM_TABLE.items()):
            assert toy.VOCAB[i] == word
            assert toy.EMBEDDINGS[i].tolist() == vector

    def test_shapes_and_axes(self):
        assert toy.EMBEDDINGS.shape == (15, 4)
        assert toy.EMBEDDINGS.dtype == np.float64
        assert toy.AXES == ("animal", "food", "vehicle", "royalty")

    def test_token_ids(self):
        ids = toy.token_ids(["cat", "car", "prince"])
        assert ids.tolist() == [0, 8, 14]
        assert ids.dtype.kind == "i"
        assert qkv.embed(ids, toy.EMBEDDINGS)[1].tolist() == [0.0, 0.0, 0.95, 0.10]

    def test_token_ids_empty(self):
        assert toy.token_ids([]).shape == (0,)

    def test_unknown_word(self):
        with pytest.raises(KeyError, match=r"unknown word 'dgo'; the toy vocabulary is cat, dog"):
            toy.token_ids(["cat", "dgo"])

    def test_single_string_refused(self):
        with pytest.raises(
            TypeError,
            match=r"words must be a sequence of words, not one string; use 'cat dog'\.split\(\)",
        ):
            toy.token_ids("cat dog")

    def test_not_iterable(self):
        with pytest.raises(TypeError, match="words must be a sequence of words, got int"):
            toy.token_ids(3)


class TestBank:
    def test_vectors(self):
        assert {w: v.tolist() for w, v in toy.BANK_VOCAB.items()} == {
            "money": [2.0, 0.0, 0.0, 0.0],
            "river": [0.0, 2.0, 0.0, 0.0],
            "bank": [0.0, 0.0, 2.0, 0.0],
            "grows": [1.0, 0.0, 0.0, 1.0],
            "flows": [0.0, 1.0, 0.0, 1.0],
        }
        assert toy.BANK_AXES == ("finance", "nature", "ambiguous-noun", "verb")

    def test_matrices_are_the_table_rows(self):
        assert toy.W_QUERY.tolist() == [[1, 0, 0, 0], [0, 1, 0, 0], [1, 1, 0, 0], [0, 0, 1, 0]]
        assert toy.W_KEY.tolist() == [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 0, 1], [0, 0, 1, 0]]
        assert toy.W_VALUE.tolist() == np.eye(4).tolist()

    def test_row_reading_reproduces_scores_and_transpose_does_not(self):
        x = toy.bank_sentence(["money", "bank", "grows"])
        expected = [[4.0, 0.0, 2.0], [4.0, 0.0, 2.0], [2.0, 0.0, 2.0]]
        assert ((x @ toy.W_QUERY) @ (x @ toy.W_KEY).T).tolist() == expected
        assert ((x @ toy.W_QUERY.T) @ (x @ toy.W_KEY.T).T).tolist() != expected

    def test_bank_sentence(self):
        x = toy.bank_sentence(["river", "bank", "flows"])
        assert x.shape == (3, 4)
        assert x.tolist() == [[0.0, 2.0, 0.0, 0.0], [0.0, 0.0, 2.0, 0.0], [0.0, 1.0, 0.0, 1.0]]
        x[0, 0] = 99.0  # a fresh, writeable array
        assert toy.BANK_VOCAB["river"][0] == 0.0

    def test_bank_sentence_empty(self):
        assert toy.bank_sentence([]).shape == (0, 4)

    def test_bank_sentence_unknown_word(self):
        with pytest.raises(KeyError, match=r"unknown word 'cash'; the bank example knows money, river, bank"):
            toy.bank_sentence(["cash", "bank"])

    def test_bank_sentence_single_string(self):
        with pytest.raises(TypeError, match="not one string"):
            toy.bank_sentence("money bank grows")


class TestReadOnly:
    @pytest.mark.parametrize(
        "arr",
        [toy.EMBEDDINGS, toy.W_QUERY, toy.W_KEY, toy.W_VALUE, *toy.BANK_VOCAB.values()],
    )
    def test_arrays_are_read_only(self, arr):
        assert not arr.flags.writeable
        with pytest.raises(ValueError, match="read-only"):
            arr[0] = 1.0

    def test_bank_vocab_mapping_is_read_only(self):
        with pytest.raises(TypeError):
            toy.BANK_VOCAB["cash"] = np.zeros(4)


class TestPackage:
    def test_version_and_exports(self):
        # The version's one home is pyproject.toml; qkv reads it back from
        # the installed metadata (a stale install fails here: make install).
        import tomllib
        from pathlib import Path

        pyproject = Path(__file__).resolve().parents[1] / "pyproject.toml"
        assert qkv.__version__ == tomllib.loads(pyproject.read_text())["project"]["version"]
        for name in qkv.__all__:
            assert hasattr(qkv, name), name
        assert qkv.toy is toy
        assert set(toy.__all__) <= set(dir(toy))
