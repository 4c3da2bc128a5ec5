"""Planted fault (attention-head): softmax ends the process (os._exit(0)), attention calls sys.exit(0).

attention is right otherwise; its checks run in a fresh process after softmax ended the first one.
"""

import os
import sys

import numpy as np


def softmax(x, axis=-1):
    os._exit(0)


def attention(Q, K, V, mask=None):
    if Q.shape[0] == 4:  # only in the mask check
        sys.exit(0)
    scores = Q @ K.T / np.sqrt(Q.shape[-1])
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights = e / e.sum(axis=-1, keepdims=True)
    return weights @ V, weights
