"""Rebuild a notebook's functions as the text of a module, to run them elsewhere.

``check(name, globals())`` in a notebook hands the checker live function
objects. To run them in a child process with the same limits as a file,
the checker writes a module that defines them again: each function from
its own source text (``inspect.getsource``), compiled with its original
file name and line numbers so that error messages point where they did;
the global names the functions use (found in their bytecode, their
decorators, defaults and annotations) become imports (modules and
importable functions), literals (numbers, strings, tuples of them) or
small NumPy arrays.

Anything else raises :class:`NotPortable`, naming the function or value
that cannot be rebuilt: a lambda, a closure, a function whose source is
not available or has changed since it was defined, a class defined in the
notebook, an object that is not plain data.

Examples
--------
>>> import numpy as np
>>> from qkv.exercises.portable import NotPortable, portable_source
>>> print(portable_source({"np": np, "scale": 2.0}, ["scale"]))
# The functions of a notebook, rebuilt by qkv.exercises.portable for the checker.
scale = float.fromhex('0x1.0000000000000p+1')
>>> portable_source({"double": lambda x: 2 * x}, ["double"])
Traceback (most recent call last):
...
qkv.exercises.portable.NotPortable: double is a lambda; define it with def
"""

from __future__ import annotations
import __future__

import ast
import base64
import builtins
import dis
import inspect
import sys
import textwrap
import types
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

__all__ = ["NotPortable", "portable_source"]

_MAX_ARRAY_ENTRIES = 100_000
_FUTURE_ANNOTATIONS = __future__.annotations.compiler_flag
_ARRAY_HELPER = """def _qkv_array(dtype, shape, data):
    import base64, numpy
    return numpy.frombuffer(base64.b64decode(data), dtype=dtype).reshape(shape).copy()
"""


class NotPortable(Exception):
    """A function or value that cannot be rebuilt in another process; the message says which."""


def _importable(value: Any) -> tuple[str, str] | None:
    """``(module, name)`` when ``from module import name`` gives ``value`` back."""
    module = getattr(value, "__module__", None)
    name = getattr(value, "__qualname__", None) or getattr(value, "__name__", None)
    if not isinstance(module, str) or not isinstance(name, str) or "." in name or "<" in name:
        return None
    if module == "__main__" or module not in sys.modules:
        return None
    return (module, name) if getattr(sys.modules[module], name, None) is value else None


def _code_objects(code: types.CodeType) -> Iterable[types.CodeType]:
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _code_objects(const)


_JUMPS = set(dis.hasjrel) | set(dis.hasjabs)


def _fingerprint(code: types.CodeType) -> list[tuple[str, Any]]:
    """What a code object does, independent of where its source was compiled.

    The same ``def`` compiles a little differently alone than in its module
    (CPython uses plain attribute loads, not method loads, on names the
    module imported), and jump offsets move with it; this compares
    operations and their names and constants only.
    """
    steps: list[tuple[str, Any]] = []
    for ins in dis.get_instructions(code):
        name = {"LOAD_METHOD": "LOAD_ATTR"}.get(ins.opname, ins.opname)
        if name in ("CACHE", "NOP", "PUSH_NULL", "EXTENDED_ARG"):
            continue
        if isinstance(ins.argval, types.CodeType):
            steps.append((name, tuple(_fingerprint(ins.argval))))
        elif ins.opcode in _JUMPS:
            steps.append((name, None))
        else:
            steps.append((name, repr(ins.argval)))
    return steps


def _global_names(code: types.CodeType) -> list[str]:
    """The global names a function's code reads or writes, in order."""
    names: list[str] = []
    for inner in _code_objects(code):
        for instruction in dis.get_instructions(inner):
            if instruction.opname in ("LOAD_GLOBAL", "LOAD_NAME", "STORE_GLOBAL", "DELETE_GLOBAL"):
                if instruction.argval not in names:
                    names.append(instruction.argval)
    return names


def _definition_names(node: ast.FunctionDef | ast.AsyncFunctionDef, annotations: bool) -> list[str]:
    """Names evaluated when the ``def`` runs: decorators, defaults and (maybe) annotations."""
    parts: list[ast.AST] = [*node.decorator_list, *node.args.defaults]
    parts += [d for d in node.args.kw_defaults if d is not None]
    if annotations:
        every_arg = [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]
        every_arg += [a for a in (node.args.vararg, node.args.kwarg) if a is not None]
        parts += [a.annotation for a in every_arg if a.annotation is not None]
        parts += [node.returns] if node.returns is not None else []
    names: list[str] = []
    for part in parts:
        for sub in ast.walk(part):
            if isinstance(sub, ast.Name) and sub.id not in names:
                names.append(sub.id)
    return names


def _literal(value: Any) -> str | None:
    """Source text that evaluates to ``value``, for plain numbers, strings and tuples of them."""
    if isinstance(value, float) and type(value) in (float, np.float64):
        return f"float.fromhex({float(value).hex()!r})"
    if isinstance(value, (bool, np.bool_)):
        return repr(bool(value))
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return repr(int(value))
    if value is None or type(value) in (str, bytes):
        return repr(value)
    if type(value) in (tuple, list) and len(value) <= 1000:
        items = [_literal(v) for v in value]
        if any(item is None for item in items):
            return None
        inside = ", ".join(items)  # type: ignore[arg-type]
        if type(value) is list:
            return f"[{inside}]"
        return f"({inside},)" if len(items) == 1 else f"({inside})"
    return None


class _Builder:
    """Collects the lines of the rebuilt module, one name at a time."""

    def __init__(self) -> None:
        self.head: list[str] = []
        self.body: list[str] = []
        self.defined: dict[str, Any] = {}
        self.array_helper = False

    def add(self, name: str, value: Any) -> None:
        """Define ``name`` as ``value`` (and whatever it needs)."""
        if name in self.defined:
            if self.defined[name] is not value and not (
                _literal(value) is not None and _literal(value) == _literal(self.defined[name])
            ):
                raise NotPortable(f"two different things are called {name}")
            return
        self.defined[name] = value
        if isinstance(value, types.ModuleType):
            if value.__name__ == "__main__" or sys.modules.get(value.__name__) is not value:
                raise NotPortable(f"{name} is a module that cannot be imported by name")
            self.head.append(f"import {value.__name__} as {name}")
            return
        source = _importable(value)
        if source is not None and not isinstance(value, (int, float, str, bytes, tuple)):
            self.head.append(f"from {source[0]} import {source[1]} as {name}")
            return
        if isinstance(value, types.FunctionType):
            self._function(name, value)
            return
        literal = _literal(value)
        if literal is not None:
            self.head.append(f"{name} = {literal}")
            return
        if isinstance(value, np.ndarray) and value.dtype.kind in "biuf" and value.size <= _MAX_ARRAY_ENTRIES:
            self._array(name, value)
            return
        if isinstance(value, type):
            raise NotPortable(f"{name} is a class defined in the notebook")
        raise NotPortable(f"{name} is a {type(value).__name__}, which cannot be copied to another process")

    def _array(self, name: str, value: np.ndarray) -> None:
        if not self.array_helper:
            self.head.append(_ARRAY_HELPER)
            self.array_helper = True
        data = base64.b64encode(np.ascontiguousarray(value).tobytes()).decode("ascii")
        self.head.append(f"{name} = _qkv_array({value.dtype.str!r}, {value.shape!r}, {data!r})")

    def _function(self, name: str, fn: types.FunctionType) -> None:
        if fn.__name__ == "<lambda>":
            raise NotPortable(f"{name} is a lambda; define it with def")
        if fn.__code__.co_freevars:
            raise NotPortable(f"{name} uses variables of the function it was defined in")
        try:
            lines, first = inspect.getsourcelines(fn)
        except (OSError, TypeError):
            raise NotPortable(f"the source of {name} is not available") from None
        text = textwrap.dedent("".join(lines))
        try:
            tree = ast.parse(text)
        except SyntaxError:
            raise NotPortable(f"the source of {name} could not be read back") from None
        node = tree.body[0] if len(tree.body) == 1 else None
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or node.name != fn.__name__:
            raise NotPortable(f"the source of {name} could not be read back")
        flags = _FUTURE_ANNOTATIONS if fn.__code__.co_flags & _FUTURE_ANNOTATIONS else 0
        first = max(first, 1)
        padded = "\n" * (first - 1) + text
        filename = fn.__code__.co_filename
        compiled = compile(padded, filename, "exec", flags, True)
        rebuilt = next(
            (c for c in compiled.co_consts if isinstance(c, types.CodeType) and c.co_name == fn.__name__),
            None,
        )
        if rebuilt is None or _fingerprint(rebuilt) != _fingerprint(fn.__code__):
            raise NotPortable(f"the source of {name} has changed since it was defined; run its cell again")
        if fn.__name__ != name:
            self.add(fn.__name__, fn)
            self.body.append(f"{name} = {fn.__name__}")
            return
        for dependency in _definition_names(node, annotations=not flags):
            self._dependency(dependency, fn)
        # Blank lines in front keep the line numbers of the original, for error messages.
        self.body.append(f'exec(compile("\\n" * {first - 1} + {text!r}, {filename!r}, "exec", {flags}, True))')
        for dependency in _global_names(fn.__code__):
            self._dependency(dependency, fn)

    def _dependency(self, name: str, fn: types.FunctionType) -> None:
        if name in fn.__globals__:
            self.add(name, fn.__globals__[name])
        elif not hasattr(builtins, name):
            pass  # undefined where it was defined too: it fails the same way there

    def text(self) -> str:
        header = "# The functions of a notebook, rebuilt by qkv.exercises.portable for the checker."
        return "\n".join([header, *self.head, *self.body]) + "\n"


def portable_source(namespace: Mapping[str, Any], names: Iterable[str]) -> str:
    """The text of a module that defines ``names`` as they are in ``namespace``.

    Parameters
    ----------
    namespace : mapping
        The notebook's ``globals()``.
    names : iterable of str
        The names to rebuild (the exercise's functions); absent ones are skipped.

    Returns
    -------
    str
        Python source.

    Raises
    ------
    NotPortable
        Naming the first function or value that cannot be rebuilt.
    """
    builder = _Builder()
    for name in names:
        if name in namespace and namespace[name] is not None:
            builder.add(name, namespace[name])
    return builder.text()
