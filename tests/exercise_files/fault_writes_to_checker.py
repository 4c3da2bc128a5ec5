"""Planted fault (attention-head): softmax writes garbage into the checker's reply pipe."""

import os
import sys


def softmax(x, axis=-1):
    reply_fd = int(sys.argv[2])  # python -m qkv.exercises._child REQUEST_FD REPLY_FD ...
    os.write(reply_fd, b"\xff\xff\xff\xffnot a message")
    return x
