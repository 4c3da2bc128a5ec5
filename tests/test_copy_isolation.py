"""Every code block runs on its own, as a reader would copy it.

Sybil runs a page's blocks in one shared namespace, like notebook cells; a
reader copies one block into a fresh interpreter. Here each Python block runs
in a fresh ``python`` process with nothing before it, except blocks whose
title says ``(continued)``: those run after the blocks they continue, and the
page shows that title. What the process prints must equal the block's output.
Blocks the page skips (``<!-- skip: next <reason> -->``) are not run; blocks
that need a missing optional module (PyTorch) skip with needs.py's message,
and fail under CI=true. The work is in ``docs_pipeline.copy_isolation``,
which ``make check`` runs too.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import needs
from docs_pipeline import AloneRunner, copy_isolation, isolated_programs, run_alone
from docs_pipeline import normalise_output as normalise
from page_blocks import read_page

ROOT = Path(__file__).resolve().parent.parent
PAGES = sorted((ROOT / "docs").rglob("*.md"))


def check_page_alone(page: Path, where: str) -> None:
    """Fail with every block of ``page`` that does not run alone; then skip (or,
    under CI=true, fail) if a block needed a missing module."""
    failures, _skipped, missing = copy_isolation(page, where)
    assert not failures, "\n\n".join(failures)
    needs.require(not missing, "\n".join(missing))


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_each_block_runs_alone_in_a_fresh_interpreter(page):
    if not isolated_programs(read_page(page.read_text(encoding="utf-8"))):
        pytest.skip("no code blocks on this page")
    check_page_alone(page, str(page.relative_to(ROOT)))


def programs(text: str) -> list[tuple[str, str | None]]:
    return [(program, expected) for _, program, expected in isolated_programs(read_page(text))]


def test_a_block_that_needs_its_predecessor_is_caught():
    page = "```python\nx = 2\n```\n\n```python\nprint(x)\n```\n\n```output\n2\n```\n"
    (first, _), (second, _) = programs(page)
    assert run_alone(first).returncode == 0
    assert run_alone(second).returncode != 0  # NameError: x was defined above


def test_a_continued_block_runs_with_its_predecessors():
    page = '```python\nx = 2\n```\n\n```python title="doubling (continued)"\nprint(x * 2)\n```\n\n```output\n4\n```\n'
    _, (program, expected) = programs(page)
    assert normalise(run_alone(program).stdout) == expected == "4"


def test_a_continued_block_expects_its_predecessors_output_too():
    page = (
        "```python\nprint(1)\n```\n\n```output\n1\n```\n\n"
        '```python title="(continued)"\nprint(2)\n```\n\n```output\n2\n```\n'
    )
    _, (program, expected) = programs(page)
    assert normalise(run_alone(program).stdout) == expected == "1\n2"


def test_failures_and_skips_are_named_with_file_and_line(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(
        "# t\n\n```python\nx = 2\n```\n\n```python\nprint(x)\n```\n\n```output\n2\n```\n\n"
        "<!-- skip: next needs a GPU -->\n\n```python\nprint(3)\n```\n\n```output\n4\n```\n\n"
        '```python title="(continued)"\nprint(5)\n```\n\n```output\n5\n```\n'
    )
    failures, skipped, missing = copy_isolation(page, "docs/page.md")
    assert [f.split("\n")[0] for f in failures] == [
        "docs/page.md:7: fails when run alone in a fresh interpreter (exit status 1); give it its own "
        "imports and data, or title it '(continued)':"
    ]
    assert "NameError: name 'x' is not defined" in failures[0]
    assert skipped == [
        "docs/page.md:17: skipped by the page (line 15): needs a GPU",
        "docs/page.md:25: skipped by the page (line 15): needs a GPU",  # continues the skipped block
    ]
    assert missing == []


PROGRAMS = [
    "import numpy as np\nprint(np.arange(3).tolist())",
    "print(x)",  # nothing from the zygote leaks into the namespace
    "import sys\nprint(1)\nsys.exit(3)",
    "import sys\nsys.exit('stopped')",
    "import os\nprint('lost', end='')\nos._exit(0)",
    "import sys\nprint(__name__, sys.argv, [k for k in dir() if not k.startswith('__')])",
    "import atexit\natexit.register(print, 'at exit')",
    "import sys\nprint(sys.path)",  # "" first, as python -c has it: not tests/support, where fork_runner.py is
]


@pytest.mark.parametrize("program", PROGRAMS)
def test_the_fast_runner_behaves_as_python_c(program):
    runner = AloneRunner()
    try:
        assert runner.worker is not None  # the zygote started; otherwise this compares run_alone with itself
        fast = runner.run(program)
    finally:
        runner.close()
    slow = run_alone(program)
    assert (fast.returncode, fast.stdout) == (slow.returncode, slow.stdout)
    assert fast.stderr.splitlines()[-1:] == slow.stderr.splitlines()[-1:]


def test_a_block_that_loops_is_stopped_when_run_alone(tmp_path, monkeypatch):
    monkeypatch.setenv("QKV_BLOCK_TIMEOUT", "2")
    page = tmp_path / "page.md"
    page.write_text("# t\n\n```python\nwhile True:\n    pass\n```\n")
    failures, _, _ = copy_isolation(page, "docs/page.md")
    assert failures == ["docs/page.md:3: ran longer than 2 s when run alone (QKV_BLOCK_TIMEOUT)"]


def test_a_runner_preloads_modules_and_runs_programs_afresh_if_one_cannot_be_imported():
    program = "import sys\nprint('wave' in sys.modules)"  # wave: a module nothing here imports
    preloaded = AloneRunner(preload=["wave"])
    failed = AloneRunner(preload=["wave", "no_such_module"])
    try:
        assert preloaded.worker is not None
        assert preloaded.run(program).stdout == "True\n"
        assert failed.worker is None  # no zygote: each program in a fresh python -c
        assert failed.run(program).stdout == "False\n"
    finally:
        preloaded.close()
        failed.close()
