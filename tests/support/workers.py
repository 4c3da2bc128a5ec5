"""What tests share when pytest-xdist runs them on several workers (make test).

Each worker is its own pytest session, so a session fixture runs once per
worker. ``once_for_all_workers`` makes an expensive one (the strict build of
the site, the wheel in a fresh venv) run once per test run instead, and
``start_builds`` starts those builds as soon as a worker has collected the
tests, in a process of their own, so that they overlap the tests before the
first that needs them. ``xdist_group`` says which tests must share a worker;
the root conftest.py marks them.

Run as a script (by ``start_builds``): ``workers.py <name> <module:function>
<directory> <path>...`` makes one build with the lock inherited from the
worker that started it.
"""

from __future__ import annotations

import fcntl
import functools
import importlib
import json
import os
import shutil
import subprocess
import sys
import traceback
from collections.abc import Callable, Iterable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent


def build_site(site: Path) -> str | None:
    """``mkdocs build --strict`` into ``site``; the failure's message, or None."""
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    return f"mkdocs build --strict failed:\n{result.stderr[-6000:]}" if result.returncode else None


#: The builds made once per run: (the session fixture that asks for it, its
#: name under the run's shared temporary directory, the ``module:function``
#: that makes it, importable from pytest's pythonpath).
BUILDS = [
    ("built_site", "site", "workers:build_site"),
    ("installed_wheel", "wheel", "wheel_venv:build_and_install"),
]


def once_for_all_workers(tmp_path_factory, name: str, make: Callable[[Path], str | None]) -> Path:
    """``make(directory)`` once per test run, however many pytest-xdist
    workers ask: the first builds under the run's shared temporary directory
    while the others wait on a lock, then all get the same directory. ``make``
    returns an error message (shown by every worker that asks) or None."""
    if "PYTEST_XDIST_WORKER" not in os.environ:
        directory = tmp_path_factory.mktemp(name)
        error = make(directory)
    else:
        shared = tmp_path_factory.getbasetemp().parent
        directory, record = shared / name, shared / f"{name}.json"
        # Waits for a build that start_builds began (its process holds the lock).
        with open(shared / f"{name}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not record.exists():  # nobody built it, or a build process died half-way
                _build(directory, record, make)
            error = json.loads(record.read_text())["error"]
    if error:
        pytest.fail(error, pytrace=False)
    return directory


def shared_build(tmp_path_factory, fixture: str) -> Path:
    """The directory of the build in ``BUILDS`` that ``fixture`` asks for,
    made once for all workers (``once_for_all_workers``)."""
    ((name, spec),) = [(name, spec) for asker, name, spec in BUILDS if asker == fixture]
    return once_for_all_workers(tmp_path_factory, name, _function(spec))


def _function(spec: str) -> Callable:
    """The function that ``"module:function"`` names."""
    module, function = spec.split(":")
    return getattr(importlib.import_module(module), function)


def _build(directory: Path, record: Path, make: Callable[[Path], str | None]) -> None:
    """``make(directory)`` afresh; its error (or an exception's traceback) in ``record``."""
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir()
    try:
        error = make(directory)
    except Exception:
        error = f"building {directory.name} raised:\n{traceback.format_exc()}"
    record.write_text(json.dumps({"error": error}))


_STARTED: list[subprocess.Popen] = []  # kept, so that none is collected while it runs


def start_builds(config: pytest.Config, items: Iterable[pytest.Item], builds=BUILDS) -> list[str]:
    """Under pytest-xdist, start each of ``builds`` that a collected item
    needs and no other worker has started, in a process of its own; return
    the names started here.

    Without this, a build starts when the first test that needs it asks
    (``once_for_all_workers``), and the other workers that ask meanwhile
    wait on its lock with their cores idle. The build's process inherits the
    lock and holds it until the build is recorded."""
    if "PYTEST_XDIST_WORKER" not in os.environ:
        return []
    needed = set().union(*(item.fixturenames for item in items))
    shared = config._tmp_path_factory.getbasetemp().parent  # the run's, as once_for_all_workers uses
    started = []
    for fixture, name, make in builds:
        if fixture not in needed:
            continue
        lock = open(shared / f"{name}.lock", "w")
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:  # another worker's build holds it
            lock.close()
            continue
        if (shared / f"{name}.json").exists():  # built already
            lock.close()
            continue
        paths = [str(path) for path in config.getini("pythonpath")]
        with open(shared / f"{name}.log", "w") as log:  # what it printed, should it die unrecorded
            _STARTED.append(
                subprocess.Popen(
                    [sys.executable, __file__, name, make, str(shared), *paths],
                    pass_fds=(lock.fileno(),),
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                )
            )
        lock.close()  # the build's process holds the lock now
        started.append(name)
    return started


@functools.cache
def widget_pages() -> dict[str, str]:
    """Widget name -> the page (as the sweep names it) that declares it."""
    import parts  # docs/hooks, on pytest's pythonpath

    return {name: page[:-3] + "/" for page, part in parts.load().items() for name in part.widgets}


def xdist_group(item: pytest.Item) -> str | None:
    """The group that must run on one worker with ``item``, or None."""
    if type(item).__module__.startswith("sybil"):
        return f"document:{item.path}"
    params = getattr(getattr(item, "callspec", None), "params", {})
    if "sweep" in item.fixturenames:
        if "path" in params:
            return f"page:{params['path']}"
        if "name" in params:  # a widget: the page that declares it
            return f"page:{widget_pages().get(params['name'], params['name'])}"
        return "page:*"
    definitions = getattr(item, "_fixtureinfo", None)
    for name in item.fixturenames:
        defs = definitions.name2fixturedefs.get(name) if definitions else None
        # Defined in the test module itself (a conftest's baseid is a folder).
        if defs and defs[-1].scope in ("module", "class") and defs[-1].baseid.split("::")[0].endswith(".py"):
            return f"module:{item.path.name}"
    return None


if __name__ == "__main__":
    build_name, spec, shared_dir, *pythonpath = sys.argv[1:]
    sys.path[:0] = pythonpath
    shared_path = Path(shared_dir)
    _build(shared_path / build_name, shared_path / f"{build_name}.json", _function(spec))
