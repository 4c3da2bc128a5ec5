"""Planted fault (attention-head): right answers, and np.seterr(all="raise") at top level.

The checker's reference code underflows in exp (softmax of [-1000, ...]); this
setting must not reach it.
"""

import numpy as np

np.seterr(all="raise")


def softmax(x, axis=-1):
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def attention(Q, K, V, mask=None):
    scores = Q @ K.T / np.sqrt(Q.shape[-1])
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    weights = softmax(scores)
    return weights @ V, weights
