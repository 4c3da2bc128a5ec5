"""Run ``mkdocs build`` quickly: a zygote that has imported MkDocs, its
plugins and this project's hooks forks a child per build (see
:class:`mkdocs_builds.MkdocsBuilds`).

A planted-fault build of a tiny site costs about 1.3 CPU-s as ``python -m
mkdocs build``, most of it importing MkDocs, Material, mkdocs-jupyter and
the hooks' modules; a child forked from here skips that. Each build is still
MkDocs's own command line in a process of its own: the child changes to the
site's folder, puts it first on ``sys.path`` as ``python -m`` does, and runs
``mkdocs build ...``; the hooks file is executed afresh by MkDocs, as in any
build (only the modules it imports are already loaded, in their
just-imported state).

Run as ``python mkdocs_zygote.py <fd>``. One JSON request per line on stdin,
``{"cwd": ..., "args": [...], "timeout": seconds}``; one JSON answer per line
on ``<fd>``: ``{"returncode", "stdout", "stderr", "timeout"}``. The first
request ``{"args": []}`` only answers once the imports are done.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import sys
import tempfile
import time
from pathlib import Path

# Run as a script, this file's folder is sys.path[0]; ``python -m mkdocs`` has
# the working folder there instead (each child puts its own).
if sys.path and os.path.realpath(sys.path[0]) == os.path.dirname(os.path.realpath(__file__)):
    del sys.path[0]

HOOKS = Path(__file__).resolve().parent.parent.parent / "docs" / "hooks" / "hooks.py"


def _preload() -> None:
    import material.plugins.search.plugin  # noqa: F401
    import mkdocs.__main__  # noqa: F401
    import mkdocs.commands.build  # noqa: F401
    import mkdocs.structure.pages  # noqa: F401
    import mkdocs_jupyter.plugin  # noqa: F401
    import pymdownx.superfences  # noqa: F401

    # The hooks' own imports (latex2mathml, the sibling modules), loaded as MkDocs loads
    # the hooks file; MkDocs executes the file again in every build.
    spec = importlib.util.spec_from_file_location("hooks", HOOKS)
    module = importlib.util.module_from_spec(spec)
    saved = sys.path.copy()
    sys.path.insert(0, str(HOOKS.parent))
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path[:] = saved
        sys.modules.pop("hooks", None)


def _child(cwd: str, args: list[str], out: int, err: int) -> None:
    """In the forked child: ``mkdocs <args>`` in ``cwd``, output to ``out``/``err``; never returns."""
    code = 1
    try:
        os.dup2(out, 1)
        os.dup2(err, 2)
        os.chdir(cwd)
        sys.path.insert(0, cwd)
        sys.argv = ["mkdocs", *args]
        from mkdocs.__main__ import cli

        try:
            cli.main(args=args, prog_name="mkdocs", standalone_mode=True)
            code = 0
        except SystemExit as exit_:
            code = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
    except BaseException:  # noqa: BLE001 - reported as python -m would, on stderr
        import traceback

        traceback.print_exc()
        code = 1
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def _build(request: dict) -> dict:
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        pid = os.fork()
        if pid == 0:
            _child(request["cwd"], request["args"], out.fileno(), err.fileno())
        deadline = time.monotonic() + request.get("timeout", 300)
        timed_out = False
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            if time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                timed_out, status = True, -signal.SIGKILL
                break
            time.sleep(0.02)
        returncode = os.waitstatus_to_exitcode(status) if not timed_out else status
        out.seek(0)
        err.seek(0)
        return {
            "returncode": returncode,
            "stdout": out.read().decode("utf-8", "replace"),
            "stderr": err.read().decode("utf-8", "replace"),
            "timeout": timed_out,
        }


def main() -> None:
    answers = os.fdopen(int(sys.argv[1]), "w")
    _preload()
    for line in sys.stdin:
        request = json.loads(line)
        answer = (
            _build(request) if request.get("args") else {"returncode": 0, "stdout": "", "stderr": "", "timeout": False}
        )
        answers.write(json.dumps(answer) + "\n")
        answers.flush()


if __name__ == "__main__":
    main()
