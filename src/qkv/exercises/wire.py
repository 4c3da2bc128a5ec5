"""Plain data between the checker and the process that runs the learner's code.

The learner's functions run in a child process (see
``qkv.exercises.sandbox``). What crosses between the two processes is JSON
only, in messages framed by a 4-byte length: numbers, strings, lists, and
arrays written as the raw bytes of a ``float64``, ``int64`` or ``bool``
array in base64. Nothing is ever unpickled, so an object the learner's code
built cannot run code in the checker: the checker rebuilds plain arrays
from bytes and validates every field (:class:`WireError` otherwise).

A learner's return value becomes plain data in the child
(:func:`encode_value`, which never raises): ``None``, a float array, a
tuple or list of those, or a description of a value that could not be read
as numbers (:class:`Unreadable`, with the reason).

Examples
--------
>>> import numpy as np
>>> from qkv.exercises.wire import decode_value, encode_value
>>> decode_value(encode_value((np.eye(2), [0.5, 1])))[0].tolist()
[[1.0, 0.0], [0.0, 1.0]]
>>> print(decode_value(encode_value(10**400)).reason)
OverflowError: int too large to convert to float
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import os
import selectors
import struct
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = [
    "MAX_MESSAGE_BYTES",
    "MAX_ARRAY_ENTRIES",
    "WireError",
    "Unreadable",
    "encode_array",
    "decode_array",
    "encode_value",
    "decode_value",
    "encode_args",
    "decode_args",
    "frame",
    "FrameReader",
    "write_message",
    "write_within",
    "read_message",
    "safe_text",
]

MAX_MESSAGE_BYTES = 16 * 1024 * 1024
"""The longest message either side accepts (16 MiB)."""

MAX_ARRAY_ENTRIES = 1_000_000
"""The largest array the child sends back (every check uses far smaller ones)."""

_MAX_ITEMS = 64  # a tuple or list longer than this is sent as one array
_MAX_DEPTH = 4
#: Longest string a learner's function may return (exercise 3 returns SQL text).
MAX_STR_CHARS = 100_000
_DTYPES = {"float64": "<f8", "int64": "<i8", "bool": "|b1"}
_HEADER = struct.Struct(">I")


class WireError(ValueError):
    """A message that is not the plain data the protocol allows."""


@dataclass(frozen=True)
class Unreadable:
    """A value the learner returned that is not an array of numbers.

    Attributes
    ----------
    type_name : str
        Its type, e.g. ``"str"`` or ``"int"``.
    text : str
        The start of its ``repr``.
    reason : str
        Why it could not be read, e.g. ``"OverflowError: int too large to convert to float"``.
    """

    type_name: str
    text: str
    reason: str


def safe_text(value: Any, limit: int = 300) -> str:
    """``str(value)`` cut to ``limit`` characters; never raises.

    Examples
    --------
    >>> safe_text("x" * 10, limit=5)
    'xx...'
    """
    try:
        text = str(value)
    except BaseException as exc:  # noqa: BLE001 - the learner's __str__ may do anything
        text = f"<str() raised {type(exc).__name__}>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _safe_repr(value: Any, limit: int = 60) -> str:
    try:
        text = repr(value)
    except BaseException as exc:  # noqa: BLE001 - ValueError for huge ints, or the learner's __repr__
        text = f"<repr() raised {type(exc).__name__}>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


# --- arrays ---------------------------------------------------------------------


def encode_array(arr: np.ndarray) -> dict[str, Any]:
    """A float64, int64 or bool array as ``{"dtype", "shape", "b64"}``.

    Examples
    --------
    >>> encode_array(np.array([True]))["dtype"]
    'bool'
    """
    name = arr.dtype.name
    if name not in _DTYPES:
        raise WireError(f"arrays of dtype {name} are not sent; use float64, int64 or bool")
    data = np.ascontiguousarray(arr, dtype=_DTYPES[name]).tobytes()
    return {"dtype": name, "shape": list(arr.shape), "b64": base64.b64encode(data).decode("ascii")}


def decode_array(data: Any, *, dtypes: tuple[str, ...] = tuple(_DTYPES)) -> np.ndarray:
    """The array :func:`encode_array` wrote, validated field by field.

    Raises
    ------
    WireError
        For anything but a dict with an allowed dtype, a list of
        non-negative int dimensions and exactly the matching number of bytes.

    Examples
    --------
    >>> decode_array({"dtype": "float64", "shape": [2], "b64": "AAAAAAAA8D8AAAAAAAAAQA=="}).tolist()
    [1.0, 2.0]
    >>> decode_array({"dtype": "object", "shape": [], "b64": ""})
    Traceback (most recent call last):
    ...
    qkv.exercises.wire.WireError: array dtype 'object' is not one of float64, int64, bool
    """
    if not isinstance(data, dict) or set(data) != {"dtype", "shape", "b64"}:
        raise WireError("an array must be {dtype, shape, b64}")
    dtype, shape, b64 = data["dtype"], data["shape"], data["b64"]
    if dtype not in dtypes:
        raise WireError(f"array dtype {dtype!r} is not one of {', '.join(dtypes)}")
    if (
        not isinstance(shape, list)
        or len(shape) > 32
        or not all(type(n) is int and 0 <= n <= MAX_ARRAY_ENTRIES for n in shape)
    ):
        raise WireError(f"array shape must be a list of at most 32 dimensions, got {safe_text(shape, 80)}")
    entries = math.prod(shape)
    if entries > MAX_ARRAY_ENTRIES or not isinstance(b64, str):
        raise WireError(f"array of {entries} entries is larger than {MAX_ARRAY_ENTRIES}")
    try:
        raw = base64.b64decode(b64.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError) as exc:
        raise WireError(f"array bytes are not base64: {exc}") from None
    kind = np.dtype(_DTYPES[dtype])
    if len(raw) != entries * kind.itemsize:
        raise WireError(f"array of shape {tuple(shape)} needs {entries * kind.itemsize} bytes, got {len(raw)}")
    return np.frombuffer(raw, dtype=kind).reshape(shape).astype(dtype)  # a fresh, writeable copy


# --- arguments (checker -> child) -------------------------------------------------


def _encode_arg(value: Any) -> Any:
    if value is None or type(value) in (bool, int, float, str):
        return value
    if isinstance(value, np.ndarray):
        return {"array": encode_array(value)}
    raise WireError(f"cannot send an argument of type {type(value).__name__}")


def encode_args(args: tuple[Any, ...]) -> list[Any]:
    """The checker's arguments (numbers, strings, None, arrays) as plain data."""
    return [_encode_arg(a) for a in args]


def decode_args(data: Any) -> list[Any]:
    """The arguments :func:`encode_args` wrote (arrays come back writeable)."""
    if not isinstance(data, list):
        raise WireError("arguments must be a list")
    args = []
    for item in data:
        if isinstance(item, dict):
            if set(item) != {"array"}:
                raise WireError("an argument must be a number, a string, None or {array}")
            args.append(decode_array(item["array"]))
        elif item is None or type(item) in (bool, int, float, str):
            args.append(item)
        else:
            raise WireError(f"unexpected argument {safe_text(item, 80)}")
    return args


# --- return values (child -> checker) -------------------------------------------


def _unreadable(value: Any, reason: str) -> dict[str, Any]:
    return {
        "t": "unreadable",
        "type": safe_text(type(value).__name__, 80),
        "text": _safe_repr(value),
        "reason": reason,
    }


def encode_value(value: Any, depth: int = 0) -> dict[str, Any]:
    """The learner's return value as plain data; never raises.

    Parameters
    ----------
    value : object
        Whatever the learner's function returned.
    depth : int
        Nesting level (tuples of tuples are followed four levels deep).

    Returns
    -------
    dict
        ``{"t": "none"}``; ``{"t": "str", "text"}`` for a ``str`` of at most
        ``MAX_STR_CHARS`` characters; ``{"t": "array", "type", "array"}`` for
        anything else NumPy reads as float64; ``{"t": "seq", "type", "items"}``
        for a short tuple or list; ``{"t": "unreadable", "type", "text", "reason"}``.

    Examples
    --------
    >>> encode_value(None)
    {'t': 'none'}
    >>> encode_value("SELECT 1")
    {'t': 'str', 'text': 'SELECT 1'}
    >>> encode_value("x" * 100_001)["reason"]
    'it has 100001 characters, more than the checker reads (100000)'
    >>> encode_value(b"abc")["reason"]
    "ValueError: could not convert string to float: b'abc'"
    """
    try:
        if value is None:
            return {"t": "none"}
        kind = type(value)
        if kind is str:
            if len(value) > MAX_STR_CHARS:
                reason = f"it has {len(value)} characters, more than the checker reads ({MAX_STR_CHARS})"
                return _unreadable(value, reason)
            return {"t": "str", "text": value}
        if kind in (tuple, list) and len(value) <= _MAX_ITEMS and depth < _MAX_DEPTH:
            items = [encode_value(item, depth + 1) for item in value]
            return {"t": "seq", "type": kind.__name__, "items": items}
        arr = np.asarray(value, dtype=np.float64)
        if arr.size > MAX_ARRAY_ENTRIES:
            return _unreadable(value, f"it has {arr.size} entries, more than the checker reads ({MAX_ARRAY_ENTRIES})")
        type_name = "ndarray" if isinstance(value, np.ndarray) else safe_text(kind.__name__, 80)
        return {"t": "array", "type": type_name, "array": encode_array(arr)}
    except BaseException as exc:  # noqa: BLE001 - __array__, __len__, __float__ of the learner's objects
        return _unreadable(value, f"{type(exc).__name__}: {safe_text(exc)}")


def decode_value(data: Any, depth: int = 0) -> Any:
    """The value :func:`encode_value` wrote: None, str, ndarray, tuple, list or :class:`Unreadable`.

    A number that was not an ndarray comes back as a Python float, a long
    list as a list of rows.
    """
    if depth > _MAX_DEPTH or not isinstance(data, dict):
        raise WireError("a value must be a dict, nested at most four levels")
    tag = data.get("t")
    if tag == "none" and len(data) == 1:
        return None
    if tag == "str" and set(data) == {"t", "text"} and isinstance(data["text"], str):
        if len(data["text"]) > MAX_STR_CHARS:
            raise WireError(f"a string holds at most {MAX_STR_CHARS} characters")
        return data["text"]
    if tag == "array" and set(data) == {"t", "type", "array"} and isinstance(data["type"], str):
        arr = decode_array(data["array"], dtypes=("float64",))
        if data["type"] != "ndarray" and arr.ndim == 0:
            return float(arr)
        if data["type"] in ("list", "tuple") and arr.ndim > 0:
            rows = list(arr)
            return rows if data["type"] == "list" else tuple(rows)
        return arr
    if tag == "seq" and set(data) == {"t", "type", "items"} and data["type"] in ("tuple", "list"):
        items = data["items"]
        if not isinstance(items, list) or len(items) > _MAX_ITEMS:
            raise WireError(f"a sequence holds at most {_MAX_ITEMS} items")
        values = [decode_value(item, depth + 1) for item in items]
        return tuple(values) if data["type"] == "tuple" else values
    if tag == "unreadable" and set(data) == {"t", "type", "text", "reason"}:
        if all(isinstance(data[k], str) and len(data[k]) <= 400 for k in ("type", "text", "reason")):
            return Unreadable(data["type"], data["text"], data["reason"])
    raise WireError(f"not a value: {safe_text(data, 80)}")


# --- framing --------------------------------------------------------------------


def frame(message: dict[str, Any]) -> bytes:
    """``message`` as JSON behind its 4-byte big-endian length."""
    body = json.dumps(message, allow_nan=False, separators=(",", ":")).encode("utf-8")
    if len(body) > MAX_MESSAGE_BYTES:
        raise WireError(f"message of {len(body)} bytes is longer than {MAX_MESSAGE_BYTES}")
    return _HEADER.pack(len(body)) + body


def _parse(body: bytes) -> dict[str, Any]:
    try:
        message = json.loads(body.decode("utf-8"))
    except (ValueError, RecursionError) as exc:
        # ValueError covers UnicodeDecodeError, JSONDecodeError and what json
        # raises beyond them, e.g. an integer of over 4300 digits.
        raise WireError(f"a message is not JSON: {safe_text(exc, 120)}") from None
    if not isinstance(message, dict):
        raise WireError("a message must be a JSON object")
    return message


class FrameReader:
    """Collects bytes as they arrive and returns whole messages.

    Examples
    --------
    >>> reader = FrameReader()
    >>> data = frame({"a": 1})
    >>> reader.feed(data[:3]), reader.feed(data[3:])
    ([], [{'a': 1}])
    """

    def __init__(self) -> None:
        self._buffer = bytearray()

    def feed(self, data: bytes) -> list[dict[str, Any]]:
        """Add ``data``; return the messages now complete (raises :class:`WireError`)."""
        self._buffer += data
        messages = []
        while len(self._buffer) >= _HEADER.size:
            (length,) = _HEADER.unpack_from(self._buffer)
            if length > MAX_MESSAGE_BYTES:
                raise WireError(f"a message announces {length} bytes, more than {MAX_MESSAGE_BYTES}")
            if len(self._buffer) < _HEADER.size + length:
                break
            body = bytes(self._buffer[_HEADER.size : _HEADER.size + length])
            del self._buffer[: _HEADER.size + length]
            messages.append(_parse(body))
        return messages


def write_message(fd: int, message: dict[str, Any]) -> None:
    """Write one framed message to the file descriptor ``fd`` (blocking)."""
    view = memoryview(frame(message))
    while view:
        view = view[os.write(fd, view) :]


def write_within(fd: int, data: bytes, seconds: float) -> float | None:
    """Write all of ``data`` to the pipe ``fd`` within ``seconds``, never blocking for longer.

    ``fd`` is made non-blocking. A reader that stops reading (a learner's
    process can shrink its pipe to one page and stop) makes this wait, not
    hang: the caller decides what the lost time means.

    Returns
    -------
    float or None
        The seconds the writing took; None when ``seconds`` ran out first
        (part of ``data`` may have been written).

    Raises
    ------
    OSError
        ``BrokenPipeError`` when the reader is gone.

    Examples
    --------
    >>> import os
    >>> read, write = os.pipe()
    >>> write_within(write, b"x" * 10, 1.0) is not None
    True
    >>> write_within(write, b"x" * 10_000_000, 0.1) is None   # nobody reads: no room for it
    True
    >>> os.close(read); os.close(write)
    """
    started = time.monotonic()
    os.set_blocking(fd, False)
    view = memoryview(data)
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_WRITE)
        while view:
            try:
                view = view[os.write(fd, view) :]
                continue
            except BlockingIOError:
                pass
            left = started + seconds - time.monotonic()
            if left <= 0 or not selector.select(timeout=left):
                return None
    return time.monotonic() - started


def read_message(fd: int) -> dict[str, Any] | None:
    """Read one framed message from ``fd`` (blocking); None at end of file."""

    def exactly(n: int) -> bytes | None:
        chunks = bytearray()
        while len(chunks) < n:
            chunk = os.read(fd, n - len(chunks))
            if not chunk:
                return None
            chunks += chunk
        return bytes(chunks)

    header = exactly(_HEADER.size)
    if header is None:
        return None
    (length,) = _HEADER.unpack(header)
    if length > MAX_MESSAGE_BYTES:
        raise WireError(f"a message announces {length} bytes, more than {MAX_MESSAGE_BYTES}")
    body = exactly(length)
    if body is None:
        return None
    return _parse(body)
