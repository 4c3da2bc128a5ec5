"""Tests that need something pip cannot install (a browser, PyTorch, npm tools)."""

from __future__ import annotations

import os

import pytest

IN_CI = os.environ.get("CI", "").lower() == "true"


def require(condition: bool, reason: str) -> None:
    """Skip with ``reason`` outside CI; fail with it under CI=true."""
    if condition:
        return
    if IN_CI:
        pytest.fail(f"required in CI: {reason}", pytrace=False)
    pytest.skip(reason)
