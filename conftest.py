"""Root pytest configuration: sybil runs the docstrings in src/ and every
Python block in docs/ in the same pytest run as the unit tests.

The docs side lives in ``tests/support/docs_pipeline.py`` so that its behaviour can
be tested on planted failures (see ``tests/test_docs_pipeline.py``).
"""

from doctest import ELLIPSIS, NORMALIZE_WHITESPACE
from pathlib import Path

from sybil import Sybil
from sybil.parsers.rest import DocTestParser

from docs_pipeline import docs_sybil  # tests/support, on pytest's pythonpath

ROOT = Path(__file__).parent

src_docstrings = Sybil(
    parsers=[DocTestParser(optionflags=NORMALIZE_WHITESPACE | ELLIPSIS)],
    path=str(ROOT / "src"),
    patterns=["*.py"],
    name="docstrings",
)

pytest_collect_file = (docs_sybil(str(ROOT / "docs")) + src_docstrings).pytest()
