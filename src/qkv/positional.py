"""Positional encodings: stamping word order into the vectors.

Self-attention without positions is permutation *equivariant*: reorder the
input rows and the output rows reorder the same way. Adding a position
vector to each token (``Z = X + P``, same width ``d_model``) breaks that.

Sinusoidal encoding, in the paper's interleaved layout (Vaswani et al.
2017, section 3.5), with ``i`` the *pair* index ``0 .. d_model/2 - 1``::

    PE(pos, 2i)     = sin(pos / base**(2i / d_model))   # even dimensions
    PE(pos, 2i + 1) = cos(pos / base**(2i / d_model))   # odd dimensions

Pair 0 is the fastest wave (wavelength 2*pi positions), the last pair the
slowest. A learned table is the alternative: one trained row per position,
and no row past its ``max_len``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from qkv._checks import (
    as_finite_float_array,
    check_array_bytes,
    check_int,
    check_ndim,
    check_positive_int,
    check_real_number,
    check_seed,
)

__all__ = [
    "pair_frequencies",
    "pair_wavelengths",
    "sinusoidal_encoding",
    "shift_matrix",
    "learned_positional_table",
    "positional_rows",
]


def _check_d_model(d_model: Any) -> int:
    d_model = check_positive_int(d_model, "d_model")
    if d_model % 2:
        raise ValueError(f"d_model must be even (dimensions come in sin/cos pairs), got d_model={d_model}")
    return d_model


def _check_base(base: Any) -> float:
    base = check_real_number(base, "base")
    if base <= 1.0:
        raise ValueError(f"base must be greater than 1 so that wavelengths grow, got base={base}")
    return base


def pair_frequencies(d_model: int, base: float = 10000.0) -> np.ndarray:
    """Angular frequency of each sin/cos pair.

    Parameters
    ----------
    d_model : int
        Model width; positive and even.
    base : float, default 10000.0
        The paper's constant; must be greater than 1.

    Returns
    -------
    numpy.ndarray, shape (d_model // 2,), float64
        ``base ** (-2i / d_model)`` for pair ``i``: 1.0 for pair 0 (the
        fastest), decreasing towards ``1 / base``.

    Raises
    ------
    TypeError
        If ``d_model`` is not an integer or ``base`` not a real number.
    ValueError
        If ``d_model`` is odd or not positive, ``base <= 1``, or the result
        would exceed ``qkv._checks.MAX_ARRAY_BYTES`` (2 GiB).

    Examples
    --------
    >>> from qkv import pair_frequencies
    >>> (1 / pair_frequencies(6)).round(4).tolist()
    [1.0, 21.5443, 464.1589]
    """
    d_model = _check_d_model(d_model)
    base = _check_base(base)
    check_array_bytes((d_model // 2,), np.float64, f"d_model={d_model}")
    two_i = np.arange(0, d_model, 2)  # 2i for i = 0 .. d_model/2 - 1
    return base ** (-two_i / d_model)


def pair_wavelengths(d_model: int, base: float = 10000.0) -> np.ndarray:
    """Wavelength, in positions, of each sin/cos pair.

    Parameters
    ----------
    d_model : int
        Model width; positive and even.
    base : float, default 10000.0
        Must be greater than 1.

    Returns
    -------
    numpy.ndarray, shape (d_model // 2,), float64
        ``2 * pi / pair_frequencies(d_model, base)``: ``2 * pi`` for pair 0,
        growing geometrically to ``2 * pi * base ** ((d_model - 2) / d_model)``.

    Raises
    ------
    TypeError
        If ``d_model`` is not an integer or ``base`` not a real number.
    ValueError
        If ``d_model`` is odd or not positive, ``base <= 1``, or the result
        would exceed ``qkv._checks.MAX_ARRAY_BYTES`` (2 GiB).

    Examples
    --------
    >>> from qkv import pair_wavelengths
    >>> wavelengths = pair_wavelengths(16)
    >>> round(float(wavelengths[0]), 4), round(float(wavelengths[-1]))
    (6.2832, 19869)
    """
    return 2.0 * np.pi / pair_frequencies(d_model, base)


def sinusoidal_encoding(num_positions: int, d_model: int, base: float = 10000.0) -> np.ndarray:
    """The paper's sinusoidal positional-encoding table.

    Parameters
    ----------
    num_positions : int
        Number of positions ``P``; rows are positions ``0 .. P - 1``.
    d_model : int
        Model width; positive and even.
    base : float, default 10000.0
        Must be greater than 1.

    Returns
    -------
    numpy.ndarray, shape (num_positions, d_model), float64
        Interleaved layout: column ``2i`` holds ``sin(pos * w_i)`` and
        column ``2i + 1`` holds ``cos(pos * w_i)``. (Some libraries put all
        sines first and all cosines second. With these frequencies that
        "halves" layout would only permute the columns, but tensor2tensor,
        fairseq and Hugging Face's Whisper also space the frequencies as
        ``base ** (-i / (d_model / 2 - 1))``, so their tables are not a
        permutation of this one.) Values lie in ``[-1, 1]`` and every row
        has norm ``sqrt(d_model / 2)``.

    Raises
    ------
    TypeError
        If ``num_positions`` or ``d_model`` is not an integer.
    ValueError
        If ``num_positions`` is not positive, ``d_model`` is odd or not
        positive, or ``base <= 1``; or if the table would exceed
        ``qkv._checks.MAX_ARRAY_BYTES`` (2 GiB, e.g. more than 524,288
        positions at ``d_model = 512``): refused at once, naming
        ``num_positions`` and ``d_model`` and the bytes the table would need.

    Examples
    --------
    >>> from qkv import sinusoidal_encoding
    >>> print(sinusoidal_encoding(3, 6).round(4).tolist())
    [[0.0, 1.0, 0.0, 1.0, 0.0, 1.0],
     [0.8415, 0.5403, 0.0464, 0.9989, 0.0022, 1.0],
     [0.9093, -0.4161, 0.0927, 0.9957, 0.0043, 1.0]]
    """
    num_positions = check_positive_int(num_positions, "num_positions")
    d_model = _check_d_model(d_model)
    check_array_bytes((num_positions, d_model), np.float64, f"num_positions={num_positions} and d_model={d_model}")
    freqs = pair_frequencies(d_model, base)  # (d_model/2,)
    positions = np.arange(num_positions)  # (P,), starting at 0
    angles = positions[:, None] * freqs[None, :]  # (P, 1) * (1, d_model/2) -> (P, d_model/2)
    table = np.empty((num_positions, 2 * freqs.shape[0]))
    table[:, 0::2] = np.sin(angles)  # even dimensions: sine
    table[:, 1::2] = np.cos(angles)  # odd dimensions: cosine
    return table


def shift_matrix(k: int, d_model: int, base: float = 10000.0) -> np.ndarray:
    """The linear map that moves a sinusoidal encoding ``k`` positions on.

    For every position ``pos``, ``PE(pos + k) = shift_matrix(k, d) @ PE(pos)``
    (``PE(pos)`` as a column vector). The matrix depends on ``k`` only, not
    on ``pos``: relative position is a fixed rotation of each sin/cos pair.

    Parameters
    ----------
    k : int
        Offset in positions; may be zero or negative.
    d_model : int
        Model width; positive and even.
    base : float, default 10000.0
        Must be greater than 1.

    Returns
    -------
    numpy.ndarray, shape (d_model, d_model), float64
        Block diagonal; block ``i`` is
        ``[[cos(k w_i), sin(k w_i)], [-sin(k w_i), cos(k w_i)]]``, from
        ``sin(a + b) = sin a cos b + cos a sin b`` and
        ``cos(a + b) = cos a cos b - sin a sin b``.

    Raises
    ------
    TypeError
        If ``k`` or ``d_model`` is not an integer.
    ValueError
        If ``d_model`` is odd or not positive, ``base <= 1``, or the
        ``(d_model, d_model)`` matrix would exceed
        ``qkv._checks.MAX_ARRAY_BYTES`` (2 GiB, so ``d_model`` at most 16,384).

    Examples
    --------
    >>> import numpy as np
    >>> from qkv import shift_matrix, sinusoidal_encoding
    >>> pe = sinusoidal_encoding(20, 8)
    >>> bool(np.allclose(shift_matrix(3, 8) @ pe[5], pe[8]))
    True
    >>> bool(np.allclose(shift_matrix(-3, 8) @ pe[8], pe[5]))
    True
    """
    k = check_int(k, "k")
    d_model = _check_d_model(d_model)
    check_array_bytes((d_model, d_model), np.float64, f"d_model={d_model}")
    angles = k * pair_frequencies(d_model, base)  # (d_model/2,)
    cos, sin = np.cos(angles), np.sin(angles)
    m = np.zeros((2 * angles.shape[0], 2 * angles.shape[0]))
    even = np.arange(0, m.shape[0], 2)
    odd = even + 1
    m[even, even] = cos  # new sin = sin*cos(kw) + cos*sin(kw)
    m[even, odd] = sin
    m[odd, even] = -sin  # new cos = cos*cos(kw) - sin*sin(kw)
    m[odd, odd] = cos
    return m


def learned_positional_table(max_len: int, d_model: int, *, seed: int | None = 0, scale: float = 0.02) -> np.ndarray:
    """A learned positional table as it looks before training.

    Training would update these values by gradient descent together with the
    rest of the model; here they are the random start: normal, mean 0,
    standard deviation ``scale``. The default 0.02 is Hugging Face
    transformers' ``initializer_range``, which its GPT-2 and BERT models use
    for every embedding table, positions included. OpenAI's original GPT-2
    code (github.com/openai/gpt-2, ``src/model.py``) initialises its position
    table ``wpe`` with standard deviation 0.01 and its token table ``wte``
    with 0.02; pass ``scale=0.01`` for that.

    Parameters
    ----------
    max_len : int
        Number of rows ``L_max``: the longest input the table can serve.
    d_model : int
        Model width (any positive integer; no sin/cos pairing here).
    seed : int or None, default 0
        Seed for ``numpy.random.default_rng``, a non-negative integer; the
        same seed gives the same table. None draws a fresh seed.
    scale : float, default 0.02
        Standard deviation of the initial values; must be positive.

    Returns
    -------
    numpy.ndarray, shape (max_len, d_model), float64
        One row per position ``0 .. max_len - 1``.

    Raises
    ------
    TypeError
        If ``max_len``, ``d_model`` or ``seed`` is not an integer (bools and
        floats are refused) or ``scale`` not a real number.
    ValueError
        If ``max_len``, ``d_model`` or ``scale`` is not positive, ``seed``
        is negative, or the table would exceed
        ``qkv._checks.MAX_ARRAY_BYTES`` (2 GiB).

    Examples
    --------
    >>> from qkv import learned_positional_table
    >>> table = learned_positional_table(1024, 768)
    >>> table.shape, table.size
    ((1024, 768), 786432)
    """
    max_len = check_positive_int(max_len, "max_len")
    d_model = check_positive_int(d_model, "d_model")
    seed = check_seed(seed)
    scale = check_real_number(scale, "scale")
    if scale <= 0.0:
        raise ValueError(f"scale must be positive, got scale={scale}")
    check_array_bytes((max_len, d_model), np.float64, f"max_len={max_len} and d_model={d_model}")
    rng = np.random.default_rng(seed)
    return rng.normal(0.0, scale, size=(max_len, d_model))


def positional_rows(table: Any, num_positions: int) -> np.ndarray:
    """The position vectors for the first ``num_positions`` positions.

    Parameters
    ----------
    table : array_like, shape (max_len, d_model)
        A learned positional table.
    num_positions : int
        Sequence length ``L``; at most ``max_len``.

    Returns
    -------
    numpy.ndarray, shape (num_positions, d_model), float64
        A copy of rows ``0 .. num_positions - 1`` of ``table``.

    Raises
    ------
    TypeError
        If ``num_positions`` is not an integer or ``table`` not numeric.
    ValueError
        If ``table`` is not 2-D or holds NaN/inf, ``num_positions`` is not
        positive, or ``num_positions > max_len``: unlike the sinusoidal
        formula, a learned table has no row past its end.

    Examples
    --------
    >>> from qkv import learned_positional_table, positional_rows
    >>> table = learned_positional_table(512, 16)
    >>> positional_rows(table, 10).shape
    (10, 16)
    >>> positional_rows(table, 600)
    Traceback (most recent call last):
    ...
    ValueError: num_positions=600 exceeds the table's max_len=512; a learned table has no row past max_len
    """
    arr = as_finite_float_array(table, "table")
    check_ndim(arr, "table", 2, "(max_len, d_model)")
    num_positions = check_positive_int(num_positions, "num_positions")
    max_len = arr.shape[0]
    if num_positions > max_len:
        raise ValueError(
            f"num_positions={num_positions} exceeds the table's max_len={max_len}; "
            "a learned table has no row past max_len"
        )
    return arr[:num_positions].copy()
