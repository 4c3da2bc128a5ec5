"""make test runs on several pytest-xdist workers (tests/support/workers.py):
the tests that share state must still share a worker, and the site is built
once however many workers ask for it, starting as soon as the tests are
collected."""

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


BUILDS = """
import os, time

def make(directory):
    with open(os.environ["BUILDS"], "a") as log:
        log.write(directory.name + "\\n")
    if os.environ.get("PLANTED_RAISE"):
        raise RuntimeError("planted: the build raised")
    died = directory.parent / "died"
    if os.environ.get("PLANTED_DEATH") and not died.exists():  # the first build only
        died.touch()
        os._exit(3)
    time.sleep(0.5)  # long enough for the other workers to ask meanwhile
    (directory / "index.html").write_text("built")
    return os.environ.get("PLANTED_ERROR") or None
"""

CONFTEST = """
import os
import pytest
import builds
from workers import once_for_all_workers, start_builds

def pytest_collection_finish(session):
    if not os.environ.get("PLANTED_NO_EARLY_START"):
        start_builds(session.config, session.items, [("site", "site", "builds:make")])

@pytest.fixture(scope="session")
def site(tmp_path_factory):
    return once_for_all_workers(tmp_path_factory, "site", builds.make)
"""

TESTS = "".join(f"def test_{i}(site):\n    assert (site / 'index.html').read_text() == 'built'\n\n" for i in range(6))

# Runs first (file order, one worker) and asks for no build: it sees the
# build start only if the build started when the tests were collected.
FIRST = """
import os, time
from pathlib import Path

def test_the_build_started_before_any_test_asked():
    log, end = Path(os.environ["BUILDS"]), time.monotonic() + float(os.environ["WAIT_SECONDS"])
    while not log.exists() and time.monotonic() < end:
        time.sleep(0.05)
    assert log.exists(), "the build had not started when the tests began"
"""


def planted_tree(tmp_path: Path, monkeypatch, **env: str) -> Path:
    """The tree above in ``tmp_path``, with ``env`` set; returns the build log."""
    (tmp_path / "conftest.py").write_text(textwrap.dedent(CONFTEST))
    (tmp_path / "builds.py").write_text(textwrap.dedent(BUILDS))
    (tmp_path / "test_site.py").write_text(TESTS)
    monkeypatch.setenv("BUILDS", str(tmp_path / "builds.log"))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(SUPPORT), str(tmp_path)]))
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return tmp_path / "builds.log"


@pytest.mark.parametrize("workers", ["0", "3"])
def test_the_site_is_built_once_for_all_workers(tmp_path, monkeypatch, workers):
    builds = planted_tree(tmp_path, monkeypatch)
    result = run_pytest("-n", workers, cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "6 passed" in result.stdout
    assert builds.read_text().splitlines() == ["site" if workers != "0" else "site0"]


@pytest.mark.parametrize("planted", ["", "PLANTED_NO_EARLY_START"])
def test_a_build_starts_when_the_tests_are_collected(tmp_path, monkeypatch, planted):
    """start_builds begins the build before the first test that asks for it;
    planted: a conftest that does not call it, so the build waits for a test."""
    builds = planted_tree(
        tmp_path, monkeypatch, WAIT_SECONDS="2" if planted else "60", **({planted: "1"} if planted else {})
    )
    (tmp_path / "test_a_first.py").write_text(textwrap.dedent(FIRST))
    result = run_pytest("-n", "1", cwd=tmp_path)
    if planted:
        assert result.returncode == 1 and "the build had not started when the tests began" in result.stdout, (
            result.stdout
        )
    else:
        assert result.returncode == 0 and "7 passed" in result.stdout, result.stdout + result.stderr
    assert builds.read_text().splitlines() == ["site"]


def test_a_failed_build_fails_every_worker_with_its_message(tmp_path, monkeypatch):
    builds = planted_tree(tmp_path, monkeypatch, PLANTED_ERROR="mkdocs build --strict failed: planted")
    result = run_pytest("-n", "3", "-rE", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stdout.count("mkdocs build --strict failed: planted") >= 6, result.stdout
    assert "6 errors" in result.stdout, result.stdout
    assert len(builds.read_text().splitlines()) == 1  # built (and failed) once, not once per worker


def test_a_build_that_raises_fails_every_worker_with_the_traceback(tmp_path, monkeypatch):
    builds = planted_tree(tmp_path, monkeypatch, PLANTED_RAISE="1")
    result = run_pytest("-n", "3", "-rE", cwd=tmp_path)
    assert result.returncode == 1 and "6 errors" in result.stdout, result.stdout
    assert result.stdout.count("building site raised:") >= 6, result.stdout
    assert "RuntimeError: planted: the build raised" in result.stdout, result.stdout
    assert len(builds.read_text().splitlines()) == 1


def test_a_build_process_that_dies_is_made_again_by_the_test_that_asks(tmp_path, monkeypatch):
    """The background build exits without recording anything (killed, out of
    memory): the first test that asks builds afresh over what it left."""
    builds = planted_tree(tmp_path, monkeypatch, PLANTED_DEATH="1")
    result = run_pytest("-n", "3", cwd=tmp_path)
    assert result.returncode == 0 and "6 passed" in result.stdout, result.stdout + result.stderr
    assert builds.read_text().splitlines() == ["site", "site"]
