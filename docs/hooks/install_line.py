"""How to run the snippets: one line, one template, read from the package.

The home page and the top of every chapter say which ``pip install`` the
site was built and tested with, and which Python and NumPy it needs; the
exercise notebooks and the chapter notebooks install that same version; the
footer shows it. All of it comes from here, and the version from the
installed package's metadata (``importlib.metadata``), which
``pyproject.toml`` (the version's one home) wrote at install time.
"""

from __future__ import annotations

import sys
import tomllib
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[2]
# Which pages carry the line: the home page and the chapters.
PAGES = ("index.md",)
CHAPTER_PREFIX = "chapters/"


class StaleInstall(RuntimeError):
    pass


@dataclass(frozen=True)
class Install:
    version: str  # qkv's version, e.g. "0.1.0"
    python: str  # Requires-Python, e.g. ">=3.11"
    numpy: str  # the NumPy range qkv declares, e.g. "<3,>=1.26"
    built_python: str  # what the site was built and its blocks checked with
    built_numpy: str

    @property
    def pip(self) -> str:
        return f"pip install qkv=={self.version}"

    def markdown(self) -> str:
        """The one line under a page's title."""
        # ">=1.26,<3", lower bound first, as people write it.
        numpy_range = ",".join(sorted(self.numpy.split(","), key=lambda s: not s.startswith(">")))
        python = self.python[2:] + "+" if self.python.startswith(">=") and "," not in self.python else self.python
        return (
            f'<p class="qkv-install" markdown>To run the code: `{self.pip}` '
            f"(needs Python {python}; installs `numpy{numpy_range}`). "
            f"Checked with Python {self.built_python} and NumPy {self.built_numpy}.</p>"
        )

    def notebook_cell(self) -> str:
        """A notebook's first code cell: install this version where it is missing."""
        return (
            f"# Installs the qkv these pages were checked with ({self.pip}) where\n"
            "# it is missing or another version (e.g. on Colab).\n"
            "from importlib.metadata import PackageNotFoundError, version\n\n"
            "try:\n"
            f'    installed = version("qkv")\n'
            "except PackageNotFoundError:\n"
            "    installed = None\n"
            f'if installed != "{self.version}":\n'
            f'    get_ipython().run_line_magic("pip", "install -q qkv=={self.version}")'
        )


def declared(pyproject: Path = ROOT / "pyproject.toml") -> dict:
    return tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]


def read(pyproject: Path = ROOT / "pyproject.toml", dist: str = "qkv") -> Install:
    """What the installed qkv says, checked against pyproject.toml.

    A stale install (pyproject.toml changed since ``make install``) would put
    the wrong version on every page; it fails the build instead.
    """
    try:
        meta = metadata.metadata(dist)
    except metadata.PackageNotFoundError:
        raise StaleInstall(
            f"{dist} is not installed: run `make install` (the site reads its version from it)"
        ) from None
    project = declared(pyproject)
    numpy = [Requirement(r) for r in meta.get_all("Requires-Dist") or [] if Requirement(r).name == "numpy"]
    installed = {
        "version": meta["Version"],
        "requires-python": meta["Requires-Python"],
        "numpy": str(numpy[0].specifier) if numpy else None,
    }
    wanted_numpy = [Requirement(r) for r in project.get("dependencies", []) if Requirement(r).name == "numpy"]
    wanted = {
        "version": project["version"],
        "requires-python": project["requires-python"],
        "numpy": str(wanted_numpy[0].specifier) if wanted_numpy else None,
    }
    for key in wanted:
        if installed[key] != wanted[key]:
            raise StaleInstall(
                f"installed {dist} says {key} {installed[key]!r} but {pyproject.name} says {wanted[key]!r}: "
                "run `make install` (the site takes these from the installed package)"
            )
    import numpy as np

    built_python = ".".join(map(str, sys.version_info[:3]))
    return Install(installed["version"], installed["requires-python"], installed["numpy"], built_python, np.__version__)


def carries_line(src_uri: str) -> bool:
    return src_uri in PAGES or (src_uri.startswith(CHAPTER_PREFIX) and src_uri.endswith(".md"))
