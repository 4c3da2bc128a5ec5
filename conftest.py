"""Root pytest configuration: sybil runs the docstrings in src/ and the
Python blocks in docs/ in the same pytest run as the unit tests (a chapter's
code blocks run in tests/test_copy_isolation.py and tests/test_notebooks.py
instead, with what they print compared with the page there).

The docs side lives in ``tests/support/docs_pipeline.py`` so that its behaviour can
be tested on planted failures (see ``tests/test_docs_pipeline.py``).
"""

from doctest import ELLIPSIS, NORMALIZE_WHITESPACE
from pathlib import Path

import pytest
from sybil import Sybil
from sybil.parsers.rest import DocTestParser

from docs_pipeline import chapter_code_runs_elsewhere, docs_sybil  # tests/support, on pytest's pythonpath
from workers import xdist_group

ROOT = Path(__file__).parent

src_docstrings = Sybil(
    parsers=[DocTestParser(optionflags=NORMALIZE_WHITESPACE | ELLIPSIS)],
    path=str(ROOT / "src"),
    patterns=["*.py"],
    name="docstrings",
)

# A chapter's code blocks run in tests/test_copy_isolation.py and
# tests/test_notebooks.py, with their output compared there (docs_pipeline.chapter_code_runs_elsewhere).
pytest_collect_file = (docs_sybil(str(ROOT / "docs"), chapter_code_runs_elsewhere) + src_docstrings).pytest()


# make test runs on every core (pytest-xdist, --dist loadgroup); tests that
# share state are marked to run on one worker (tests/support/workers.py).
# Without xdist the marks do nothing.


@pytest.hookimpl(tryfirst=True)  # before xdist (and -m) read the marks
def pytest_collection_modifyitems(config, items):
    for item in items:
        if (group := xdist_group(item)) is not None:
            item.add_marker(pytest.mark.xdist_group(group))
        # What runs from the built wheel is marked so wherever it is
        # (tests/test_copy_isolation.py, tests/test_wheel.py).
        if "installed_wheel" in item.fixturenames:
            item.add_marker(pytest.mark.wheel)
