"""Run the learner's code in a child process, with limits; judge it here.

The checker never imports the learner's file. It starts a child process
(``python -P -m qkv.exercises._child``) that loads the file and calls the
learner's functions on the checker's inputs; the child sends back plain
data only (``qkv.exercises.wire``: JSON and the bytes of float arrays,
never a pickle). The expected answers and every comparison are computed
in this process, out of reach of the learner's code: a file that replaces
``np.allclose`` or calls ``np.seterr(all="raise")`` changes only the child.

Limits (:class:`Limits`), per exercise:

* wall clock: the learner's code (loading the file, every call, and in
  exercise 3 the time its SQL runs) gets ``seconds`` in total, 10 s by
  default (``qkv-exercise check --timeout``, at most a day); then the
  child's whole process group is killed;
* memory: the child limits its own address space with
  ``resource.setrlimit(RLIMIT_AS, ...)`` to ``memory_mb`` MiB, 1024 by
  default (``--memory-mb``; 0 = no limit, else 128 to 1048576). An
  allocation beyond it raises ``MemoryError`` in the learner's code. Linux
  enforces it (tested); other systems may not;
* output: what the learner's code prints (stdout and stderr) is kept up to
  ``output_bytes`` (16 KiB) and shown in the report; the rest is dropped.

Whatever ends the child early (``sys.exit`` at top level, ``os._exit``, a
signal, the time limit) is one FAIL line in the report, and a report
counts as passed only when every required check ran and passed. Threads
the learner's code leaves running cannot keep anything alive: the child
ends with ``os._exit`` and its process group is killed. A child that stops
reading the checker's requests uses up the time limit, then is killed: the
checker never blocks on writing to it.

Confinement (``_child.py``, ``_confine.py``; the report's ``Sandbox:``
line says which held, :func:`describe_sandbox`):

* Linux with Landlock (5.13 and later): the learner's code, and whatever
  it starts, can write files only in a temporary folder the checker makes
  for it (its ``TMPDIR``, removed afterwards) and to ``/dev/null``; its
  working directory stays the checker's (relative reads work, relative
  writes are refused). It
  cannot plant a module, a ``.pth`` file or a rewritten checker file for
  this run or a later one. On Landlock ABI 6 and later it cannot signal
  the checker (no ``SIGSTOP``), and it cannot read the checker's memory
  (nor its ``/proc/<pid>/environ``, unless it runs as root);
* Linux with unprivileged user namespaces: the learner's code runs in a
  PID namespace of its own, so every process it starts (even in a session
  of its own) is killed by the kernel when the check ends or the checker
  dies, SIGKILL included; and the checker's ``/proc/<pid>/environ`` is
  out of its reach, root or not;
* everywhere: a checker process (``qkv-exercise``, or ``python -m
  qkv.exercises.cli``) imports nothing from its working directory or its
  script's folder, where a file written by an earlier, unconfined run
  would be: ``import qkv`` drops the script's folder from ``sys.path``, or
  starts ``python -m`` again with ``-P``, before it imports anything else
  (``qkv._checker_start``). And the checker refuses
  to run (``RuntimeError``) when a standard module was imported from a
  folder other than the standard library and site-packages (a
  ``PYTHONPATH`` entry: :func:`refuse_shadowed_standard_modules`). Where
  the module came from is where the import system finds its name, not
  what the module says of itself (``__file__``).

Not covered: without Landlock, the learner's code can write your files,
including a ``.pth`` file in site-packages that runs in every later Python
start there (and so can fool later checks), or a file of the Python
installation itself; it can stop or kill the checker (``os.kill(...,
SIGSTOP)``) unless Landlock ABI 6 scopes signals or the PID namespace
hides it; without a PID namespace, a process it starts in a new session
(``os.setsid``) escapes the kill, and after a SIGKILL of the checker any
process it started runs on. The refusal of a standard module planted in
a ``PYTHONPATH`` folder is a tripwire, not a wall: it runs in the checker
after the planted file's code has run there, so a file written to defeat
it (it can change the checker's own state, ``sys.stdlib_module_names``
say) fakes a pass without Landlock. With Landlock, it can still read your files
and use the network, and change files' permissions (``chmod``), which
Landlock does not govern. Code running as root can raise its own memory
limit. After a SIGKILL of the checker, its temporary folder is left in
the system's temporary folder.

Examples
--------
>>> import pathlib, tempfile
>>> from qkv.exercises import get_exercise
>>> from qkv.exercises.sandbox import Limits, run_file
>>> with tempfile.TemporaryDirectory() as tmp:
...     path = pathlib.Path(tmp, "mine.py")
...     _ = path.write_text("import sys\\nsys.exit(0)\\n")
...     report = run_file(get_exercise("input-layer"), path, Limits(seconds=20))
>>> print(report.results[0].format())
FAIL  could not run mine.py: called sys.exit(0) (line 2 of mine.py)
        none of the 13 checks ran
>>> report.exit_code
1
"""

from __future__ import annotations

import contextlib
import importlib.machinery
import math
import os
import selectors
import shutil
import signal
import site
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

# Everything the checks import, imported before any learner code runs: a
# module imported later could come from a file the learner's code wrote on
# the search path (a `secrets.py` beside the script, which numpy.random
# imports). tests/test_exercises.py checks that a run imports nothing new.
import numpy.random  # noqa: F401, E402 - see above

from qkv.exercises.core import (
    CheckResult,
    Exercise,
    LearnerAborted,
    LearnerFunction,
    LearnerRaised,
    NotCallable,
    Report,
    TimeBudget,
    run_exercise,
)
from qkv.exercises.loader import check_path
from qkv.exercises.wire import (
    FrameReader,
    WireError,
    decode_array,
    decode_value,
    encode_args,
    frame,
    safe_text,
    write_within,
)

__all__ = [
    "Limits",
    "MEMORY_MB_RANGE",
    "check_memory_mb",
    "child_environment",
    "describe_sandbox",
    "refuse_shadowed_standard_modules",
    "require_posix",
    "run_file",
    "run_file_detailed",
    "run_served",
]

_GRACE_SECONDS = 2.0  # for the child to say goodbye, and for its pipes to close


#: The memory limits accepted besides 0 (none), in MiB: below 128, Python
#: with NumPy cannot load a learner's file; above 1 TiB the limit means nothing.
MEMORY_MB_RANGE = (128, 1_048_576)


def check_memory_mb(value: Any, name: str = "memory_mb") -> int:
    """``value`` as a memory limit in MiB, or ``ValueError`` naming ``name`` and the accepted range.

    Examples
    --------
    >>> check_memory_mb(0), check_memory_mb(512)
    (0, 512)
    >>> check_memory_mb(99999999999999999, "--memory-mb")
    Traceback (most recent call last):
    ...
    ValueError: --memory-mb must be 0 (no limit) or a whole number of MiB from 128 to 1048576 (1 TiB), got 99999999999999999
    """
    low, high = MEMORY_MB_RANGE
    if isinstance(value, bool) or not isinstance(value, int) or not (value == 0 or low <= value <= high):
        raise ValueError(
            f"{name} must be 0 (no limit) or a whole number of MiB from {low} to {high} (1 TiB), got {value!r}"
        )
    return value


@dataclass(frozen=True)
class Limits:
    """What the learner's code may use in one exercise.

    Parameters
    ----------
    seconds : float, default 10
        Wall-clock time for loading the file and every call, together
        (above 0, at most ``core.MAX_SECONDS``, a day).
    memory_mb : int, default 1024
        Address-space limit of the child process in MiB: 0 (none), or
        within ``MEMORY_MB_RANGE``.
    output_bytes : int, default 16384
        How much of the printed output is kept.
    """

    seconds: float = 10.0
    memory_mb: int = 1024
    output_bytes: int = 16 * 1024

    def __post_init__(self) -> None:
        TimeBudget(self.seconds)  # validates seconds
        check_memory_mb(self.memory_mb)


#: The parts of the checker's environment a child may see: where programs
#: and the home folder are, the language, the time zone, the temporary
#: folder. Nothing else (a grader's token, say) reaches the learner's code.
CHILD_ENVIRONMENT = ("PATH", "HOME", "LANG", "LANGUAGE", "TZ", "TMPDIR", "TEMP", "TMP", "SYSTEMROOT")


def child_environment() -> dict[str, str]:
    """A scrubbed environment for the child: CHILD_ENVIRONMENT, ``LC_*`` and
    this project's own ``QKV_*`` from this process, and the folder holding
    ``qkv`` as ``PYTHONPATH``.

    A child started with ``python -m qkv.exercises...`` then imports this
    very ``qkv``, installed or not.
    """
    env = {k: v for k, v in os.environ.items() if k in CHILD_ENVIRONMENT or k.startswith(("LC_", "QKV_"))}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2])
    return env


@contextlib.contextmanager
def search_path_without_writable_folders() -> Iterator[None]:
    """While the block runs, this process imports nothing from the working
    directory or the running script's folder, where the learner's code may
    write files: both leave ``sys.path`` (and come back afterwards)."""
    unsafe = {os.path.abspath(os.getcwd())}
    if sys.argv and sys.argv[0]:
        unsafe.add(os.path.dirname(os.path.abspath(sys.argv[0])))
    before = list(sys.path)
    sys.path[:] = [p for p in before if p and os.path.abspath(p) not in unsafe]
    try:
        yield
    finally:
        sys.path[:] = before


def _standard_folders() -> tuple[str, ...]:
    """Where a standard module may be imported from: the standard library and site-packages."""
    schemes = (sysconfig.get_paths(), sysconfig.get_paths(vars={"base": sys.base_prefix, "platbase": sys.base_prefix}))
    folders = {paths[key] for paths in schemes for key in ("stdlib", "platstdlib", "purelib", "platlib")}
    folders |= {
        os.path.join(os.path.dirname(paths["stdlib"]), f"python{sys.version_info[0]}{sys.version_info[1]}.zip")
        for paths in schemes
    }
    folders |= set(site.getsitepackages()) | {site.getusersitepackages()}
    return tuple(os.path.join(os.path.realpath(folder), "") for folder in folders)


#: What the import system loads from a folder on sys.path (importlib._bootstrap_external's list).
_LOADERS = (
    (importlib.machinery.ExtensionFileLoader, importlib.machinery.EXTENSION_SUFFIXES),
    (importlib.machinery.SourceFileLoader, importlib.machinery.SOURCE_SUFFIXES),
    (importlib.machinery.SourcelessFileLoader, importlib.machinery.BYTECODE_SUFFIXES),
)


def _found_on_search_path(name: str, finders: dict[str, Any]) -> str | None:
    """Where the import system finds the top-level module ``name`` now: the file a fresh
    ``import name`` would run, by the same search (built-in and frozen modules first, then
    ``sys.path`` in order); None for a built-in or frozen module, or none found."""
    if importlib.machinery.BuiltinImporter.find_spec(name) or importlib.machinery.FrozenImporter.find_spec(name):
        return None
    for entry in sys.path:
        if not isinstance(entry, str) or not os.path.isdir(entry or "."):
            continue
        if entry not in finders:  # a finder of our own: the cached ones are the process's to change
            finders[entry] = importlib.machinery.FileFinder(entry, *_LOADERS)
        spec = finders[entry].find_spec(name)
        if spec is not None and spec.loader is not None and isinstance(spec.origin, str):
            return spec.origin
    return None


def shadowed_standard_modules() -> list[str]:
    """The standard modules this process imported that come from elsewhere.

    Elsewhere is any folder but the standard library and site-packages:
    the working directory, the running script's folder (a venv's ``bin``),
    a ``PYTHONPATH`` entry. A ``secrets.py`` left there runs before the
    checker's own code does (``numpy.random`` imports ``secrets``).

    Where a module came from is decided by what the module cannot set about
    itself: for each standard module imported, the file the import system
    finds for its name on the search path (:func:`_found_on_search_path`,
    with finders of its own); and, as a second look, the ``__spec__.origin``
    and ``__file__`` it carries. A planted ``secrets.py`` that sets its
    ``__file__`` (or ``__spec__``) to the real one's is still named.

    Returns
    -------
    list of str
        ``"secrets (/home/me/secrets.py)"`` for each, sorted; ``[]`` when none.

    Examples
    --------
    >>> shadowed_standard_modules()
    []
    """
    roots = _standard_folders()
    finders: dict[str, Any] = {}
    found = set()
    for name, module in list(sys.modules.items()):
        top = name.partition(".")[0]
        if top not in sys.stdlib_module_names:
            continue
        spec = getattr(module, "__spec__", None)
        files = [getattr(module, "__file__", None), getattr(spec, "origin", None)]
        if name == top:
            files.append(_found_on_search_path(name, finders))
        for file in files:
            if isinstance(file, str) and file not in ("built-in", "frozen"):
                real = os.path.realpath(file)
                if not real.startswith(roots):
                    found.add(f"{name} ({real})")
    return sorted(found)


def refuse_shadowed_standard_modules() -> None:
    """Raise ``RuntimeError`` naming the file, when a standard module was imported from elsewhere
    (:func:`shadowed_standard_modules`): the verdict of this process could not be trusted."""
    found = shadowed_standard_modules()
    if found:
        raise RuntimeError(
            "the checker will not run: this Python imported a standard module from a file outside the "
            f"standard library and site-packages: {', '.join(found)}. Code in such a file runs inside the "
            "checker and could change any verdict (an exercise file checked without Landlock may have "
            "written it): delete or rename that file (and its __pycache__), or run the check from "
            "another folder"
        )


_POSIX = os.name == "posix"


def require_posix() -> None:
    """Raise ``RuntimeError`` unless this system can run the sandbox (POSIX)."""
    if not _POSIX:
        raise RuntimeError(
            "the exercise checker needs a POSIX system (Linux, macOS; on Windows use WSL): "
            "it runs your code in a child process that it can limit and kill"
        )


def describe_sandbox(landlock: int, pid_namespace: bool) -> str:
    """What confined the learner's code, as the report's ``Sandbox:`` line says it.

    Parameters
    ----------
    landlock : int
        The Landlock ABI the child enforced (0: none).
    pid_namespace : bool
        Whether it ran in a PID namespace of its own.

    Examples
    --------
    >>> describe_sandbox(7, True)
    'Landlock ABI 7 (writes only in a temporary folder; no signals to the checker), PID namespace'
    >>> describe_sandbox(0, False)
    'none (same user)'
    """
    if landlock >= 6:
        text = f"Landlock ABI {landlock} (writes only in a temporary folder; no signals to the checker)"
    elif landlock:
        text = f"Landlock ABI {landlock} (writes only in a temporary folder)"
    else:
        text = "none (same user)"
    return f"{text}, PID namespace" if pid_namespace else text


@contextlib.contextmanager
def hold_interrupts() -> Iterator[None]:
    """Hold a stop (SIGINT: the notebook's interrupt, Ctrl-C) back until the block ends.

    A ``KeyboardInterrupt`` raised inside ``subprocess.Popen``, or between its
    return and the moment the caller takes charge of the new process, would
    leave that process running with no one to stop it. Start a process and
    record it inside this block: a stop that came meanwhile is then delivered
    (to the handler that was in place: ``KeyboardInterrupt``, usually) on the
    way out, and the caller's cleanup stops the process. Python runs signal
    handlers in the main thread only, so elsewhere nothing is held back.
    """
    previous = signal.getsignal(signal.SIGINT)
    if threading.current_thread() is not threading.main_thread() or previous is None:
        yield  # no Python handler here: nothing raises KeyboardInterrupt in this block
        return
    held: list[int] = []
    signal.signal(signal.SIGINT, lambda signum, frame: held.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        if held:
            signal.raise_signal(signal.SIGINT)


#: Added to a PermissionError of the learner's code, by what was refused (``serve.refused_access``).
_REFUSAL_HINTS = {
    "write": "writing there was refused: your code may write files only in the checker's temporary "
    "folder (tempfile.gettempdir())",
    "read": "reading it was refused (not a write): your code may read files, but not another "
    "process's /proc/<pid> files, and a file's own permissions still apply",
}


class _LoadFailed(Exception):
    """The learner's file raised (or called sys.exit) at top level."""


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


class _Child:
    """One child process running the learner's file, and the pipes to it."""

    def __init__(self, path: Path, names: list[str], limits: Limits, budget: TimeBudget) -> None:
        self.path, self.names, self.limits, self.budget = path, names, limits, budget
        self.output = bytearray()
        self.dropped = 0
        self.threads = 0
        # The one folder the learner's code may write in, where Landlock holds (_child.py).
        self.folder = tempfile.mkdtemp(prefix="qkv-exercise-")
        request_read, self._request_write = os.pipe()
        self._reply_read, reply_write = os.pipe()
        os.set_blocking(self._request_write, False)  # a child that stops reading cannot block the checker
        env = child_environment()
        for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            env.setdefault(var, "1")  # one thread: less memory reserved, nothing left running
        env["PYTHONUNBUFFERED"] = "1"  # print() reaches the checker even before os._exit
        env["PYTHONDONTWRITEBYTECODE"] = "1"  # nothing to write next to the learner's modules
        env["QKV_CHECKER_PID"] = str(os.getpid())  # the child dies with this process (_child.py)
        env["TMPDIR"] = env["TEMP"] = env["TMP"] = self.folder  # where tempfile writes
        command = [
            sys.executable,
            # -P: the working directory is not on the path, so nothing there runs before the
            # child confines itself (numpy imports secrets; security re-review 6a, U1).
            "-P",
            "-m",
            "qkv.exercises._child",
            str(request_read),
            str(reply_write),
            str(limits.memory_mb * 1024 * 1024),
            str(math.ceil(limits.seconds) + 10),  # CPU seconds: a backstop, the wall clock rules
            self.folder,
            str(path),
            *names,
        ]
        try:
            self.process = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                pass_fds=(request_read, reply_write),
                start_new_session=True,  # its own process group: one kill ends everything it started
                env=env,
            )
        except BaseException:
            shutil.rmtree(self.folder, ignore_errors=True)
            raise
        finally:
            os.close(request_read)
            os.close(reply_write)
        self._reader = FrameReader()
        self._pending: list[dict[str, Any]] = []
        self._selector = selectors.DefaultSelector()
        self._selector.register(self._reply_read, selectors.EVENT_READ, "reply")
        assert self.process.stdout is not None and self.process.stderr is not None
        for stream in (self.process.stdout, self.process.stderr):
            self._selector.register(stream.fileno(), selectors.EVENT_READ, "output")
        self._closed = False
        # The child owes an answer: it is loading the file, or a call was sent (or its
        # sending begun) and not answered yet. It runs the learner's code and cannot read.
        self._busy = True

    # -- output ---------------------------------------------------------------

    def _keep(self, data: bytes) -> None:
        room = self.limits.output_bytes - len(self.output)
        self.output += data[: max(room, 0)]
        self.dropped += max(len(data) - max(room, 0), 0)

    def _drain(self, seconds: float) -> None:
        """Read what is left in the output pipes, for at most ``seconds``."""
        end = time.monotonic() + seconds
        while any(key.data == "output" for key in self._selector.get_map().values()):
            left = end - time.monotonic()
            if left <= 0:
                return
            for key, _ in self._selector.select(timeout=left):
                if key.data == "output":
                    self._read_output(key.fd)

    def _read_output(self, fd: int) -> None:
        data = os.read(fd, 65536)
        if data:
            self._keep(data)
        else:
            self._selector.unregister(fd)

    # -- ending ---------------------------------------------------------------

    def kill(self) -> None:
        """Kill the child's whole process group; collect its exit status."""
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self.process.wait()

    def _how_it_ended(self) -> str:
        """Why the child is gone, e.g. ``"exit status 0, as os._exit(0) does"``."""
        try:
            code = self.process.wait(timeout=_GRACE_SECONDS)
        except subprocess.TimeoutExpired:  # it closed the reply pipe but runs on
            self.kill()
            return "it closed the checker's pipe"
        self.kill()  # whatever it started
        self._drain(0.2)
        if code == 0:
            return "exit status 0, as os._exit(0) does"
        if code > 0:
            return f"exit status {code}"
        name = _signal_name(-code)
        if -code in (signal.SIGKILL, signal.SIGSEGV, signal.SIGABRT, signal.SIGBUS) and self.limits.memory_mb:
            return f"killed by {name}: a crash, or memory beyond the {self.limits.memory_mb} MiB limit"
        return f"killed by {name}"

    def close(self) -> None:
        """Ask the child to exit, then kill its process group whatever it does.

        While the child runs the learner's code (the checker was stopped
        while the file loaded, or mid-call), it cannot read the request: it
        is killed at once, and ``threads`` stays unknown (0).
        """
        if self._closed:
            return
        self._closed = True
        if self.process.poll() is None and not self._busy:
            try:
                if write_within(self._request_write, frame({"exit": True}), _GRACE_SECONDS) is not None:
                    for message in self._wait(_GRACE_SECONDS, timed=False):
                        if message.get("event") == "bye" and type(message.get("threads")) is int:
                            self.threads = message["threads"]
                        break
            except (OSError, LearnerAborted, WireError):
                pass
        self.kill()
        self._drain(0.5)
        for fd in (self._request_write, self._reply_read):
            try:
                os.close(fd)
            except OSError:
                pass
        self._selector.close()
        for stream in (self.process.stdout, self.process.stderr):
            if stream is not None:
                stream.close()
        shutil.rmtree(self.folder, ignore_errors=True)

    # -- talking --------------------------------------------------------------

    def _wait(self, seconds: float, *, timed: bool = True) -> list[dict[str, Any]]:
        """The next message(s) from the child; ``[]`` after ``seconds``.

        With ``timed``, the wait is charged to the time budget. Raises
        :class:`LearnerAborted` (not fatal) when the child ends, and
        :class:`WireError` when it sends something that is not a message.
        """
        end = time.monotonic() + seconds
        while not self._pending:
            left = end - time.monotonic()
            if left <= 0:
                return []
            start = time.monotonic()
            events = self._selector.select(timeout=left)
            if timed:
                self.budget.spend(time.monotonic() - start)
            for key, _ in events:
                if key.data == "output":
                    self._read_output(key.fd)
                    continue
                data = os.read(key.fd, 1 << 20)
                if not data:
                    raise LearnerAborted(self._how_it_ended(), fatal=False)
                try:
                    self._pending += self._reader.feed(data)
                except WireError:
                    self.kill()
                    raise
        return [self._pending.pop(0)]

    def receive(self) -> dict[str, Any]:
        """The next message, within the time budget (else a fatal :class:`LearnerAborted`)."""
        messages = self._wait(self.budget.remaining())
        if not messages:
            self.kill()
            raise LearnerAborted(self.budget.describe(), fatal=True)
        if messages[0].get("event") != "sandbox":  # that one comes before the file loads
            self._busy = False  # the child answers one request at a time
        return messages[0]

    def send(self, message: dict[str, Any]) -> None:
        """Send ``message``, waiting at most the time left: a child that stops reading
        its requests (its pipe shrunk to one page, replies written ahead) uses up
        the time budget, then is killed (a fatal :class:`LearnerAborted`)."""
        self._busy = "call" in message
        try:
            took = write_within(self._request_write, frame(message), self.budget.remaining())
        except OSError:
            raise LearnerAborted(self._how_it_ended(), fatal=False) from None
        if took is None:
            self.budget.spend(self.budget.remaining())
            self.kill()
            raise LearnerAborted(f"{self.budget.describe()}: it stopped reading the checker's requests", fatal=True)
        self.budget.spend(took)


class _Link:
    """Pipes to a process that serves the learner's functions and that this one did not start.

    That is the notebook's kernel, when its functions cannot be rebuilt in
    a child (:func:`run_served`). It stops a call at the time limit itself
    where it can (``{"event": "timeout"}``); this side waits that long plus
    a grace period, then gives up on it.
    """

    def __init__(self, request_fd: int, reply_fd: int, budget: TimeBudget) -> None:
        self.request_fd, self.reply_fd, self.budget = request_fd, reply_fd, budget
        self.output, self.dropped, self.threads = bytearray(), 0, 0
        self._reader = FrameReader()
        self._pending: list[dict[str, Any]] = []

    def send(self, message: dict[str, Any]) -> None:
        try:
            took = write_within(self.request_fd, frame(message), self.budget.remaining() + _GRACE_SECONDS)
        except OSError:
            took = None
        if took is None:
            raise LearnerAborted("the notebook's kernel stopped answering", fatal=True)
        self.budget.spend(took)

    def receive(self) -> dict[str, Any]:
        end = time.monotonic() + self.budget.remaining() + _GRACE_SECONDS
        with selectors.DefaultSelector() as selector:
            selector.register(self.reply_fd, selectors.EVENT_READ)
            while not self._pending:
                left = end - time.monotonic()
                start = time.monotonic()
                if left <= 0 or not selector.select(timeout=left):
                    raise LearnerAborted(self.budget.describe(), fatal=True)
                self.budget.spend(time.monotonic() - start)
                data = os.read(self.reply_fd, 1 << 20)
                if not data:
                    raise LearnerAborted("the notebook's kernel stopped answering", fatal=True)
                try:
                    self._pending += self._reader.feed(data)
                except WireError as exc:
                    raise LearnerAborted(f"sent the checker data it cannot read ({exc})", fatal=True) from None
        return self._pending.pop(0)

    def close(self) -> None:
        pass


class _Session:
    """The learner's functions in another process: a child restarted after a crash, or a link."""

    def __init__(
        self,
        path: Path | None,
        exercise: Exercise,
        limits: Limits,
        budget: TimeBudget,
        link: _Link | None = None,
    ) -> None:
        self.path, self.limits, self.budget = path, limits, budget
        self.names = [f.name for f in exercise.functions]
        self.child: _Child | _Link | None = link
        self.link = link
        self.landlock = 0
        self.sandbox = ""  # describe_sandbox(), once a child said what confines it
        self.output = bytearray()
        self.dropped = 0
        self.threads = 0

    def start(self) -> dict[str, Any]:
        """Start the child and load the file; return what it defines.

        Raises
        ------
        _LoadFailed
            When the file raised or called ``sys.exit`` at top level.
        LearnerAborted
            When the child ended or ran out of time while loading.
        """
        assert self.path is not None
        with hold_interrupts():  # a stop from here on finds the child in self.child, and kills it
            self.child = _Child(self.path, self.names, self.limits, self.budget)
        try:
            self._confined(self.child.receive())  # sent before the learner's code runs
            message = self.child.receive()
        except WireError as exc:
            self.stop()
            raise LearnerAborted(f"the process sent the checker data it cannot read ({exc})", fatal=True) from None
        except LearnerAborted as aborted:
            self.stop()
            if aborted.fatal:
                what = f"still running after the {self.budget.seconds:g} s time limit while the file was loading"
                raise LearnerAborted(f"{what} (an endless loop at top level?)", fatal=True) from None
            raise LearnerAborted(f"the process ended while the file was loading ({aborted.what})", fatal=True) from None
        event = message.get("event")
        if event == "load-error" and isinstance(message.get("message"), str):
            self.stop()
            text = safe_text(message["message"])
            hint = self._refusal_hint(message.get("refused"))
            raise _LoadFailed(f"{text}; {hint}" if hint else text)
        functions = message.get("functions")
        if event != "loaded" or not isinstance(functions, dict) or set(functions) != set(self.names):
            self.stop()
            raise LearnerAborted("the process sent the checker something it cannot read", fatal=True)
        return functions

    def _confined(self, message: dict[str, Any]) -> None:
        """Take the child's first message: what confines it (``_child.py``)."""
        landlock, namespace = message.get("landlock"), message.get("pid_namespace")
        if (
            message.get("event") != "sandbox"
            or type(landlock) is not int
            or landlock < 0
            or type(namespace) is not bool
        ):
            raise WireError(f"expected what confines the process, got {safe_text(message, 80)}")
        self.landlock = landlock
        self.sandbox = describe_sandbox(landlock, namespace)

    def _refusal_hint(self, refused: Any) -> str:
        """What the child says a ``PermissionError`` refused (``"read"``, ``"write"``), as a hint;
        a write only where Landlock holds (elsewhere the refusal is not the checker's)."""
        if refused == "read" or (refused == "write" and self.landlock):
            return _REFUSAL_HINTS[refused]
        return ""

    def stop(self) -> None:
        """End the child (if any), keeping its output."""
        if self.child is None or self.child is self.link:
            return
        self.child.close()
        room = self.limits.output_bytes - len(self.output)
        self.output += self.child.output[: max(room, 0)]
        self.dropped += self.child.dropped + max(len(self.child.output) - max(room, 0), 0)
        self.threads = max(self.threads, self.child.threads)
        self.child = None

    def call(self, name: str, args: tuple[Any, ...]) -> Any:
        """Run ``name(*args)`` in the child; return its result as plain data."""
        if self.child is None:
            try:
                self.start()
            except _LoadFailed as failed:
                raise LearnerAborted(f"the file could not be loaded again: {failed}", fatal=True) from None
        assert self.child is not None
        try:
            self.child.send({"call": name, "args": encode_args(args)})
            reply = self.child.receive()
            return self._answer(reply, args)
        except LearnerAborted as aborted:
            self.stop()
            if aborted.fatal:
                raise
            raise LearnerAborted(f"ended the process running it ({aborted.what})", fatal=False) from None
        except WireError as exc:
            self.stop()
            what = f"sent the checker data it cannot read ({exc})"
            raise LearnerAborted(what, fatal=self.link is not None) from None

    def _answer(self, reply: dict[str, Any], args: tuple[Any, ...]) -> Any:
        event = reply.get("event")
        if event == "timeout" and len(reply) == 1:
            self.budget.spend(self.budget.remaining())
            raise LearnerAborted(self.budget.describe(), fatal=True)
        if event == "raised":
            types, message, where = reply.get("types"), reply.get("message"), reply.get("where")
            if (
                isinstance(types, list)
                and all(isinstance(t, str) for t in types)
                and isinstance(message, str)
                and (where is None or isinstance(where, str))
            ):
                hint = ""
                if "MemoryError" in types and self.limits.memory_mb:
                    hint = f"the checker gives your code at most {self.limits.memory_mb} MiB of memory"
                else:
                    hint = self._refusal_hint(reply.get("refused"))
                where_text = safe_text(where, 200) if where is not None else None
                raise LearnerRaised(types[:20], safe_text(message), where_text, hint)
        elif event == "returned" and isinstance(reply.get("args_after"), list):
            after = reply["args_after"]
            if len(after) != len(args):
                raise WireError("args_after does not match the arguments")
            for arg, new in zip(args, after, strict=True):
                if isinstance(arg, np.ndarray) and isinstance(new, dict) and set(new) == {"array"}:
                    changed = decode_array(new["array"])
                    if changed.shape == arg.shape and arg.flags.writeable:
                        np.copyto(arg, changed.astype(arg.dtype, copy=False))
            return decode_value(reply.get("value"))
        raise WireError(f"unexpected reply {safe_text(reply, 80)}")


class _Remote(LearnerFunction):
    """A learner's function that runs in the session's child process."""

    def __init__(self, session: _Session, name: str) -> None:
        self.session, self.name = session, name

    def invoke(self, *args: Any) -> Any:
        return self.session.call(self.name, args)


def _notes(session: _Session, limits: Limits) -> tuple[str, ...]:
    notes = []
    if session.dropped:
        notes.append(
            f"your code printed {session.dropped} more bytes, not shown (the report keeps {limits.output_bytes})"
        )
    if session.threads:
        threads = "1 thread" if session.threads == 1 else f"{session.threads} threads"
        notes.append(
            f"your code left {threads} running after the checks; the checker stopped the "
            "process (a thread left running is not a failure)"
        )
    return tuple(notes)


def _remote_namespace(session: _Session, functions: dict[str, Any]) -> dict[str, Any]:
    """What the checks call: a :class:`_Remote` per function, a :class:`NotCallable` per value."""
    namespace: dict[str, Any] = {}
    for fn_name, state in functions.items():
        kind = state.get("state") if isinstance(state, dict) else None
        if kind == "function":
            namespace[fn_name] = _Remote(session, fn_name)
        elif kind == "value":
            namespace[fn_name] = NotCallable(safe_text(state.get("type"), 80))
    return namespace


def run_served(
    exercise: Exercise, functions: dict[str, Any], request_fd: int, reply_fd: int, limits: Limits = Limits()
) -> Report:
    """Check functions served by another process (``qkv.exercises.serve.serve``) over two pipes.

    Parameters
    ----------
    exercise : Exercise
        What to check.
    functions : dict
        What the serving process defines (``serve.describe_functions``).
    request_fd, reply_fd : int
        Pipes: calls go out through the first, answers come back through the second.
    limits : Limits, optional
        Only ``seconds`` applies: the serving process enforces it where it can.
    """
    refuse_shadowed_standard_modules()
    budget = TimeBudget(limits.seconds)
    session = _Session(None, exercise, limits, budget, link=_Link(request_fd, reply_fd, budget))
    return run_exercise(exercise, _remote_namespace(session, functions), budget=budget)


def run_file_detailed(
    exercise: Exercise, path: str | os.PathLike[str], limits: Limits = Limits(), *, label: str | None = None
) -> tuple[Report, bool]:
    """Like :func:`run_file`; also say whether the file raised at top level."""
    resolved = check_path(path)
    require_posix()
    refuse_shadowed_standard_modules()
    name = label or resolved.name
    source = "" if label is not None else os.fspath(path)
    budget = TimeBudget(limits.seconds)
    with search_path_without_writable_folders():
        return _run_file_session(exercise, resolved, limits, budget, name, source)


def _run_file_session(
    exercise: Exercise, resolved: Path, limits: Limits, budget: TimeBudget, name: str, source: str
) -> tuple[Report, bool]:
    session = _Session(resolved, exercise, limits, budget)
    n_checks = sum(c.function not in {f.name for f in exercise.functions if f.optional} for c in exercise.checks)
    load_raised = False
    try:
        try:
            functions = session.start()
        except (_LoadFailed, LearnerAborted) as failed:
            load_raised = isinstance(failed, _LoadFailed)
            what = str(failed) if load_raised else failed.what  # type: ignore[union-attr]
            result = CheckResult("", f"could not run {name}: {what}", "FAIL", (f"none of the {n_checks} checks ran",))
            report = Report(exercise, (result,), source)
        else:
            report = run_exercise(exercise, _remote_namespace(session, functions), source, budget)
    finally:
        session.stop()
    output = bytes(session.output).decode("utf-8", errors="replace")
    report = Report(exercise, report.results, source, output, _notes(session, limits), session.sandbox)
    return report, load_raised


def run_file(
    exercise: Exercise, path: str | os.PathLike[str], limits: Limits = Limits(), *, label: str | None = None
) -> Report:
    """Check the learner's file ``path`` with its code in a child process.

    Parameters
    ----------
    exercise : Exercise
        What to check.
    path : str or path-like
        The learner's ``.py`` file.
    limits : Limits, optional
        Time, memory and output limits.
    label : str, optional
        What to call the file in the report (no ``File:`` line then).

    Returns
    -------
    Report

    Raises
    ------
    FileNotFoundError
        If there is no such file.
    ValueError
        If ``path`` is a notebook, or not usable as a file name.
    RuntimeError
        On a system that is not POSIX, or when a standard module was imported
        from a file outside the standard library and site-packages
        (:func:`refuse_shadowed_standard_modules`).
    """
    return run_file_detailed(exercise, path, limits, label=label)[0]
