"""A checker process imports nothing from the folders a learner's code can write.

``python -m qkv.exercises.cli`` puts the working directory first on
``sys.path``, and the ``qkv-exercise`` console script puts its own folder
there. A module named like a standard one in that folder (a ``secrets.py``
left by an exercise file checked without Landlock) would run inside the
checker as soon as NumPy imports ``secrets``: before any check of the
checker's own could look, and free to rebind whatever such a check reads
(security re-review 2, P5: it rebound ``sys.stdlib_module_names`` and
faked "11 of 11 checks passed").

So the first thing ``import qkv`` does (importing this module), in a process
started as the checker, is drop that first entry, as ``python -P`` would have: nothing runs from
there afterwards. The checker needs neither folder; it loads the learner's
file by its path, in a child process. Every other program that imports
``qkv`` keeps its search path as it is.
"""

# No "from __future__ import annotations": that statement imports the module
# __future__, which a file in the working directory would shadow, and it runs
# before anything here could drop that directory.
import os
import sys

__all__ = ["CHECKER_MODULES", "CHECKER_SCRIPTS", "checker_module", "drop_writable_first_entry"]

#: The modules that judge a learner's file, when run with ``python -m``.
CHECKER_MODULES = ("qkv.exercises.cli", "qkv.exercises._checker")
#: The console scripts that do (pyproject.toml's ``[project.scripts]``).
CHECKER_SCRIPTS = ("qkv-exercise",)


def checker_module(orig_argv: list[str]) -> str | None:
    """The module a ``python -m MODULE ...`` command line runs, or None for any other.

    >>> checker_module(["python3", "-X", "dev", "-m", "qkv.exercises.cli", "check"])
    'qkv.exercises.cli'
    >>> checker_module(["python3", "-mqkv.exercises.cli"]), checker_module(["python3", "script.py", "-m", "x"])
    ('qkv.exercises.cli', None)
    """
    arguments = iter(orig_argv[1:])
    for argument in arguments:
        if argument == "-m":
            return next(arguments, None)
        if argument.startswith("-m") and not argument.startswith("--"):
            return argument[2:]
        if argument in ("-X", "-W"):  # options that take a value
            next(arguments, None)
        elif argument == "-c" or argument == "-" or not argument.startswith("-"):
            return None  # a command, standard input or a script: not -m
    return None


def drop_writable_first_entry() -> str | None:
    """In a checker process, remove ``sys.path[0]`` (the working directory or the script's folder).

    A checker process is one started as ``python -m`` one of ``CHECKER_MODULES``
    or as one of ``CHECKER_SCRIPTS``, without ``-P`` (or ``-I``), which leave
    that entry out already.

    Returns
    -------
    str or None
        The entry removed; None when this process is not a checker or has none.
    """
    if sys.flags.safe_path or not sys.path:
        return None
    script = os.path.basename(sys.argv[0]) if sys.argv else ""
    if script.removesuffix(".exe") in CHECKER_SCRIPTS or checker_module(sys.orig_argv) in CHECKER_MODULES:
        return sys.path.pop(0)
    return None


drop_writable_first_entry()  # at import: qkv/__init__.py imports this module before anything else
