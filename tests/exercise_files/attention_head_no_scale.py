"""Wrong on purpose (attention-head): forgets to divide the scores by sqrt(d_k)."""

import numpy as np


def softmax(x, axis=-1):
    z = x - np.max(x, axis=axis, keepdims=True)
    e = np.exp(z)
    return e / np.sum(e, axis=axis, keepdims=True)


def attention(Q, K, V, mask=None):
    scores = Q @ K.T  # MISTAKE: no 1 / sqrt(d_k)
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    weights = softmax(scores, axis=-1)
    return weights @ V, weights


def attention_backward(Q, K, V, d_output):
    scale = 1.0 / np.sqrt(Q.shape[-1])
    _, weights = attention(Q, K, V)
    d_v = weights.T @ d_output
    d_weights = d_output @ V.T
    # softmax backward, row by row: dS = W * (dW - sum(dW * W))
    d_scores = weights * (d_weights - np.sum(d_weights * weights, axis=-1, keepdims=True))
    d_q = d_scores @ K * scale
    d_k = d_scores.T @ Q * scale
    return d_q, d_k, d_v
