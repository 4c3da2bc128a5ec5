"""The child process that runs the learner's code (started by ``qkv.exercises.sandbox``).

It asks the kernel to kill it when the checker ends (Linux's
``PR_SET_PDEATHSIG``), limits its own address space (``RLIMIT_AS``) and, as
a backstop, its CPU time (``RLIMIT_CPU``, the time limit plus 10 s); then it
loads the learner's file,
says which of the exercise's functions it defines, then answers requests
from the checker one at a time: call a function on arguments sent as plain
data and send back the result as plain data, together with the array
arguments after the call (so that the checker can see whether the
function wrote into its inputs). It never judges an answer: the checker
computes the expected values and compares them in its own process.

Messages (``qkv.exercises.wire``), child -> checker, first one of::

    {"event": "loaded", "functions": {name: {"state": "function" | "missing" | "value", "type": ...}}}
    {"event": "load-error", "message": "ZeroDivisionError: division by zero (line 3 of mine.py)"}

then the answers to the checker's calls (``qkv.exercises.serve``) and,
after the checker's ``{"exit": true}``, ``{"event": "bye", "threads": n}``
with the number of threads the learner's code left running.

Usage (by the checker only)::

    python -m qkv.exercises._child REQUEST_FD REPLY_FD MEMORY_BYTES CPU_SECONDS FILE NAME [NAME ...]
"""

from __future__ import annotations

import os
import sys
import threading

__all__ = ["main"]

_exit = os._exit  # bound before the learner's code runs: it may replace os._exit


def _limit_resources(max_bytes: int, cpu_seconds: int) -> None:
    """Address space (the memory limit) and CPU time (a backstop, should the checker die first)."""
    try:
        import resource
    except ImportError:  # not on this platform: documented
        return
    limits = [(resource.RLIMIT_CPU, cpu_seconds)]
    if max_bytes > 0:
        limits.append((resource.RLIMIT_AS, max_bytes))
    for which, value in limits:
        try:
            resource.setrlimit(which, (value, value))
        except (ValueError, OSError):  # not enforced here: documented
            pass


def _die_with_the_checker() -> None:
    """On Linux, have the kernel kill this process when the checker ends, however it ends
    (a SIGTERM, a SIGKILL): a learner's top level that sleeps never reaches RLIMIT_CPU."""
    checker = os.environ.get("QKV_CHECKER_PID", "")
    if not sys.platform.startswith("linux") or not checker.isdigit():
        return
    import ctypes
    import signal

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() != int(checker):  # the checker ended before the line above
        _exit(0)


def main(argv: list[str]) -> None:
    """Serve the checker until it says exit; end with ``os._exit`` (threads do not hold it)."""
    request_fd, reply_fd, max_bytes, cpu_seconds = (int(a) for a in argv[:4])
    path, names = argv[4], argv[5:]
    _die_with_the_checker()
    _limit_resources(max_bytes, cpu_seconds)

    from qkv.exercises.loader import LoadError, load_file
    from qkv.exercises.serve import describe_functions, serve
    from qkv.exercises.wire import write_message

    try:
        namespace = load_file(path)
    except LoadError as exc:
        write_message(reply_fd, {"event": "load-error", "message": str(exc)})
        _exit(0)
    except BaseException as exc:  # noqa: BLE001 - e.g. KeyboardInterrupt raised at top level
        write_message(reply_fd, {"event": "load-error", "message": f"{type(exc).__name__}: {exc}"})
        _exit(0)
    write_message(reply_fd, {"event": "loaded", "functions": describe_functions(namespace, names)})
    serve(namespace, request_fd, reply_fd)  # until the checker says exit, or goes away
    others = [t for t in threading.enumerate() if t is not threading.current_thread() and t.is_alive()]
    write_message(reply_fd, {"event": "bye", "threads": len(others)})
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:  # noqa: BLE001 - the learner may have closed or replaced it
            pass
    _exit(0)


if __name__ == "__main__":
    main(sys.argv[1:])
