"""The child process that runs one page's Python blocks (see docs_pipeline.py).

Run as ``python block_worker.py <fd> <parent pid>``: reads one JSON request per line on
stdin, runs it in the page's namespace, and writes one JSON answer per line
to file descriptor ``<fd>``. A block that exits, loops or crashes ends or
stalls this process, never the pytest run that drives it.

Requests: ``{"kind": "code", "source": ..., "path": ..., "line": <fence line>}``,
``{"kind": "doctest", ...}`` (same keys) and ``{"kind": "clear"}``.
"""

from __future__ import annotations

import contextlib
import doctest
import io
import json
import os
import sys
import traceback

DOCTEST_FLAGS = doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS


def _where_it_failed(error: BaseException, path: str) -> int | None:
    """The line in the page (the last traceback frame in it) where ``error`` was raised."""
    line = None
    for frame in traceback.extract_tb(error.__traceback__):
        if frame.filename == path:
            line = frame.lineno
    if isinstance(error, SyntaxError) and error.filename == path:
        line = error.lineno
    return line


def run_code(namespace: dict, request: dict) -> dict:
    path, line = request["path"], request["line"]
    # The block's first line is the line after its fence: tracebacks name page lines.
    source = "\n" * line + request["source"]
    printed = io.StringIO()
    try:
        code = compile(source, path, "exec", dont_inherit=True)
        with contextlib.redirect_stdout(printed):
            exec(code, namespace)
    except BaseException as error:  # noqa: BLE001 - SystemExit too: a page must not exit
        frames = traceback.format_exception(error)
        return {
            "status": "error",
            "line": _where_it_failed(error, path),
            "error": "".join(traceback.format_exception_only(error)).strip(),
            "traceback": "".join(frames)[-3000:],
            "stdout": printed.getvalue(),
            "exit": isinstance(error, SystemExit),
        }
    return {"status": "ok", "stdout": printed.getvalue()}


class _Collecting(doctest.DocTestRunner):
    def __init__(self, first_line: int) -> None:
        super().__init__(optionflags=DOCTEST_FLAGS, verbose=False)
        self.first_line = first_line
        self.failures_seen: list[dict] = []

    def report_failure(self, out, test, example, got):  # noqa: ARG002
        self.failures_seen.append(
            {
                "line": self.first_line + example.lineno,
                "source": example.source.strip(),
                "want": example.want,
                "got": got,
            }
        )

    def report_unexpected_exception(self, out, test, example, exc_info):  # noqa: ARG002
        self.failures_seen.append(
            {
                "line": self.first_line + example.lineno,
                "source": example.source.strip(),
                "want": example.want,
                "got": "".join(traceback.format_exception_only(exc_info[1])),
            }
        )


def run_doctest(namespace: dict, request: dict) -> dict:
    first_line = request["line"] + 1  # the block's text starts after its fence
    test = doctest.DocTestParser().get_doctest(request["source"], {}, request["path"], request["path"], 0)
    test.globs = namespace  # one namespace per page, as for code blocks
    runner = _Collecting(first_line)
    try:
        runner.run(test, out=lambda _: None, clear_globs=False)
    except BaseException as error:  # noqa: BLE001 - SystemExit raised inside a doctest
        return {"status": "error", "line": None, "error": repr(error), "traceback": "", "stdout": "", "exit": True}
    return {"status": "doctest", "failures": runner.failures_seen}


def _exit_with_parent() -> None:
    """If pytest dies while a block loops, this process must not live on."""
    import threading
    import time

    parent = int(sys.argv[2]) if len(sys.argv) > 2 else os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1)
        os._exit(3)

    threading.Thread(target=watch, daemon=True).start()


def main() -> None:
    _exit_with_parent()
    answers = os.fdopen(int(sys.argv[1]), "w", encoding="utf-8")
    namespace: dict = {"__name__": "__main__"}
    for raw in sys.stdin:
        request = json.loads(raw)
        if request["kind"] == "clear":
            namespace = {"__name__": "__main__"}
            answer = {"status": "ok", "stdout": ""}
        elif request["kind"] == "doctest":
            answer = run_doctest(namespace, request)
        else:
            answer = run_code(namespace, request)
        answers.write(json.dumps(answer) + "\n")
        answers.flush()


if __name__ == "__main__":
    main()
