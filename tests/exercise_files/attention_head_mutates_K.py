"""Exercise 2 with an honest mistake (issue 26.4): attention scales K in place,
so the caller's K changes. The numbers it returns are right."""

import numpy as np


def softmax(x, axis=-1):
    z = x - np.max(x, axis=axis, keepdims=True)
    e = np.exp(z)
    return e / np.sum(e, axis=axis, keepdims=True)


def attention(Q, K, V, mask=None):
    K /= np.sqrt(Q.shape[-1])  # the mistake: writes into the caller's K
    scores = Q @ K.T
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    weights = softmax(scores, axis=-1)
    return weights @ V, weights
