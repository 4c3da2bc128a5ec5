"""Scaled dot-product attention (Vaswani et al. 2017, section 3.2.1).

The whole mechanism is one line, ``softmax(Q @ K.T / sqrt(d_k)) @ V``:

1. score every query against every key (dot products),
2. scale by ``1 / sqrt(d_k)`` so the scores' spread does not grow with
   ``d_k`` (unscaled, softmax saturates and the gradients become uneven:
   large for some queries, near zero for others; chapter 5 measures it),
3. softmax each row into weights that sum to 1,
4. blend the value rows with those weights.

Row-vector convention throughout: one token per row, ``Q = X @ W_query``.
Masks follow PyTorch: a boolean ``True`` means "may attend".

The arithmetic has one home, a private core that every module which attends
calls (``softmax``, ``scaled_dot_product_attention``, ``self_attention`` here,
and ``qkv.training.attention_forward``, which keeps the intermediates for its
backward pass). The public functions validate their arguments and call it;
they never repeat the maths. The core takes arrays already validated: float64,
finite, shapes that fit.

* ``_softmax(scores, axis=-1) -> weights``: ``scores`` may hold ``-inf``
  (weight 0) but no NaN or ``+inf``. A slice with no finite entry (all
  ``-inf``, or empty) gets weights all 0.
* ``_softmax_lse(scores, axis=-1) -> (weights, lse)``: the same, with each
  slice's log-sum-exp ``log(sum(exp(scores)))`` (``-inf`` for a slice with no
  finite entry). ``qkv.split_keys`` merges partial attentions with it.
* ``_attend(q, k, v, additive_mask=None, scale=1.0, *, names=("query",
  "key", "value")) -> (output, weights)``: ``q`` (..., L_q, d_k), ``k``
  (..., L_k, d_k), ``v`` (..., L_k, d_v), batch dimensions broadcastable;
  ``additive_mask`` None or float64 broadcastable to (..., L_q, L_k), finite
  or ``-inf``; ``scale`` a finite float. ``names`` says what the caller's
  user calls ``q``, ``k`` and ``v`` (``self_attention`` passes
  ``"x @ w_query"``, ...), because the core raises ValueError in their words
  when the score matrix would exceed ``qkv._checks.MAX_ARRAY_BYTES`` or when
  a score, a masked score or an output entry overflows float64. It never
  returns weights that do not sum to 1 (0 for a row with nothing to attend to).
  ``_attend_lse`` takes the same arguments and also returns each row's
  log-sum-exp of the masked scores, shape (..., L_q).
* ``_checked_scores(q, k, scale, *, names, scale_name="scale") -> scores``
  and ``_check_output(output, value_name)``: the two overflow checks of
  ``_attend`` on their own, so that ``qkv.sql.attention`` refuses the same
  inputs with the same words before (and after) its database runs.
* ``_project(x, w, w_name) -> x @ w``: a projection such as ``Q = X W_query``,
  refused with a ValueError naming ``x`` and ``w_name`` if it overflows.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from qkv._checks import (
    as_finite_float_array,
    as_float_array,
    check_array_bytes,
    check_finite,
    check_min_ndim,
    check_ndim,
    check_positive_int,
    check_real_number,
)

__all__ = ["softmax", "scaled_dot_product_attention", "causal_mask", "self_attention"]


def softmax(x: Any, axis: int = -1) -> np.ndarray:
    """Numerically stable softmax along one axis.

    Subtracting the maximum first changes nothing mathematically
    (``exp(x - c) / sum(exp(x - c))`` is the same for any ``c``) but keeps
    ``exp`` from overflowing: naive ``exp(1000)`` is ``inf`` and the result
    ``nan``.

    Parameters
    ----------
    x : array_like
        Scores of any shape. Entries may be ``-inf`` (weight exactly 0, as
        for masked scores); NaN and ``+inf`` are rejected.
    axis : int, default -1
        The axis whose entries become weights summing to 1.

    Returns
    -------
    numpy.ndarray, same shape as ``x``, float64
        Non-negative weights that sum to 1 along ``axis``. A slice whose
        entries are all ``-inf`` has no defined softmax; it is returned as
        all zeros (no NaN, no warning), which is what attention needs for a
        fully masked query row. (``torch.softmax`` returns NaN there.) An
        empty ``x`` gives an empty result of the same shape: an empty slice,
        like a fully masked one, has nothing to weigh (``torch.softmax``
        also returns an empty tensor).

    Raises
    ------
    TypeError
        If ``x`` is not numeric.
    ValueError
        If ``x`` holds NaN or ``+inf``.

    Examples
    --------
    >>> from qkv import softmax
    >>> softmax([1000.0, 1001.0, 1002.0]).round(4).tolist()
    [0.09, 0.2447, 0.6652]
    >>> softmax([[0.0, 0.0], [float("-inf"), float("-inf")]]).tolist()
    [[0.5, 0.5], [0.0, 0.0]]
    >>> softmax([]).shape
    (0,)
    """
    arr = as_float_array(x, "x")
    if np.any(np.isnan(arr) | (arr == np.inf)):
        raise ValueError("x must not contain NaN or +inf (-inf is allowed: it gets weight 0)")
    return _softmax(arr, axis)


def _softmax(scores: np.ndarray, axis: int = -1) -> np.ndarray:
    """The softmax arithmetic; ``scores`` is float64 without NaN or +inf."""
    return _softmax_lse(scores, axis)[0]


def _softmax_lse(scores: np.ndarray, axis: int = -1) -> tuple[np.ndarray, np.ndarray]:
    """The softmax of ``scores`` and its log-normaliser ``log(sum(exp(scores)))``.

    ``scores`` is float64 without NaN or +inf. The log-sum-exp has ``axis``
    removed; it is ``-inf`` for a slice with no finite entry (all ``-inf``, or
    empty), whose weights are all 0. ``qkv.split_keys`` keeps it to merge
    attention over disjoint key sets.
    """
    # initial=-inf: an empty slice gets peak -inf, the same as an all -inf one.
    peak = np.max(scores, axis=axis, keepdims=True, initial=-np.inf)
    # An all -inf slice has peak -inf; -inf - -inf would be NaN, so shift by 0.
    peak = np.where(np.isfinite(peak), peak, 0.0)
    exps = np.exp(scores - peak)
    totals = np.sum(exps, axis=axis, keepdims=True)
    weights = np.divide(exps, totals, out=np.zeros_like(exps), where=totals > 0)
    # log(totals) + peak; log(0) (nothing to attend to) is -inf, without a warning.
    lse = np.log(totals, out=np.full_like(totals, -np.inf), where=totals > 0) + peak
    return weights, np.squeeze(lse, axis=axis)


def _check_mask(mask: Any, scores_shape: tuple[int, ...]) -> np.ndarray:
    """Return the mask as additive float scores (0 or -inf for a bool mask)."""
    try:
        arr = np.asarray(mask)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"mask could not be converted to an array: {exc}") from exc
    if arr.dtype.kind == "b":
        additive = np.where(arr, 0.0, -np.inf)  # True = may attend
    elif arr.dtype.kind == "f":
        additive = arr.astype(np.float64, copy=False)
        if np.any(np.isnan(additive) | (additive == np.inf)):
            raise ValueError("mask must not contain NaN or +inf (-inf is allowed: it blocks a key)")
    else:
        # A 0/1 integer mask is ambiguous (keep-mask or additive?), so refuse it.
        raise TypeError(
            "mask must be boolean (True = may attend) or floating point (added to "
            f"the scores), got dtype {arr.dtype}; for a 0/1 mask use mask.astype(bool)"
        )
    try:
        np.broadcast_to(additive, scores_shape)
    except ValueError:
        raise ValueError(
            f"mask of shape {arr.shape} does not broadcast to the attention scores "
            f"shape {scores_shape}, i.e. (..., L_q, L_k)"
        ) from None
    return additive


def scaled_dot_product_attention(
    query: Any,
    key: Any,
    value: Any,
    mask: Any = None,
    *,
    scale: float | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """``softmax(query @ key.T * scale + mask) @ value``, with the weights.

    Parameters
    ----------
    query : array_like, shape (..., L_q, d_k)
        One query row per position that asks.
    key : array_like, shape (..., L_k, d_k)
        One key row per position that can be attended to.
    value : array_like, shape (..., L_k, d_v)
        One value row per key: what is handed over.
    mask : array_like of bool or float, optional
        Broadcastable to ``(..., L_q, L_k)``. Boolean: ``True`` means the
        query may attend to that key (PyTorch's convention). Floating point:
        added to the scaled scores; ``-inf`` blocks a key. NaN is refused.
    scale : float, optional
        Multiplies the scores; defaults to ``1 / sqrt(d_k)``.

    Returns
    -------
    output : numpy.ndarray, shape (..., L_q, d_v), float64
        Each row is a weighted average of the value rows.
    weights : numpy.ndarray, shape (..., L_q, L_k), float64
        The attention weights; each row sums to 1, except a fully masked one.

    Notes
    -----
    Leading batch dimensions of ``query``, ``key`` and ``value`` broadcast
    against each other like NumPy's (and PyTorch's) ``matmul``.

    Empty inputs give the empty (or zero) result that the formula gives:
    ``L_q = 0`` returns no rows; ``L_k = 0`` (no keys at all) is treated like
    a fully masked row, below, with weights of shape (..., L_q, 0) and an
    output of zeros, as PyTorch 2.13's SDPA also returns.

    Scores are computed in float64. A score outside its range (beyond about
    1.8e308, e.g. a query of 1e200 against a key of -1e200) has no softmax
    that float64 can represent, so the call raises ValueError naming
    ``query``, ``key`` and ``scale`` rather than return weights that do not
    sum to 1. The score matrix is refused, before it is computed, when it
    would exceed ``qkv._checks.MAX_ARRAY_BYTES`` (2 GiB).

    A query row whose every key is masked (all ``False``, or all ``-inf``)
    has nothing to attend to. Such a row gets weights all 0 and output all 0:
    not NaN, and not a uniform average over the masked (e.g. padding) keys.
    This matches ``torch.nn.functional.scaled_dot_product_attention`` in
    PyTorch 2.13, which also returns a zero output row there.

    Raises
    ------
    TypeError
        If an input is not numeric, ``mask`` is neither bool nor float, or
        ``scale`` is not a real number.
    ValueError
        If an input has fewer than 2 dimensions or holds NaN/inf; ``query``
        and ``key`` differ in ``d_k``; ``key`` and ``value`` differ in
        ``L_k``; the batch dimensions do not broadcast; ``mask`` does not
        broadcast to ``(..., L_q, L_k)``; the score matrix would exceed
        ``qkv._checks.MAX_ARRAY_BYTES``; or a score, a masked score or an
        output entry overflows float64 (see Notes).

    Examples
    --------
    >>> import numpy as np
    >>> from qkv import scaled_dot_product_attention
    >>> keys = np.eye(3)                          # one-hot keys a, b, c
    >>> values = np.array([[1.0], [2.0], [3.0]])  # D = {a: 1, b: 2, c: 3}
    >>> query = np.array([[1.0, 0.0, 0.0]])       # look up "a"
    >>> for beta in (1, 5, 10, 20):
    ...     out, _ = scaled_dot_product_attention(query, keys, values, scale=beta)
    ...     print(beta, round(float(out[0, 0]), 4))
    1 1.6358
    5 1.0199
    10 1.0001
    20 1.0
    >>> scaled_dot_product_attention([[1e200]], [[-1e200]], [[1.0]])
    Traceback (most recent call last):
    ...
    ValueError: the attention scores query @ key.T * scale overflow float64 at score
    index (0, 0) (|score| > 1.8e308, or inf - inf inside a dot product), so their
    softmax cannot be computed: make query, key or scale smaller
    """
    q, k, v = _check_attention_inputs(query, key, value)
    if scale is None:
        scale = 1.0 / np.sqrt(q.shape[-1])
    else:
        scale = check_real_number(scale, "scale")
    scores_shape = np.broadcast_shapes(q.shape[:-2], k.shape[:-2]) + (q.shape[-2], k.shape[-2])
    additive_mask = None if mask is None else _check_mask(mask, scores_shape)
    return _attend(q, k, v, additive_mask, scale)


def _check_d_and_length(q: np.ndarray, k: np.ndarray, v: np.ndarray, d_name: str) -> None:
    """query and key share their last dimension (``d_name``, at least 1); key and value their length."""
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(
            f"query and key must have the same last dimension {d_name}, got query shape "
            f"{q.shape} ({d_name}={q.shape[-1]}) and key shape {k.shape} ({d_name}={k.shape[-1]})"
        )
    if q.shape[-1] == 0:
        raise ValueError(f"{d_name} must be at least 1, got query shape {q.shape}")
    if k.shape[-2] != v.shape[-2]:
        raise ValueError(
            f"key and value must have the same length L_k (one value per key), got key "
            f"shape {k.shape} (L_k={k.shape[-2]}) and value shape {v.shape} (L_k={v.shape[-2]})"
        )


def _check_attention_inputs(
    query: Any, key: Any, value: Any, *, keep_float32: bool = False
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Validate query, key and value as ``scaled_dot_product_attention`` documents.

    Returns float64 arrays: query (..., L_q, d_k), key (..., L_k, d_k), value
    (..., L_k, d_v) with batch dimensions that broadcast; with
    ``keep_float32``, three float32 arrays come back as they are (no copy).
    One home for these checks: ``qkv.streaming`` uses them too.
    """
    if keep_float32 and all(isinstance(a, np.ndarray) and a.dtype == np.float32 for a in (query, key, value)):
        q, k, v = query, key, value
        for arr, name in ((q, "query"), (k, "key"), (v, "value")):
            check_finite(arr, name)
    else:
        q = as_finite_float_array(query, "query")
        k = as_finite_float_array(key, "key")
        v = as_finite_float_array(value, "value")
    check_min_ndim(q, "query", 2, "(..., L_q, d_k)")
    check_min_ndim(k, "key", 2, "(..., L_k, d_k)")
    check_min_ndim(v, "value", 2, "(..., L_k, d_v)")
    _check_d_and_length(q, k, v, "d_k")
    try:
        np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    except ValueError:
        raise ValueError(
            f"batch dimensions do not broadcast: query {q.shape}, key {k.shape}, "
            f"value {v.shape} (only the dimensions before the last two must broadcast)"
        ) from None
    return q, k, v


def _first_index(bad: np.ndarray) -> tuple[int, ...]:
    """Index of the first True entry of ``bad``, as a tuple of ints."""
    return tuple(int(i) for i in np.argwhere(bad)[0])


def _max_row_norm(x: np.ndarray) -> float:
    """The largest Euclidean norm of a row of ``x``, in float64 (inf if none fits)."""
    if x.size == 0:
        return 0.0
    with np.errstate(over="ignore"):
        return float(np.sqrt(np.square(x, dtype=np.float64).sum(axis=-1)).max())


def _scores_cannot_overflow(q: np.ndarray, k: np.ndarray, scale: float, dtype: np.dtype) -> bool:
    """True if no score ``q @ k.T * scale`` can overflow ``dtype``, from O(L d) work.

    Cauchy-Schwarz: no score, nor any partial sum inside its dot product,
    exceeds ``max|q| * max|k| * |scale|``, and no entry of ``q * scale``
    (a caller may scale the queries first) exceeds ``max|q| * |scale|``. The
    scale is taken as ``dtype`` rounds it (1e39 is inf in float32). Below
    half the dtype's limit (room for rounding) the O(L^2 d) exact check can
    be skipped; above it, only the exact check can tell.
    """
    limit = 0.5 * float(np.finfo(dtype).max)
    with np.errstate(over="ignore"):
        scale_abs = abs(float(np.asarray(scale, dtype=dtype)))
    q_scaled = _max_row_norm(q) * scale_abs
    return q_scaled < limit and q_scaled * _max_row_norm(k) < limit


def _scores_words(names: tuple[str, ...], scale_name: str | None) -> tuple[str, str]:
    """The scores in the caller's words, and the inputs to make smaller (see ``_checked_scores``)."""
    q_name, k_name = (f"({n})" if " " in n else n for n in names[:2])
    if scale_name is None:
        return f"{q_name} @ {k_name}.T / sqrt(d_k)", f"{names[0]} or {names[1]}"
    return f"{q_name} @ {k_name}.T * {scale_name}", f"{names[0]}, {names[1]} or {scale_name}"


def _check_scores_size(
    q: np.ndarray,
    k: np.ndarray,
    *,
    names: tuple[str, ...] = ("query", "key"),
    scale_name: str | None = "scale",
) -> None:
    """Refuse a score matrix ``q @ k.T`` above ``qkv._checks.MAX_ARRAY_BYTES``, before any work.

    The one home of that limit for attention scores: ``_checked_scores``
    calls it before computing them, and ``qkv.sql.attention`` and
    ``qkv.sql.explain`` before their database loads a row (the weights they
    return have the same shape). The message is ``check_array_bytes``'s,
    in the words of ``_checked_scores``.
    """
    scores_text, _ = _scores_words(names, scale_name)
    scores_shape = np.broadcast_shapes(q.shape[:-2], k.shape[:-2]) + (q.shape[-2], k.shape[-2])
    check_array_bytes(scores_shape, np.float64, f"the attention scores {scores_text}")


def _checked_scores(
    q: np.ndarray,
    k: np.ndarray,
    scale: float,
    *,
    names: tuple[str, ...] = ("query", "key"),
    scale_name: str | None = "scale",
) -> np.ndarray:
    """``q @ k.T * scale`` for validated arrays, refusing scores that overflow float64.

    Raises ValueError in the caller's words (``names`` for ``q`` and ``k``;
    ``scale_name`` for the scale, or None when the caller has no scale
    argument and the scale is ``1 / sqrt(d_k)``) when the score matrix would
    exceed ``qkv._checks.MAX_ARRAY_BYTES`` or a score is not finite.
    ``qkv.sql.attention`` calls it too, before its database sees the rows.
    """
    scores_text, smaller = _scores_words(names, scale_name)
    _check_scores_size(q, k, names=names, scale_name=scale_name)
    with np.errstate(over="ignore", invalid="ignore"):  # overflow is reported below, in words
        # (..., L_q, d_k) @ (..., d_k, L_k) -> (..., L_q, L_k)
        scores = (q @ np.swapaxes(k, -1, -2)) * scale
    overflow = ~np.isfinite(scores)
    if overflow.any():
        # A score past float64's range has no softmax in float64: inf - inf is NaN, and
        # a row of -inf would pass for a fully masked one. Refuse rather than guess.
        raise ValueError(
            f"the attention scores {scores_text} overflow float64 at score index "
            f"{_first_index(overflow)} (|score| > 1.8e308, or inf - inf inside a dot "
            f"product), so their softmax cannot be computed: make {smaller} smaller"
        )
    return scores


def _attend(
    q: np.ndarray,
    k: np.ndarray,
    v: np.ndarray,
    additive_mask: np.ndarray | None = None,
    scale: float = 1.0,
    *,
    names: tuple[str, str, str] = ("query", "key", "value"),
) -> tuple[np.ndarray, np.ndarray]:
    """The attention arithmetic, on inputs the caller has validated.

    See the module docstring for the contract. ``names`` are the user's
    words for ``q``, ``k`` and ``v``, used in the errors.
    """
    output, weights, _ = _attend_lse(q, k, v, additive_mask, scale, names=names)
    return output, weights


def _attend_lse(
    q: np.ndarray,
    k: np.ndarray,
    v: np.ndarray,
    additive_mask: np.ndarray | None = None,
    scale: float = 1.0,
    *,
    names: tuple[str, str, str] = ("query", "key", "value"),
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``_attend``, also returning each row's log-sum-exp of the (masked) scores.

    The log-sum-exp has shape (..., L_q): ``-inf`` for a row with nothing to
    attend to. ``qkv.split_keys.partial_attention`` returns it.
    """
    q_name, k_name = (f"({n})" if " " in n else n for n in names[:2])
    scores_text = f"{q_name} @ {k_name}.T * scale"
    scores = _checked_scores(q, k, scale, names=names)
    if additive_mask is not None:
        with np.errstate(over="ignore"):
            scores = scores + additive_mask  # -inf where blocked
        # finite + finite can only leave the finite range by overflowing; -inf is a block.
        overflow = np.isposinf(scores) | (np.isneginf(scores) & np.isfinite(additive_mask))
        if overflow.any():
            raise ValueError(
                f"adding mask to the attention scores {scores_text} overflows float64 at "
                f"score index {_first_index(overflow)}: block a key with -inf (or False "
                "in a boolean mask), and keep finite mask values well inside +/-1.8e308"
            )
    # Fully masked rows (and L_k = 0) come back as zero weights and log-sum-exp -inf.
    weights, lse = _softmax_lse(scores, axis=-1)  # (..., L_q, L_k), (..., L_q)
    with np.errstate(over="ignore", invalid="ignore"):
        output = weights @ v  # (..., L_q, L_k) @ (..., L_k, d_v) -> (..., L_q, d_v)
    _check_output(output, names[2])
    return output, weights, lse


def _check_output(output: np.ndarray, value_name: str = "value") -> None:
    """Raise ValueError naming ``value_name`` if ``output`` (weights @ value) is not finite.

    ``qkv.sql.attention`` calls it on the output its database returns.
    """
    overflow = ~np.isfinite(output)
    if overflow.any():
        # Weights sum to 1, but with entries near the float64 limit rounding can still overflow.
        v_name = f"({value_name})" if " " in value_name else value_name
        raise ValueError(
            f"the output weights @ {v_name} overflows float64 at index "
            f"{_first_index(overflow)}: entries of {value_name} near the float64 limit "
            f"(1.8e308) can round past it when averaged; make {value_name} smaller"
        )


def _project(x: np.ndarray, w: np.ndarray, w_name: str) -> np.ndarray:
    """``x @ w`` for validated arrays, refusing a product that overflows float64."""
    with np.errstate(over="ignore", invalid="ignore"):
        projected = x @ w  # (..., L, d_model) @ (d_model, d) -> (..., L, d)
    overflow = ~np.isfinite(projected)
    if overflow.any():
        raise ValueError(
            f"x @ {w_name} overflows float64 at index {_first_index(overflow)} "
            f"(it holds inf or NaN): make x or {w_name} smaller"
        )
    return projected


def causal_mask(length: int) -> np.ndarray:
    """Boolean mask that lets position ``i`` attend only to ``0 .. i``.

    Parameters
    ----------
    length : int
        Sequence length ``L``.

    Returns
    -------
    numpy.ndarray, shape (L, L), bool
        ``True`` on and below the diagonal (may attend), ``False`` above it
        (the future). Same result as PyTorch's ``is_causal=True`` for a
        square score matrix.

    Raises
    ------
    TypeError
        If ``length`` is not an integer.
    ValueError
        If ``length`` is not positive, or the ``(L, L)`` mask would exceed
        ``qkv._checks.MAX_ARRAY_BYTES`` (2 GiB, so ``L`` at most 46,340):
        refused at once, with the bytes it would need.

    Examples
    --------
    >>> from qkv import causal_mask
    >>> causal_mask(3).astype(int).tolist()
    [[1, 0, 0], [1, 1, 0], [1, 1, 1]]
    """
    length = check_positive_int(length, "length")
    check_array_bytes((length, length), bool, f"length={length}")
    return np.tril(np.ones((length, length), dtype=bool))


def self_attention(
    x: Any,
    w_query: Any,
    w_key: Any,
    w_value: Any,
    mask: Any = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Single-head self-attention: project ``x`` into Q, K, V, then attend.

    Parameters
    ----------
    x : array_like, shape (L, d_model)
        One input vector per token (embedding plus position, if any).
    w_query : array_like, shape (d_model, d_k)
        Projection to queries: what each token looks for.
    w_key : array_like, shape (d_model, d_k)
        Projection to keys: what each token offers to be found by.
    w_value : array_like, shape (d_model, d_v)
        Projection to values: what each token hands over.
    mask : array_like of bool or float, optional
        Broadcastable to ``(L, L)``; see ``scaled_dot_product_attention``.

    Returns
    -------
    output : numpy.ndarray, shape (L, d_v), float64
        One contextual vector per token.
    weights : numpy.ndarray, shape (L, L), float64
        Row ``i`` says how much token ``i`` attends to each token.

    Raises
    ------
    TypeError
        If an input is not numeric.
    ValueError
        If an input has the wrong rank or holds NaN/inf, a projection's row
        count differs from ``d_model``, ``w_query`` and ``w_key`` differ in
        ``d_k`` or have no column, ``mask`` does not broadcast to ``(L, L)``,
        the ``(L, L)`` scores would exceed ``qkv._checks.MAX_ARRAY_BYTES``,
        or a projection (``x @ w_query``, ...), a score or the output
        overflows float64 (the message names ``x`` and the projection).

    Notes
    -----
    An empty sentence, ``x`` of shape (0, d_model), gives an output of shape
    (0, d_v) and weights of shape (0, 0): no token, nothing to attend.

    Examples
    --------
    >>> from qkv import self_attention, toy
    >>> x = toy.bank_sentence(["money", "bank", "grows"])
    >>> out, weights = self_attention(x, toy.W_QUERY, toy.W_KEY, toy.W_VALUE)
    >>> weights[1].round(4).tolist()
    [0.6652, 0.09, 0.2447]
    >>> out[1].round(4).tolist()
    [1.5752, 0.0, 0.1801, 0.2447]
    """
    x_arr = as_finite_float_array(x, "x")
    check_ndim(x_arr, "x", 2, "(L, d_model)")
    d_model = x_arr.shape[1]
    weights_in = {}
    for name, w, shape_text in (
        ("w_query", w_query, "(d_model, d_k)"),
        ("w_key", w_key, "(d_model, d_k)"),
        ("w_value", w_value, "(d_model, d_v)"),
    ):
        arr = as_finite_float_array(w, name)
        check_ndim(arr, name, 2, shape_text)
        if arr.shape[0] != d_model:
            raise ValueError(
                f"{name} must have shape {shape_text} with d_model={d_model} rows to match "
                f"x of shape {x_arr.shape}, got shape {arr.shape}"
            )
        weights_in[name] = arr
    if weights_in["w_query"].shape[1] != weights_in["w_key"].shape[1]:
        raise ValueError(
            "w_query and w_key must have the same number of columns d_k (queries and keys "
            f"are compared by dot product), got {weights_in['w_query'].shape} and "
            f"{weights_in['w_key'].shape}"
        )
    if weights_in["w_query"].shape[1] == 0:
        raise ValueError(
            f"w_query and w_key must have at least one column (d_k >= 1), got shape {weights_in['w_query'].shape}"
        )
    # (L, d_model) @ (d_model, d_k) -> (L, d_k); the same for keys, and d_v for values
    q = _project(x_arr, weights_in["w_query"], "w_query")
    k = _project(x_arr, weights_in["w_key"], "w_key")
    v = _project(x_arr, weights_in["w_value"], "w_value")
    length = x_arr.shape[0]
    additive_mask = None if mask is None else _check_mask(mask, (length, length))
    scale = 1.0 / np.sqrt(q.shape[-1])
    return _attend(q, k, v, additive_mask, scale, names=("x @ w_query", "x @ w_key", "x @ w_value"))
