"""Call the learner's functions on request and answer in plain data.

Whichever process holds the learner's functions serves them to the
checker with :func:`serve`: the child process that loaded the learner's
file (``qkv.exercises._child``) or, when a notebook's functions cannot be
rebuilt elsewhere, the notebook's own kernel. A request names a function
and carries its arguments (``qkv.exercises.wire``); the answer is its
result, or the exception it raised, as plain data, with the array
arguments as they are after the call (did the function write into them?).
Judging the answer is the checker's job, in its own process.

Messages, checker -> server: ``{"call": name, "args": [...]}``, then one
final message that is not a call (``{"exit": true}`` or
``{"report": ...}``), which :func:`serve` returns. Server -> checker::

    {"event": "returned", "value": <value>, "args_after": [<arg> or None, ...]}
    {"event": "raised", "types": [...], "message": ..., "where": ...}
    {"event": "raised", ..., "refused": "read" | "write"}   # a PermissionError (see refused_access)
    {"event": "timeout"}          # the time limit stopped the call (see core.time_limit)

Examples
--------
>>> import numpy as np
>>> from qkv.exercises.serve import call_plain
>>> call_plain(lambda x: x.sum(), [np.ones(3)])["value"]["t"]
'array'
>>> call_plain(lambda: 1 / 0, [])["types"][:2]
['ZeroDivisionError', 'ArithmeticError']
"""

from __future__ import annotations

import os
import sys
import time
import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np

from qkv.exercises.core import OutOfTime, TimeBudget, time_limit
from qkv.exercises.loader import describe_exit, learner_frame
from qkv.exercises.wire import decode_args, encode_array, encode_value, read_message, safe_text, write_message

__all__ = ["describe_functions", "call_plain", "record_file_access", "refused_access", "serve"]

#: The latest access to each path (``"read"`` or ``"write"``), once :func:`record_file_access` ran.
_ACCESSED: dict[str, str] = {}
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
#: Audit events that change the files they name (every path argument is written).
_WRITE_EVENTS = {"os.mkdir": 1, "os.remove": 1, "os.rmdir": 1, "os.truncate": 1, "os.rename": 2, "os.link": 2}


def _note_access(event: str, args: tuple[Any, ...]) -> None:
    if event == "open" and len(args) == 3 and isinstance(args[2], int):
        paths, kind = args[:1], "write" if args[2] & _WRITE_FLAGS else "read"
    elif event in _WRITE_EVENTS:
        paths, kind = args[: _WRITE_EVENTS[event]], "write"
    else:
        return
    for path in paths:
        if isinstance(path, (str, bytes)):
            key = os.fsdecode(path)
            _ACCESSED.pop(key, None)
            _ACCESSED[key] = kind
            if len(_ACCESSED) > 256:
                del _ACCESSED[next(iter(_ACCESSED))]


def record_file_access() -> None:
    """From now on, remember whether each file this process opens (or creates,
    removes, renames) is read or written, for :func:`refused_access`.
    An audit hook (``sys.addaudithook``): it stays for the life of the process."""
    sys.addaudithook(_note_access)


def refused_access(exc: BaseException | None) -> str | None:
    """What a refusal was: ``"read"`` or ``"write"``, for a ``PermissionError`` on a path
    whose latest access :func:`record_file_access` saw; None otherwise.

    Examples
    --------
    >>> refused_access(ZeroDivisionError()) is None
    True
    """
    if not isinstance(exc, PermissionError):
        return None
    for path in (exc.filename, exc.filename2):
        if isinstance(path, (str, bytes)) and os.fsdecode(path) in _ACCESSED:
            return _ACCESSED[os.fsdecode(path)]
    return None


def describe_functions(namespace: Mapping[str, Any], names: list[str]) -> dict[str, Any]:
    """What ``namespace`` holds under each name, as plain data.

    ``{"state": "function"}``, ``{"state": "missing"}`` or ``{"state": "value", "type": ...}``.

    Examples
    --------
    >>> describe_functions({"f": len, "g": 3}, ["f", "g", "h"])["g"]
    {'state': 'value', 'type': 'int'}
    """
    found: dict[str, Any] = {}
    for name in names:
        value = namespace.get(name)
        if value is None:
            found[name] = {"state": "missing"}
        elif callable(value):
            found[name] = {"state": "function"}
        else:
            found[name] = {"state": "value", "type": safe_text(type(value).__name__, 80)}
    return found


def call_plain(
    fn: Any, args: list[Any], budget: TimeBudget | None = None, *, interruptible: bool = False
) -> dict[str, Any]:
    """Call ``fn(*args)``; return the answer message, as plain data.

    With a ``budget``, the call is stopped at the time limit where a signal
    can stop it (:func:`qkv.exercises.core.time_limit`). Everything the
    call raises is an answer, except ``KeyboardInterrupt`` when
    ``interruptible`` (in a notebook's kernel: the reader pressed stop).
    """
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"), time_limit(budget):
            warnings.simplefilter("ignore")
            result = fn(*args)
    except OutOfTime:
        return {"event": "timeout"}
    except BaseException as exc:  # noqa: BLE001 - SystemExit, KeyboardInterrupt and the rest are answers too
        if interruptible and isinstance(exc, KeyboardInterrupt):
            raise
        message = describe_exit(exc.code) if isinstance(exc, SystemExit) else safe_text(exc)
        types = [safe_text(c.__name__, 80) for c in type(exc).__mro__][:20]
        answer = {"event": "raised", "types": types, "message": message, "where": learner_frame(exc.__traceback__)}
        refused = refused_access(exc)
        return answer if refused is None else answer | {"refused": refused}
    after = [
        {"array": encode_array(a)}
        if isinstance(a, np.ndarray) and a.dtype.name in ("float64", "int64", "bool")
        else None
        for a in args
    ]
    return {"event": "returned", "value": encode_value(result), "args_after": after}


def serve(
    namespace: Mapping[str, Any],
    request_fd: int,
    reply_fd: int,
    budget: TimeBudget | None = None,
    *,
    interruptible: bool = False,
) -> dict[str, Any] | None:
    """Answer call requests until a message that is not a call; return it (None at end of file).

    ``budget`` and ``interruptible`` are passed on to :func:`call_plain`.
    """
    while True:
        request = read_message(request_fd)
        if request is None or "call" not in request:
            return request
        fn = namespace.get(request["call"])
        start = time.monotonic()
        answer = call_plain(fn, decode_args(request.get("args")), budget, interruptible=interruptible)
        if budget is not None:  # every call draws on the one budget of the exercise
            budget.spend(time.monotonic() - start)
        write_message(reply_fd, answer)
