"""Check one page in seconds: ``make check PAGE=docs/chapters/<name>.md``.

Runs what ``make test`` runs for that page, and nothing else:

* the page's rules and blocks (the docs pipeline: fence languages, output
  placement, skips, each block run in order and compared with its output),
* copy-isolation (each block alone in a fresh interpreter),
* prose numbers,
* the page's parts (figures, widgets, values) and its companion module
  (a mistake there at the companion's line, no traceback; ruff),
* links and ``#anchors`` to any page, resolved against the source pages'
  headings without a build, and spelling (codespell) of the page and its
  companion (tests/support/page_checks.py),
* the chapter shape and the notebook's cell count (for pages under
  ``docs/chapters/``).

Each problem is printed as ``<page>:<line>: <what is wrong and how to fix
it>`` (details, such as a diff, on the lines under it); then the blocks the
page skips, with their reasons; then one line naming what only ``make test``
checks. Exit status 0 when nothing is wrong, 1 otherwise, 2 for a bad PAGE.
"""

from __future__ import annotations

import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
for extra in (HERE, ROOT / "docs" / "hooks"):  # what pytest's `pythonpath` gives the tests
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

import pytest  # noqa: E402 - after the path setup above
from sybil import Document  # noqa: E402
from sybil.example import SybilFailure  # noqa: E402

from chapter_shape import chapter_problems  # noqa: E402
from docs_pipeline import PageParser, _close_page, copy_isolation, relative  # noqa: E402
from page_blocks import read_page  # noqa: E402
from page_checks import (  # noqa: E402
    NOT_CHECKED,
    link_problems,
    notebook_problems,
    parts_problems,
    ruff_problems,
    spelling_problems,
)
from prose_numbers import unchecked_numbers  # noqa: E402


def run_blocks(page: Path) -> tuple[list[str], list[str], int, set[int]]:
    """(problems, skipped, examples run, lines of the blocks that failed) of the page's sybil run."""
    document = Document.parse(str(page), PageParser())
    problems, skipped, ran, failed = [], [], 0, set()
    try:
        for example in document.examples():
            ran += 1
            try:
                example.evaluate()
            except SybilFailure as failure:
                problems.append(str(failure.result))
                failed.add(example.line)
            except pytest.skip.Exception as skip:
                skipped.append(str(skip.msg))
            except pytest.fail.Exception as failed:
                problems.append(str(failed.msg))
    finally:
        _close_page(document.namespace)
    return problems, skipped, ran, failed


def _line_of(problem: str, where: str) -> int:
    head = problem.split("\n", 1)[0]
    if head.startswith(where + ":"):
        number = head[len(where) + 1 :].split(":", 1)[0]
        if number.isdigit():
            return int(number)
    return 0


def check(page: Path) -> int:
    started = time.monotonic()
    where = relative(str(page))
    chapter = page.resolve().parent == (ROOT / "docs" / "chapters").resolve() or "chapters" in page.parts
    companion = page.with_suffix(".py")
    # The companion module first: what it declares is needed by the checks of prose and notebook.
    part_problems = parts_problems(page, where)
    with ThreadPoolExecutor(max_workers=4) as pool:  # the work is in child processes
        blocks = pool.submit(run_blocks, page)
        alone = pool.submit(copy_isolation, page, where)
        links = pool.submit(link_problems, page, where)
        tools = pool.submit(
            lambda: (
                spelling_problems(*[p for p in (page, companion) if p.is_file()])
                + (ruff_problems(companion) if companion.is_file() else [])
            )
        )
        if part_problems:
            numbers = notebook = None  # both read the parts, which did not load
        else:
            numbers = pool.submit(unchecked_numbers, page, where, True)
            notebook = pool.submit(notebook_problems, page, where) if chapter else None
        block_problems, skipped, ran, failed = blocks.result()
        alone_failures, _, missing = alone.result()
    # A block that already failed in the page's run (or continues one that did) is not reported twice.
    info = read_page(page.read_text(encoding="utf-8"))
    chains = {
        block.start: {info.blocks[i].start for i in info.chain(index)}
        for index, block in enumerate(info.blocks)
        if block.is_python and not block.is_doctest
    }
    alone_failures = [f for f in alone_failures if not chains.get(_line_of(f, where), set()) & failed]
    problems = block_problems + alone_failures + part_problems + links.result()
    problems += numbers.result() if numbers else []
    problems += notebook.result() if notebook else []
    if chapter:
        problems += chapter_problems(page, where)
    # The page's problems by line, then the companion module's (parts, ruff) and spelling.
    problems = sorted(problems + tools.result(), key=lambda p: (not p.startswith(where + ":"), _line_of(p, where)))
    if missing and not any(m in "\n".join(skipped) for m in missing):
        skipped += missing
    for problem in problems:
        print(problem)
    for skip in skipped:
        print(f"skipped: {skip}")
    elapsed = time.monotonic() - started
    verdict = f"{len(problems)} problem(s)" if problems else "no problems"
    print(f"make check: {verdict} in {where} ({ran} blocks and rules run, {len(skipped)} skipped) in {elapsed:.1f} s")
    print(f"make check: {NOT_CHECKED}")
    return 1 if problems else 0


def main(argv: list[str]) -> int:
    if len(argv) != 1 or not argv[0].endswith(".md") or not Path(argv[0]).is_file():
        print("usage: make check PAGE=docs/chapters/<name>.md (an existing Markdown page)", file=sys.stderr)
        return 2
    return check(Path(argv[0]))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
