"""Lint and format: ``ruff check`` and ``ruff format --check`` over the whole
tree, with pyproject.toml's [tool.ruff] rules. Each finding is one
``file:line:col: code message`` line; the fix is ``ruff check --fix`` or
``ruff format`` (both from the venv: ``.venv/bin/ruff``)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from needs import available, require

ROOT = Path(__file__).resolve().parent.parent


def ruff(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    require(available("ruff"), "ruff is not installed: `pip install -e '.[test]'` installs it")
    return subprocess.run([sys.executable, "-m", "ruff", *args], cwd=cwd, capture_output=True, text=True, timeout=120)


def lint_findings(*paths: str, cwd: Path = ROOT) -> list[str]:
    """``file:line:col: code message`` for each lint finding, [] when clean."""
    result = ruff("check", "--output-format", "concise", "--no-cache", *paths, cwd=cwd)
    if result.returncode not in (0, 1):
        raise RuntimeError(f"ruff check exited {result.returncode}:\n{result.stdout}{result.stderr}")
    return [line for line in result.stdout.splitlines() if line.count(":") >= 3 and not line.startswith("Found")]


def unformatted(*paths: str, cwd: Path = ROOT) -> list[str]:
    """``file:line:col: unformatted: ...`` for each file ``ruff format`` would change."""
    result = ruff("format", "--check", "--no-cache", "--output-format", "concise", *paths, cwd=cwd)
    if result.returncode not in (0, 1):
        raise RuntimeError(f"ruff format exited {result.returncode}:\n{result.stdout}{result.stderr}")
    return [line for line in result.stdout.splitlines() if ": unformatted:" in line]


def test_the_tree_passes_ruff_check():
    found = lint_findings(".")
    assert not found, "ruff check (fix: .venv/bin/ruff check --fix, or by hand):\n" + "\n".join(found)


def test_the_tree_is_formatted():
    found = unformatted(".")
    assert not found, "not formatted (fix: .venv/bin/ruff format <file>):\n" + "\n".join(found)


def planted_tree(tmp_path: Path, source: str) -> Path:
    """A tree with the project's ruff settings and one module holding ``source``."""
    (tmp_path / "pyproject.toml").write_text((ROOT / "pyproject.toml").read_text(encoding="utf-8"), encoding="utf-8")
    (tmp_path / "module.py").write_text(source, encoding="utf-8")
    return tmp_path


def test_a_planted_unused_import_is_reported_with_file_and_line(tmp_path):
    tree = planted_tree(tmp_path, '"""A module."""\n\nimport os\n\nVALUE = 1\n')
    assert lint_findings("module.py", cwd=tree) == ["module.py:3:8: F401 [*] `os` imported but unused"]


def test_a_planted_bad_format_is_reported(tmp_path):
    tree = planted_tree(tmp_path, '"""A module."""\n\nVALUE = {"a":1}\n')
    assert unformatted("module.py", cwd=tree) == ["module.py:3:14: unformatted: File would be reformatted"]
