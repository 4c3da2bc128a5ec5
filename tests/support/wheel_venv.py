"""What readers install: the release dry run's wheel in a fresh venv, and the
interpreter that runs the documentation's blocks from it.

``build_and_install(directory)`` runs the release dry run
(``release.dry_run``, the same as ``make dist``) into ``directory/dist`` and
installs the wheel, with nothing but its declared dependencies (NumPy at the
version in constraints.txt), into a fresh venv at ``directory/venv`` (made
without pip: this environment's pip installs into it). The
session fixture ``installed_wheel`` (tests/conftest.py) does it once for all
pytest-xdist workers; :class:`InstalledWheel` reads the result.

:class:`WheelInterpreter` is what ``docs_pipeline.copy_isolation`` is given to
run each block alone from that venv (tests/test_copy_isolation.py): the
venv's Python, working directory ``/``, no PYTHONPATH, so qkv is the wheel's
and nothing of the repository is in reach. A block that imports a package
qkv does not depend on (torch in the PyTorch tabs, transformers in a
cross-check, duckdb in the SQL chapter) gets that package as installed here,
through a PYTHONPATH holding links to it and its dependencies only (never
qkv, never the source tree), in a zygote of its own that has imported the
packages all such blocks of the page import (torch) and what those load at
first use (:data:`WARM`); where one is not installed the block is not run (a
skip, a failure under CI=true). Every zygote is probed first
(:func:`not_from_the_wheel`): qkv must come from the venv, and no directory
of the repository may be on sys.path.
"""

from __future__ import annotations

import os
import subprocess
import sys
from functools import cache
from importlib import metadata
from pathlib import Path

import release  # tests/support: the release dry run
from docs_pipeline import AloneRunner, SourceTree
from lock import canonical, closure
from needs import imported_modules

ROOT = Path(__file__).resolve().parents[2]


def clean_env() -> dict[str, str]:
    """This environment without what would point a Python at the repository's venv."""
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV"}}
    env["PATH"] = "/usr/bin:/bin"
    return env


class Venv:
    """A venv made by :func:`make_venv` (or found at ``root``)."""

    def __init__(self, root: Path) -> None:
        self.root = root

    @property
    def python(self) -> str:
        return str(self.root / "bin" / "python")

    def run(self, *args: str, **kwargs) -> subprocess.CompletedProcess:
        """A command of the venv, with nothing of the repository in reach."""
        return subprocess.run(
            args, capture_output=True, text=True, cwd=kwargs.pop("cwd", "/"), env=clean_env(), timeout=300, **kwargs
        )

    def pip(self, *args: str) -> subprocess.CompletedProcess:
        """``pip <args>`` for the venv's Python. The venv has no pip of its own
        (installing it takes seconds): this environment's pip acts on it."""
        return self.run(sys.executable, "-m", "pip", "--python", self.python, *args)


def make_venv(where: Path, wheel: Path) -> Venv | str:
    """A fresh venv holding ``wheel`` and what it declares, nothing else; or
    why it could not be made."""
    venv = Venv(where)
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True, capture_output=True)
    installed = venv.pip("install", "--quiet", "--no-input", "-c", str(ROOT / "constraints.txt"), str(wheel))
    if installed.returncode != 0:
        return f"pip install {wheel.name} into a fresh venv failed:\n{(installed.stdout + installed.stderr)[-3000:]}"
    return venv


def build_and_install(directory: Path) -> str | None:
    """The release dry run into ``directory/dist``, its wheel installed into a
    fresh venv at ``directory/venv``; the failure's message, or None."""
    try:
        wheel = release.dry_run(directory / "dist")
    except release.ReleaseCheckFailed as error:
        return str(error)
    venv = make_venv(directory / "venv", wheel)
    return venv if isinstance(venv, str) else None


class InstalledWheel:
    """What :func:`build_and_install` left in ``directory``: the wheel and the venv."""

    def __init__(self, directory: Path) -> None:
        (self.wheel,) = (directory / "dist").glob("qkv-*.whl")
        self.venv = Venv(directory / "venv")


#: Reference implementations whose metadata leaves torch out (an extra).
TORCH_MODELS = {"transformers", "rotary-embedding-torch"}


#: Modules a package loads at first use, which each block using it would
#: otherwise import again in its own child: torch.manual_seed, an optimiser's
#: step and autograd load torch._dynamo or sympy (2 CPU-s in embeddings.md's
#: optimiser blocks, half a second in a backward pass); a transformers model
#: loads transformers.modeling_utils and torch (3 CPU-s). The zygote of a
#: block that imports the package imports them once, for every page of the
#: session. A block that never loads them still finds them loaded, as it
#: finds numpy and qkv; one that reaches a submodule only they imported
#: (ctypes.util) runs in python -c (fork_runner.unvouched).
WARM = {
    "torch": ("torch", "torch._dynamo"),
    "transformers": ("torch", "torch._dynamo", "transformers", "transformers.modeling_utils"),
}


@cache
def module_owners() -> dict[str, list[str]]:
    """:func:`importlib.metadata.packages_distributions`, read once (each call
    reads every installed distribution's file list: a fifth of a second)."""
    return metadata.packages_distributions()


def third_party_modules(program: str) -> frozenset[str]:
    """Top-level modules a block imports that are not the standard library,
    qkv or NumPy (e.g. torch, transformers, duckdb)."""
    modules = imported_modules(program)
    return frozenset(m for m in modules if m not in sys.stdlib_module_names and m not in {"qkv", "numpy"})


def third_party(program: str) -> frozenset[str]:
    """Distributions a block imports that the wheel does not bring: not the
    standard library, not qkv, not NumPy (e.g. torch, transformers, duckdb)."""
    owners = module_owners()
    names = set()
    for module in third_party_modules(program):
        names.update(canonical(name) for name in owners.get(module, [module]))
    if names & TORCH_MODELS:
        names.add("torch")  # they run on torch but declare it as an extra only
    return frozenset(names)


def overlay(where: Path, distributions: frozenset[str]) -> str | None:
    """A directory of links to ``distributions`` and what they depend on, NumPy
    and qkv excluded: a block's extra requirements (the PyTorch tab's torch,
    the DuckDB example's duckdb), nothing more. None if one is not installed."""
    try:
        names = closure(sorted(distributions))
    except SystemExit:  # one of them is not installed here
        return None
    where.mkdir(parents=True, exist_ok=True)
    for name in names:
        if name in {"numpy", "qkv"}:
            continue
        dist = metadata.distribution(name)
        tops = {Path(str(f)).parts[0] for f in dist.files or [] if not str(f).startswith("..")}
        for top in tops - {"__pycache__", "bin"}:
            source = Path(dist.locate_file(top))
            if source.exists() and not (where / top).exists():
                (where / top).symlink_to(source)
    return str(where)


#: What a block run from the wheel sees: where qkv comes from, and sys.path.
WHERE_FROM = "import os, sys, qkv\nprint(qkv.__file__)\nprint(*map(os.path.abspath, sys.path), sep='\\n')"


def not_from_the_wheel(runner: AloneRunner, venv: Venv) -> str | None:
    """Why blocks run through ``runner`` would not test the wheel installed in
    ``venv`` (qkv imported from elsewhere, the repository on sys.path), or None."""
    probe = runner.run(WHERE_FROM, timeout=180)
    if probe.returncode != 0:
        return f"blocks cannot import qkv from the installed wheel:\n{probe.stderr[-1500:]}"
    qkv_file, *path = probe.stdout.splitlines()
    if not qkv_file.startswith(f"{venv.root}{os.sep}"):
        return f"blocks import qkv from {qkv_file}, not from the wheel installed in {venv.root}"
    inside = [entry for entry in path if Path(entry).resolve().is_relative_to(ROOT)]
    if inside:
        return f"blocks run from the wheel have the repository on sys.path: {', '.join(inside)}"
    return None


class WheelInterpreter(SourceTree):
    """Copy isolation from the installed wheel: ``venv``'s Python, with a
    block's third-party packages (:func:`third_party`) linked into a directory
    of their own under ``overlays`` (one per set of packages, made once)."""

    label = " with the installed wheel"

    def __init__(self, venv: Venv, overlays: Path) -> None:
        super().__init__()
        self.venv = venv
        self.python = venv.python
        self.overlays = overlays
        self.paths: dict[frozenset[str], str | None] = {}

    def _overlay(self, distributions: frozenset[str]) -> str | None:
        if distributions not in self.paths:
            self.paths[distributions] = overlay(self.overlays / f"extra-{len(self.paths)}", distributions)
        return self.paths[distributions]

    def unavailable(self, program: str) -> str | None:
        extra = third_party(program)
        if extra and self._overlay(extra) is None:
            return (
                f"not run from the installed wheel: needs {', '.join(sorted(extra))}, not all installed here "
                "(.ci/run installs them)"
            )
        return None

    def environment(self, program: str) -> tuple[str | None, frozenset[str]]:
        extra = third_party(program)
        if not extra:
            return None, frozenset()
        warm = {module for name in extra for module in WARM.get(name, ())}
        return self._overlay(extra), third_party_modules(program) | warm

    def not_testing(self, runner: AloneRunner) -> str | None:
        return not_from_the_wheel(runner, self.venv)
