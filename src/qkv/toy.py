"""The curriculum's canonical toy data, as read-only arrays.

Two small worlds:

* a 15-word vocabulary with a 4-d embedding table whose axes are labelled
  (animal, food, vehicle, royalty). Labelled axes are a teaching device:
  in a real model no single coordinate has a human meaning;
* the "money bank grows" / "river bank flows" example, with hand-picked
  projection matrices ``W_QUERY``, ``W_KEY``, ``W_VALUE`` (row-vector
  convention, ``Q = X @ W_QUERY``; row ``r`` of each matrix is the table
  row ``r`` of the curriculum).

The arrays are read-only (``flags.writeable`` is False) so that no lesson
can silently change the data the next lesson relies on.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType

import numpy as np

__all__ = [
    "VOCAB",
    "EMBEDDINGS",
    "AXES",
    "token_ids",
    "BANK_VOCAB",
    "BANK_AXES",
    "W_QUERY",
    "W_KEY",
    "W_VALUE",
    "bank_sentence",
]


def _frozen(rows: object) -> np.ndarray:
    arr = np.array(rows, dtype=np.float64)
    arr.flags.writeable = False
    return arr


VOCAB: tuple[str, ...] = (
    "cat", "dog", "kitten", "puppy", "apple", "banana", "bread", "cheese",
    "car", "bus", "train", "bike", "king", "queen", "prince",
)  # fmt: skip

AXES: tuple[str, ...] = ("animal", "food", "vehicle", "royalty")

# One row per token id, in VOCAB order; columns follow AXES.
EMBEDDINGS: np.ndarray = _frozen(
    [
        [0.90, 0.10, 0.00, 0.05],  # 0 cat
        [0.85, 0.05, 0.10, 0.20],  # 1 dog
        [0.95, 0.10, 0.00, 0.00],  # 2 kitten
        [0.90, 0.05, 0.10, 0.15],  # 3 puppy
        [0.05, 0.90, 0.00, 0.05],  # 4 apple
        [0.00, 0.95, 0.05, 0.00],  # 5 banana
        [0.00, 0.85, 0.10, 0.10],  # 6 bread
        [0.15, 0.85, 0.00, 0.05],  # 7 cheese
        [0.00, 0.00, 0.95, 0.10],  # 8 car
        [0.05, 0.00, 0.90, 0.25],  # 9 bus
        [0.00, 0.05, 0.95, 0.20],  # 10 train
        [0.10, 0.00, 0.85, 0.05],  # 11 bike
        [0.10, 0.05, 0.05, 0.95],  # 12 king
        [0.05, 0.05, 0.00, 0.95],  # 13 queen
        [0.15, 0.00, 0.10, 0.90],  # 14 prince
    ]
)

_ID_OF = {word: i for i, word in enumerate(VOCAB)}


def _check_words(words: object) -> list[str]:
    # A bare string would be iterated letter by letter: refuse it.
    if isinstance(words, str):
        raise TypeError(f"words must be a sequence of words, not one string; use {words!r}.split()")
    if not isinstance(words, Iterable):
        raise TypeError(f"words must be a sequence of words, got {type(words).__name__}")
    return list(words)


def token_ids(words: Iterable[str]) -> np.ndarray:
    """Token ids of words from the toy vocabulary ``VOCAB``.

    Parameters
    ----------
    words : sequence of str
        Words from ``VOCAB``, e.g. ``["cat", "dog"]``.

    Returns
    -------
    numpy.ndarray, shape (L,), int
        The id (row of ``EMBEDDINGS``) of each word.

    Raises
    ------
    TypeError
        If ``words`` is a single string or not iterable.
    KeyError
        If a word is not in ``VOCAB``; the message names it.

    Examples
    --------
    >>> from qkv import toy
    >>> toy.token_ids(["king", "cat"]).tolist()
    [12, 0]
    """
    ids = []
    for word in _check_words(words):
        if word not in _ID_OF:
            raise KeyError(f"unknown word {word!r}; the toy vocabulary is {', '.join(VOCAB)}")
        ids.append(_ID_OF[word])
    return np.array(ids, dtype=np.intp)


BANK_AXES: tuple[str, ...] = ("finance", "nature", "ambiguous-noun", "verb")

BANK_VOCAB: Mapping[str, np.ndarray] = MappingProxyType(
    {
        "money": _frozen([2.0, 0.0, 0.0, 0.0]),
        "river": _frozen([0.0, 2.0, 0.0, 0.0]),
        "bank": _frozen([0.0, 0.0, 2.0, 0.0]),
        "grows": _frozen([1.0, 0.0, 0.0, 1.0]),
        "flows": _frozen([0.0, 1.0, 0.0, 1.0]),
    }
)

# Row r of each matrix is the curriculum table's row r. With Q = X @ W_QUERY
# this reading gives the expected scores [[4,0,2],[4,0,2],[2,0,2]]; the
# transposed reading would not. Row 2 of W_QUERY says: an ambiguous noun
# looks for finance and nature context.
W_QUERY: np.ndarray = _frozen(
    [
        [1.0, 0.0, 0.0, 0.0],
        [0.0, 1.0, 0.0, 0.0],
        [1.0, 1.0, 0.0, 0.0],
        [0.0, 0.0, 1.0, 0.0],
    ]
)
W_KEY: np.ndarray = _frozen(
    [
        [1.0, 0.0, 0.0, 0.0],
        [0.0, 1.0, 0.0, 0.0],
        [0.0, 0.0, 0.0, 1.0],
        [0.0, 0.0, 1.0, 0.0],
    ]
)
# Identity: the output is read in the input's features (finance, nature, ...).
W_VALUE: np.ndarray = _frozen(np.eye(4))


def bank_sentence(words: Iterable[str]) -> np.ndarray:
    """Stack the bank-example vectors of ``words`` into an input matrix.

    Parameters
    ----------
    words : sequence of str
        Words from ``BANK_VOCAB`` (money, river, bank, grows, flows).

    Returns
    -------
    numpy.ndarray, shape (L, 4), float64
        Row ``j`` is ``BANK_VOCAB[words[j]]``; a new, writeable array.

    Raises
    ------
    TypeError
        If ``words`` is a single string or not iterable.
    KeyError
        If a word is not in ``BANK_VOCAB``; the message names it.

    Examples
    --------
    >>> from qkv import toy
    >>> toy.bank_sentence(["money", "bank", "grows"]).tolist()
    [[2.0, 0.0, 0.0, 0.0], [0.0, 0.0, 2.0, 0.0], [1.0, 0.0, 0.0, 1.0]]
    """
    rows = []
    for word in _check_words(words):
        if word not in BANK_VOCAB:
            raise KeyError(f"unknown word {word!r}; the bank example knows {', '.join(BANK_VOCAB)}")
        rows.append(BANK_VOCAB[word])
    if not rows:
        return np.zeros((0, len(BANK_AXES)))
    return np.stack(rows)  # np.stack copies, so the result is writeable
