"""Wrong on purpose (input-layer): exponent i/d instead of 2i/d."""

import numpy as np


def one_hot(token_ids, vocab_size):
    ids = np.asarray(token_ids)
    out = np.zeros((len(ids), vocab_size))
    out[np.arange(len(ids)), ids] = 1.0
    return out


def embed(token_ids, E):
    return np.asarray(E)[np.asarray(token_ids)]


def sinusoidal_pe(seq_len, d_model):
    if d_model % 2:
        raise ValueError(f"d_model must be even, got {d_model}")
    pos = np.arange(seq_len)[:, None]  # positions from 0
    i = np.arange(d_model // 2)  # pair index
    angles = pos / 10000.0 ** (i / d_model)  # MISTAKE: i/d, not 2i/d
    pe = np.zeros((seq_len, d_model))
    pe[:, 0::2] = np.sin(angles)
    pe[:, 1::2] = np.cos(angles)
    return pe


def build_input(token_ids, E, pe=None):
    length = len(token_ids)
    positions = sinusoidal_pe(length, E.shape[1]) if pe is None else pe[:length]
    return embed(token_ids, E) + positions
