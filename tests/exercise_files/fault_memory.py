"""Planted fault (attention-head): softmax allocates 1 GiB (run it with --memory-mb 512)."""

import numpy as np


def softmax(x, axis=-1):
    return np.ones(2**27)  # 2**27 float64 = 1 GiB
