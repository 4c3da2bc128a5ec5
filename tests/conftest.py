"""Fixtures shared by the tests: one strict build of the site, two local
servers (at the root, and under /qkv/ as published), one real browser (Debian
chromium driven by Playwright), one sweep that loads each page once per
browser configuration (tests/support/site_sweep.py), and one wheel installed
in a fresh venv (tests/support/wheel_venv.py)."""

from __future__ import annotations

import http.server
import shutil
from pathlib import Path

import pytest

from needs import require
from site_sweep import CHROMIUM, CHROMIUM_ARGS, serve
from wheel_venv import InstalledWheel, WheelInterpreter
from workers import shared_build, start_builds, widget_pages


def pytest_collection_finish(session):
    """Start the builds the collected tests need (the site, the wheel's venv)
    now, under pytest-xdist, so that they overlap the tests before the first
    that asks (tests/support/workers.py)."""
    start_builds(session.config, session.items)


@pytest.fixture(scope="session")
def built_site(tmp_path_factory) -> Path:
    """Build the site once with ``mkdocs build --strict`` (once for all
    workers under pytest-xdist); fail on any warning."""
    return shared_build(tmp_path_factory, "built_site")


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 - signature fixed by the base class
        pass


@pytest.fixture(scope="session")
def site_url(built_site):
    """Serve the built site on 127.0.0.1 (a free port) for the session."""
    yield from serve(_QuietHandler, built_site, "/")


@pytest.fixture(scope="session")
def sub_path_url(built_site):
    """http://127.0.0.1:<port>/qkv/ serving the built site as GitHub Pages
    does (a project site under /<repo>/, 404.html with 404 for anything missing)."""
    from site_sweep import SUB_PATH, SubPathHandler

    yield from serve(SubPathHandler, built_site, SUB_PATH)


@pytest.fixture(scope="session")
def sweep(browser, sub_path_url, built_site):
    """Each page of the published site loaded once per configuration, every
    per-page check run on that load: ``sweep.findings(path, config)``."""
    from site_sweep import Sweep

    return Sweep(browser, sub_path_url, built_site, widget_pages())


@pytest.fixture(scope="session")
def browser():
    """Debian chromium through Playwright. Missing: skip, or fail under CI=true."""
    require(
        Path(CHROMIUM).exists() or shutil.which(CHROMIUM) is not None,
        f"no Chromium at {CHROMIUM}; install it with `apt-get install chromium` "
        "(or set QKV_CHROMIUM to a Chromium binary)",
    )
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture(scope="session")
def postgres():
    """A throw-away PostgreSQL for the session (tests/support/postgres_server.py).

    Missing PostgreSQL or psycopg: skip with an install hint, or fail under CI=true.
    """
    import importlib.util

    from postgres_server import INSTALL_HINT, find_bin_dir, running_postgres

    require(find_bin_dir() is not None, INSTALL_HINT)
    require(
        importlib.util.find_spec("psycopg") is not None,
        "psycopg is not installed: `pip install -e '.[test]'` installs psycopg[binary]",
    )
    with running_postgres() as server:
        yield server


@pytest.fixture(scope="session")
def installed_wheel(tmp_path_factory) -> InstalledWheel:
    """The release dry run's wheel, installed with nothing but its declared
    dependencies in a fresh venv: made once for all workers under
    pytest-xdist, so that the tests using it can run on any of them."""
    return InstalledWheel(shared_build(tmp_path_factory, "installed_wheel"))


@pytest.fixture(scope="session")
def wheel_interpreter(installed_wheel, tmp_path_factory):
    """Runs documentation blocks alone from the installed wheel
    (``docs_pipeline.copy_isolation``); its package links and zygotes are
    this worker's, shared by the pages it runs."""
    interpreter = WheelInterpreter(installed_wheel.venv, tmp_path_factory.mktemp("wheel-overlays"))
    yield interpreter
    interpreter.close()
