"""Planted fault (attention-head): right answers, and a non-daemon thread that never ends."""

import threading
import time

import numpy as np


def _forever():
    while True:
        time.sleep(1)


threading.Thread(target=_forever).start()  # keeps a plain Python script alive


def softmax(x, axis=-1):
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def attention(Q, K, V, mask=None):
    scores = Q @ K.T / np.sqrt(Q.shape[-1])
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    weights = softmax(scores)
    return weights @ V, weights
