"""Every code block runs on its own, as a reader would copy it.

Sybil runs a page's blocks in one shared namespace, like notebook cells; a
reader copies one block into a fresh interpreter. Here each Python block runs
in a fresh ``python`` process with nothing before it, except blocks whose
title says ``(continued)``: those run after the blocks they continue, and the
page shows that title. What the process prints must equal the block's output.
"""

from __future__ import annotations

import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from docs_pipeline import normalise_output as normalise
from page_blocks import Block, output_after, split_page

ROOT = Path(__file__).resolve().parent.parent
PAGES = sorted((ROOT / "docs").rglob("*.md"))


def programs(text: str) -> list[tuple[Block, str, str | None]]:
    """(block, program to run, expected output) for every code block."""
    blocks, _ = split_page(text)
    result = []
    chain: list[str] = []
    printed: list[str] = []  # what the chain prints: each block's output, in order
    for index, block in enumerate(blocks):
        if not block.is_python or block.is_doctest:
            continue
        if not block.continues:
            chain, printed = [], []
        output = output_after(blocks, index, text)
        chain.append(block.text)
        if output is not None:
            printed.append(normalise(output.text))
        result.append((block, "\n\n".join(chain), "\n".join(printed) if printed else None))
    return result


def run_alone(program: str, python: str = sys.executable, pythonpath: str | None = None) -> subprocess.CompletedProcess:
    """Run ``program`` with ``python`` (tests/test_wheel.py passes a fresh venv's)."""
    env = {"PATH": "/usr/bin:/bin", "MPLBACKEND": "Agg", "PYTHONHASHSEED": "0"}
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    return subprocess.run(
        [python, "-c", program],
        capture_output=True,
        text=True,
        cwd="/",  # not the repository: qkv must come from the installed package
        env=env,
        timeout=120,
    )


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_each_block_runs_alone_in_a_fresh_interpreter(page):
    text = page.read_text(encoding="utf-8")
    cases = programs(text)
    if not cases:
        pytest.skip("no code blocks on this page")
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(lambda case: run_alone(case[1]), cases))
    failures = []
    for (block, _, expected), result in zip(cases, results):
        where = f"{page.relative_to(ROOT)}:{block.start}"
        if result.returncode != 0:
            failures.append(f"{where}: fails when run alone:\n{result.stderr[-1500:]}")
        elif expected is not None and normalise(result.stdout) != normalise(expected):
            failures.append(f"{where}: prints something else when run alone:\n{result.stdout[-1500:]}")
    assert not failures, "\n\n".join(failures)


def test_a_block_that_needs_its_predecessor_is_caught():
    page = "```python\nx = 2\n```\n\n```python\nprint(x)\n```\n\n```output\n2\n```\n"
    (_, first, _), (_, second, expected) = programs(page)
    assert run_alone(first).returncode == 0
    assert run_alone(second).returncode != 0  # NameError: x was defined above


def test_a_continued_block_runs_with_its_predecessors():
    page = (
        "```python\nx = 2\n```\n\n"
        '```python title="doubling (continued)"\nprint(x * 2)\n```\n\n```output\n4\n```\n'
    )
    (_, _, _), (block, program, expected) = programs(page)
    assert block.continues
    result = run_alone(program)
    assert normalise(result.stdout) == expected == "4"


def test_a_continued_block_expects_its_predecessors_output_too():
    page = (
        "```python\nprint(1)\n```\n\n```output\n1\n```\n\n"
        '```python title="(continued)"\nprint(2)\n```\n\n```output\n2\n```\n'
    )
    (_, _, _), (_, program, expected) = programs(page)
    assert normalise(run_alone(program).stdout) == expected == "1\n2"
