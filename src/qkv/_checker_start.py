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
started as the checker, is leave that folder: ``python -m`` starts again
with ``-P`` (Python itself has imported ``warnings`` from the working
directory by then), and the console script drops its folder from the
path. The checker needs neither folder; it loads the learner's file by its
path, in a child process (started with ``-P``). A ``PYTHONPATH`` with an
empty or relative entry names the working directory again, under ``-P``
too: a checker then starts again without those entries (Python's start-up,
``sitecustomize`` first, has imported from them by then, as under plain
``python -m``: README). Every other program that imports ``qkv`` keeps
its search path as it is. Not covered: a plant written to defeat this very
step (it runs first under ``python -m``; ``qkv-exercise`` and ``python -P
-m`` never import it), and modules in the venv's own folders (pip's
console script imports ``re`` before ``qkv``), which only a run without
Landlock could have written, like a ``.pth`` file (README).
"""

# No "from __future__ import annotations": that statement imports the module
# __future__, which a file in the working directory would shadow, and it runs
# before anything here could drop that directory.
import os
import sys

__all__ = ["CHECKER_MODULES", "CHECKER_SCRIPTS", "action", "checker_module", "start"]

#: The modules that judge a learner's file, when run with ``python -m``.
CHECKER_MODULES = ("qkv.exercises.cli", "qkv.exercises._checker")
#: The console scripts that do (pyproject.toml's ``[project.scripts]``).
CHECKER_SCRIPTS = ("qkv-exercise",)


def checker_module(orig_argv: list[str]) -> str | None:
    """The module a ``python -m MODULE ...`` command line runs, or None for any other.

    Options may be combined, as Python reads them (``-Bm``, ``-OOm``, ``-mX``).

    >>> checker_module(["python3", "-X", "dev", "-m", "qkv.exercises.cli", "check"])
    'qkv.exercises.cli'
    >>> checker_module(["python3", "-Bm", "qkv.exercises.cli"]), checker_module(["python3", "-mqkv.exercises.cli"])
    ('qkv.exercises.cli', 'qkv.exercises.cli')
    >>> checker_module(["python3", "--check-hash-based-pycs", "always", "-m", "qkv.exercises.cli"])
    'qkv.exercises.cli'
    >>> checker_module(["python3", "script.py", "-m", "x"]), checker_module(["python3", "-Wignore", "-c", "-m"])
    (None, None)
    """
    arguments = iter(orig_argv[1:])
    for argument in arguments:
        if argument == "-" or not argument.startswith("-"):
            return None  # standard input or a script
        if argument == "--check-hash-based-pycs":
            next(arguments, None)  # the one long option whose value may be the next argument
            continue
        if argument.startswith("--"):
            continue  # --check-hash-based-pycs=always, --help, ...
        for index, flag in enumerate(argument[1:], start=1):
            rest = argument[index + 1 :]
            if flag == "m":
                return rest or next(arguments, None)
            if flag == "c":
                return None
            if flag in "WX":  # take a value: the rest of this argument, or the next
                if not rest:
                    next(arguments, None)
                break
    return None


def working_directory_entries(pythonpath: str | None) -> list[str]:
    """The entries of ``pythonpath`` that name the working directory or a folder in it.

    Python reads an empty entry (``PYTHONPATH=:/x``, what ``export
    PYTHONPATH=$PYTHONPATH:/x`` makes when it was unset) as the working
    directory, and a relative one (``.``, ``lib``) against it, even under
    ``-P`` (security re-review 6a, T1).

    >>> working_directory_entries(":/opt/lib:.:src"), working_directory_entries("/opt/lib"), working_directory_entries(None)
    (['', '.', 'src'], [], [])
    """
    return [entry for entry in (pythonpath or "").split(os.pathsep) if not os.path.isabs(entry)] if pythonpath else []


def action(argv0: str, orig_argv: list[str], safe_path: bool, pythonpath: str | None = None) -> str | None:
    """What a process started with these arguments does first: ``"restart"``, ``"drop"`` or None.

    ``"restart"``: ``python -m`` one of ``CHECKER_MODULES`` without ``-P``. By
    the time ``qkv`` is imported, Python has already imported a few standard
    modules (``warnings``, ``contextlib``) with the working directory first on
    the path, so a ``warnings.py`` there has run (security re-review 3, Q1):
    start again as the same command with ``-P``, which leaves nothing of this
    process and imports nothing from there. Also any checker (module or
    script) whose ``PYTHONPATH`` names the working directory
    (:func:`working_directory_entries`): start again without those entries.
    ``"drop"``: a ``CHECKER_SCRIPTS`` script, whose folder is first on the
    path. None: any other program.

    >>> action("-m", ["python3", "-m", "qkv.exercises.cli", "list"], safe_path=False)
    'restart'
    >>> action("/venv/bin/qkv-exercise", ["python3", "/venv/bin/qkv-exercise"], safe_path=False)
    'drop'
    >>> action("/venv/bin/qkv-exercise", ["python3", "/venv/bin/qkv-exercise"], False, pythonpath=":/opt")
    'restart'
    >>> action("-m", ["python3", "-P", "-m", "qkv.exercises.cli"], safe_path=True), action("x.py", ["python3", "x.py"], False)
    (None, None)
    """
    module = checker_module(orig_argv) in CHECKER_MODULES
    script = os.path.basename(argv0).removesuffix(".exe") in CHECKER_SCRIPTS
    if not (module or script):
        return None
    if working_directory_entries(pythonpath) or (module and not safe_path):
        return "restart" if os.name == "posix" else "drop"
    return None if safe_path else "drop"


def start() -> None:
    """Do what :func:`action` says for this process: ``os.execve`` the same command with ``-P``
    and without ``PYTHONPATH``'s working-directory entries, or remove ``sys.path[0]`` (the
    script's folder) and those entries' folders from the path."""
    pythonpath = os.environ.get("PYTHONPATH")
    what = action(sys.argv[0] if sys.argv else "", sys.orig_argv, bool(sys.flags.safe_path), pythonpath)
    relative = working_directory_entries(pythonpath)
    if what == "restart":
        env = dict(os.environ)
        kept = os.pathsep.join(entry for entry in (pythonpath or "").split(os.pathsep) if entry not in relative)
        if kept:
            env["PYTHONPATH"] = kept
        else:
            env.pop("PYTHONPATH", None)
        sys.stdout.flush()
        sys.stderr.flush()
        os.execve(sys.executable, [sys.executable, "-P", *sys.orig_argv[1:]], env)
    elif what == "drop":
        if sys.path and not sys.flags.safe_path:
            del sys.path[0]
        # Where exec is not at hand: at least take the working directory's folders off the path.
        for folder in {os.path.abspath(entry) for entry in relative}:
            while folder in sys.path:
                sys.path.remove(folder)


start()  # at import: qkv/__init__.py imports this module before anything else
