"""Exercise 2: one attention head.

Write a numerically stable softmax and scaled dot-product attention,

    attention(Q, K, V) = softmax(Q @ K.T / sqrt(d_k)) @ V,

returning the output and the weights. Row-vector convention: one token per
row, so Q is (L_q, d_k), K is (L_k, d_k) and V is (L_k, d_v).

Replace every `raise NotImplementedError(...)` line with your NumPy code,
then check your work from a terminal:

    qkv-exercise check attention-head this_file.py

or, in a notebook, after the cells that define the functions:

    from qkv.exercises import check
    check("attention-head", globals())

attention_backward is an optional stretch: leave it raising
NotImplementedError and its checks are skipped; write it and they count.
"""

import numpy as np


def softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    """Numerically stable softmax along one axis.

    Parameters
    ----------
    x : numpy.ndarray
        Scores of any shape. Do not modify it.
    axis : int, default -1
        The axis whose entries become weights that sum to 1.

    Returns
    -------
    numpy.ndarray, same shape as x
        exp(x) / sum(exp(x)) along axis, computed without overflow:
        softmax([1000, 1001, 1002]) must be [0.0900, 0.2447, 0.6652], not nan.
    """
    raise NotImplementedError("write softmax(x, axis=-1)")


def attention(
    Q: np.ndarray, K: np.ndarray, V: np.ndarray, mask: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Scaled dot-product attention for one head.

    Parameters
    ----------
    Q : numpy.ndarray, shape (L_q, d_k)
        One query per row.
    K : numpy.ndarray, shape (L_k, d_k)
        One key per row.
    V : numpy.ndarray, shape (L_k, d_v)
        One value per row (one per key).
    mask : numpy.ndarray of bool, shape (L_q, L_k), optional
        True = the query may attend to that key; False = weight exactly 0.

    Returns
    -------
    output : numpy.ndarray, shape (L_q, d_v)
        weights @ V.
    weights : numpy.ndarray, shape (L_q, L_k)
        softmax(Q @ K.T / sqrt(d_k)) row by row; each row sums to 1.
    """
    raise NotImplementedError("write attention(Q, K, V, mask=None)")


def attention_backward(
    Q: np.ndarray, K: np.ndarray, V: np.ndarray, d_output: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Optional stretch: gradients of attention (no mask).

    Parameters
    ----------
    Q, K, V : numpy.ndarray
        As in attention.
    d_output : numpy.ndarray, shape (L_q, d_v)
        Gradient of the loss with respect to attention's output.

    Returns
    -------
    dQ, dK, dV : numpy.ndarray
        Gradients of the loss with respect to Q, K and V, shaped like them.
        Checked against the library's backward pass, qkv.attention_backward.
    """
    raise NotImplementedError("optional stretch: write attention_backward(Q, K, V, d_output)")
