"""Exercise 1: the input layer.

Turn token ids into the vectors a Transformer reads: look each id up in an
embedding table E, then add a position vector so that word order survives.

Replace every `raise NotImplementedError(...)` line with your NumPy code,
then check your work from a terminal:

    qkv-exercise check input-layer this_file.py

or, in a notebook, after the cells that define the functions:

    from qkv.exercises import check
    check("input-layer", globals())

The checks use small inputs (the toy vocabulary of 15 words with a 4-d
table E), compare your results with the reference implementation and name
the classic mistakes when they recognise one.
"""

import numpy as np


def one_hot(token_ids: np.ndarray, vocab_size: int) -> np.ndarray:
    """Encode token ids as one-hot rows.

    Parameters
    ----------
    token_ids : numpy.ndarray of int, shape (L,)
        Token ids, each in 0 .. vocab_size - 1.
    vocab_size : int
        Size of the vocabulary, |V|.

    Returns
    -------
    numpy.ndarray, shape (L, vocab_size)
        Row j is all zeros except a 1.0 in column token_ids[j].
        Example: one_hot([2, 0], 3) is [[0, 0, 1], [1, 0, 0]].
    """
    raise NotImplementedError("write one_hot(token_ids, vocab_size)")


def embed(token_ids: np.ndarray, E: np.ndarray) -> np.ndarray:
    """Look up the embedding row of each token id.

    Parameters
    ----------
    token_ids : numpy.ndarray of int, shape (L,)
        Token ids, each a row number of E.
    E : numpy.ndarray, shape (vocab_size, d_model)
        The embedding table. Do not modify it.

    Returns
    -------
    numpy.ndarray, shape (L, d_model)
        Row j is E[token_ids[j]]. (It equals one_hot(token_ids, |V|) @ E.)
    """
    raise NotImplementedError("write embed(token_ids, E)")


def sinusoidal_pe(seq_len: int, d_model: int) -> np.ndarray:
    """The paper's sinusoidal positional encodings.

    With i the pair index 0 .. d_model/2 - 1 and positions counted from 0:

        PE(pos, 2i)     = sin(pos / 10000^(2i / d_model))
        PE(pos, 2i + 1) = cos(pos / 10000^(2i / d_model))

    Parameters
    ----------
    seq_len : int
        Number of positions; rows are positions 0 .. seq_len - 1.
    d_model : int
        Width of each vector; must be even.

    Returns
    -------
    numpy.ndarray, shape (seq_len, d_model)
        Sin in the even columns, cos in the odd columns (interleaved).

    Raises
    ------
    ValueError
        If d_model is odd (dimensions come in sin/cos pairs).
    """
    raise NotImplementedError("write sinusoidal_pe(seq_len, d_model)")


def build_input(token_ids: np.ndarray, E: np.ndarray, pe: np.ndarray | None = None) -> np.ndarray:
    """The Transformer's input: token vectors plus position vectors.

    Parameters
    ----------
    token_ids : numpy.ndarray of int, shape (L,)
        The tokens of one input.
    E : numpy.ndarray, shape (vocab_size, d_model)
        The embedding table. Do not modify it.
    pe : numpy.ndarray, shape (max_len, d_model), optional
        A learned positional table. When given, use its first L rows instead
        of the sinusoidal encodings.

    Returns
    -------
    numpy.ndarray, shape (L, d_model)
        E[token_ids] + PE[:L]: added, so the width stays d_model.
    """
    raise NotImplementedError("write build_input(token_ids, E, pe=None)")
