"""Multi-head attention (Vaswani et al. 2017, section 3.2.2).

One head compares queries with keys in one learned space. Multi-head
attention runs ``num_heads`` of them side by side on slices of the same
projections, so that different heads can match on different things:

1. project: ``Q = query @ W_q.T + b_q`` (likewise K, V), each ``(..., L, d_model)``;
2. split: cut the last dimension into ``num_heads`` slices of
   ``d_head = d_model // num_heads``: ``(..., num_heads, L, d_head)``;
3. attend: scaled dot-product attention in every head at once;
4. concatenate the heads back to ``(..., L, d_model)`` and mix them with
   ``W_o``: ``output = concat @ W_o.T + b_o``.

The weights are laid out as in ``torch.nn.MultiheadAttention``: one packed
``in_proj_weight`` ``[W_q; W_k; W_v]`` of shape ``(3 * d_model, d_model)`` and
``out_proj_weight`` ``(d_model, d_model)``, applied as ``x @ W.T + b`` (PyTorch's
``nn.Linear`` orientation, output rows by input columns). A module's
weights can therefore be passed in as they are. Self-attention passes the
same ``x`` as query, key and value; cross-attention takes the queries from
one sequence and the keys and values from another.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from qkv._checks import as_finite_float_array, check_min_ndim, check_positive_int
from qkv.attention import _attend, _check_mask

__all__ = ["multi_head_attention"]


def _split_heads(x: np.ndarray, num_heads: int) -> np.ndarray:
    """(..., L, d_model) -> (..., num_heads, L, d_model // num_heads): head h gets columns h*d_head ..."""
    *batch, length, width = x.shape
    x = x.reshape(*batch, length, num_heads, width // num_heads)  # (..., L, h, d_head)
    return np.swapaxes(x, -3, -2)  # (..., h, L, d_head)


def _merge_heads(x: np.ndarray) -> np.ndarray:
    """(..., num_heads, L, d_head) -> (..., L, num_heads * d_head): heads side by side."""
    x = np.swapaxes(x, -3, -2)  # (..., L, h, d_head)
    return x.reshape(*x.shape[:-2], x.shape[-2] * x.shape[-1])


def _check_matrix(value: Any, name: str, shape: tuple[int, ...], shape_text: str) -> np.ndarray:
    arr = as_finite_float_array(value, name)
    if arr.shape != shape:
        raise ValueError(
            f"{name} must have shape {shape_text} = {shape} for model width d_model={shape[-1]} "
            f"(query's last dimension), got shape {arr.shape}"
        )
    return arr


def _check_layer(
    query: Any,
    key: Any,
    value: Any,
    num_heads: Any,
    in_proj_weight: Any,
    out_proj_weight: Any,
    in_proj_bias: Any,
    out_proj_bias: Any,
) -> tuple:
    """The argument checks of ``multi_head_attention``, mask aside: its one home.

    ``qkv.sql.multi_head_attention`` calls it too, so that both refuse the
    same faults in the same words. Returns ``(query, key, value, num_heads,
    w_in, w_out, b_in, b_out, batch)``: the arrays as float64, the biases as
    zeros where omitted, and the broadcast batch shape.
    """
    q_in = as_finite_float_array(query, "query")
    k_in = as_finite_float_array(key, "key")
    v_in = as_finite_float_array(value, "value")
    check_min_ndim(q_in, "query", 2, "(..., L_q, d_model)")
    check_min_ndim(k_in, "key", 2, "(..., L_k, d_model)")
    check_min_ndim(v_in, "value", 2, "(..., L_k, d_model)")
    num_heads = check_positive_int(num_heads, "num_heads")
    embed = q_in.shape[-1]
    if embed == 0:
        raise ValueError(f"d_model (query's last dimension) must be at least 1, got query shape {q_in.shape}")
    if embed % num_heads:
        raise ValueError(
            f"num_heads={num_heads} must divide the model width d_model={embed} (query's last "
            f"dimension): each head gets d_model // num_heads dimensions"
        )
    for name, arr in (("key", k_in), ("value", v_in)):
        if arr.shape[-1] != embed:
            raise ValueError(
                f"{name} must have the same last dimension d_model as query (the packed "
                f"in_proj_weight projects all three from d_model), got query shape {q_in.shape} "
                f"(d_model={embed}) and {name} shape {arr.shape}"
            )
    if k_in.shape[-2] != v_in.shape[-2]:
        raise ValueError(
            f"key and value must have the same length L_k (one value per key), got key "
            f"shape {k_in.shape} and value shape {v_in.shape}"
        )
    try:
        batch = np.broadcast_shapes(q_in.shape[:-2], k_in.shape[:-2], v_in.shape[:-2])
    except ValueError:
        raise ValueError(
            f"batch dimensions do not broadcast: query {q_in.shape}, key {k_in.shape}, "
            f"value {v_in.shape} (only the dimensions before the last two must broadcast)"
        ) from None
    w_in = _check_matrix(in_proj_weight, "in_proj_weight", (3 * embed, embed), "(3 * d_model, d_model)")
    w_out = _check_matrix(out_proj_weight, "out_proj_weight", (embed, embed), "(d_model, d_model)")
    b_in = np.zeros(3 * embed)
    if in_proj_bias is not None:
        b_in = _check_matrix(in_proj_bias, "in_proj_bias", (3 * embed,), "(3 * d_model,)")
    b_out = np.zeros(embed)
    if out_proj_bias is not None:
        b_out = _check_matrix(out_proj_bias, "out_proj_bias", (embed,), "(d_model,)")
    return q_in, k_in, v_in, num_heads, w_in, w_out, b_in, b_out, batch


def multi_head_attention(
    query: Any,
    key: Any,
    value: Any,
    num_heads: int,
    in_proj_weight: Any,
    out_proj_weight: Any,
    in_proj_bias: Any = None,
    out_proj_bias: Any = None,
    mask: Any = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Multi-head attention with ``torch.nn.MultiheadAttention``'s weights.

    Parameters
    ----------
    query : array_like, shape (..., L_q, d_model)
        The rows that ask (batch first, like ``batch_first=True``).
    key : array_like, shape (..., L_k, d_model)
        The rows that are matched against. Same ``d_model`` as ``query``.
    value : array_like, shape (..., L_k, d_model)
        One row per key: what is handed over.
    num_heads : int
        Number of heads; must divide ``d_model``. Each head works in
        ``d_head = d_model // num_heads`` dimensions.
    in_proj_weight : array_like, shape (3 * d_model, d_model)
        ``[W_q; W_k; W_v]`` stacked by rows, applied as ``x @ W.T``.
    out_proj_weight : array_like, shape (d_model, d_model)
        ``W_o``, applied as ``concat @ W_o.T``.
    in_proj_bias : array_like, shape (3 * d_model,), optional
        ``[b_q; b_k; b_v]``; no bias when omitted.
    out_proj_bias : array_like, shape (d_model,), optional
        ``b_o``; no bias when omitted.
    mask : array_like of bool or float, optional
        Broadcastable to ``(..., num_heads, L_q, L_k)``. Boolean: ``True``
        means *may attend*, this library's convention. A 2-D ``(L_q, L_k)``
        mask (e.g. :func:`qkv.causal_mask`) applies to every batch entry
        and head; a key-padding mask ``keep`` of shape ``(..., L_k)``
        (``True`` = real token) is passed as ``keep[..., None, None, :]``.
        Floating point: added to the scaled scores, ``-inf`` blocks a key,
        as in :func:`qkv.scaled_dot_product_attention`; a per-head bias
        such as :func:`qkv.alibi_bias` of shape ``(num_heads, L_q, L_k)``
        goes here.

    Returns
    -------
    output : numpy.ndarray, shape (..., L_q, d_model), float64
        One contextual vector per query row.
    weights : numpy.ndarray, shape (..., num_heads, L_q, L_k), float64
        Every head's attention weights, each row summing to 1 (0 for a
        fully masked row). ``weights.mean(axis=-3)`` is PyTorch's default,
        head-averaged, ``attn_output_weights``.

    Notes
    -----
    **Masks compared with PyTorch 2.13.** ``nn.MultiheadAttention`` has two
    boolean masks, and in both ``True`` means the *opposite* of here:
    ``key_padding_mask`` ``(N, S)``, ``True`` = ignore this key (padding),
    and ``attn_mask`` ``(L, S)`` or ``(N * num_heads, L, S)``, ``True`` =
    not allowed to attend. So ``key_padding_mask=pad`` is
    ``mask=~pad[:, None, None, :]`` here, and ``attn_mask=m`` is
    ``mask=~m`` (a 3-D ``m`` reshaped to ``(N, num_heads, L, S)`` first).
    ``torch.nn.functional.scaled_dot_product_attention``, by contrast, uses
    ``True`` = may attend, like this function.

    **A fully masked query row** (no key it may attend to) has no defined
    softmax. Here every head gives that row weights 0 and output 0 (see
    :func:`qkv.scaled_dot_product_attention`), so after ``W_o`` the output
    row is ``out_proj_bias`` (zeros without a bias): finite, and the same
    whatever the masked keys hold. PyTorch 2.13's ``nn.MultiheadAttention``,
    measured in float64 with either mask, returns NaN for that row with
    ``need_weights=True`` (its default; the weights row is NaN too). With
    ``need_weights=False`` it returns ``out_proj.bias``, like this function,
    except when its inference fast path runs (self-attention in eval mode
    with autograd off, e.g. under ``torch.no_grad()``), which returns NaN
    again. ``F.scaled_dot_product_attention`` returns a zero row.
    ``tests/test_multihead.py`` and ``tests/test_torch_crosscheck.py``
    measure each of these cases.

    Raises
    ------
    TypeError
        If an input is not numeric, ``num_heads`` is not an integer, or
        ``mask`` is neither bool nor float.
    ValueError
        If ``query``, ``key`` or ``value`` has fewer than 2 dimensions or
        holds NaN/inf; ``num_heads < 1`` or does not divide ``d_model``; ``key``
        or ``value`` has a last dimension other than ``d_model``; ``key`` and
        ``value`` differ in ``L_k``; the batch dimensions do not broadcast;
        a weight or bias has a shape other than ``(3 * d_model, d_model)``, ``(d_model, d_model)``,
        ``(3 * d_model,)``, ``(d_model,)``; or ``mask`` does not broadcast to
        ``(..., num_heads, L_q, L_k)``.

    Examples
    --------
    Two heads over ``d_model = 4``. With identity projections, head 0 compares
    dimensions 0-1 of the rows and head 1 dimensions 2-3, so the two heads
    can attend to different keys:

    >>> import numpy as np
    >>> from qkv import multi_head_attention
    >>> x = np.array([[4.0, 0.0, 0.0, 0.0],    # (L, d_model) = (3, 4)
    ...               [0.0, 0.0, 4.0, 0.0],
    ...               [4.0, 0.0, 4.0, 0.0]])
    >>> eye = np.eye(4)
    >>> in_proj = np.concatenate([eye, eye, eye])   # [W_q; W_k; W_v]: (12, 4)
    >>> out, weights = multi_head_attention(x, x, x, 2, in_proj, eye)
    >>> out.shape, weights.shape                    # (L, d_model), (num_heads, L, L)
    ((3, 4), (2, 3, 3))
    >>> weights[0, 2].round(3).tolist()             # head 0: row 2 matches rows 0 and 2
    [0.5, 0.0, 0.5]
    >>> weights[1, 2].round(3).tolist()             # head 1: rows 1 and 2
    [0.0, 0.5, 0.5]

    A key-padding mask (``True`` = real token) hides the last key from
    every query and head:

    >>> keep = np.array([True, True, False])
    >>> _, weights = multi_head_attention(x, x, x, 2, in_proj, eye,
    ...                                   mask=keep[None, None, :])
    >>> float(weights[:, :, 2].max())
    0.0
    """
    q_in, k_in, v_in, num_heads, w_in, w_out, b_in, b_out, batch = _check_layer(
        query, key, value, num_heads, in_proj_weight, out_proj_weight, in_proj_bias, out_proj_bias
    )
    scores_shape = (*batch, num_heads, q_in.shape[-2], k_in.shape[-2])
    if mask is not None:
        try:
            mask = np.asarray(mask)
        except (ValueError, TypeError) as exc:
            raise ValueError(f"mask could not be converted to an array: {exc}") from exc
        try:
            fits = np.broadcast_shapes(mask.shape, scores_shape) == scores_shape
        except ValueError:
            fits = False
        if not fits:
            raise ValueError(
                f"mask of shape {mask.shape} does not broadcast to the per-head scores shape "
                f"{scores_shape}, i.e. (..., num_heads, L_q, L_k); a key-padding mask of "
                f"shape (..., L_k) goes in as mask[..., None, None, :]"
            )

    w_q, w_k, w_v = np.split(w_in, 3)  # (d_model, d_model) each, rows of the packed matrix
    b_q, b_k, b_v = np.split(b_in, 3)  # (d_model,) each
    q = q_in @ w_q.T + b_q  # (..., L_q, d_model) @ (d_model, d_model) -> (..., L_q, d_model)
    k = k_in @ w_k.T + b_k  # (..., L_k, d_model) @ (d_model, d_model) -> (..., L_k, d_model)
    v = v_in @ w_v.T + b_v  # (..., L_k, d_model) @ (d_model, d_model) -> (..., L_k, d_model)
    q_heads = _split_heads(q, num_heads)  # (..., L_q, d_model) -> (..., h, L_q, d_head)
    k_heads = _split_heads(k, num_heads)  # (..., L_k, d_model) -> (..., h, L_k, d_head)
    v_heads = _split_heads(v, num_heads)  # (..., L_k, d_model) -> (..., h, L_k, d_head)
    # (..., h, L_q, d_head) x (..., h, L_k, d_head) -> (..., h, L_q, d_head), (..., h, L_q, L_k)
    additive = None if mask is None else _check_mask(mask, scores_shape)  # bool -> 0 / -inf
    # The same arithmetic as scaled_dot_product_attention (qkv.attention's core), per head.
    heads, weights = _attend(
        q_heads,
        k_heads,
        v_heads,
        additive,
        1.0 / np.sqrt(q_heads.shape[-1]),
        names=("query @ W_q.T + b_q", "key @ W_k.T + b_k", "value @ W_v.T + b_v"),
    )
    concat = _merge_heads(heads)  # (..., h, L_q, d_head) -> (..., L_q, d_model)
    output = concat @ w_out.T + b_out  # (..., L_q, d_model) @ (d_model, d_model) -> (..., L_q, d_model)
    return output, weights
