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
['input-layer', 'attention-head']
>>> report = check("input-layer", {})
Checking exercise 1 (input-layer): the input layer (token ids -> vectors + positions)
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

``run`` does the same without printing. The reference implementations in
``qkv`` pass exercise 2 (the stretch, not written here, is skipped):

>>> import qkv
>>> def attention(Q, K, V, mask=None):
...     return qkv.scaled_dot_product_attention(Q, K, V, mask)
>>> run("attention-head", {"softmax": qkv.softmax, "attention": attention}).passed
True
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from importlib import resources
from types import ModuleType
from typing import Any, TextIO

from qkv.exercises import attention_head, input_layer
from qkv.exercises.core import CheckResult, Exercise, Report, run_exercise
from qkv.exercises.loader import LoadError, load_file

__all__ = ["EXERCISES", "get_exercise", "starter", "run", "check", "Report"]

EXERCISES: dict[str, Exercise] = {
    ex.name: ex for ex in (input_layer.EXERCISE, attention_head.EXERCISE)
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


def run(name: str | int, source: Source) -> Report:
    """Run the checks of an exercise without printing anything.

    Parameters
    ----------
    name : str or int
        The exercise, e.g. ``"input-layer"``.
    source : mapping, module or path
        Where the learner's functions are: a namespace such as ``globals()``,
        a module, or the path of a ``.py`` file.

    Returns
    -------
    Report
        ``report.passed``, ``report.format()``, ``report.mistakes``.

    Raises
    ------
    ValueError
        For an unknown exercise or a notebook path.
    FileNotFoundError
        For a path that does not exist.
    """
    ex = get_exercise(name)
    if isinstance(source, ModuleType):
        return run_exercise(ex, vars(source), source.__name__)
    if isinstance(source, Mapping):
        return run_exercise(ex, source)
    path = os.fspath(source)
    try:
        namespace = load_file(path)
    except LoadError as exc:
        failed = CheckResult("", f"could not run {os.path.basename(path)}", "FAIL", (str(exc),))
        return Report(ex, (failed,), path)
    return run_exercise(ex, namespace, path)


def check(name: str | int, source: Source, *, file: TextIO | None = None) -> Report:
    """Run the checks of an exercise and print one line per check.

    Parameters
    ----------
    name : str or int
        The exercise, e.g. ``"input-layer"`` or ``"attention-head"``.
    source : mapping, module or path
        In a notebook pass ``globals()``; a module or a ``.py`` path works too.
    file : text stream, optional
        Where to print; standard output by default.

    Returns
    -------
    Report
        ``report.passed`` is True when every check passed.
    """
    report = run(name, source)
    print(report.format(), file=file if file is not None else sys.stdout)
    return report
