"""Planted fault (attention-head): softmax is right; attention never returns, and waits without using the CPU.

For the tests about what a time limit reached inside a function does to the
report: the checker stops it exactly as it stops fault_endless_loop_in_function.py
(it kills the process group at the limit), without a core spinning until then.
"""

import time

import numpy as np


def softmax(x, axis=-1):
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def attention(Q, K, V, mask=None):
    while True:
        time.sleep(1)
