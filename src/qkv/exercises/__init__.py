"""Practice exercises with automatic checks.

The learner writes a few functions, in a file or a notebook, and the checks
call them on small inputs, compare the results with the reference
implementations in ``qkv`` and name the classic mistakes they recognise.

From a terminal::

    qkv-exercise list                               # the exercises
    qkv-exercise starter input-layer > mine.py      # a template to fill in
    qkv-exercise check input-layer mine.py          # exit status 0 = all passed

Inside a notebook, after the cells that define the functions::

    from qkv.exercises import check
    check("input-layer", globals())

Examples
--------
>>> from qkv.exercises import EXERCISES, check
>>> list(EXERCISES)
['input-layer', 'attention-head', 'sql-softmax']
>>> report = check("input-layer", {})
Checking exercise 1 (input-layer): the input layer (token ids -> vectors + positions)
Sandbox: ...
FAIL  one_hot: missing; define one_hot(token_ids, vocab_size)
        its 3 checks were not run
FAIL  embed: missing; define embed(token_ids, E)
        its 2 checks were not run
FAIL  sinusoidal_pe: missing; define sinusoidal_pe(seq_len, d_model)
        its 4 checks were not run
FAIL  build_input: missing; define build_input(token_ids, E, pe=None)
        its 4 checks were not run
Result: 0 of 13 checks passed. Fix the first FAIL above and run the check again.
>>> report.passed, report.exit_code
(False, 1)

Every check runs the learner's code in a separate process with a time
limit (10 s per exercise by default), a memory limit and a cap on printed
output, and compares the answers in a process the learner's code never ran
in: see :func:`check` for the notebook path, ``qkv.exercises.sandbox`` for
the details.

``run`` does the same without printing. The reference implementations in
``qkv`` pass exercise 2 (the stretch, not written here, is skipped):

>>> import qkv
>>> def attention(Q, K, V, mask=None):
...     return qkv.scaled_dot_product_attention(Q, K, V, mask)
>>> run("attention-head", {"softmax": qkv.softmax, "attention": attention}).passed
True
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from types import ModuleType
from typing import Any, TextIO

from qkv.exercises import attention_head, input_layer, sql_softmax
from qkv.exercises.core import Exercise, Report, TimeBudget, encodable
from qkv.exercises.portable import NotPortable, portable_source
from qkv.exercises.sandbox import Limits, child_environment, hold_interrupts, require_posix, run_file
from qkv.exercises.serve import describe_functions, serve

__all__ = ["EXERCISES", "get_exercise", "starter", "run", "check", "Report", "Limits"]

EXERCISES: dict[str, Exercise] = {
    ex.name: ex for ex in (input_layer.EXERCISE, attention_head.EXERCISE, sql_softmax.EXERCISE)
}

Source = Mapping[str, Any] | ModuleType | str | os.PathLike[str]


def get_exercise(name: str | int) -> Exercise:
    """The exercise called ``name`` (``"input-layer"``, ``"input_layer"`` or ``1``).

    Raises
    ------
    ValueError
        If there is no such exercise; the message lists them.

    Examples
    --------
    >>> get_exercise(2).name
    'attention-head'
    """
    key = str(name).strip().lower().replace("_", "-")
    for ex in EXERCISES.values():
        if key in (ex.name, str(ex.number)):
            return ex
    known = ", ".join(EXERCISES)
    raise ValueError(f"unknown exercise {name!r}; the exercises are: {known}")


def starter(name: str | int) -> str:
    """The starter template of an exercise, as Python source text.

    Examples
    --------
    >>> print(starter("attention-head").splitlines()[0])
    \"\"\"Exercise 2: one attention head.
    """
    ex = get_exercise(name)
    return resources.files("qkv.exercises.starters").joinpath(ex.starter).read_text(encoding="utf-8")


NOTEBOOK_LABEL = "the notebook's functions"

# Generous: the checker process's own start and the expected answers, on a busy machine.
_CHECKER_EXTRA_SECONDS = 120


class _FreshChecker:
    """A fresh checker process (``qkv.exercises._checker``): it judges, this process only asks.

    Use it as a context manager: leaving the block early (an error, or the
    reader stopping the cell) interrupts it, so that it kills the child
    process running the learner's code before it ends.
    """

    def __init__(self, request: dict[str, Any], *, pass_fds: tuple[int, ...] = ()) -> None:
        self.request = request
        self.errors = tempfile.TemporaryFile()
        self.process = subprocess.Popen(
            [sys.executable, "-P", "-m", "qkv.exercises._checker"],  # -P: nothing from the working directory
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE if request["mode"] == "file" else subprocess.DEVNULL,
            stderr=self.errors,
            pass_fds=pass_fds,
            env=child_environment(),
        )

    def __enter__(self) -> _FreshChecker:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)  # its cleanup kills the learner's process group
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.errors.close()

    def failed(self, why: str) -> RuntimeError:
        """The error to raise when the checker process did not give a report."""
        self.process.kill()
        self.process.wait()
        self.errors.seek(0)
        text = self.errors.read().decode("utf-8", errors="replace")[-2000:]
        status = self.process.returncode
        return RuntimeError(f"the checker process failed (exit status {status}): {why}\n{text}")


def _start_checker(stack: contextlib.ExitStack, request: dict[str, Any], **kwargs: Any) -> _FreshChecker:
    """A :class:`_FreshChecker` that ``stack`` stops, even when the reader stops the cell as it starts.

    Entered as ``with _FreshChecker(...)``, a ``KeyboardInterrupt`` raised after
    the process started and before the block began would leave it waiting for
    its request, for as long as the interrupt's traceback is kept.
    """
    with hold_interrupts():
        return stack.enter_context(_FreshChecker(request, **kwargs))


def _run_rebuilt(ex: Exercise, text: str, limits: Limits) -> tuple[Report, bool]:
    """Check the rebuilt module ``text`` in a fresh checker process (and its child)."""
    with tempfile.TemporaryDirectory(prefix="qkv-exercise-") as tmp, contextlib.ExitStack() as stack:
        path = Path(tmp, "notebook_functions.py")
        path.write_text(text, encoding="utf-8")
        request = {"mode": "file", "exercise": ex.name, "path": str(path), "label": NOTEBOOK_LABEL}
        request |= {"seconds": limits.seconds, "memory_mb": limits.memory_mb}
        checker = _start_checker(stack, request)
        try:
            stdout, _ = checker.process.communicate(
                json.dumps(request).encode("utf-8"), timeout=limits.seconds + _CHECKER_EXTRA_SECONDS
            )
            answer = json.loads(stdout)
            return Report.from_plain(answer["report"], EXERCISES), answer["load_raised"] is True
        except (subprocess.TimeoutExpired, ValueError, KeyError, TypeError) as exc:
            raise checker.failed(str(exc)) from None


def _run_served_here(ex: Exercise, namespace: Mapping[str, Any], limits: Limits, reason: str) -> Report:
    """Call the functions here, when the fresh checker process asks; it judges them."""
    to_here, from_checker = os.pipe()
    to_checker, from_here = os.pipe()
    functions = describe_functions(namespace, [f.name for f in ex.functions])
    request = {"mode": "served", "exercise": ex.name, "functions": functions}
    request |= {"request_fd": from_checker, "reply_fd": to_checker}
    request |= {"seconds": limits.seconds, "memory_mb": limits.memory_mb}
    try:
        with contextlib.ExitStack() as stack:
            checker = _start_checker(stack, request, pass_fds=(from_checker, to_checker))
            os.close(from_checker)
            os.close(to_checker)
            from_checker = to_checker = -1
            assert checker.process.stdin is not None
            checker.process.stdin.write(json.dumps(request).encode("utf-8"))
            checker.process.stdin.close()
            final = serve(namespace, to_here, from_here, TimeBudget(limits.seconds), interruptible=True)
            try:
                checker.process.wait(timeout=_CHECKER_EXTRA_SECONDS)
                report = Report.from_plain((final or {})["report"], EXERCISES)
            except (subprocess.TimeoutExpired, ValueError, KeyError) as exc:
                raise checker.failed(f"no report ({exc})") from None
    finally:
        for fd in (to_here, from_here, from_checker, to_checker):
            if fd >= 0:
                os.close(fd)
    note = (
        f"your functions ran in this notebook's process, not in a separate one, because {reason}. "
        "A fresh process still computed the expected answers and compared them, but here only "
        "exceptions and sys.exit are caught and the time limit works only in the main thread: "
        "an endless loop elsewhere, os._exit, a crash or memory exhaustion are not contained"
    )
    return Report(ex, report.results, report.source, report.output, (*report.notes, note))


def _run_namespace(ex: Exercise, namespace: Mapping[str, Any], limits: Limits) -> Report:
    """The notebook path: rebuild the functions in a child if possible, else serve them from here."""
    require_posix()
    try:
        text = portable_source(namespace, [f.name for f in ex.functions])
    except NotPortable as exc:
        return _run_served_here(ex, namespace, limits, str(exc))
    report, load_raised = _run_rebuilt(ex, text, limits)
    if load_raised:  # the rebuilt module itself did not run
        failed = report.results[0].title.split(": ", 1)[-1]
        reason = f"rebuilding them in a separate process failed ({failed})"
        return _run_served_here(ex, namespace, limits, reason)
    return report


def run(name: str | int, source: Source, *, timeout: float = 10.0, memory_mb: int = 1024) -> Report:
    """Run the checks of an exercise without printing anything.

    Parameters
    ----------
    name : str or int
        The exercise, e.g. ``"input-layer"``.
    source : mapping, module or path
        Where the learner's functions are: a namespace such as ``globals()``,
        a module, or the path of a ``.py`` file.
    timeout : float, default 10
        Seconds the learner's code may run in this exercise, in total
        (above 0, at most 86400).
    memory_mb : int, default 1024
        Memory limit of the process that runs it, in MiB (0: none; else
        128 to 1048576).

    Returns
    -------
    Report
        ``report.passed``, ``report.format()``, ``report.mistakes``.

    Raises
    ------
    ValueError
        For an unknown exercise, a notebook path, a path the system cannot
        use as a file name, or a limit out of its range (the message names it).
    FileNotFoundError
        For a path that does not exist.
    RuntimeError
        On a system that is not POSIX (the checker needs a child process it
        can kill), or when a standard module was imported from a file outside
        the standard library and site-packages (the message names the file).
    """
    ex = get_exercise(name)
    limits = Limits(seconds=timeout, memory_mb=memory_mb)
    if isinstance(source, ModuleType):
        return _run_namespace(ex, vars(source), limits)
    if isinstance(source, Mapping):
        return _run_namespace(ex, source, limits)
    return run_file(ex, source, limits)


def check(
    name: str | int,
    source: Source,
    *,
    file: TextIO | None = None,
    timeout: float = 10.0,
    memory_mb: int = 1024,
) -> Report:
    """Run the checks of an exercise and print one line per check.

    Parameters
    ----------
    name : str or int
        The exercise, e.g. ``"input-layer"`` or ``"attention-head"``.
    source : mapping, module or path
        In a notebook pass ``globals()``; a module or a ``.py`` path works too.
    file : text stream, optional
        Where to print; standard output by default.
    timeout : float, default 10
        Seconds the learner's code may run in this exercise, in total
        (above 0, at most 86400).
    memory_mb : int, default 1024
        Memory limit of the process that runs it, in MiB (0: none; else
        128 to 1048576).

    Returns
    -------
    Report
        ``report.passed`` is True when every check passed.

    Notes
    -----
    With a path, the learner's file runs in a child process (time limit,
    memory limit, output cap) and the answers are compared in this process.

    With ``globals()`` (the notebook path) the learner's code has already
    run in this process, so nothing is judged here. The checker rebuilds
    the exercise's functions from their source (``inspect.getsource``),
    with the global names they use (imports, numbers, strings, small
    arrays), and checks that module in a fresh checker process exactly as
    it checks a file: the same limits, and expected answers computed where
    the notebook's changes (``np.allclose = ...``, ``np.seterr``) do not
    reach. The functions see a copy of the notebook's values as they are
    when ``check`` is called.

    What it cannot protect against:

    * a function it cannot rebuild: a lambda, a closure, one whose source
      is not available or was edited since its cell ran, one that uses a
      class or an object defined in the notebook. A fresh checker process
      still computes the expected answers and compares them, but it asks
      this process to call the functions, and a ``Note:`` line in the
      report says why. Here exceptions and ``sys.exit`` are caught, and the
      time limit stops a call only in the main thread on POSIX (through
      ``SIGALRM``, which a long call into C code does not see until it
      returns); ``os._exit``, a crash or memory exhaustion end the kernel;
    * anything the notebook did before ``check`` ran: an endless loop in a
      cell never reaches the check, and a cell that ended the kernel ended it;
    * a learner's code that deliberately escapes, where the system offers
      no confinement (below): a process it starts in a new session survives
      the kill, and code running as root can raise its own memory limit.

    Confinement (the report's ``Sandbox:`` line says which held): on Linux
    with Landlock (5.13 and later) the learner's code can write files only
    in a temporary folder of its own (``tempfile.gettempdir()``; a
    ``PermissionError`` anywhere else), so it cannot plant a module or a
    ``.pth`` file that fools this check or a later one; from Landlock ABI 6
    on it cannot signal the checker either. With unprivileged user
    namespaces it runs in a PID namespace of its own: every process it
    starts ends with the check, even if the checker is killed with SIGKILL,
    and the checker's ``/proc/<pid>/environ`` is out of its reach.
    Everywhere, the checker refuses to run (``RuntimeError``, naming the
    file) when a standard module was imported from outside the standard
    library and site-packages: a ``secrets.py`` in the working directory,
    say, left by code run without Landlock (found where the import system
    finds that name, whatever ``__file__`` the file gives itself). Without
    them (``Sandbox: none (same user)``: macOS, older Linux) the learner's
    code can write your files, a ``.pth`` file in site-packages among them,
    which runs at every later start of that Python and is not detected; and
    a planted module written to defeat the refusal (it runs in the checker
    before the refusal does, and can change the checker's own state) is not
    caught either.

    What the checker is, and is not: it keeps an honest learner's code (a
    loop, a crash, ``os._exit``, a huge array, a sleep, a forged reply, a
    pipe it stops reading) from hanging the check, ending it or changing its
    verdict, and keeps the checker's environment from the learner's code.
    It is not a security boundary against code that attacks a shared grader
    machine: that code runs as your user, so it can read your files (and,
    without Landlock, write them and stop or kill the checker, e.g.
    ``os.kill(checker, signal.SIGSTOP)``), use the network, and use up the
    machine's processes or disk (in its temporary folder). Do not grade
    untrusted code on a shared machine without another user account or a
    container (bubblewrap, for example) around the check.
    """
    report = run(name, source, timeout=timeout, memory_mb=memory_mb)
    out = file if file is not None else sys.stdout
    print(encodable(report.format(), out), file=out)
    return report
