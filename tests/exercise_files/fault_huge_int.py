"""Planted fault (attention-head): softmax returns 10**400, too large for a float."""


def softmax(x, axis=-1):
    return 10**400
