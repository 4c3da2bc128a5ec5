"""Tests and doc blocks that need something pip's test extra does not install
(a browser, PyTorch and the reference implementations).

One rule, one place: what is missing skips with a message saying how to get
it, and fails instead under ``CI=true``. The docs pipeline (sybil), the
copy-isolation test and the notebook test all ask :func:`missing_for` about a
block's source and hand its answer to :func:`require`.
"""

from __future__ import annotations

import ast
import importlib.util
import os

import pytest

IN_CI = os.environ.get("CI", "").lower() == "true"

_REFERENCES = "transformers==5.24.0 rotary-embedding-torch==0.9.1 einops==0.8.2"
#: Modules a block or test may import that ``make install`` does not install,
#: and the one message that says how to get each.
OPTIONAL = {
    "torch": (
        "needs PyTorch, which is not installed here; to run it locally: "
        "`.venv/bin/pip install -c constraints.txt torch==2.13.0` "
        "(.ci/run installs it, and with CI=true a missing PyTorch fails instead of skipping)"
    ),
    **{
        module: (
            f"needs the reference implementations ({_REFERENCES}), which are not installed here; "
            f"to run it locally: `.venv/bin/pip install -c constraints.txt {_REFERENCES}` "
            "(.ci/run installs them, and with CI=true a missing one fails instead of skipping)"
        )
        for module in ("transformers", "rotary_embedding_torch", "einops")
    },
}


def require(condition: bool, reason: str) -> None:
    """Skip with ``reason`` outside CI; fail with it under CI=true."""
    if condition:
        return
    if IN_CI or os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"required in CI: {reason}", pytrace=False)
    # Reported at the test (or doc block) that needed it, not at this line.
    raise pytest.skip.Exception(reason, _use_item_location=True)


def available(module: str) -> bool:
    """Can ``module`` be imported here (without importing it)?"""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def imported_modules(source: str) -> list[str]:
    """Top-level names of the modules ``source`` imports (absolute imports only)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [alias.name.split(".")[0] for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.append(node.module.split(".")[0])
    return list(dict.fromkeys(names))


def missing_for(source: str) -> str | None:
    """The message for the first optional module ``source`` imports that is missing, or None."""
    for module in imported_modules(source):
        if module in OPTIONAL and not available(module):
            return OPTIONAL[module]
    return None


def require_modules(*modules: str) -> None:
    """For a test module or fixture: skip (fail in CI) unless every module is importable."""
    for module in modules:
        require(available(module), OPTIONAL.get(module, f"needs {module}, which is not installed"))


#: What a page's block may import, beyond the standard library: what ``make
#: install`` installs for the blocks (pyproject.toml's extras) and OPTIONAL.
BLOCK_PACKAGES = ("numpy", "qkv", "matplotlib", "duckdb", "psycopg")


def import_hint(error: str) -> str:
    """For a block that raised ``error``: if a module was not found, which
    packages a block may import and how to add one; else ""."""
    if not error.startswith("ModuleNotFoundError"):
        return ""
    return (
        "; a block may import the standard library, "
        + ", ".join(BLOCK_PACKAGES)
        + " and, where installed, "
        + ", ".join(OPTIONAL)
        + " (tests/support/needs.py). To use another package: add it to the test extra in pyproject.toml and "
        "run `make lock`; if pip cannot install it everywhere, add it to OPTIONAL in tests/support/needs.py and "
        "install it in .ci/run"
    )
