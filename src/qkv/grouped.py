"""Grouped-query attention (GQA; Ainslie et al. 2023, arXiv:2305.13245).

Multi-head attention keeps one key head and one value head per query head,
and a decoding model caches all of them. Grouped-query attention keeps
fewer: ``H_kv`` key/value heads, each shared by a group of
``group = H_q // H_kv`` query heads. Query head ``h`` reads key/value head
``h // group``. In SQL it is a join on that column::

    SELECT ... FROM q JOIN kv ON kv.head = q.head / :group   -- integer division

The two ends of the range have their own names: ``H_kv == H_q`` is ordinary
multi-head attention (group 1) and ``H_kv == 1`` is multi-query attention
(MQA; Shazeer 2019, arXiv:1911.02150), every query head reading one shared
key/value head. The cache shrinks by ``H_q / H_kv``; the attention of each
query head is computed exactly as in ``qkv.scaled_dot_product_attention``.
The head order is PyTorch's: ``torch.nn.functional.scaled_dot_product_attention``
with ``enable_gqa=True`` repeats key/value head ``j`` for query heads
``j * group .. j * group + group - 1`` (``repeat_interleave``), the same map.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from qkv._checks import as_finite_float_array, check_array_bytes, check_min_ndim, check_real_number
from qkv.attention import _attend, _check_d_and_length, _check_mask

__all__ = ["grouped_query_attention"]


def grouped_query_attention(
    query: Any,
    key: Any,
    value: Any,
    mask: Any = None,
    *,
    scale: float | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Attention in which a group of query heads shares each key/value head.

    Parameters
    ----------
    query : array_like, shape (..., H_q, L_q, d)
        ``H_q`` query heads.
    key : array_like, shape (..., H_kv, L_k, d)
        ``H_kv`` key heads; ``H_q`` must be a multiple of ``H_kv``.
    value : array_like, shape (..., H_kv, L_k, d_v)
        One value head per key head.
    mask : array_like of bool or float, optional
        Broadcastable to the weights, ``(..., H_q, L_q, L_k)``. Boolean:
        ``True`` means may attend. Floating point: added to the scaled
        scores, ``-inf`` blocks a key.
    scale : float, optional
        Multiplies the scores; defaults to ``1 / sqrt(d)``.

    Returns
    -------
    output : numpy.ndarray, shape (..., H_q, L_q, d_v), float64
        Query head ``h`` attends over key/value head ``h // (H_q // H_kv)``.
    weights : numpy.ndarray, shape (..., H_q, L_q, L_k), float64
        Each row sums to 1; a fully masked row gets weights and output 0,
        as in ``qkv.scaled_dot_product_attention``.

    Notes
    -----
    Leading batch dimensions (before the head axis) broadcast like
    ``matmul``'s. The join is done by indexing: key/value head
    ``h // group`` is gathered for every query head ``h``, which copies each
    shared head ``group`` times, as the reference implementation in the
    documentation of PyTorch 2.13's ``scaled_dot_product_attention`` does
    with ``repeat_interleave``. A fused kernel reads the shared head in
    place; the saving GQA is for is in the cache, which holds ``H_kv``
    heads instead of ``H_q``.

    Raises
    ------
    TypeError
        If an input is not numeric, ``mask`` is neither bool nor float, or
        ``scale`` is not a real number.
    ValueError
        If ``query``, ``key`` or ``value`` has fewer than 3 dimensions or
        holds NaN/inf; a head count is 0 or ``H_q`` is not a multiple of
        ``H_kv``; ``key`` and ``value`` differ in ``H_kv`` or ``L_k``;
        ``query`` and ``key`` differ in ``d``; the batch dimensions do not
        broadcast; ``mask`` does not broadcast to ``(..., H_q, L_q, L_k)``;
        or a score or the output overflows float64.

    Examples
    --------
    Four query heads over two key/value heads: heads 0 and 1 read key/value
    head 0, heads 2 and 3 read head 1, exactly as multi-head attention over
    the key/value heads repeated:

    >>> import numpy as np
    >>> import qkv
    >>> rng = np.random.default_rng(0)
    >>> q = rng.normal(size=(4, 3, 8))                      # (H_q, L_q, d)
    >>> k, v = rng.normal(size=(2, 2, 5, 8))                # (H_kv, L_k, d) each
    >>> out, weights = qkv.grouped_query_attention(q, k, v)
    >>> out.shape, weights.shape                            # (H_q, L_q, d_v), (H_q, L_q, L_k)
    ((4, 3, 8), (4, 3, 5))
    >>> heads = np.arange(4) // 2                           # query head h reads h // group
    >>> heads.tolist()
    [0, 0, 1, 1]
    >>> mha, _ = qkv.scaled_dot_product_attention(q, k[heads], v[heads])
    >>> bool(np.abs(out - mha).max() < 1e-12)
    True
    >>> three = rng.normal(size=(3, 5, 8))                  # 3 heads cannot share 4 evenly
    >>> qkv.grouped_query_attention(q, three, three)
    Traceback (most recent call last):
    ...
    ValueError: key has H_kv=3 heads, which must divide query's H_q=4 heads (each
    key/value head serves H_q // H_kv query heads): got query shape (4, 3, 8) and
    key shape (3, 5, 8)
    """
    q = as_finite_float_array(query, "query")
    k = as_finite_float_array(key, "key")
    v = as_finite_float_array(value, "value")
    check_min_ndim(q, "query", 3, "(..., H_q, L_q, d)")
    check_min_ndim(k, "key", 3, "(..., H_kv, L_k, d)")
    check_min_ndim(v, "value", 3, "(..., H_kv, L_k, d_v)")
    heads_q, heads_kv = q.shape[-3], k.shape[-3]
    if heads_q == 0:
        raise ValueError(f"query must have at least one head (H_q >= 1), got shape {q.shape}")
    if heads_kv == 0:
        raise ValueError(f"key must have at least one head (H_kv >= 1), got shape {k.shape}")
    if v.shape[-3] != heads_kv:
        raise ValueError(
            f"value must have as many heads as key (one value head per key head), got key "
            f"shape {k.shape} (H_kv={heads_kv}) and value shape {v.shape} (H_kv={v.shape[-3]})"
        )
    if heads_q % heads_kv:
        raise ValueError(
            f"key has H_kv={heads_kv} heads, which must divide query's H_q={heads_q} heads "
            f"(each key/value head serves H_q // H_kv query heads): got query shape {q.shape} "
            f"and key shape {k.shape}"
        )
    _check_d_and_length(q, k, v, "d")
    try:
        batch = np.broadcast_shapes(q.shape[:-3], k.shape[:-3], v.shape[:-3])
    except ValueError:
        raise ValueError(
            f"batch dimensions do not broadcast: query {q.shape}, key {k.shape}, value "
            f"{v.shape} (only the dimensions before the last three, (H, L, d), must broadcast)"
        ) from None
    weights_shape = (*batch, heads_q, q.shape[-2], k.shape[-2])
    additive_mask = None
    if mask is not None:
        try:
            mask = np.asarray(mask)
        except (ValueError, TypeError) as exc:
            raise ValueError(f"mask could not be converted to an array: {exc}") from None
        try:
            np.broadcast_to(mask, weights_shape)
        except ValueError:
            raise ValueError(
                f"mask of shape {mask.shape} does not broadcast to the attention weights "
                f"shape {weights_shape}, i.e. (..., H_q, L_q, L_k)"
            ) from None
        additive_mask = _check_mask(mask, weights_shape)  # bool -> 0 / -inf
    scale = 1.0 / np.sqrt(q.shape[-1]) if scale is None else check_real_number(scale, "scale")
    group = heads_q // heads_kv
    if group > 1:
        # The gathered copies are arrays of their own: refused up front, as every array the
        # library makes (security re-review 8a, W4), not a raw MemoryError half-way.
        for arr, name in ((k, "key"), (v, "value")):
            check_array_bytes(
                (*arr.shape[:-3], heads_q, *arr.shape[-2:]), arr.dtype, f"{name} gathered for H_q={heads_q} heads"
            )
        check_array_bytes(weights_shape, np.float64, f"the weights for query {q.shape} and key {k.shape}")
        # The join kv.head = q.head // group: (..., H_kv, L_k, d) -> (..., H_q, L_k, d)
        kv_head = np.arange(heads_q) // group
        k = k[..., kv_head, :, :]
        v = v[..., kv_head, :, :]
    # (..., H_q, L_q, d) x (..., H_q, L_k, d) -> (..., H_q, L_q, d_v), (..., H_q, L_q, L_k)
    return _attend(q, k, v, additive_mask, scale)
