"""Planted fault (attention-head): softmax kills its own process with SIGTERM."""

import os
import signal


def softmax(x, axis=-1):
    os.kill(os.getpid(), signal.SIGTERM)
