"""The KV cache: keys and values of earlier tokens, stored once, probed per token.

With a causal mask, row ``i`` of attention reads keys and values ``0 .. i``
only, and those rows never change once computed: token ``i + 1`` does not
alter what token ``i`` saw. So a model that writes one token at a time keeps
every key and value row it has made (an append-only table) and, for each new
token, appends one row and runs one query against the table, instead of
recomputing attention over the whole prefix at every step.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from qkv._checks import as_finite_float_array, check_array_bytes, check_real_number
from qkv.attention import _attend

__all__ = ["KVCache"]


class KVCache:
    """Append-only store of key and value rows for one attention head.

    ``append`` adds rows; ``attend`` returns the attention output of a query
    over every row stored so far. Decoding token by token (append the new
    token's key and value, then attend with its query) gives exactly the
    rows of causal ``scaled_dot_product_attention`` (to about 1e-15).

    Storage grows by doubling: when the rows no longer fit, the capacity
    doubles and the rows are copied once. Appending ``L`` rows one at a time
    therefore copies fewer than ``2 L`` rows in all (amortised O(1) per
    row), and memory is O(L d): at most twice the rows held, plus the
    initial capacity.

    Parameters
    ----------
    capacity : int, default 16
        Rows reserved before the first doubling.

    Examples
    --------
    >>> import numpy as np
    >>> import qkv
    >>> rng = np.random.default_rng(0)
    >>> q, k, v = rng.normal(size=(3, 5, 4))           # 5 tokens, d = 4
    >>> cache = qkv.KVCache()
    >>> rows = []
    >>> for i in range(5):
    ...     cache.append(k[i], v[i])                   # store token i's key and value once
    ...     rows.append(cache.attend(q[i]))            # token i reads tokens 0..i
    >>> full, _ = qkv.scaled_dot_product_attention(q, k, v, qkv.causal_mask(5))
    >>> bool(np.abs(np.stack(rows) - full).max() < 1e-12)
    True
    >>> len(cache), cache.capacity
    (5, 16)
    """

    def __init__(self, capacity: int = 16) -> None:
        if isinstance(capacity, (bool, np.bool_)) or not isinstance(capacity, (int, np.integer)):
            raise TypeError(f"capacity must be an integer, got {capacity!r}")
        if capacity < 1:
            raise ValueError(f"capacity must be at least 1, got {capacity}")
        self._capacity = int(capacity)
        self._length = 0
        self._keys: np.ndarray | None = None  # (capacity, d_k) once the first row arrives
        self._values: np.ndarray | None = None  # (capacity, d_v)

    def __len__(self) -> int:
        return self._length

    def __repr__(self) -> str:
        dims = "" if self._keys is None else f", d_k={self._keys.shape[1]}, d_v={self._values.shape[1]}"
        return f"KVCache(rows={self._length}, capacity={self._capacity}{dims})"

    @property
    def capacity(self) -> int:
        """Rows the cache can hold before its next doubling."""
        return self._capacity

    @property
    def keys(self) -> np.ndarray:
        """The stored key rows, shape (len, d_k); a read-only view."""
        return self._view(self._keys)

    @property
    def values(self) -> np.ndarray:
        """The stored value rows, shape (len, d_v); a read-only view."""
        return self._view(self._values)

    @property
    def nbytes(self) -> int:
        """Bytes reserved for keys and values (capacity, not only the rows used)."""
        return 0 if self._keys is None else self._keys.nbytes + self._values.nbytes

    def _view(self, store: np.ndarray | None) -> np.ndarray:
        if store is None:
            return np.empty((0, 0))
        view = store[: self._length]
        view.flags.writeable = False
        return view

    def append(self, key: Any, value: Any) -> None:
        """Store one row (``key`` (d_k,), ``value`` (d_v,)) or several ((n, d_k), (n, d_v)).

        The first call fixes ``d_k`` and ``d_v``; later rows must match.

        Raises
        ------
        TypeError
            If ``key`` or ``value`` is not numeric.
        ValueError
            If they are not 1-D or 2-D, hold NaN/inf, differ in their number
            of rows, or do not match the ``d_k``/``d_v`` already stored.
        """
        k = as_finite_float_array(key, "key")
        v = as_finite_float_array(value, "value")
        for arr, name, dim in ((k, "key", "d_k"), (v, "value", "d_v")):
            if arr.ndim not in (1, 2) or arr.shape[-1] == 0:
                raise ValueError(
                    f"{name} must be one row ({dim},) or rows (n, {dim}) with {dim} >= 1, got shape {arr.shape}"
                )
        k, v = np.atleast_2d(k), np.atleast_2d(v)
        if k.shape[0] != v.shape[0]:
            raise ValueError(
                f"key and value must have the same number of rows (one value per key), "
                f"got key shape {k.shape} and value shape {v.shape}"
            )
        if self._keys is None:
            self._keys = np.empty((self._capacity, k.shape[1]))
            self._values = np.empty((self._capacity, v.shape[1]))
        for arr, store, name, dim in ((k, self._keys, "key", "d_k"), (v, self._values, "value", "d_v")):
            if arr.shape[1] != store.shape[1]:
                raise ValueError(
                    f"{name} rows have {dim}={arr.shape[1]}, but the cache holds rows with {dim}={store.shape[1]}"
                )
        needed = self._length + k.shape[0]
        if needed > self._capacity:
            self._grow(needed)
        self._keys[self._length : needed] = k
        self._values[self._length : needed] = v
        self._length = needed

    def _grow(self, needed: int) -> None:
        """Double the capacity until ``needed`` rows fit; copy the rows once."""
        capacity = self._capacity
        while capacity < needed:
            capacity *= 2
        for name in ("_keys", "_values"):
            old = getattr(self, name)
            check_array_bytes((capacity, old.shape[1]), old.dtype, f"a KVCache of {capacity} rows")
            new = np.empty((capacity, old.shape[1]))
            new[: self._length] = old[: self._length]
            setattr(self, name, new)
        self._capacity = capacity

    def attend(self, query: Any, *, scale: float | None = None) -> np.ndarray:
        """Attention of ``query`` over every stored row.

        Parameters
        ----------
        query : array_like, shape (d_k,) or (n, d_k)
            One query row, or several (each attends to all stored rows).
        scale : float, optional
            Multiplies the scores; defaults to ``1 / sqrt(d_k)``.

        Returns
        -------
        numpy.ndarray, shape (d_v,) or (n, d_v)
            ``softmax(query @ keys.T * scale) @ values``.

        Raises
        ------
        ValueError
            If nothing was appended yet, ``query`` is not 1-D or 2-D, its
            ``d_k`` does not match the stored keys, or it holds NaN/inf.
        """
        if self._length == 0:
            raise ValueError("query: the cache is empty; append(key, value) at least one row before attend(query)")
        q = as_finite_float_array(query, "query")
        d_k = self._keys.shape[1]
        if q.ndim not in (1, 2) or q.shape[-1] != d_k:
            raise ValueError(
                f"query must have shape ({d_k},) or (n, {d_k}) to match the cached keys, got shape {q.shape}"
            )
        scale = 1.0 / np.sqrt(d_k) if scale is None else check_real_number(scale, "scale")
        # (n, d_k) against (len, d_k) keys and (len, d_v) values -> (n, d_v)
        output, _ = _attend(np.atleast_2d(q), self.keys, self.values, None, scale)
        return output[0] if q.ndim == 1 else output
