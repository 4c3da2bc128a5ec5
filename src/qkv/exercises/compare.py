"""Compare a learner's array with the expected one and explain the difference.

Every failure says what was expected: a shape, or the value at the first
index that differs (with the whole row when it is short). When the wrong
answer equals what a known-wrong implementation returns (a *variant*), the
mistake is named.

Examples
--------
>>> import numpy as np
>>> from qkv.exercises.compare import expect_close
>>> from qkv.exercises.core import CheckFailed
>>> try:
...     expect_close(np.array([[1.0, 2.5]]), np.array([[1.0, 2.0]]), "x")
... except CheckFailed as failed:
...     print(failed.details[0])
expected x[0, 1] = 2.0000, got 2.5000 (1 of 2 entries differ)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from qkv.exercises.core import CheckFailed
from qkv.exercises.wire import Unreadable, encode_value, safe_text

__all__ = ["Variant", "as_array", "fmt", "fmt_row", "identify", "expect_shape", "expect_close"]

Variant = tuple[tuple[str, ...], np.ndarray]
"""(mistake keys, what the wrong implementation returns on the check's input)."""

ATOL = 1e-6
RTOL = 1e-6


def as_array(value: Any, what: str) -> np.ndarray:
    """The learner's return value as a float array, or a clear failure.

    ``value`` is usually plain data sent back by the process that ran the
    learner's code; an :class:`~qkv.exercises.wire.Unreadable` there, or an
    object whose conversion raises here, is a :class:`CheckFailed` naming
    its type and the reason.

    Examples
    --------
    >>> as_array([[1, 2]], "f(x)").dtype
    dtype('float64')
    >>> try:
    ...     as_array(10**400, "f(x)")
    ... except CheckFailed as failed:
    ...     print(failed.details[0])
    f(x) returned int 1000..., which is not an array of numbers (OverflowError: int too large to convert to float)
    """
    if value is None:
        raise CheckFailed(f"{what} returned None: did you forget the `return` line?")
    if isinstance(value, Unreadable):
        raise CheckFailed(
            f"{what} returned {value.type_name} {value.text}, which is not an array of numbers ({value.reason})"
        )
    try:
        return np.asarray(value, dtype=np.float64)
    except (Exception, SystemExit) as exc:  # in-process only: the learner's __array__ may raise anything
        reason = f"{type(exc).__name__}: {safe_text(exc)}"
        unreadable = encode_value(value)  # never raises
        text = unreadable.get("text", "") if unreadable.get("t") == "unreadable" else ""
        raise CheckFailed(
            f"{what} returned {type(value).__name__} {text}, which is not an array of numbers ({reason})"
        ) from None


def fmt(x: float) -> str:
    """A number with 4 decimals (no ``-0.0000``).

    Examples
    --------
    >>> fmt(0.54030230586), fmt(-0.00001), fmt(float("nan"))
    ('0.5403', '0.0000', 'nan')
    """
    x = float(x)
    if not np.isfinite(x):
        return str(x)
    return f"{round(x, 4) + 0.0:.4f}"


def fmt_row(row: np.ndarray) -> str:
    """A 1-D array as ``[0.8415, 0.5403]``."""
    return "[" + ", ".join(fmt(v) for v in np.ravel(row)) + "]"


def _same(actual: np.ndarray, expected: np.ndarray) -> bool:
    return actual.shape == expected.shape and bool(np.allclose(actual, expected, atol=ATOL, rtol=RTOL, equal_nan=True))


def identify(actual: np.ndarray, variants: Sequence[Variant]) -> tuple[str, ...]:
    """The mistakes of the first variant equal to ``actual``, else ``()``.

    Examples
    --------
    >>> import numpy as np
    >>> identify(np.ones(2), [(("a",), np.zeros(2)), (("b", "c"), np.ones(2))])
    ('b', 'c')
    """
    for mistakes, wrong in variants:
        if _same(actual, np.asarray(wrong, dtype=np.float64)):
            return mistakes
    return ()


def expect_shape(actual: np.ndarray, shape: tuple[int, ...], what: str, variants: Sequence[Variant] = ()) -> None:
    """Fail unless ``actual.shape == shape``, naming a recognised mistake.

    A result whose shape is ``shape`` reversed is reported as transposed.
    """
    if actual.shape == shape:
        return
    mistakes = identify(actual, variants)
    if not mistakes and len(shape) == 2 and actual.shape == shape[::-1] and shape[0] != shape[1]:
        mistakes = ("transposed",)
    raise CheckFailed(f"expected {what} to have shape {shape}, got shape {actual.shape}", mistakes=mistakes)


def expect_close(
    actual: np.ndarray,
    expected: np.ndarray,
    label: str,
    variants: Sequence[Variant] = (),
    *,
    note: str = "",
) -> None:
    """Fail unless ``actual`` matches ``expected`` (to 1e-6).

    Parameters
    ----------
    actual, expected : numpy.ndarray
        The learner's result and the right one.
    label : str
        Name used in the message, e.g. ``"PE"`` gives ``expected PE[1, 2] = ...``.
    variants : sequence of Variant
        Known-wrong results; the first one equal to ``actual`` names the mistake.
    note : str, optional
        An extra line shown after the values (e.g. where ``expected`` comes from).
    """
    expected = np.asarray(expected, dtype=np.float64)
    expect_shape(actual, expected.shape, label, variants)
    if _same(actual, expected):
        return
    bad = ~np.isclose(actual, expected, atol=ATOL, rtol=RTOL)
    index = tuple(int(i) for i in np.argwhere(bad)[0])
    got, want = actual[index], expected[index]
    at = ", ".join(map(str, index))
    got_s, want_s = fmt(got), fmt(want)
    if got_s == want_s:  # differs beyond the 4th decimal
        got_s, want_s = f"{float(got):.10g}", f"{float(want):.10g}"
    details = [f"expected {label}[{at}] = {want_s}, got {got_s} ({int(bad.sum())} of {bad.size} entries differ)"]
    if actual.ndim == 2 and actual.shape[1] <= 8:
        prefix = f"row {index[0]} "
        details.append(f"{prefix}expected {fmt_row(expected[index[0]])}")
        details.append(f"{' ' * len(prefix)}got      {fmt_row(actual[index[0]])}")
    elif actual.ndim == 1 and actual.size <= 8:
        details.append(f"expected {fmt_row(expected)}, got {fmt_row(actual)}")
    if not np.all(np.isfinite(actual)):
        details.append("the result contains nan or inf")
    if note:
        details.append(note)
    raise CheckFailed(*details, mistakes=identify(actual, variants))
