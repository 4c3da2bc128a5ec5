"""Planted fault (attention-head): softmax returns an object whose __array__ raises."""


class Weights:
    def __array__(self, dtype=None, copy=None):
        raise RuntimeError("no numbers in here")


def softmax(x, axis=-1):
    return Weights()
