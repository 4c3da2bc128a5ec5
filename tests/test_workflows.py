"""The GitHub workflows, linted offline by actionlint and zizmor."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
WORKFLOWS = ROOT / ".github" / "workflows"


def tool(name: str) -> str:
    found = shutil.which(name, path=str(Path(sys.executable).parent)) or shutil.which(name)
    if found is None:
        pytest.fail(f"{name} is not installed; run `make install` (it is in the test extra)")
    return found


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(args, cwd=ROOT, capture_output=True, text=True)


def test_actionlint_finds_nothing():
    result = run(tool("actionlint"), "-no-color")
    assert result.returncode == 0, result.stdout + result.stderr


def test_zizmor_finds_nothing():
    result = run(tool("zizmor"), "--offline", "--no-progress", str(WORKFLOWS))
    assert result.returncode == 0, result.stdout + result.stderr


def test_never_pull_request_target():
    for workflow in WORKFLOWS.glob("*.y*ml"):
        assert "pull_request_target" not in workflow.read_text(), workflow


def test_lint_catches_a_planted_mistake(tmp_path):
    # A lint that cannot fail proves nothing: plant an unpinned action and
    # an undefined expression, and expect both tools to object.
    planted = tmp_path / ".github" / "workflows"
    planted.mkdir(parents=True)
    (planted / "bad.yml").write_text(
        "on: push\njobs:\n  x:\n    runs-on: ubuntu-24.04\n    steps:\n"
        "      - uses: actions/checkout@v5\n      - run: echo ${{ github.nope }}\n"
    )
    lint = run(tool("actionlint"), "-no-color", str(planted / "bad.yml"))
    assert lint.returncode != 0 and "nope" in lint.stdout
    audit = run(tool("zizmor"), "--offline", "--no-progress", str(planted))
    assert audit.returncode != 0 and "unpinned" in audit.stdout
