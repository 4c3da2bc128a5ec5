"""Attention over key blocks with a running max and a running sum.

``scaled_dot_product_attention`` builds the whole ``(L_q, L_k)`` score
matrix: 100,000 tokens would need 10^10 scores. This module computes the
same output without ever holding it, the way a database streams an
aggregate instead of materialising a join: it reads the keys and values in
blocks and keeps, for every query row,

* ``m``, the largest score seen so far (the running max),
* ``s``, the sum of ``exp(score - m)`` seen so far (the running sum),
* ``acc``, the sum of ``exp(score - m) * value`` seen so far.

When a block raises the max from ``m`` to ``m_new``, everything already
summed is rescaled by ``exp(m - m_new)``; at the end ``acc / s`` is the
softmax-weighted average. This one-pass ("online") softmax is from Milakov
and Gimelshein (2018), arXiv:1805.02867; FlashAttention (Dao et al. 2022,
arXiv:2205.14135, Algorithm 1) tiles attention the same way so the score
blocks stay in fast on-chip memory. The result is exact, not approximate:
it differs from the materialised version by rounding only.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from qkv._checks import check_int, check_real_number
from qkv.attention import _check_attention_inputs, _first_index, _scores_cannot_overflow

__all__ = ["streaming_attention"]

# At most this many scores per block of queries x block of keys (16 MiB in
# float32): the query block is as tall as this allows.
_BLOCK_SCORES = 4 * 1024**2


def streaming_attention(
    query: Any,
    key: Any,
    value: Any,
    block_size: int = 1024,
    causal: bool = False,
    *,
    scale: float | None = None,
) -> np.ndarray:
    """``softmax(query @ key.T * scale) @ value``, one block of keys at a time.

    Parameters
    ----------
    query : array_like, shape (..., L_q, d_k)
    key : array_like, shape (..., L_k, d_k)
    value : array_like, shape (..., L_k, d_v)
        As for ``scaled_dot_product_attention``; leading batch dimensions
        broadcast like ``matmul``'s.
    block_size : int, default 1024
        Keys (and values) read per step. Any positive integer: it need not
        divide ``L_k``, and 1 works (slowly).
    causal : bool, default False
        If True, query ``i`` attends to keys ``0 .. i`` only (the top-left
        aligned triangle, as ``causal_mask`` and PyTorch's ``is_causal``).
        Key blocks entirely above the diagonal are skipped, not computed.
    scale : float, optional
        Multiplies the scores; defaults to ``1 / sqrt(d_k)``.

    Returns
    -------
    numpy.ndarray, shape (..., L_q, d_v)
        Equal to ``scaled_dot_product_attention(query, key, value)[0]``
        (with ``mask=causal_mask(...)`` when ``causal``) up to rounding:
        about 1e-15 in float64. The dtype is the caller's when it is
        float32 (float32 in, float32 out: within float32 rounding of the
        float64 result); anything else is computed in float64.

    Notes
    -----
    Memory: besides the inputs and the output, one block of scores (at most
    4 Mi entries over all batch elements, or one query row of a block if
    ``block_size`` alone is larger) and three running arrays of ``L_q``
    rows; the whole ``(L_q, L_k)`` matrix only when it fits in one block. With ``L_k = 0`` every row has nothing to attend
    to and the output is zeros, as ``scaled_dot_product_attention`` returns.

    Raises
    ------
    TypeError
        If an input is not numeric, ``block_size`` is not an integer,
        ``causal`` is not a bool or ``scale`` is not a real number.
    ValueError
        Everything ``scaled_dot_product_attention`` refuses (shapes that do
        not fit, NaN/inf, scores that overflow), and ``block_size < 1``.

    Examples
    --------
    >>> import numpy as np
    >>> import qkv
    >>> rng = np.random.default_rng(0)
    >>> q, k, v = rng.normal(size=(3, 10, 4))          # L = 10, d = 4
    >>> streamed = qkv.streaming_attention(q, k, v, block_size=3)  # 3 + 3 + 3 + 1 keys
    >>> full, _ = qkv.scaled_dot_product_attention(q, k, v)
    >>> bool(np.abs(streamed - full).max() < 1e-12)
    True
    """
    block_size = check_int(block_size, "block_size")
    if block_size < 1:
        raise ValueError(f"block_size must be at least 1 (keys read per step), got {block_size}")
    if not isinstance(causal, (bool, np.bool_)):
        raise TypeError(f"causal must be True or False, got {causal!r} of type {type(causal).__name__}")
    # float32 inputs stay float32 (no float64 copies of a long sequence).
    q, k, v = _check_attention_inputs(query, key, value, keep_float32=True)
    scale = 1.0 / np.sqrt(q.shape[-1]) if scale is None else check_real_number(scale, "scale")
    return _stream(q, k, v, block_size, bool(causal), scale)


def _key_blocks(q_start: int, q_stop: int, len_k: int, block_size: int, causal: bool) -> list[tuple[int, int]]:
    """The (start, stop) key blocks that queries ``q_start .. q_stop - 1`` read.

    Causal: the last key any of these queries may read is ``q_stop - 1``, so
    blocks after it are never computed.
    """
    k_end = min(len_k, q_stop) if causal else len_k
    return [(start, min(start + block_size, k_end)) for start in range(0, k_end, block_size)]


def _stream(q: np.ndarray, k: np.ndarray, v: np.ndarray, block_size: int, causal: bool, scale: float) -> np.ndarray:
    """The online softmax over key blocks, on validated arrays of one dtype."""
    dtype = q.dtype
    batch = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    len_q, len_k, d_v = q.shape[-2], k.shape[-2], v.shape[-1]
    out = np.zeros(batch + (len_q, d_v), dtype=dtype)
    if len_q == 0 or len_k == 0:
        return out
    # As many query rows as keep one block of scores, over every batch element,
    # within _BLOCK_SCORES; causal blocks no taller than the key blocks, so whole
    # key blocks above the diagonal can be skipped.
    rows = max(1, _BLOCK_SCORES // (block_size * max(1, int(np.prod(batch)))))
    if causal:
        rows = min(rows, block_size)
    # The per-block overflow check is a full pass over every block: skipped
    # where no score can overflow.
    check_blocks = not _scores_cannot_overflow(q, k, scale, dtype)
    # A scale too large for the dtype becomes inf here, and query * scale may
    # overflow below: the scores check names either as an overflow of
    # query @ key.T * scale, so neither warns on the way.
    with np.errstate(over="ignore"):
        scale = dtype.type(scale)
    # One buffer for every block's scores: a fresh array per block (16 MiB at
    # the default size) costs page faults on first touch, more than its exp.
    buffer = np.empty(batch + (min(rows, len_q), min(block_size, len_k)), dtype=dtype)
    for q_start in range(0, len_q, rows):
        q_stop = min(q_start + rows, len_q)
        with np.errstate(over="ignore"):
            q_block = q[..., q_start:q_stop, :] * scale  # (..., b_q, d_k), scaled once
        running_max = np.full(batch + (q_stop - q_start, 1), -np.inf, dtype=dtype)
        running_sum = np.zeros(batch + (q_stop - q_start, 1), dtype=dtype)
        acc = np.zeros(batch + (q_stop - q_start, d_v), dtype=dtype)
        for k_start, k_stop in _key_blocks(q_start, q_stop, len_k, block_size, causal):
            with np.errstate(over="ignore", invalid="ignore"):
                # (..., b_q, d_k) @ (..., d_k, b_k) -> (..., b_q, b_k)
                scores = np.matmul(
                    q_block,
                    np.swapaxes(k[..., k_start:k_stop, :], -1, -2),
                    out=buffer[..., : q_stop - q_start, : k_stop - k_start],
                )
            if check_blocks and not np.isfinite(scores).all():
                index = _first_index(~np.isfinite(scores))
                at = index[:-2] + (q_start + index[-2], k_start + index[-1])
                raise ValueError(
                    f"the attention scores query @ key.T * scale overflow {dtype.name} at "
                    f"score index {at}, so their softmax cannot be computed: make query, "
                    "key or scale smaller"
                )
            if causal and k_stop - 1 > q_start:  # the block straddles the diagonal
                query_pos = np.arange(q_start, q_stop)[:, None]
                key_pos = np.arange(k_start, k_stop)[None, :]
                scores = np.where(key_pos <= query_pos, scores, -np.inf).astype(dtype, copy=False)
            block_max = scores.max(axis=-1, keepdims=True)
            new_max = np.maximum(running_max, block_max)  # finite: every row reads key 0 first
            rescale = np.exp(running_max - new_max)  # exp(-inf) = 0 on the first block
            np.subtract(scores, new_max, out=scores)
            np.exp(scores, out=scores)  # the block's unnormalised weights
            running_sum = running_sum * rescale + scores.sum(axis=-1, keepdims=True)
            # (..., b_q, b_k) @ (..., b_k, d_v) -> (..., b_q, d_v)
            acc = acc * rescale + scores @ v[..., k_start:k_stop, :]
            running_max = new_max
        out[..., q_start:q_stop, :] = acc / running_sum
    if not np.isfinite(out).all():
        # Weights sum to 1, but value entries near the dtype's limit can round past it.
        raise ValueError(
            f"the output overflows {dtype.name} at index {_first_index(~np.isfinite(out))}: "
            "entries of value near the limit of the dtype can round past it when averaged; "
            "make value smaller"
        )
    return out
