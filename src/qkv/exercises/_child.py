"""The child process that runs the learner's code (started by ``qkv.exercises.sandbox``).

Before any of the learner's code runs, it confines itself (``_confine``):

* on Linux with unprivileged user namespaces, it moves what runs the
  learner's code into a PID namespace of its own (:func:`_own_pid_namespace`):
  every process the learner's code starts, even in a session of its own,
  is killed by the kernel when the check ends or the checker dies, however
  it dies (SIGKILL included);
* the kernel kills it when the checker ends (``PR_SET_PDEATHSIG``);
* it limits its own address space (``RLIMIT_AS``) and, as a backstop, its
  CPU time (``RLIMIT_CPU``, the time limit plus 10 s);
* with Landlock, it can write files only in the temporary folder the
  checker made for it (also its ``TMPDIR``) and to ``/dev/null``, and on
  Landlock ABI 6 and later it cannot signal the checker.

It tells the checker what held (the first message), loads the learner's
file, says which of the exercise's functions it defines, then answers requests
from the checker one at a time: call a function on arguments sent as plain
data and send back the result as plain data, together with the array
arguments after the call (so that the checker can see whether the
function wrote into its inputs). It never judges an answer: the checker
computes the expected values and compares them in its own process.

Messages (``qkv.exercises.wire``), child -> checker: first
``{"event": "sandbox", "landlock": ABI or 0, "pid_namespace": bool}``, sent
before the learner's code runs; then one of::

    {"event": "loaded", "functions": {name: {"state": "function" | "missing" | "value", "type": ...}}}
    {"event": "load-error", "message": "ZeroDivisionError: division by zero (line 3 of mine.py)"}
    {"event": "load-error", "message": "PermissionError: ...", "refused": "read" | "write"}

then the answers to the checker's calls (``qkv.exercises.serve``) and,
after the checker's ``{"exit": true}``, ``{"event": "bye", "threads": n}``
with the number of threads the learner's code left running.

Usage (by the checker only)::

    python -P -m qkv.exercises._child REQUEST_FD REPLY_FD MEMORY_BYTES CPU_SECONDS FOLDER FILE NAME [NAME ...]

``FOLDER`` is the one folder the learner's code may write in.
"""

from __future__ import annotations

import os
import select
import signal
import sys
import threading

from qkv.exercises import _confine

__all__ = ["main"]

_exit = os._exit  # bound before the learner's code runs: it may replace os._exit

_CLONE_NEWUSER, _CLONE_NEWPID = 0x10000000, 0x20000000


def _checker_pid() -> int | None:
    checker = os.environ.get("QKV_CHECKER_PID", "")
    return int(checker) if checker.isdigit() else None


def _map_ids(uid: int, gid: int) -> None:
    """In a new user namespace, be user ``uid`` and group ``gid``, the ones from outside (else: nobody)."""
    for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1")):
        try:
            with open(f"/proc/self/{name}", "w") as f:
                f.write(text)
        except OSError:
            pass


def _end_as(status: int) -> None:
    """End this process as the wait status ``status`` says another one ended: same exit code, same signal."""
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        try:
            import resource

            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # a SIGSEGV passed on leaves no core file
        except (ImportError, ValueError, OSError):
            pass
        try:
            signal.signal(number, signal.SIG_DFL)
        except (OSError, ValueError):  # SIGKILL, SIGSTOP: cannot be caught anyway
            pass
        signal.pthread_sigmask(signal.SIG_UNBLOCK, [number])
        os.kill(os.getpid(), number)
        _exit(128 + number)  # not reached for a signal that ends a process
    _exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 1)


def _own_pid_namespace(keep_closed: tuple[int, ...]) -> bool:
    """Run the rest of this program in a new PID namespace, where the kernel ends every process when its first one ends.

    Needs Linux and unprivileged user namespaces (some systems turn them
    off). This process (outside the namespace, the one the checker started
    and waits for) starts the namespace's first process, which starts the
    one that goes on to run the learner's code, then waits for it and ends
    the same way (exit code or signal), so the checker sees what it would
    have seen. The first process dies with this one (``PR_SET_PDEATHSIG``),
    and this one dies with the checker: the whole namespace goes with it.
    ``keep_closed`` (the pipes to the checker) are closed in the two
    processes that only wait, so that the checker sees the learner's
    process end when it ends.

    Returns True in the process that runs the learner's code, False (and
    nothing changed) where there is no such namespace.
    """
    if not sys.platform.startswith("linux"):
        return False
    import ctypes

    uid, gid = os.getuid(), os.getgid()  # in the new namespace, nobody until mapped
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.unshare(_CLONE_NEWUSER | _CLONE_NEWPID) != 0:
            return False  # no unprivileged user namespaces here, or this process has threads
    except (OSError, AttributeError):
        return False
    _map_ids(uid, gid)
    status_read, status_write = os.pipe()
    alive_read, alive_write = os.pipe()  # readable (end of file) once this process is gone
    first = os.fork()
    if first:  # outside the namespace: wait, then end as the learner's process ended
        for fd in (status_write, alive_read, *keep_closed):
            os.close(fd)
        with os.fdopen(status_read, "rb") as statuses:
            reported = statuses.read()
        _, status = os.waitpid(first, 0)
        _end_as(int(reported) if reported.strip().isdigit() else status)
    # PID 1 of the namespace: when it ends, the kernel kills every other process in it.
    os.close(status_read)
    os.close(alive_write)
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # as PID 1: a signal from inside the namespace is ignored
    _confine.die_with_parent(None)  # its parent is outside the namespace: the pipe below tells whether it is gone
    if select.select([alive_read], [], [], 0)[0]:
        _exit(1)  # the process outside ended before PR_SET_PDEATHSIG was set
    learner = os.fork()
    if learner == 0:
        os.close(status_write)
        os.close(alive_read)
        return True
    for fd in keep_closed:
        os.close(fd)
    while True:
        try:
            pid, status = os.wait()
        except ChildProcessError:
            _exit(1)
        except InterruptedError:
            continue
        if pid == learner:
            os.write(status_write, str(status).encode())
            _exit(0)


def main(argv: list[str]) -> None:
    """Confine this process, then serve the checker until it says exit; end with ``os._exit``
    (threads do not hold it)."""
    request_fd, reply_fd, max_bytes, cpu_seconds = (int(a) for a in argv[:4])
    folder, path, names = argv[4], argv[5], argv[6:]
    checker = _checker_pid()
    if checker is not None:
        _confine.die_with_parent(checker)
    in_namespace = _own_pid_namespace((request_fd, reply_fd))
    _confine.limit(max_bytes, cpu_seconds)
    landlock = _confine.restrict_writes([folder])

    from qkv.exercises.loader import LoadError, load_file
    from qkv.exercises.serve import describe_functions, record_file_access, refused_access, serve
    from qkv.exercises.wire import write_message

    write_message(reply_fd, {"event": "sandbox", "landlock": landlock, "pid_namespace": in_namespace})
    record_file_access()  # so that a refusal can say whether it refused a read or a write
    try:
        namespace = load_file(path)
    except LoadError as exc:
        refused = refused_access(exc.__cause__)
        write_message(
            reply_fd, {"event": "load-error", "message": str(exc)} | ({"refused": refused} if refused else {})
        )
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
