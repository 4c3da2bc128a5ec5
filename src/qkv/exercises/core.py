"""The machinery shared by every exercise: checks, the runner, the report.

An exercise is a list of functions the learner writes and a list of checks.
A check is a small function that receives the learner's function, calls it
through :func:`call` and raises :class:`CheckFailed` when the answer is
wrong. The runner turns each check into one :class:`CheckResult` (PASS,
FAIL or SKIP) and collects them in a :class:`Report`.

Examples
--------
>>> from qkv.exercises.core import CheckResult
>>> print(CheckResult("f", "f(2) == 4", "FAIL", ("expected 4, got 5",)).format())
FAIL  f(2) == 4
        expected 4, got 5
"""

from __future__ import annotations

import contextlib
import contextvars
import re
import signal
import threading
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from qkv.exercises.loader import describe_exit, learner_frame
from qkv.exercises.mistakes import describe

__all__ = [
    "CheckFailed",
    "LearnerRaised",
    "LearnerAborted",
    "LearnerFunction",
    "InProcessFunction",
    "NotCallable",
    "TimeBudget",
    "MAX_SECONDS",
    "check_seconds",
    "current_budget",
    "encodable",
    "OutOfTime",
    "time_limit",
    "call",
    "Check",
    "CheckList",
    "FunctionSpec",
    "Exercise",
    "CheckResult",
    "Report",
    "run_exercise",
]


class CheckFailed(Exception):
    """Raised by a check: the learner's function gave a wrong answer.

    Parameters
    ----------
    *details : str
        What was expected and what came back, one line each.
    mistakes : sequence of str, optional
        Keys of ``qkv.exercises.mistakes.MISTAKES`` recognised in the answer.
    """

    def __init__(self, *details: str, mistakes: Sequence[str] = ()) -> None:
        super().__init__(details[0] if details else "wrong answer")
        self.details = tuple(details)
        self.mistakes = tuple(mistakes)


class LearnerRaised(Exception):
    """The learner's function raised (or called ``sys.exit``) while a check called it.

    The exception itself may live in another process, so it is described by
    plain data: the names of its classes, its message and where it came from.

    Parameters
    ----------
    types : sequence of str
        The names of the exception's classes, most derived first
        (``("ValueError", "Exception", "BaseException", "object")``).
    message : str
        ``str(exception)``, or ``"called sys.exit(0)"`` for a ``SystemExit``.
    where : str or None
        ``"line 7 of mine.py, in one_hot"``.
    hint : str, optional
        An extra sentence, e.g. the memory limit after a ``MemoryError``.

    Examples
    --------
    >>> LearnerRaised(("ValueError", "Exception"), "bad", "line 3 of f.py, in g").describe()
    'raised ValueError: bad (line 3 of f.py, in g)'
    >>> LearnerRaised(("SystemExit",), "called sys.exit(0)", None).describe()
    'called sys.exit(0)'
    """

    def __init__(self, types: Sequence[str], message: str, where: str | None, hint: str = "") -> None:
        self.types = tuple(types)
        self.message = message
        self.where = where
        self.hint = hint
        super().__init__(f"{self.type_name}: {message}")

    @classmethod
    def from_exception(cls, exc: BaseException) -> LearnerRaised:
        """Describe ``exc``, raised by the learner's code in this process."""
        from qkv.exercises.wire import safe_text

        types = tuple(c.__name__ for c in type(exc).__mro__)
        message = describe_exit(exc.code) if isinstance(exc, SystemExit) else safe_text(exc)
        return cls(types, message, learner_frame(exc.__traceback__))

    @property
    def type_name(self) -> str:
        """The exception's class name, e.g. ``"ValueError"``."""
        return self.types[0] if self.types else "Exception"

    def is_a(self, name: str) -> bool:
        """True when the exception is an instance of the built-in class ``name``."""
        return name in self.types

    def describe(self) -> str:
        """``"raised TypeError: message (line 7 of mine.py, in one_hot)"``."""
        text = self.message if self.is_a("SystemExit") else f"raised {self.type_name}: {self.message}"
        text = f"{text} ({self.where})" if self.where else text
        return f"{text}; {self.hint}" if self.hint else text


class LearnerAborted(Exception):
    """The learner's code stopped the run: a time limit, or its process ended.

    Parameters
    ----------
    what : str
        One line saying what happened, e.g. ``"still running after the 10 s
        time limit (an endless loop?)"``.
    fatal : bool
        True when no further check can run (the time is used up); False
        when the remaining functions can still be checked in a fresh process.
    """

    def __init__(self, what: str, *, fatal: bool) -> None:
        super().__init__(what)
        self.what = what
        self.fatal = fatal


#: The longest time limit accepted, in seconds (a day): far beyond any check,
#: and far below what the system's timers take (about 24.8 days).
MAX_SECONDS = 86_400.0


def check_seconds(value: Any, name: str = "timeout") -> float:
    """``value`` as a time limit in seconds, or ``ValueError`` naming ``name`` and the accepted range.

    Examples
    --------
    >>> check_seconds(2)
    2.0
    >>> check_seconds(1e9)
    Traceback (most recent call last):
    ...
    ValueError: timeout must be a number of seconds above 0 and at most 86400 (a day), got 1000000000.0
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= MAX_SECONDS:
        raise ValueError(
            f"{name} must be a number of seconds above 0 and at most {MAX_SECONDS:g} (a day), got {value!r}"
        )
    return float(value)


class TimeBudget:
    """Seconds the learner's code may run in one exercise, shared by every call.

    Examples
    --------
    >>> budget = TimeBudget(10)
    >>> budget.spend(2.5); budget.remaining()
    7.5
    >>> budget.describe()
    'still running after the 10 s time limit (an endless loop?)'
    """

    def __init__(self, seconds: float) -> None:
        self.seconds = check_seconds(seconds)
        self.spent = 0.0

    def spend(self, seconds: float) -> None:
        """Count ``seconds`` of the learner's running time."""
        self.spent += max(0.0, seconds)

    def remaining(self) -> float:
        """Seconds left (0 when used up)."""
        return max(0.0, self.seconds - self.spent)

    def describe(self, guess: str = "an endless loop?") -> str:
        """What a timeout is called in the report, with a ``guess`` at its cause."""
        return f"still running after the {self.seconds:g} s time limit ({guess})"


_BUDGET: contextvars.ContextVar[TimeBudget | None] = contextvars.ContextVar("qkv_exercise_budget", default=None)


def current_budget() -> TimeBudget | None:
    """The time budget of the exercise :func:`run_exercise` is checking, if it was given one.

    Checks that run learner code of their own (exercise 3 runs the learner's
    SQL) charge its time here, so that ``--timeout`` covers it too.
    """
    return _BUDGET.get()


class LearnerFunction:
    """A learner's function as the checks see it: ``invoke(*args)`` calls it.

    ``invoke`` returns the function's result (as plain data when it ran in
    another process) and raises :class:`LearnerRaised` when the function
    raised, :class:`LearnerAborted` when it stopped the run.
    """

    def invoke(self, *args: Any) -> Any:
        raise NotImplementedError


class OutOfTime(BaseException):
    """Raised by :func:`time_limit` inside the learner's code.

    A ``BaseException``, so that ``except Exception`` in the learner's code
    does not catch it.
    """


@contextlib.contextmanager
def time_limit(budget: TimeBudget | None) -> Iterator[None]:
    """Interrupt the code inside after ``budget.remaining()`` seconds, where a signal can.

    Only the main thread of a POSIX process can take ``SIGALRM``; elsewhere
    the code runs without a time limit. The alarm repeats every 0.2 s, so a
    bare ``except:`` in the learner's loop does not swallow it for good.
    """
    usable = (
        budget is not None and hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()
    )
    if not usable:
        yield
        return
    assert budget is not None

    def ring(signum: int, frame: Any) -> None:
        raise OutOfTime

    previous = signal.signal(signal.SIGALRM, ring)
    signal.setitimer(signal.ITIMER_REAL, max(budget.remaining(), 1e-3), 0.2)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


class InProcessFunction(LearnerFunction):
    """A plain function called in this process: exceptions and ``sys.exit`` become :class:`LearnerRaised`.

    The checker itself never calls the learner's code this way (it runs it
    in another process, see ``qkv.exercises.sandbox``); this serves
    :func:`call` on plain functions, as in the examples and in tests.
    """

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn

    def invoke(self, *args: Any) -> Any:
        try:
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                return self.fn(*args)
        except (Exception, SystemExit) as exc:  # the code called may raise anything
            raise LearnerRaised.from_exception(exc) from exc


@dataclass(frozen=True)
class NotCallable:
    """What the learner defined under a function's name when it is not a function."""

    type_name: str


def call_keeping_inputs(fn: Callable[..., Any] | LearnerFunction, *args: Any) -> tuple[Any, tuple[Any, ...]]:
    """Call the learner's ``fn`` on copies of ``args``; return its result and
    the copies as the call left them (a function that writes into an input
    array changes its copy, never the checker's array).

    Examples
    --------
    >>> import numpy as np
    >>> x = np.array([1.0, 2.0])
    >>> def halves(a):
    ...     a /= 2
    ...     return a
    >>> result, (after,) = call_keeping_inputs(halves, x)
    >>> x.tolist(), after.tolist()
    ([1.0, 2.0], [0.5, 1.0])
    """
    copies = tuple(np.array(a) if isinstance(a, np.ndarray) else a for a in args)
    if isinstance(fn, LearnerFunction):
        return fn.invoke(*copies), copies
    return InProcessFunction(fn).invoke(*copies), copies


def call(fn: Callable[..., Any] | LearnerFunction, *args: Any) -> Any:
    """Call the learner's ``fn`` on copies of ``args``; what it raises becomes
    :class:`LearnerRaised`.

    The checker's arrays are never the learner's: every expected value is
    computed from inputs no learner code has touched. NumPy floating-point
    warnings (overflow in ``exp`` and the like) are silenced: the checks look
    at the numbers that come back instead.

    Examples
    --------
    >>> call(int, "12")
    12
    >>> try:
    ...     call(int, "twelve")
    ... except LearnerRaised as exc:
    ...     print(exc.describe())
    raised ValueError: invalid literal for int() with base 10: 'twelve'
    """
    return call_keeping_inputs(fn, *args)[0]


@dataclass(frozen=True)
class Check:
    """One check of one learner function.

    Parameters
    ----------
    function : str
        Name of the learner function the check calls.
    title : str
        The expectation, as one line (shown after PASS/FAIL).
    body : callable
        ``body(fn)`` returns on success and raises :class:`CheckFailed` on a
        wrong answer.
    """

    function: str
    title: str
    body: Callable[[Callable[..., Any]], None]


class CheckList:
    """An ordered list of checks, filled by the :meth:`add` decorator.

    Examples
    --------
    >>> checks = CheckList()
    >>> @checks.add("double", "double(2) == 4")
    ... def _(fn):
    ...     if call(fn, 2) != 4:
    ...         raise CheckFailed("expected 4")
    >>> [c.title for c in checks]
    ['double(2) == 4']
    """

    def __init__(self) -> None:
        self._checks: list[Check] = []

    def add(self, function: str, title: str) -> Callable[[Callable[..., None]], Callable[..., None]]:
        """Decorator registering ``body`` as a check of ``function``."""

        def register(body: Callable[..., None]) -> Callable[..., None]:
            self._checks.append(Check(function, title, body))
            return body

        return register

    def __iter__(self) -> Iterator[Check]:
        return iter(self._checks)

    def __len__(self) -> int:
        return len(self._checks)


@dataclass(frozen=True)
class FunctionSpec:
    """A function the learner writes.

    Parameters
    ----------
    name : str
        Its name, e.g. ``"one_hot"``.
    signature : str
        How to define it, e.g. ``"one_hot(token_ids, vocab_size)"``.
    optional : bool, default False
        A stretch goal: skipped when not defined (or still raising
        ``NotImplementedError``), checked when written.
    """

    name: str
    signature: str
    optional: bool = False


@dataclass(frozen=True)
class Exercise:
    """A practice exercise: its functions, checks and starter template."""

    name: str
    number: int
    title: str
    functions: tuple[FunctionSpec, ...]
    checks: tuple[Check, ...]
    starter: str  # file name inside qkv/exercises/starters/

    def checks_of(self, function: str) -> list[Check]:
        """The checks that call ``function``, in order."""
        return [c for c in self.checks if c.function == function]


@dataclass(frozen=True)
class CheckResult:
    """The outcome of one check.

    ``status`` is ``"PASS"``, ``"FAIL"`` or ``"SKIP"``; ``details`` explain
    a failure (or a skip); ``mistakes`` are recognised mistake keys.
    """

    function: str
    title: str
    status: str
    details: tuple[str, ...] = ()
    mistakes: tuple[str, ...] = ()
    optional: bool = False

    def format(self) -> str:
        """The result as text: one status line, then indented details.

        Only the status line starts at the left margin: every further line,
        of a title or a detail with a newline in it (the learner's exception
        message, say), is indented, so none can pass for a line of its own.

        >>> print(CheckResult("f", "f(2) == 4", "FAIL", ("raised ValueError: no\\nPASS  f(3) == 9",)).format())
        FAIL  f(2) == 4
                raised ValueError: no
                PASS  f(3) == 9
        """
        title, *more = f"{self.status}  {self.title}".split("\n")
        details = [*more, *self.details, *(describe(key) for key in self.mistakes)]
        return "\n".join([title] + [f"        {line}" for d in details for line in d.split("\n")])


#: Characters that move the cursor, erase or reorder text on a terminal: C0
#: and C1 controls (but newline and tab), DEL, Unicode's bidirectional
#: overrides and its line and paragraph separators. The learner's printed
#: output and exception text may hold them.
_INVISIBLE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def visible(text: str) -> str:
    """``text`` with every terminal control character written out as an escape,
    so that nothing the learner's code prints can rewrite the report.

    >>> visible("ok\\x1b[6A\\rFAIL")
    'ok\\\\x1b[6A\\\\rFAIL'
    """
    named = {"\r": "\\r", "\x1b": "\\x1b"}
    return _INVISIBLE.sub(lambda m: named.get(m[0], f"\\u{ord(m[0]):04x}"), text)


def encodable(text: str, stream: Any) -> str:
    """``text`` with what ``stream``'s encoding cannot write escaped (``\\xe9``), so that
    printing it cannot fail half-way (a terminal set to ASCII, ``PYTHONIOENCODING=ascii``).

    >>> import io
    >>> encodable("r\u00e9sum\u00e9", io.TextIOWrapper(io.BytesIO(), encoding="ascii"))
    'r\\\\xe9sum\\\\xe9'
    """
    encoding = getattr(stream, "encoding", None)
    if not isinstance(encoding, str):
        return text  # a StringIO, a notebook's output: any text goes
    try:
        return text.encode(encoding, "backslashreplace").decode(encoding)
    except (LookupError, UnicodeError):
        return text


@dataclass(frozen=True)
class Report:
    """All results of one run of one exercise.

    ``passed`` is True only when every required check ran and passed (and
    no check failed: optional stretch checks count once the learner wrote
    the stretch function). ``output`` is what the learner's code printed;
    ``notes`` are remarks that do not fail the run; ``sandbox`` says what
    confined the learner's code (``qkv.exercises.sandbox.describe_sandbox``).
    """

    exercise: Exercise
    results: tuple[CheckResult, ...] = field(default_factory=tuple)
    source: str = ""
    output: str = ""
    notes: tuple[str, ...] = ()
    sandbox: str = ""

    @property
    def passed(self) -> bool:
        """True when every required check passed and none failed."""
        return not self.failures and self._required_passed() == self._required_total()

    @property
    def failures(self) -> list[CheckResult]:
        """The failed results, in order."""
        return [r for r in self.results if r.status == "FAIL"]

    @property
    def mistakes(self) -> set[str]:
        """Keys of every mistake recognised in this run."""
        return {key for r in self.results for key in r.mistakes}

    @property
    def exit_code(self) -> int:
        """0 when passed, 1 otherwise (the CLI's exit status)."""
        return 0 if self.passed else 1

    def _optional(self) -> set[str]:
        return {f.name for f in self.exercise.functions if f.optional}

    def _required_total(self) -> int:
        optional = self._optional()
        return sum(c.function not in optional for c in self.exercise.checks)

    def _required_passed(self) -> int:
        return sum(r.status == "PASS" for r in self.results if not r.optional)

    def format(self) -> str:
        """The full report: a header, one block per check, output, notes, a summary."""
        ex = self.exercise
        lines = [f"Checking exercise {ex.number} ({ex.name}): {ex.title}"]
        if self.source:
            # A file's name may hold a newline: written out, so it cannot start a line of its own
            # (a fake "Result:" line; security re-review 9a, X5).
            lines.append(f"File: {self.source!s}".replace("\n", "\\n").replace("\r", "\\r"))
        if self.sandbox:
            lines.append(f"Sandbox: {self.sandbox}")
        required = [r for r in self.results if not r.optional]
        stretch = [r for r in self.results if r.optional]
        lines += [r.format() for r in required]
        if stretch:
            lines.append("Stretch (optional; its checks count once you write it):")
            lines += [r.format() for r in stretch]
        if self.output:
            lines.append("Your code printed:")
            lines += [f"    {line}" for line in self.output.rstrip("\n").split("\n")]
        lines += [f"Note: {note}" for note in self.notes]
        lines.append(self._summary(stretch))
        return visible("\n".join(lines))

    def _summary(self, stretch: list[CheckResult]) -> str:
        total = self._required_total()
        text = f"{self._required_passed()} of {total} checks passed"
        if stretch:
            if all(r.status == "SKIP" for r in stretch):
                text += "; stretch not attempted"
            else:
                optional = self._optional()
                n_stretch = sum(c.function in optional for c in self.exercise.checks)
                text += f"; stretch: {sum(r.status == 'PASS' for r in stretch)} of {n_stretch} passed"
        if self.passed:
            return f"Result: {text}. All done."
        return f"Result: {text}. Fix the first FAIL above and run the check again."

    def to_plain(self) -> dict[str, Any]:
        """The report as JSON-ready plain data (see :meth:`from_plain`)."""
        return {
            "exercise": self.exercise.name,
            "source": self.source,
            "output": self.output,
            "notes": list(self.notes),
            "sandbox": self.sandbox,
            "results": [
                {
                    "function": r.function,
                    "title": r.title,
                    "status": r.status,
                    "details": list(r.details),
                    "mistakes": list(r.mistakes),
                    "optional": r.optional,
                }
                for r in self.results
            ],
        }

    @classmethod
    def from_plain(cls, data: Any, exercises: Mapping[str, Exercise]) -> Report:
        """The report :meth:`to_plain` wrote, validated field by field.

        Raises
        ------
        ValueError
            If ``data`` is not such a report.
        """

        def strings(value: Any, what: str) -> tuple[str, ...]:
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise ValueError(f"report field {what} must be a list of strings")
            return tuple(value)

        if not isinstance(data, dict) or data.get("exercise") not in exercises:
            raise ValueError("not a report of a known exercise")
        if not (isinstance(data.get("source"), str) and isinstance(data.get("output"), str)) or not isinstance(
            data.get("sandbox", ""), str
        ):
            raise ValueError("report fields source, output and sandbox must be strings")
        results = []
        for item in data.get("results", None) or []:
            if not isinstance(item, dict) or item.get("status") not in ("PASS", "FAIL", "SKIP"):
                raise ValueError("a report result must have status PASS, FAIL or SKIP")
            if not all(isinstance(item.get(k), str) for k in ("function", "title")):
                raise ValueError("a report result must name its function and title")
            results.append(
                CheckResult(
                    item["function"],
                    item["title"],
                    item["status"],
                    strings(item.get("details"), "details"),
                    strings(item.get("mistakes"), "mistakes"),
                    item.get("optional") is True,
                )
            )
        return cls(
            exercises[data["exercise"]],
            tuple(results),
            data["source"],
            data["output"],
            strings(data.get("notes"), "notes"),
            data.get("sandbox", ""),
        )

    def __repr__(self) -> str:
        state = "passed" if self.passed else f"{len(self.failures)} failed"
        return f"<Report {self.exercise.name}: {state}>"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'s' if n != 1 else ''}"


def _not_run(n: int, prefix: str = "its") -> str:
    return f"{prefix} {_plural(n, 'check')} {'were' if n != 1 else 'was'} not run"


def _run_function(spec: FunctionSpec, fn: Any, checks: list[Check]) -> tuple[list[CheckResult], LearnerAborted | None]:
    """Run the checks of one learner function; also return a fatal abort, if any."""
    opt = spec.optional

    def result(title: str, status: str, *details: str, mistakes: Sequence[str] = ()) -> CheckResult:
        return CheckResult(spec.name, title, status, tuple(details), tuple(mistakes), opt)

    not_run = _not_run(len(checks))
    if fn is None:
        if opt:
            return [result(f"{spec.name}: not defined (optional stretch, skipped)", "SKIP")], None
        return [result(f"{spec.name}: missing; define {spec.signature}", "FAIL", not_run)], None
    if isinstance(fn, NotCallable) or not (callable(fn) or isinstance(fn, LearnerFunction)):
        kind = fn.type_name if isinstance(fn, NotCallable) else type(fn).__name__
        title = f"{spec.name}: not a function; define {spec.signature}"
        return [result(title, "FAIL", f"{spec.name} is a value of type {kind}", not_run)], None

    results: list[CheckResult] = []
    for n, check in enumerate(checks):
        try:
            check.body(fn)
        except CheckFailed as failed:
            results.append(result(check.title, "FAIL", *failed.details, mistakes=failed.mistakes))
        except LearnerAborted as aborted:
            rest = len(checks) - n - 1
            details = [f"while checking: {check.title}"] + ([_not_run(rest, "its other")] if rest else [])
            results.append(result(f"{spec.name}: {aborted.what}", "FAIL", *details))
            return results, aborted if aborted.fatal else None
        except LearnerRaised as raised:
            if raised.is_a("NotImplementedError"):
                rest = len(checks) - n
                if opt and not results:
                    title = f"{spec.name}: not attempted yet (optional stretch, skipped)"
                    return [result(title, "SKIP")], None
                results.append(
                    result(
                        f"{spec.name}: not implemented yet",
                        "FAIL",
                        raised.describe(),
                        f"replace the `raise NotImplementedError` line with your code "
                        f"({_plural(rest, 'check')} of {spec.name} not run)",
                    )
                )
                return results, None
            results.append(result(check.title, "FAIL", raised.describe()))
        else:
            results.append(result(check.title, "PASS"))
    return results, None


def run_exercise(
    exercise: Exercise, namespace: Mapping[str, Any], source: str = "", budget: TimeBudget | None = None
) -> Report:
    """Run every check of ``exercise`` on the functions in ``namespace``.

    The expected answers and every comparison are computed here, with
    NumPy's floating-point error handling set to ignore for the duration,
    so that the caller's ``np.seterr`` cannot break the reference code.

    Parameters
    ----------
    exercise : Exercise
        What to check.
    namespace : mapping
        Where the learner's functions live: ``globals()``, or
        :class:`LearnerFunction` objects that run them in another process.
    source : str, optional
        Shown in the report header (a file name).
    budget : TimeBudget, optional
        The exercise's time budget, for checks that run learner code of their
        own (:func:`current_budget`).

    Returns
    -------
    Report
    """
    results: list[CheckResult] = []
    stopped: LearnerAborted | None = None
    token = _BUDGET.set(budget)
    with contextlib.ExitStack() as cleanup, np.errstate(all="ignore"), warnings.catch_warnings():
        cleanup.callback(_BUDGET.reset, token)
        warnings.simplefilter("ignore")
        for spec in exercise.functions:
            checks = exercise.checks_of(spec.name)
            fn = namespace.get(spec.name)
            if stopped is not None:
                title = f"{spec.name}: not checked: the run was stopped above"
                status = "SKIP" if spec.optional else "FAIL"
                not_run = (_not_run(len(checks)),)
                results.append(CheckResult(spec.name, title, status, not_run, (), spec.optional))
                continue
            if callable(fn) and not isinstance(fn, LearnerFunction):
                fn = InProcessFunction(fn)
            found, stopped = _run_function(spec, fn, checks)
            results += found
    return Report(exercise, tuple(results), source)
