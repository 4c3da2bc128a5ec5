"""Private validation helpers shared by every module.

Each helper checks one thing and raises an error that names the argument,
says what was expected and shows what was found, so that a learner who
passes the wrong thing can fix it from the message alone.

``MAX_ARRAY_BYTES`` is the largest array, in bytes, that a qkv function will
allocate from a size argument (2 GiB): asking for more, e.g.
``sinusoidal_encoding(10**9, 512)``, is refused at once with a ValueError
that names the argument and the bytes it would need, instead of filling the
machine's memory for seconds before a MemoryError.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np

# dtype kinds accepted as numbers: bool, signed int, unsigned int, float.
# Complex ('c') is rejected: attention scores must be ordered reals.
_NUMERIC_KINDS = "biuf"

# The largest single array a qkv function allocates: 2 GiB (read at call time,
# so a test or a user with a big machine can change qkv._checks.MAX_ARRAY_BYTES).
MAX_ARRAY_BYTES = 2 * 1024**3


def as_float_array(value: Any, name: str) -> np.ndarray:
    """Convert ``value`` to a float64 array, rejecting non-numeric input.

    Raises TypeError naming ``name`` and the dtype found when the values are
    not real numbers (strings, objects, complex numbers). Always returns a
    float64 array; it may share memory with ``value`` when that already is
    one, so callers must not write into it.
    """
    try:
        arr = np.asarray(value)
    except (ValueError, TypeError) as exc:  # e.g. ragged nested lists
        raise ValueError(f"{name} could not be converted to an array: {exc}") from exc
    if arr.dtype.kind not in _NUMERIC_KINDS:
        raise TypeError(f"{name} must contain real numbers, got an array of dtype {arr.dtype}")
    return arr.astype(np.float64, copy=False)


def check_finite(arr: np.ndarray, name: str) -> None:
    """Raise ValueError naming ``name`` if ``arr`` holds NaN or +/-inf."""
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite, but it contains NaN or inf")


def as_finite_float_array(value: Any, name: str) -> np.ndarray:
    """``as_float_array`` followed by ``check_finite``: the usual input check."""
    arr = as_float_array(value, name)
    check_finite(arr, name)
    return arr


def check_ndim(arr: np.ndarray, name: str, ndim: int, shape_text: str) -> None:
    """Raise ValueError unless ``arr.ndim == ndim``.

    ``shape_text`` is the expected shape written for a person, e.g.
    ``"(L, d_model)"``; the message shows it next to the actual shape.
    """
    if arr.ndim != ndim:
        raise ValueError(f"{name} must have shape {shape_text} ({ndim}-D), got shape {arr.shape} ({arr.ndim}-D)")


def check_min_ndim(arr: np.ndarray, name: str, ndim: int, shape_text: str) -> None:
    """Raise ValueError unless ``arr.ndim >= ndim`` (batch dims allowed)."""
    if arr.ndim < ndim:
        raise ValueError(
            f"{name} must have shape {shape_text} (at least {ndim}-D), got shape {arr.shape} ({arr.ndim}-D)"
        )


def check_int(value: Any, name: str) -> int:
    """Return ``value`` as a Python int; TypeError for bools, floats, others.

    ``True`` is an int in Python, but a bool where a count is expected is
    almost always a mistake, so it is refused.
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {value!r} of type {type(value).__name__}")
    return int(value)


def check_positive_int(value: Any, name: str) -> int:
    """Return ``value`` as a Python int, requiring an integer >= 1."""
    value = check_int(value, name)
    if value <= 0:
        raise ValueError(f"{name} must be a positive integer, got {value}")
    return value


def check_real_number(value: Any, name: str) -> float:
    """Return ``value`` as a finite Python float; refuse bools and non-numbers."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {value!r} of type {type(value).__name__}")
    value = float(value)
    if not np.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value}")
    return value


def check_token_id(token_id: Any, vocab_size: int, name: str = "token_id") -> int:
    """Validate one token id: an integer in ``0 .. vocab_size - 1``."""
    token_id = check_int(token_id, name)
    if not 0 <= token_id < vocab_size:
        raise ValueError(
            f"{name}={token_id} is out of range: valid ids are 0 .. {vocab_size - 1} (vocab_size={vocab_size})"
        )
    return token_id


def as_token_ids(token_ids: Any, vocab_size: int, name: str = "token_ids") -> np.ndarray:
    """Validate a 1-D sequence of token ids and return it as an int array.

    Ids index rows of a table, so only integer dtypes are accepted: floats
    (even ``3.0``), bools and strings raise TypeError. Every id must lie in
    ``0 .. vocab_size - 1``; the first offending id is named in the
    ValueError together with its position and the valid range.
    """
    arr = np.asarray(token_ids)
    if arr.size == 0 and arr.dtype == np.float64:
        arr = arr.astype(np.intp)  # np.asarray([]) is float64; an empty list is fine
    if arr.dtype.kind not in "iu":
        raise TypeError(f"{name} must be integers (row numbers of a table), got an array of dtype {arr.dtype}")
    check_ndim(arr, name, 1, "(L,)")
    bad = np.flatnonzero((arr < 0) | (arr >= vocab_size))
    if bad.size:
        pos = int(bad[0])
        raise ValueError(
            f"{name} contains id {int(arr[pos])} at position {pos}, which is out of "
            f"range: valid ids are 0 .. {vocab_size - 1} (vocab_size={vocab_size})"
        )
    return arr.astype(np.intp, copy=False)


def check_array_bytes(shape: tuple[int, ...], dtype: Any, what: str) -> None:
    """Raise ValueError if an array of ``shape`` and ``dtype`` exceeds ``MAX_ARRAY_BYTES``.

    Call it before allocating. ``what`` names the arguments that set the
    shape, as the caller wrote them, e.g. ``"length=100000"``; the message
    gives it with the shape and the bytes the array would need. The byte
    count is a Python int, so it cannot overflow.
    """
    dtype = np.dtype(dtype)
    nbytes = math.prod(shape) * dtype.itemsize
    if nbytes > MAX_ARRAY_BYTES:
        raise ValueError(
            f"{what} would need a {dtype} array of shape {tuple(shape)}: {nbytes:,} bytes "
            f"({nbytes / 2**30:.1f} GiB), more than the limit of {MAX_ARRAY_BYTES:,} bytes "
            f"({MAX_ARRAY_BYTES / 2**30:g} GiB) per array set by qkv._checks.MAX_ARRAY_BYTES"
        )


def check_seed(value: Any, name: str = "seed", *, allow_none: bool = True) -> int | None:
    """Return a seed for ``numpy.random.default_rng``: an integer >= 0 (or None).

    NumPy's own errors for a bad seed ("expected non-negative integer",
    "SeedSequence expects int ...") do not say which argument was wrong;
    this one does. Bools and floats (even ``3.0``) are refused, and None
    too unless ``allow_none`` (None asks NumPy for a fresh random seed).
    """
    expected = "a non-negative integer or None" if allow_none else "a non-negative integer"
    if value is None and allow_none:
        return None
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be {expected}, got {value!r} of type {type(value).__name__}")
    if value < 0:
        raise ValueError(f"{name} must be {expected}, got {value}")
    return int(value)
