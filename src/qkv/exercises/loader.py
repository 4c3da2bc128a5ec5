"""Load a learner's Python file into a namespace of functions.

The file runs like a script would (its folder first on ``sys.path``, so it
can import its neighbours) except that ``if __name__ == "__main__":``
blocks are skipped.

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
import runpy
import sys
import traceback
from pathlib import Path
from typing import Any

__all__ = ["LoadError", "load_file"]


class LoadError(Exception):
    """The learner's file could not run (syntax error, error at top level)."""


def _where(exc: BaseException, path: Path) -> str:
    if isinstance(exc, SyntaxError) and exc.lineno is not None:
        return f" (line {exc.lineno} of {path.name})"
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if Path(f.filename) == path]
    return f" (line {frames[-1].lineno} of {path.name})" if frames else ""


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
        If ``path`` is a notebook (``.ipynb``): check from inside it instead.
    LoadError
        If running the file raised; the message shows the error and its line.
    """
    path = Path(path).resolve()
    if not path.is_file():
        raise FileNotFoundError(f"no such file: {path}")
    if path.suffix == ".ipynb":
        raise ValueError(
            f"{path.name} is a notebook: run the check inside it, e.g. "
            '`from qkv.exercises import check; check("input-layer", globals())`, '
            "or export it first with `jupyter nbconvert --to script`"
        )
    sys.path.insert(0, str(path.parent))
    try:
        return runpy.run_path(str(path), run_name="__qkv_exercise__")
    except Exception as exc:  # anything the learner's top-level code raises
        text = exc.msg if isinstance(exc, SyntaxError) else str(exc)
        message = f"{type(exc).__name__}: {text}{_where(exc, path)}"
        raise LoadError(message) from exc
    finally:
        try:
            sys.path.remove(str(path.parent))
        except ValueError:
            pass
