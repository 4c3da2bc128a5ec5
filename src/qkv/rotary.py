"""Rotary position embedding (RoPE; Su et al. 2021, arXiv:2104.09864).

Instead of adding a position vector to ``x``, RoPE *rotates* each query and
each key by an angle proportional to its position. The dimensions are taken
in pairs, and pair ``i`` turns by ``pos * base**(-2i/d)`` radians: the same
frequencies as the sinusoidal table (:func:`qkv.pair_frequencies`).
Rotations keep lengths and compose by adding angles, so after rotating a
query at position ``m`` and a key at position ``n``::

    (q R_m) . (k R_n) = q R_m R_n^T k^T = q R_(m - n) k^T

the score depends on the offset ``m - n`` only, never on ``m`` and ``n``
themselves. In this library's row-vector convention and the interleaved
layout, ``R_pos`` is ``shift_matrix(pos, d)``: the matrix that moves a sinusoidal encoding
``pos`` positions on also rotates a vector by ``pos`` positions' angles.

Which dimensions form a pair is a layout choice with two conventions in
use; they are the same rotation up to a fixed permutation of dimensions:

* ``"interleaved"``: pairs ``(2i, 2i + 1)``, RoFormer's layout (the
  authors' pseudo-code in the ZhuiyiTechnology/roformer README rotates
  ``[-x[1::2], x[::2]]``), Meta's original Llama code (``apply_rotary_emb``
  in meta-llama/llama ``llama/model.py`` views the pairs as complex
  numbers) and ``rotary-embedding-torch``'s ``rotate_half``
  (lucidrains/rotary-embedding-torch). It pairs the same dimensions as the
  sinusoidal table.
* ``"halves"``: pairs ``(i, i + d/2)``, GPT-NeoX's ``rotate_half``
  (EleutherAI/gpt-neox ``megatron/model/positional_embeddings.py``) and
  Hugging Face transformers' Llama (``rotate_half`` and
  ``apply_rotary_pos_emb`` in ``models/llama/modeling_llama.py``). To load
  Meta's interleaved Llama weights, transformers' conversion script
  (``convert_llama_weights_to_hf.py``, ``permute``) reorders the rows of
  each head's W_q and W_k so that the halves layout computes the same
  scores.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from qkv._checks import as_finite_float_array, check_min_ndim
from qkv.positional import pair_frequencies

__all__ = ["rotary_encoding", "ROTARY_PAIRS"]

#: The accepted values of ``rotary_encoding(..., pairs=...)``.
ROTARY_PAIRS = ("interleaved", "halves")

# Positions are turned into float64 angles; beyond 2**53 consecutive
# integers are no longer distinct floats, so two positions would silently
# get the same rotation.
_MAX_ABS_POSITION = 2**53


def _check_positions(positions: Any, batch_shape: tuple[int, ...]) -> np.ndarray:
    """Integer positions broadcastable to ``batch_shape`` = x.shape[:-1]."""
    try:
        arr = np.asarray(positions)
    except (ValueError, TypeError) as exc:  # e.g. ragged nested lists
        raise ValueError(f"positions could not be converted to an array: {exc}") from exc
    if arr.size == 0 and arr.dtype == np.float64:
        arr = arr.astype(np.int64)  # np.asarray([]) is float64; an empty list is fine
    if arr.dtype.kind not in "iu":
        hint = " (True/False are not positions)" if arr.dtype.kind == "b" else ""
        raise TypeError(
            f"positions must be integers (token positions 0, 1, 2, ...), got an array of "
            f"dtype {arr.dtype}{hint}; for whole-number floats use positions.astype(int)"
        )
    try:
        shape = np.broadcast_shapes(arr.shape, batch_shape)
    except ValueError:
        shape = None
    if shape != batch_shape:
        raise ValueError(
            f"positions of shape {arr.shape} does not broadcast to x's shape without its "
            f"last dimension, {batch_shape}, i.e. (..., L)"
        )
    if arr.size and np.max(np.abs(arr.astype(np.float64))) > _MAX_ABS_POSITION:
        raise ValueError(
            f"positions must lie within +/- 2**53 (larger integers are not exact as "
            f"float64 angles), got a largest absolute position of {np.max(np.abs(arr))}"
        )
    return arr


def _rotate_pairs(x: np.ndarray, angles: np.ndarray, pairs: str) -> np.ndarray:
    """Rotate each pair ``(a, b)`` of ``x`` by its angle: ``(a cos - b sin, a sin + b cos)``.

    ``x`` is (..., L, d) and ``angles`` broadcasts to (..., L, d/2) without
    growing it, so the result has x's shape.
    """
    cos, sin = np.cos(angles), np.sin(angles)
    half = x.shape[-1] // 2
    if pairs == "interleaved":
        first, second = x[..., 0::2], x[..., 1::2]  # (..., L, d/2) each: pair i = (2i, 2i + 1)
    else:
        first, second = x[..., :half], x[..., half:]  # pair i = (i, i + d/2)
    rotated_first = first * cos - second * sin
    rotated_second = first * sin + second * cos
    out = np.empty_like(x)
    if pairs == "interleaved":
        out[..., 0::2], out[..., 1::2] = rotated_first, rotated_second
    else:
        out[..., :half], out[..., half:] = rotated_first, rotated_second
    return out


def rotary_encoding(
    x: Any,
    positions: Any = None,
    base: float = 10000.0,
    pairs: str = "interleaved",
) -> np.ndarray:
    """Rotate each row of ``x`` by its position's angles (RoPE).

    Apply it to queries and keys (after W_Q and W_K, per head), not to the
    values and not to the embeddings: the point is that the *score*
    ``q . k`` then depends only on the offset between the two positions.

    Parameters
    ----------
    x : array_like, shape (..., L, d)
        Queries or keys, one row per position; ``d`` even (dimensions are
        rotated in pairs). Leading dimensions (batch, heads) are kept.
    positions : array_like of int, optional
        The position of each row, broadcastable to ``(..., L)``; defaults
        to ``0 .. L-1``. Another start (``np.arange(L) + offset``) is the
        decoding-with-a-cache case: the new token at position 100 is
        rotated as if the 100 before it were present. Per-row positions
        (e.g. restarting at 0 inside a packed batch) work too. Any integers,
        negative ones included; floats and bools are refused.
    base : float, default 10000.0
        Pair ``i`` turns ``base**(-2i/d)`` radians per position; must be
        greater than 1.
    pairs : {"interleaved", "halves"}, default "interleaved"
        Which dimensions form pair ``i``: ``(2i, 2i + 1)`` (RoFormer,
        Meta's Llama code, ``rotary-embedding-torch``) or ``(i, i + d/2)``
        (GPT-NeoX, Hugging Face transformers' ``rotate_half``). See the
        module docstring for sources.

    Returns
    -------
    numpy.ndarray, shape (..., L, d), float64
        ``x`` with pair ``i`` of the row at position ``p`` rotated by
        ``p * base**(-2i/d)``: ``(a, b) -> (a cos - b sin, a sin + b cos)``.
        Row norms are unchanged; position 0 is the identity.

    Raises
    ------
    TypeError
        If ``x`` is not numeric, ``positions`` is not an integer array,
        ``base`` is not a real number or ``pairs`` not a string.
    ValueError
        If ``x`` has fewer than 2 dimensions or holds NaN/inf; ``d`` is odd
        or 0; ``positions`` does not broadcast to ``(..., L)`` or exceeds
        ``2**53`` in absolute value; ``base <= 1``; or ``pairs`` is not one
        of ``"interleaved"``, ``"halves"``.

    Examples
    --------
    Position 1 turns pair 0 by 1 radian and pair 1 by ``10000**(-2/4)``,
    i.e. 0.01 radian:

    >>> import numpy as np
    >>> from qkv import rotary_encoding
    >>> x = np.array([[1.0, 0.0, 1.0, 0.0],    # (L, d) = (2, 4)
    ...               [1.0, 0.0, 1.0, 0.0]])
    >>> rotary_encoding(x).round(4).tolist()   # row 0 at position 0: unchanged
    [[1.0, 0.0, 1.0, 0.0], [0.5403, 0.8415, 1.0, 0.01]]

    The score depends on the offset only: the same q and k at positions
    (3, 1) and (10, 8) give the same score.

    >>> rng = np.random.default_rng(0)
    >>> q, k = rng.normal(size=(2, 1, 8))      # one row each, d = 8
    >>> def score(m, n):
    ...     return (rotary_encoding(q, [m]) @ rotary_encoding(k, [n]).T)[0, 0]
    >>> bool(np.isclose(score(3, 1), score(10, 8))), bool(np.isclose(score(3, 1), score(3, 2)))
    (True, False)
    """
    arr = as_finite_float_array(x, "x")
    check_min_ndim(arr, "x", 2, "(..., L, d)")
    d = arr.shape[-1]
    if d == 0 or d % 2:
        raise ValueError(
            f"x's last dimension d must be even and at least 2 (RoPE rotates pairs of "
            f"dimensions), got x of shape {arr.shape} (d={d})"
        )
    if not isinstance(pairs, str):
        raise TypeError(f"pairs must be one of {ROTARY_PAIRS}, got {pairs!r} of type {type(pairs).__name__}")
    if pairs not in ROTARY_PAIRS:
        raise ValueError(f"pairs must be one of {ROTARY_PAIRS}, got {pairs!r}")
    if positions is None:
        positions = np.arange(arr.shape[-2])  # (L,)
    else:
        positions = _check_positions(positions, arr.shape[:-1])
    freqs = pair_frequencies(d, base)  # (d/2,): base**(-2i/d); checks base
    angles = positions[..., None] * freqs  # (..., L, 1) * (d/2,) -> (..., L, d/2)
    return _rotate_pairs(arr, angles, pairs)
