"""Run programs "alone" quickly: a zygote that has imported only NumPy and qkv
forks a child per program (see docs_pipeline.AloneRunner).

Run as ``python fork_runner.py <fd>``, started like a reader's interpreter
(working directory ``/``, no PYTHONPATH unless a block's extra packages need
one: qkv as that ``python`` has it installed, the source tree's or a fresh
venv's wheel; this file's directory is not on sys.path). One JSON request
per line on stdin, ``{"program": ..., "timeout": seconds}``; one JSON answer
per line on ``<fd>``: ``{"returncode", "stdout", "stderr", "timeout"}``.
A request ``{"preload": [module, ...]}`` imports those modules in the zygote
too (answer ``{"error"}``), for programs that all import them (torch).

Each child starts with an empty ``__main__`` namespace, runs the program as
``python -c`` would (a traceback and status 1 on an exception, ``sys.exit``
codes honoured, ``atexit`` handlers run) and its stdout and stderr are
captured at the file-descriptor level. What it shares with the zygote is
what a reader's fresh interpreter would load anyway: the imported modules
numpy and qkv, in their just-imported state.

One thing a loaded module changes that a program can see without importing
it: a submodule is an attribute of its package once anything imported it.
``import importlib`` then ``importlib.util.find_spec(...)`` works here (NumPy
imported ``importlib.util``) and fails in ``python -c``. So the zygote notes,
as each module finishes importing, which modules are its attributes then
(what its own import binds), and a program that reaches a submodule as an
attribute (``name.sub`` where ``name`` is bound by one of its imports) that
neither it imports nor its package's own import binds is not run here: the
answer is ``{"unvouched": "importlib.util"}`` and the runner runs it in a
fresh ``python -c`` instead. Packages that resolve submodules on attribute
access (a module ``__getattr__``: NumPy, torch, transformers) are trusted to
do so in ``python -c`` too.
"""

from __future__ import annotations

import os
import sys

# Run as a script, this file's directory (tests/support) is sys.path[0]; in a
# reader's ``python -c`` it is "" (the working directory, here /). Put that
# back before anything is imported, so that neither the zygote nor a program
# can import a module of the repository (qkv comes from where ``python`` has
# it installed, e.g. a fresh venv's wheel).
if sys.path and os.path.realpath(sys.path[0]) == os.path.dirname(os.path.realpath(__file__)):
    sys.path[0] = ""


def _module_attributes(module: object) -> frozenset[str]:
    return frozenset(k for k, v in getattr(module, "__dict__", {}).items() if isinstance(v, type(sys)))


#: Module name -> names of its attributes that are modules when its own
#: import finished (at start-up: what a fresh interpreter has).
OWN: dict[str, frozenset[str]] = {name: _module_attributes(m) for name, m in list(sys.modules.items())}
_bootstrap = sys.modules["_frozen_importlib"]  # importlib._bootstrap, which every import goes through
_load_unlocked = _bootstrap._load_unlocked


def _noting_load(spec):  # replaces importlib._bootstrap._load_unlocked in the zygote, not in its children
    module = _load_unlocked(spec)
    OWN[spec.name] = _module_attributes(module)
    return module


_bootstrap._load_unlocked = _noting_load

import ast  # noqa: E402 - after the sys.path fix and OWN, as every import here
import json  # noqa: E402
import signal  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

import numpy  # noqa: E402, F401 - preloaded: the point of the zygote

import qkv  # noqa: E402, F401


def unvouched(program: str) -> str | None:
    """The first submodule ``program`` reaches as an attribute of a name its
    imports bind (``importlib.util`` after ``import importlib``) that is loaded
    here but may not be in ``python -c``: neither imported by the program
    nor bound by its package's own import; None if there is none."""
    try:
        tree = ast.parse(program)
    except SyntaxError:
        return None  # python -c reports it the same way
    imported: set[str] = set()
    names: dict[str, str] = {}  # name bound by an import -> the module it may be
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                imported.update(".".join(parts[:i]) for i in range(1, len(parts) + 1))
                names[alias.asname or parts[0]] = alias.name if alias.asname else parts[0]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            parts = node.module.split(".")
            imported.update(".".join(parts[:i]) for i in range(1, len(parts) + 1))
            for alias in node.names:
                imported.add(f"{node.module}.{alias.name}")
                names[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute):
            continue
        chain = []
        while isinstance(node, ast.Attribute):
            chain.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name) or node.id not in names:
            continue
        parent = names[node.id]
        for attribute in reversed(chain):
            module = sys.modules.get(parent)
            name = f"{parent}.{attribute}"
            if module is None or name not in sys.modules:
                break
            lazy = "__getattr__" in getattr(module, "__dict__", {}) or hasattr(type(module), "__getattr__")
            if name not in imported and attribute not in OWN.get(parent, ()) and not lazy:
                return name
            parent = name
    return None


def _child(program: str, out_path: str, err_path: str, timeout: float) -> None:
    _bootstrap._load_unlocked = _load_unlocked  # imports as python -c runs them
    import atexit
    import traceback
    import types

    _exit, _stdout, _stderr = os._exit, sys.stdout, sys.stderr
    for fd, path in ((1, out_path), (2, err_path)):
        target = os.open(path, os.O_WRONLY | os.O_TRUNC)
        os.dup2(target, fd)
        os.close(target)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.alarm(int(timeout) + 10)  # a backstop if the zygote that would kill it is gone
    main = types.ModuleType("__main__")  # an empty __main__, as in a fresh interpreter
    sys.modules["__main__"] = main
    sys.argv = ["-c"]
    code = 0
    try:
        exec(compile(program, "<string>", "exec"), main.__dict__)
    except SystemExit as stop:
        if stop.code is None:
            code = 0
        elif isinstance(stop.code, int):
            code = stop.code
        else:
            print(stop.code, file=sys.stderr)
            code = 1
    except BaseException:  # noqa: BLE001 - as python -c reports it
        traceback.print_exc()
        code = 1
    try:
        atexit._run_exitfuncs()
    finally:
        for stream in (sys.stdout, sys.stderr, _stdout, _stderr):
            try:
                stream.flush()
            except Exception:  # noqa: BLE001
                pass
        _exit(code)


def run(program: str, timeout: float) -> dict:
    if (name := unvouched(program)) is not None:
        return {"unvouched": name}
    out_fd, out_path = tempfile.mkstemp()
    err_fd, err_path = tempfile.mkstemp()
    os.close(out_fd)
    os.close(err_fd)
    try:
        pid = os.fork()
        if pid == 0:
            _child(program, out_path, err_path, timeout)
        deadline = time.monotonic() + timeout
        timed_out = False
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            if time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
                _, status = os.waitpid(pid, 0)
                timed_out = True
                break
            time.sleep(0.005)
        with (
            open(out_path, encoding="utf-8", errors="replace") as out,
            open(err_path, encoding="utf-8", errors="replace") as err,
        ):
            return {
                "returncode": os.waitstatus_to_exitcode(status),
                "stdout": out.read(),
                "stderr": err.read(),
                "timeout": timed_out,
            }
    finally:
        os.unlink(out_path)
        os.unlink(err_path)


def preload(modules: list[str]) -> dict:
    """Import ``modules`` in the zygote, for programs that each import them
    themselves (torch: a second and more each time). ``{"error"}``: "" or why
    one could not be imported."""
    import importlib

    try:
        for name in modules:
            importlib.import_module(name)
    except BaseException as error:  # noqa: BLE001 - reported: the runner then starts programs afresh
        return {"error": f"{type(error).__name__}: {error}"}
    return {"error": ""}


def main() -> None:
    answers = os.fdopen(int(sys.argv[1]), "w", encoding="utf-8")
    for raw in sys.stdin:
        request = json.loads(raw)
        if "preload" in request:
            answer = preload(request["preload"])
        else:
            answer = run(request["program"], request["timeout"])
        answers.write(json.dumps(answer) + "\n")
        answers.flush()


if __name__ == "__main__":
    main()
