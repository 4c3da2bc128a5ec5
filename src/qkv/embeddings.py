"""Token embeddings: turning token ids into vectors.

An embedding is a *lookup*, not a computation: a table ``E`` of shape
``(vocab_size, d_model)`` whose row ``i`` is the vector of token ``i``.
``one_hot(ids, V) @ E`` equals ``E[ids]``: the lookup is a one-hot matrix
product, which is why the table can be learned by gradient descent.

Meaning is read by comparing vectors (cosine similarity), never from a
single coordinate.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from qkv._checks import (
    as_finite_float_array,
    as_token_ids,
    check_array_bytes,
    check_ndim,
    check_positive_int,
    check_token_id,
)

__all__ = [
    "one_hot",
    "embed",
    "cosine_similarity",
    "cosine_similarity_matrix",
    "nearest_neighbours",
]


def one_hot(token_ids: Any, vocab_size: int) -> np.ndarray:
    """Encode token ids as one-hot rows.

    Parameters
    ----------
    token_ids : array_like of int, shape (L,)
        Token ids, each in ``0 .. vocab_size - 1``.
    vocab_size : int
        Number of tokens in the vocabulary, ``V``.

    Returns
    -------
    numpy.ndarray, shape (L, V), float64
        Row ``j`` is all zeros except a 1.0 in column ``token_ids[j]``.

    Raises
    ------
    TypeError
        If ``token_ids`` is not an integer array (floats, bools, strings) or
        ``vocab_size`` is not an integer.
    ValueError
        If ``vocab_size`` is not positive, ``token_ids`` is not 1-D, an id
        is negative or ``>= vocab_size``, or the (L, V) result would exceed
        ``qkv._checks.MAX_ARRAY_BYTES`` (2 GiB).

    Examples
    --------
    >>> from qkv import one_hot
    >>> one_hot([2, 0], vocab_size=3).tolist()
    [[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]]
    """
    vocab_size = check_positive_int(vocab_size, "vocab_size")
    ids = as_token_ids(token_ids, vocab_size)
    check_array_bytes(
        (ids.shape[0], vocab_size),
        np.float64,
        f"token_ids of length {ids.shape[0]} and vocab_size={vocab_size}",
    )
    out = np.zeros((ids.shape[0], vocab_size))
    out[np.arange(ids.shape[0]), ids] = 1.0
    return out


def _as_table(table: Any) -> np.ndarray:
    arr = as_finite_float_array(table, "table")
    check_ndim(arr, "table", 2, "(vocab_size, d_model)")
    return arr


def embed(token_ids: Any, table: Any) -> np.ndarray:
    """Look up the embedding row of each token id.

    Parameters
    ----------
    token_ids : array_like of int, shape (L,)
        Token ids, each a row number of ``table``.
    table : array_like, shape (vocab_size, d_model)
        The embedding table ``E``. It is never modified.

    Returns
    -------
    numpy.ndarray, shape (L, d_model), float64
        ``table[token_ids]``, as a new array: writing into it leaves
        ``table`` unchanged.

    Raises
    ------
    TypeError
        If ``token_ids`` is not an integer array or ``table`` is not numeric.
    ValueError
        If ``table`` is not 2-D or holds NaN/inf, or an id is out of range.

    Examples
    --------
    >>> import numpy as np
    >>> from qkv import embed
    >>> table = np.array([[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]])
    >>> embed([2, 0, 2], table).tolist()
    [[4.0, 5.0], [0.0, 1.0], [4.0, 5.0]]
    """
    arr = _as_table(table)
    ids = as_token_ids(token_ids, arr.shape[0])
    # Integer-array indexing always copies, so the caller's table is safe.
    return arr[ids]


def _as_vector(value: Any, name: str) -> np.ndarray:
    arr = as_finite_float_array(value, name)
    check_ndim(arr, name, 1, "(d,)")
    return arr


def cosine_similarity(a: Any, b: Any) -> float:
    """Cosine of the angle between two vectors.

    Parameters
    ----------
    a, b : array_like, shape (d,)
        Two vectors of the same length.

    Returns
    -------
    float
        ``a . b / (|a| |b|)``, in ``[-1, 1]``: 1 means same direction,
        0 means orthogonal (two different one-hot vectors always give 0).

    Raises
    ------
    TypeError
        If either input is not numeric.
    ValueError
        If an input is not 1-D, holds NaN/inf or is all zeros (a zero vector
        has no direction), or the lengths differ.

    Notes
    -----
    Each vector is scaled by a power of two before its norm is taken, so the
    whole float64 range works: ``[1e200, 1e200]`` with itself is 1.0 (the
    plain formula overflows to NaN) and ``[1e-200]`` is a direction, not a
    zero vector.

    Examples
    --------
    >>> from qkv import cosine_similarity
    >>> cosine_similarity([1.0, 0.0], [0.0, 3.0])
    0.0
    >>> round(cosine_similarity([1.0, 1.0], [2.0, 2.0]), 4)
    1.0
    >>> cosine_similarity([1e200, 1e200], [1e200, 1e200]), cosine_similarity([1e-200], [3e-200])
    (1.0, 1.0)
    """
    a_arr = _as_vector(a, "a")
    b_arr = _as_vector(b, "b")
    if a_arr.shape != b_arr.shape:
        raise ValueError(f"a and b must have the same length d, got shapes {a_arr.shape} and {b_arr.shape}")
    scaled = []
    for name, vec in (("a", a_arr), ("b", b_arr)):
        vec_scaled, is_zero = _scaled_rows(vec)
        if is_zero:
            raise ValueError(f"cosine similarity is undefined for a zero vector: {name} is all zeros")
        scaled.append(vec_scaled)
    a_scaled, b_scaled = scaled
    norms = float(np.linalg.norm(a_scaled)) * float(np.linalg.norm(b_scaled))
    cos = float(a_scaled @ b_scaled) / norms
    return float(np.clip(cos, -1.0, 1.0))  # rounding can land just past +/-1


def cosine_similarity_matrix(vectors: Any) -> np.ndarray:
    """Cosine similarity of every pair of rows.

    Parameters
    ----------
    vectors : array_like, shape (n, d)
        One vector per row, e.g. an embedding table.

    Returns
    -------
    numpy.ndarray, shape (n, n), float64
        Entry ``[i, j]`` is the cosine similarity of rows ``i`` and ``j``;
        symmetric, with ones on the diagonal.

    Raises
    ------
    TypeError
        If ``vectors`` is not numeric.
    ValueError
        If ``vectors`` is not 2-D, holds NaN/inf, or has an all-zero row, or
        the (n, n) result would exceed ``qkv._checks.MAX_ARRAY_BYTES``
        (2 GiB, so n at most 16,384).

    Notes
    -----
    Rows are scaled by powers of two before their norms are taken, as in
    ``cosine_similarity``: a row of 1e200s or of 1e-200s has
    self-similarity 1.0.

    Examples
    --------
    >>> from qkv import cosine_similarity_matrix
    >>> cosine_similarity_matrix([[1.0, 0.0], [1.0, 1.0], [0.0, 2.0]]).round(4).tolist()
    [[1.0, 0.7071, 0.0], [0.7071, 1.0, 0.7071], [0.0, 0.7071, 1.0]]
    """
    arr = as_finite_float_array(vectors, "vectors")
    check_ndim(arr, "vectors", 2, "(n, d)")
    return _cosine_rows(arr, "vectors")


def _scaled_rows(arr: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Scale each row (last axis) by a power of two that puts its largest entry in [0.5, 1).

    Returns the scaled array and a bool array that marks all-zero rows.
    Why: a norm squares the entries, so |[1e200, 1e200]| overflows to inf and
    |[1e-200]| underflows to 0. After scaling, every nonzero row's norm lies
    in [0.5, sqrt(d)). A power of two changes no digit, so the cosine is bit
    for bit the plain formula's wherever that one neither overflows nor
    underflows.
    """
    peaks = np.max(np.abs(arr), axis=-1, initial=0.0)  # (...,): largest |entry| of each row
    _, exponents = np.frexp(peaks)  # peak = mantissa * 2**exponent, mantissa in [0.5, 1)
    return np.ldexp(arr, -exponents[..., None]), peaks == 0.0


def _cosine_rows(arr: np.ndarray, name: str) -> np.ndarray:
    n = arr.shape[0]
    check_array_bytes((n, n), np.float64, f"the similarities of the {n} rows of {name}")
    scaled, is_zero = _scaled_rows(arr)  # (n, d): same directions, entries in (-1, 1)
    zero_rows = np.flatnonzero(is_zero)
    if zero_rows.size:
        raise ValueError(
            f"cosine similarity is undefined for a zero vector: row {int(zero_rows[0])} of {name} is all zeros"
        )
    unit = scaled / np.linalg.norm(scaled, axis=1)[:, None]
    return np.clip(unit @ unit.T, -1.0, 1.0)  # rounding can land just past +/-1


def nearest_neighbours(token_id: int, table: Any, k: int = 3) -> list[tuple[int, float]]:
    """The ``k`` rows of ``table`` most similar to row ``token_id``.

    Parameters
    ----------
    token_id : int
        The row to find neighbours for; it is excluded from the result.
    table : array_like, shape (vocab_size, d_model)
        An embedding table.
    k : int, default 3
        How many neighbours to return, ``1 .. vocab_size - 1``.

    Returns
    -------
    list of (int, float)
        ``(neighbour_id, cosine_similarity)`` pairs, most similar first;
        ties are broken by the smaller id.

    Raises
    ------
    TypeError
        If ``token_id`` or ``k`` is not an integer, or ``table`` not numeric.
    ValueError
        If ``token_id`` is out of range, ``k`` is not in
        ``1 .. vocab_size - 1``, or ``table`` is not a valid 2-D table
        without zero rows. The similarities are computed as a full
        (vocab_size, vocab_size) matrix, so a table of more than 16,384 rows
        is refused (``qkv._checks.MAX_ARRAY_BYTES``, 2 GiB).

    Examples
    --------
    >>> from qkv import nearest_neighbours, toy
    >>> cat = toy.VOCAB.index("cat")
    >>> [(toy.VOCAB[i], round(s, 4)) for i, s in nearest_neighbours(cat, toy.EMBEDDINGS)]
    [('kitten', 0.9985), ('puppy', 0.9866), ('dog', 0.977)]
    """
    arr = _as_table(table)
    vocab_size = arr.shape[0]
    token_id = check_token_id(token_id, vocab_size)
    k = check_positive_int(k, "k")
    if k > vocab_size - 1:
        raise ValueError(
            f"k={k} is too large: the table has {vocab_size} rows, so at most "
            f"k={vocab_size - 1} neighbours exist besides token_id itself"
        )
    sims = _cosine_rows(arr, "table")[token_id]
    # Stable sort on -similarity keeps equal scores in id order.
    order = [int(j) for j in np.argsort(-sims, kind="stable") if j != token_id]
    return [(j, float(sims[j])) for j in order[:k]]
