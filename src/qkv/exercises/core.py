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

import os
import traceback
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from qkv.exercises.mistakes import describe

__all__ = [
    "CheckFailed",
    "LearnerRaised",
    "call",
    "Check",
    "CheckList",
    "FunctionSpec",
    "Exercise",
    "CheckResult",
    "Report",
    "run_exercise",
]

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
_NUMPY_DIR = os.path.dirname(os.path.abspath(np.__file__))


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
    """The learner's function raised ``error`` while a check called it."""

    def __init__(self, error: Exception) -> None:
        super().__init__(f"{type(error).__name__}: {error}")
        self.error = error
        self.where = _learner_frame(error.__traceback__)

    def describe(self) -> str:
        """``"raised TypeError: message (line 7, in one_hot)"``."""
        text = f"raised {type(self.error).__name__}: {self.error}"
        return f"{text} ({self.where})" if self.where else text


def _learner_frame(tb: Any) -> str | None:
    """Where in the learner's code the exception came from, if anywhere."""
    frames = [
        f
        for f in traceback.extract_tb(tb)
        if os.path.dirname(os.path.abspath(f.filename)) != _PACKAGE_DIR
        and not os.path.abspath(f.filename).startswith(_NUMPY_DIR)
    ]
    if not frames:
        return None
    last = frames[-1]
    return f"line {last.lineno} of {os.path.basename(last.filename)}, in {last.name}"


def call(fn: Callable[..., Any], *args: Any) -> Any:
    """Call the learner's ``fn``; wrap anything it raises in :class:`LearnerRaised`.

    NumPy floating-point warnings (overflow in ``exp`` and the like) are
    silenced: the checks look at the numbers that come back instead.

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
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            return fn(*args)
        except Exception as exc:  # the learner's code may raise anything
            raise LearnerRaised(exc) from exc


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
        """The result as text: one status line, then indented details."""
        lines = [f"{self.status}  {self.title}"]
        lines += [f"        {d}" for d in self.details]
        lines += [f"        {describe(key)}" for key in self.mistakes]
        return "\n".join(lines)


@dataclass(frozen=True)
class Report:
    """All results of one run of one exercise.

    ``passed`` is True when no check failed: optional (stretch) checks
    count only when the learner wrote the stretch function.
    """

    exercise: Exercise
    results: tuple[CheckResult, ...] = field(default_factory=tuple)
    source: str = ""

    @property
    def passed(self) -> bool:
        """True when no check failed."""
        return not self.failures

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

    def format(self) -> str:
        """The full report: a header, one block per check, a summary."""
        ex = self.exercise
        lines = [f"Checking exercise {ex.number} ({ex.name}): {ex.title}"]
        if self.source:
            lines.append(f"File: {self.source}")
        required = [r for r in self.results if not r.optional]
        stretch = [r for r in self.results if r.optional]
        lines += [r.format() for r in required]
        if stretch:
            lines.append("Stretch (optional; its checks count once you write it):")
            lines += [r.format() for r in stretch]
        lines.append(self._summary(required, stretch))
        return "\n".join(lines)

    def _summary(self, required: list[CheckResult], stretch: list[CheckResult]) -> str:
        optional = {f.name for f in self.exercise.functions if f.optional}
        total = sum(c.function not in optional for c in self.exercise.checks)
        passed = sum(r.status == "PASS" for r in required)
        text = f"{passed} of {total} checks passed"
        if stretch:
            if all(r.status == "SKIP" for r in stretch):
                text += "; stretch not attempted"
            else:
                n_stretch = sum(c.function in optional for c in self.exercise.checks)
                text += f"; stretch: {sum(r.status == 'PASS' for r in stretch)} of {n_stretch} passed"
        if self.passed:
            return f"Result: {text}. All done."
        return f"Result: {text}. Fix the first FAIL above and run the check again."

    def __repr__(self) -> str:
        state = "passed" if self.passed else f"{len(self.failures)} failed"
        return f"<Report {self.exercise.name}: {state}>"


def _run_function(spec: FunctionSpec, fn: Any, checks: list[Check]) -> list[CheckResult]:
    """Run the checks of one learner function."""
    opt = spec.optional

    def result(title: str, status: str, *details: str, mistakes: Sequence[str] = ()) -> CheckResult:
        return CheckResult(spec.name, title, status, tuple(details), tuple(mistakes), opt)

    not_run = f"its {len(checks)} checks were not run" if len(checks) != 1 else "its check was not run"
    if fn is None:
        if opt:
            return [result(f"{spec.name}: not defined (optional stretch, skipped)", "SKIP")]
        return [result(f"{spec.name}: missing; define {spec.signature}", "FAIL", not_run)]
    if not callable(fn):
        kind = type(fn).__name__
        return [
            result(
                f"{spec.name}: not a function; define {spec.signature}",
                "FAIL",
                f"{spec.name} is a value of type {kind}",
                not_run,
            )
        ]

    results: list[CheckResult] = []
    for n, check in enumerate(checks):
        try:
            check.body(fn)
        except CheckFailed as failed:
            results.append(result(check.title, "FAIL", *failed.details, mistakes=failed.mistakes))
        except LearnerRaised as raised:
            if isinstance(raised.error, NotImplementedError):
                rest = len(checks) - n
                if opt and not results:
                    return [result(f"{spec.name}: not attempted yet (optional stretch, skipped)", "SKIP")]
                results.append(
                    result(
                        f"{spec.name}: not implemented yet",
                        "FAIL",
                        raised.describe(),
                        f"replace the `raise NotImplementedError` line with your code "
                        f"({rest} check{'s' if rest != 1 else ''} of {spec.name} not run)",
                    )
                )
                return results
            results.append(result(check.title, "FAIL", raised.describe()))
        else:
            results.append(result(check.title, "PASS"))
    return results


def run_exercise(exercise: Exercise, namespace: Mapping[str, Any], source: str = "") -> Report:
    """Run every check of ``exercise`` on the functions in ``namespace``.

    Parameters
    ----------
    exercise : Exercise
        What to check.
    namespace : mapping
        Where the learner's functions live, e.g. ``globals()``.
    source : str, optional
        Shown in the report header (a file name).

    Returns
    -------
    Report
    """
    results: list[CheckResult] = []
    for spec in exercise.functions:
        results += _run_function(spec, namespace.get(spec.name), exercise.checks_of(spec.name))
    return Report(exercise, tuple(results), source)
