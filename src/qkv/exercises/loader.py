"""Load a learner's Python file into a namespace of functions.

The file runs like a script would (its folder first on ``sys.path``, so it
can import its neighbours) except that ``if __name__ == "__main__":``
blocks are skipped. The checker calls :func:`load_file` only inside the
child process that runs the learner's code (``qkv.exercises.sandbox``).

Examples
--------
>>> import pathlib, tempfile
>>> from qkv.exercises.loader import load_file
>>> with tempfile.TemporaryDirectory() as tmp:
...     path = pathlib.Path(tmp, "mine.py")
...     _ = path.write_text("def double(x):\\n    return 2 * x\\n")
...     load_file(path)["double"](21)
42
"""

from __future__ import annotations

import os
import re
import runpy
import sys
import traceback
from pathlib import Path
from types import TracebackType
from typing import Any

import numpy as np

__all__ = ["LoadError", "check_path", "load_file", "learner_frame", "describe_exit"]

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
_NUMPY_DIR = os.path.dirname(os.path.abspath(np.__file__))


class LoadError(Exception):
    """The learner's file could not run (syntax error, error or ``sys.exit`` at top level)."""


#: A notebook cell's code: IPython compiles each cell under a temporary name
#: (``/tmp/ipykernel_1234/4039370886.py``, or ``<ipython-input-3-...>``).
_NOTEBOOK_CELL = re.compile(r"(?:^|[/\\])ipykernel_\d+[/\\]\d+\.py$|^<ipython-input-")


def learner_frame(tb: TracebackType | None) -> str | None:
    """Where in the learner's code an exception came from, if anywhere.

    Frames of this package and of NumPy are skipped: the answer is the last
    line of the learner's own code, e.g. ``"line 7 of mine.py, in one_hot"``.
    In a notebook, whose cells have temporary file names, it is the line
    counted within the function: ``"line 3 of one_hot"``.
    """
    frames = []
    while tb is not None:
        code = tb.tb_frame.f_code
        path = os.path.abspath(code.co_filename)
        if os.path.dirname(path) != _PACKAGE_DIR and not path.startswith(_NUMPY_DIR):
            frames.append((code, tb.tb_lineno))
        tb = tb.tb_next
    if not frames:
        return None
    code, line = frames[-1]
    if _NOTEBOOK_CELL.search(code.co_filename):
        return f"line {line - code.co_firstlineno + 1} of {code.co_name}"
    return f"line {line} of {os.path.basename(code.co_filename)}, in {code.co_name}"


def describe_exit(code: Any) -> str:
    """``sys.exit(code)`` as the learner wrote it, e.g. ``"called sys.exit(0)"``.

    Examples
    --------
    >>> describe_exit(None), describe_exit("bye")
    ('called sys.exit()', "called sys.exit('bye')")
    """
    if code is None:
        return "called sys.exit()"
    try:
        text = repr(code)
    except BaseException:  # noqa: BLE001 - the learner's object
        text = "..."
    return f"called sys.exit({text[:60]})"


def _where(exc: BaseException, path: Path) -> str:
    if isinstance(exc, SyntaxError) and exc.lineno is not None:
        return f" (line {exc.lineno} of {path.name})"
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if Path(f.filename) == path]
    return f" (line {frames[-1].lineno} of {path.name})" if frames else ""


def check_path(path: str | os.PathLike[str]) -> Path:
    """The resolved path of a learner's ``.py`` file.

    Raises
    ------
    FileNotFoundError
        If there is no such file.
    ValueError
        If ``path`` is a notebook (``.ipynb``): check from inside it instead;
        or if the system cannot use it as a file name (too long, say).

    Examples
    --------
    >>> check_path("x" * 5000 + ".py")
    Traceback (most recent call last):
    ...
    ValueError: cannot use 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx...' (5003 characters) as a file: File name too long
    """
    given = os.fspath(path)
    try:
        path = Path(given).resolve()
        is_file = path.is_file()
    except OSError as exc:  # ENAMETOOLONG, say: a usage error, not a crash
        shown = repr(given) if len(given) <= 50 else f"{given[:44] + '...'!r} ({len(given)} characters)"
        raise ValueError(f"cannot use {shown} as a file: {exc.strerror or exc}") from None
    if not is_file:
        raise FileNotFoundError(f"no such file: {path}")
    if path.suffix == ".ipynb":
        raise ValueError(
            f"{path.name} is a notebook: run the check inside it, e.g. "
            '`from qkv.exercises import check; check("input-layer", globals())`, '
            "or export it first with `jupyter nbconvert --to script`"
        )
    return path


def load_file(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Run the Python file ``path`` and return its global names.

    Parameters
    ----------
    path : str or path-like
        A ``.py`` file.

    Returns
    -------
    dict
        The file's globals (its functions among them).

    Raises
    ------
    FileNotFoundError
        If there is no such file.
    ValueError
        If ``path`` is a notebook (``.ipynb``).
    LoadError
        If running the file raised or called ``sys.exit``; the message shows
        what happened and its line.
    """
    path = check_path(path)
    sys.path.insert(0, str(path.parent))
    try:
        return runpy.run_path(str(path), run_name="__qkv_exercise__")
    except SystemExit as exc:
        raise LoadError(f"{describe_exit(exc.code)}{_where(exc, path)}") from exc
    except Exception as exc:  # anything the learner's top-level code raises
        text = exc.msg if isinstance(exc, SyntaxError) else str(exc)
        message = f"{type(exc).__name__}: {text}{_where(exc, path)}"
        raise LoadError(message) from exc
    finally:
        try:
            sys.path.remove(str(path.parent))
        except ValueError:
            pass
