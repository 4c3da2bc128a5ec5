"""ALiBi: attention with linear biases (Press et al. 2021, arXiv:2108.12409).

No position vectors at all. Each head adds a penalty proportional to the
distance between query and key to the attention scores, before the softmax::

    scores[h, i, j] = q_i . k_j / sqrt(d_k) - slopes[h] * (i - j)     (j <= i)

A key ``i - j`` positions back loses ``slopes[h] * (i - j)``: a head with a
steep slope looks at the last few tokens, a head with a gentle slope looks
far back. The slopes are fixed, not learned: a geometric sequence that
starts at ``2**(-8/n)`` and has that same ratio, for ``n`` heads.

The paper's models are causal language models, so a query never sees a
later key; :func:`alibi_bias` therefore gives future keys (``j > i``) the
value ``-inf``, which makes the bias a complete causal mask on its own.
"""

from __future__ import annotations

import numpy as np

from qkv._checks import check_positive_int

__all__ = ["alibi_slopes", "alibi_bias", "MAX_BIAS_ENTRIES"]

#: The most entries ``num_heads * num_positions**2`` that :func:`alibi_bias`
#: will allocate: 2**26 float64 numbers, 512 MiB. Enough for 8 heads at
#: 2,896 positions or 16 heads at 2,048 (BLOOM's training length).
MAX_BIAS_ENTRIES = 2**26


def _power_of_two_slopes(num_heads: int) -> list[float]:
    """``2**(-8k/n)`` for ``k = 1 .. n``: start at ``2**(-8/n)``, same ratio."""
    return [2.0 ** (-8.0 * k / num_heads) for k in range(1, num_heads + 1)]


def alibi_slopes(num_heads: int) -> np.ndarray:
    """The fixed per-head slopes of ALiBi, in the order the heads get them.

    For a power of two ``n``, head ``k`` (counting from 1) gets
    ``2**(-8k/n)``: for 8 heads ``1/2, 1/4, ..., 1/256``. This and the rule
    for other head counts are those of ``get_slopes`` in the paper's
    reference code (ofirpress/attention_with_linear_biases,
    ``fairseq/models/transformer.py``; its comment says the paper only
    trains models with a power-of-two number of heads). For other counts it
    takes the slopes of the closest power of two below, ``c``, then adds
    every other slope of ``2c`` heads (the 1st, 3rd, 5th, ...) until there
    are ``n``. So the result is *not* sorted: for 6 heads, ``c = 4`` gives
    ``1/4, 1/16, 1/64, 1/256`` and 8 heads' odd-numbered slopes add
    ``1/2, 1/8``. BLOOM's ``build_alibi_tensor`` in Hugging Face
    transformers (``models/bloom/modeling_bloom.py``) builds the same list.

    Parameters
    ----------
    num_heads : int
        Number of attention heads ``n``; at least 1.

    Returns
    -------
    numpy.ndarray, shape (num_heads,), float64
        ``slopes[h]`` multiplies the distance in head ``h``. All lie in
        ``(0, 1)``.

    Raises
    ------
    TypeError
        If ``num_heads`` is not an integer (bools are refused too).
    ValueError
        If ``num_heads < 1``.

    Examples
    --------
    >>> from qkv import alibi_slopes
    >>> [float(1 / s) for s in alibi_slopes(8)]
    [2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0]
    >>> [float(1 / s) for s in alibi_slopes(6)]   # 4 heads' slopes, then 2 of 8 heads'
    [4.0, 16.0, 64.0, 256.0, 2.0, 8.0]
    """
    num_heads = check_positive_int(num_heads, "num_heads")
    closest = 1 << (num_heads.bit_length() - 1)  # largest power of two <= num_heads
    slopes = _power_of_two_slopes(closest)
    slopes += _power_of_two_slopes(2 * closest)[0::2][: num_heads - closest]
    return np.array(slopes, dtype=np.float64)


def alibi_bias(num_heads: int, num_positions: int) -> np.ndarray:
    """The ALiBi bias to add to causal attention scores, one matrix per head.

    ``bias[h, i, j] = -slopes[h] * (i - j)`` for ``j <= i`` (0 on the
    diagonal, more negative the further back the key is) and ``-inf`` for
    ``j > i``.

    Why ``-inf`` above the diagonal: ALiBi is defined for causal language
    models, where query ``i`` never sees key ``j > i``. The formula
    continued past the diagonal would give future keys a *positive* bias
    (a reward for looking ahead), and a 0 there would rank every future key
    above every past one; either is wrong unless a causal mask is added
    too. With ``-inf`` the array *is* the causal mask as well: pass it as
    the float ``mask`` of :func:`qkv.scaled_dot_product_attention` or
    :func:`qkv.multi_head_attention` and nothing else is needed. The
    reference code does the same sum in another form: it adds
    ``slopes[h] * j`` (identical rows) to fairseq's future mask (``-inf``
    above the diagonal), which gives the same softmax because adding the
    row constant ``-slopes[h] * i`` changes no softmax row. BLOOM's
    ``build_alibi_tensor`` also builds ``slopes[h] * j`` and applies its
    causal mask separately.

    Parameters
    ----------
    num_heads : int
        Number of heads; at least 1. See :func:`alibi_slopes`.
    num_positions : int
        Sequence length ``L`` (queries and keys at positions ``0 .. L-1``);
        at least 1, and ``num_heads * L**2`` at most ``MAX_BIAS_ENTRIES``
        (2**26, i.e. 512 MiB of float64).

    Returns
    -------
    numpy.ndarray, shape (num_heads, num_positions, num_positions), float64
        Broadcasts against scores of shape ``(..., num_heads, L, L)``.

    Raises
    ------
    TypeError
        If ``num_heads`` or ``num_positions`` is not an integer.
    ValueError
        If either is below 1, or the array would exceed
        ``MAX_BIAS_ENTRIES`` entries.

    Examples
    --------
    >>> from qkv import alibi_bias
    >>> bias = alibi_bias(2, 4)                  # slopes 1/16 and 1/256
    >>> bias.shape                               # (num_heads, L, L)
    (2, 4, 4)
    >>> print((bias[0] * 16).tolist())           # head 0, in units of its slope
    [[0.0, -inf, -inf, -inf],
     [-1.0, 0.0, -inf, -inf],
     [-2.0, -1.0, 0.0, -inf],
     [-3.0, -2.0, -1.0, 0.0]]
    """
    num_heads = check_positive_int(num_heads, "num_heads")
    num_positions = check_positive_int(num_positions, "num_positions")
    entries = num_heads * num_positions**2
    if entries > MAX_BIAS_ENTRIES:
        raise ValueError(
            f"num_positions={num_positions} with num_heads={num_heads} needs "
            f"{entries:,} entries ({entries * 8 / 2**20:,.0f} MiB of float64), more than "
            f"MAX_BIAS_ENTRIES={MAX_BIAS_ENTRIES:,}; build the bias for fewer positions"
        )
    slopes = alibi_slopes(num_heads)  # (h,)
    positions = np.arange(num_positions)
    offset = positions[None, :] - positions[:, None]  # (1, L) - (L, 1) -> (L, L): j - i
    # slopes * (j - i) is -slopes * (i - j), written so the diagonal is +0.0, not -0.0.
    bias = slopes[:, None, None] * offset  # (h, 1, 1) * (L, L) -> (h, L, L)
    bias[:, offset > 0] = -np.inf  # j > i: the future, never attended
    return bias
