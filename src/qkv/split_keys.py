"""Attention over disjoint key sets, merged afterwards (split-K, Flash-Decoding).

When one query reads a long cache (decoding), the keys can be cut into
pieces that workers attend to independently; each returns a *partial*
state and one step combines them. A database runs a parallel aggregate the
same way: PostgreSQL's plans show a ``Partial Aggregate`` on each worker
and a ``Finalize Aggregate`` that combines them (an aggregate's
``COMBINEFUNC``).

For softmax the partial state of a query row over its keys is two things:

* ``output``: the normalised attention over these keys only, and
* ``lse``: ``log(sum(exp(score)))`` over the keys this row may read, the
  log of the softmax's denominator (``-inf`` when it may read none).

Merging is a softmax again, over the parts: part ``i`` gets weight
``exp(lse_i - lse)`` with ``lse = log(sum_i exp(lse_i))``, and the merged
output is ``sum_i exp(lse_i - lse) * output_i``. The result is exactly the
attention over all the keys, up to rounding (about 1e-15 in float64), in any
order of the parts. ``qkv.streaming_attention`` folds the same rescaling in
one key block at a time (its running max and running sum); Flash-Decoding
(Dao, Haziza, Massa and Sizov, 2023) runs the parts in parallel on a GPU and
merges them this way.

Both functions use the softmax arithmetic of ``qkv.attention`` (its core
returns the log-sum-exp next to the weights), so there is one home for it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from qkv._checks import as_finite_float_array, as_float_array, check_min_ndim, check_real_number
from qkv.attention import _attend_lse, _check_attention_inputs, _check_mask, _first_index, _softmax_lse

__all__ = ["partial_attention", "merge_attention"]


def partial_attention(
    query: Any,
    key: Any,
    value: Any,
    mask: Any = None,
    *,
    scale: float | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Attention over these keys only, with each row's log-sum-exp for merging.

    Parameters
    ----------
    query : array_like, shape (..., L_q, d_k)
    key : array_like, shape (..., L_k, d_k)
    value : array_like, shape (..., L_k, d_v)
        As for ``qkv.scaled_dot_product_attention``: one piece of the keys
        (and their values); batch dimensions broadcast like ``matmul``'s.
    mask : array_like of bool or float, optional
        Broadcastable to ``(..., L_q, L_k)``: ``True`` = may attend, or a
        float added to the scaled scores (``-inf`` blocks a key).
    scale : float, optional
        Multiplies the scores; defaults to ``1 / sqrt(d_k)``. Every part of
        one merge must use the same scale.

    Returns
    -------
    output : numpy.ndarray, shape (..., L_q, d_v), float64
        ``scaled_dot_product_attention(query, key, value, mask)[0]``: the
        normalised attention over these keys.
    lse : numpy.ndarray, shape (..., L_q), float64
        ``log(sum(exp(score)))`` over the keys each row may read, where
        ``score`` is the scaled score plus a float mask. A fully masked row
        (or ``L_k = 0``) has ``lse = -inf`` and an output row of zeros.

    Raises
    ------
    TypeError, ValueError
        As ``qkv.scaled_dot_product_attention`` raises them, naming the
        argument: inputs that are not numeric, hold NaN/inf or have shapes
        that do not fit, a mask that does not broadcast, scores that
        overflow float64.

    Examples
    --------
    Two workers each read half of the keys; merging their parts gives the
    attention over all of them:

    >>> import numpy as np
    >>> import qkv
    >>> rng = np.random.default_rng(0)
    >>> q = rng.normal(size=(1, 4))                           # one decoding query, d = 4
    >>> k, v = rng.normal(size=(10, 4)), rng.normal(size=(10, 3))
    >>> left = qkv.partial_attention(q, k[:6], v[:6])         # keys 0..5
    >>> right = qkv.partial_attention(q, k[6:], v[6:])        # keys 6..9
    >>> merged, lse = qkv.merge_attention([left, right])
    >>> full, full_lse = qkv.partial_attention(q, k, v)
    >>> bool(np.abs(merged - full).max() < 1e-12), bool(abs(lse - full_lse).max() < 1e-12)
    (True, True)
    >>> qkv.partial_attention(q, k[:2], v[:2], mask=[False, False])[1]  # nothing to read
    array([-inf])
    """
    q, k, v = _check_attention_inputs(query, key, value)
    scale = 1.0 / np.sqrt(q.shape[-1]) if scale is None else check_real_number(scale, "scale")
    scores_shape = np.broadcast_shapes(q.shape[:-2], k.shape[:-2]) + (q.shape[-2], k.shape[-2])
    additive_mask = None if mask is None else _check_mask(mask, scores_shape)
    # (..., L_q, d_k), (..., L_k, d_k), (..., L_k, d_v) -> (..., L_q, d_v), _, (..., L_q)
    output, _, lse = _attend_lse(q, k, v, additive_mask, scale)
    return output, lse


def merge_attention(parts: Iterable[tuple[Any, Any]]) -> tuple[np.ndarray, np.ndarray]:
    """Combine ``partial_attention`` results over disjoint key sets into one.

    Parameters
    ----------
    parts : sequence of (output, lse) pairs
        Each pair as ``partial_attention`` returns it, for the same queries
        over a different set of keys: ``output`` of shape (..., L_q, d_v)
        and ``lse`` of shape (..., L_q), the same shapes in every part.
        ``lse`` may hold ``-inf`` (a row that read no key in that part).

    Returns
    -------
    output : numpy.ndarray, shape (..., L_q, d_v), float64
        ``sum_i exp(lse_i - lse) * output_i``: the attention over the union
        of the parts' keys (to about 1e-15 in float64).
    lse : numpy.ndarray, shape (..., L_q), float64
        ``log(sum_i exp(lse_i))``, the log-sum-exp over all those keys. A
        row that is fully masked in every part gets ``-inf`` and an output
        of zeros (no NaN, no warning).

    Notes
    -----
    The merge is a softmax over the parts, with the ``lse`` values as
    scores and the outputs as values. In every row the parts are combined
    in increasing order of ``lse``, whatever order they came in, so the
    result does not depend on the order of ``parts`` (bit for bit, except
    between parts whose ``lse`` in a row are exactly equal).

    Raises
    ------
    TypeError
        If ``parts`` is not a sequence, a part is not an ``(output, lse)``
        pair, or an array is not numeric.
    ValueError
        If ``parts`` is empty; an output has fewer than 2 dimensions or
        holds NaN/inf; an ``lse`` holds NaN or ``+inf`` or has a shape other
        than its output's without the last axis; the parts' shapes differ;
        or the merged output overflows float64.

    Examples
    --------
    Three workers; the order they finish in does not matter, and a part in
    which the row may read nothing (``lse = -inf``) adds nothing:

    >>> import numpy as np
    >>> import qkv
    >>> rng = np.random.default_rng(1)
    >>> q, k, v = rng.normal(size=(2, 4)), rng.normal(size=(9, 4)), rng.normal(size=(9, 2))
    >>> parts = [qkv.partial_attention(q, k[s], v[s]) for s in (slice(0, 3), slice(3, 7), slice(7, 9))]
    >>> parts.append(qkv.partial_attention(q, k[:1], v[:1], mask=np.zeros((2, 1), dtype=bool)))
    >>> a, _ = qkv.merge_attention(parts)
    >>> b, _ = qkv.merge_attention(parts[::-1])
    >>> full, _ = qkv.scaled_dot_product_attention(q, k, v)
    >>> bool(np.abs(a - full).max() < 1e-12), bool(np.array_equal(a, b))
    (True, True)
    >>> qkv.merge_attention([parts[-1], parts[-1]])          # masked everywhere
    (array([[0., 0.], [0., 0.]]), array([-inf, -inf]))
    """
    outputs, lses = _check_parts(parts)
    stacked_out = np.stack(outputs)  # P x (..., L_q, d_v) -> (P, ..., L_q, d_v)
    stacked_lse = np.stack(lses)  # P x (..., L_q) -> (P, ..., L_q)
    # Combine every row's parts in increasing order of lse: the same sums, in
    # the same order, whatever order the parts came in.
    order = np.argsort(stacked_lse, axis=0, kind="stable")  # (P, ..., L_q)
    stacked_lse = np.take_along_axis(stacked_lse, order, axis=0)
    stacked_out = np.take_along_axis(stacked_out, order[..., None], axis=0)
    # A softmax over the parts: the lse values are the scores. (P, ..., L_q) -> (P, ..., L_q), (..., L_q)
    weights, lse = _softmax_lse(stacked_lse, axis=0)
    with np.errstate(over="ignore", invalid="ignore"):
        # (P, ..., L_q, 1) * (P, ..., L_q, d_v), summed over P -> (..., L_q, d_v)
        output = np.sum(weights[..., None] * stacked_out, axis=0)
    overflow = ~np.isfinite(output)
    if overflow.any():
        raise ValueError(
            f"merging the parts overflows float64 at output index {_first_index(overflow)}: "
            "entries of the parts' outputs near the float64 limit (1.8e308) can round past "
            "it when averaged; make value smaller"
        )
    return output, lse


def _check_parts(parts: Any) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Validate ``merge_attention``'s parts; return their outputs and lse arrays."""
    if isinstance(parts, (np.ndarray, str, bytes)) or not isinstance(parts, Iterable):
        raise TypeError(
            f"parts must be a sequence of (output, lse) pairs from partial_attention, got {type(parts).__name__}"
        )
    parts = list(parts)
    if not parts:
        raise ValueError(
            "parts must hold at least one (output, lse) pair from partial_attention, got an empty sequence"
        )
    outputs: list[np.ndarray] = []
    lses: list[np.ndarray] = []
    for i, part in enumerate(parts):
        name = f"parts[{i}]"
        if not isinstance(part, (tuple, list)) or len(part) != 2:
            what = (
                f"{type(part).__name__} of length {len(part)}"
                if isinstance(part, (tuple, list))
                else type(part).__name__
            )
            raise TypeError(f"{name} must be a pair (output, lse) as partial_attention returns it, got {what}")
        out = as_finite_float_array(part[0], f"{name}'s output")
        check_min_ndim(out, f"{name}'s output", 2, "(..., L_q, d_v)")
        lse = as_float_array(part[1], f"{name}'s lse")
        if np.any(np.isnan(lse) | (lse == np.inf)):
            raise ValueError(f"{name}'s lse must not contain NaN or +inf (-inf is allowed: a row that read no key)")
        if lse.shape != out.shape[:-1]:
            raise ValueError(
                f"{name}'s lse must have shape (..., L_q) = {out.shape[:-1]}, its output's shape "
                f"{out.shape} without the last axis, got shape {lse.shape}"
            )
        if outputs and out.shape != outputs[0].shape:
            raise ValueError(
                f"{name}'s output has shape {out.shape} but parts[0]'s has shape {outputs[0].shape}: "
                "every part must hold the same queries (..., L_q, d_v), over different keys"
            )
        outputs.append(out)
        lses.append(lse)
    return outputs, lses
