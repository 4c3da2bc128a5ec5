"""make test runs on several pytest-xdist workers (tests/support/workers.py):
the tests that share state must still share a worker, and the site is built
once however many workers ask for it."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SUPPORT = ROOT / "tests" / "support"


#: Plugins no test run here uses: loaded, they cost each process (the
#: controller and every worker) about a CPU-second (hypothesis's imports
#: hypothesis at collection; anyio's is off in pyproject.toml's addopts).
UNUSED_PLUGINS = ("-p", "no:hypothesispytest")


def run_pytest(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    if cwd != ROOT:  # a planted tree needs xdist only: start faster without the other plugins
        env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
        args = ("-p", "xdist", *args)
    else:  # the repository: its plugins as make test loads them, but for the unused ones
        args = (*UNUSED_PLUGINS, *args)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


@pytest.mark.parametrize("dist", ["loadgroup", "load"])
def test_a_documents_examples_stay_on_one_worker(dist):
    """training.py's docstring examples build on each other (sybil runs a
    document in one namespace). Grouped, they pass on two workers; spread
    (the planted fault: --dist load, or an xdist that ignores the groups, as
    with pytest 9.2, pytest-dev/pytest-xdist#1386) later examples fail."""
    result = run_pytest("-n", "2", "--dist", dist, "src/qkv/training.py")
    output = result.stdout + result.stderr
    if dist == "loadgroup":
        assert result.returncode == 0, (
            "the docstring examples of one document ran on different workers; check that "
            "pytest-xdist's --dist loadgroup still groups (pytest-dev/pytest-xdist#1386):\n" + output[-3000:]
        )
    else:
        assert result.returncode == 1 and "NameError: name '" in output, output[-3000:]


CONFTEST = """
import os, time
from pathlib import Path
import pytest
from workers import once_for_all_workers

def make(directory):
    with open(os.environ["BUILDS"], "a") as log:
        log.write(directory.name + "\\n")
    time.sleep(0.5)  # long enough for the other workers to ask meanwhile
    (directory / "index.html").write_text("built")
    return os.environ.get("PLANTED_ERROR") or None

@pytest.fixture(scope="session")
def site(tmp_path_factory):
    return once_for_all_workers(tmp_path_factory, "site", make)
"""

TESTS = "".join(f"def test_{i}(site):\n    assert (site / 'index.html').read_text() == 'built'\n\n" for i in range(6))


@pytest.mark.parametrize("workers", ["0", "3"])
def test_the_site_is_built_once_for_all_workers(tmp_path, monkeypatch, workers):
    (tmp_path / "conftest.py").write_text(textwrap.dedent(CONFTEST))
    (tmp_path / "test_site.py").write_text(TESTS)
    builds = tmp_path / "builds.log"
    monkeypatch.setenv("BUILDS", str(builds))
    monkeypatch.setenv("PYTHONPATH", str(SUPPORT))
    result = run_pytest("-n", workers, cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "6 passed" in result.stdout
    assert builds.read_text().splitlines() == ["site" if workers != "0" else "site0"]


def test_a_failed_build_fails_every_worker_with_its_message(tmp_path, monkeypatch):
    (tmp_path / "conftest.py").write_text(textwrap.dedent(CONFTEST))
    (tmp_path / "test_site.py").write_text(TESTS)
    builds = tmp_path / "builds.log"
    monkeypatch.setenv("BUILDS", str(builds))
    monkeypatch.setenv("PYTHONPATH", str(SUPPORT))
    monkeypatch.setenv("PLANTED_ERROR", "mkdocs build --strict failed: planted")
    result = run_pytest("-n", "3", "-rE", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stdout.count("mkdocs build --strict failed: planted") >= 6, result.stdout
    assert "6 errors" in result.stdout, result.stdout
    assert len(builds.read_text().splitlines()) == 1  # built (and failed) once, not once per worker
