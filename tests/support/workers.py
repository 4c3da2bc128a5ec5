"""What tests share when pytest-xdist runs them on several workers (make test).

Each worker is its own pytest session, so a session fixture runs once per
worker. ``once_for_all_workers`` makes an expensive one (the strict build of
the site) run once per test run instead. ``xdist_group`` says which tests must share a worker; the root conftest.py
marks them.
"""

from __future__ import annotations

import fcntl
import functools
import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest


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
        with open(shared / f"{name}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if record.exists():
                error = json.loads(record.read_text())["error"]
            else:
                directory.mkdir()
                error = make(directory)
                record.write_text(json.dumps({"error": error}))
    if error:
        pytest.fail(error, pytrace=False)
    return directory


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
