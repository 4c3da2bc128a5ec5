"""``make check PAGE=...`` (tests/support/check_page.py) on a copy of a chapter
with four planted faults: a wrong output line, a wrong output line inside a
collapsed Deeper box, a prose number that no output shows, a quiz of six
questions. Each is reported as ``page:line: what to fix``."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import story  # docs/hooks, on pytest's pythonpath
from chapter_shape import quiz
from page_blocks import read_page

ROOT = Path(__file__).resolve().parent.parent
CHECK = ROOT / "tests" / "support" / "check_page.py"
PLANTED_NUMBER = "0.123457"


#: The chapter the faults are planted in (the check runs each block twice):
#: of the chapters with a companion module, whose parts and {{ values }} the
#: check reads too, the one whose blocks run fastest (2.6 CPU-s for the whole
#: check; scale.md, the chapter with the fewest blocks, takes 7: tracemalloc
#: and a 1000-step loop).
PLANTED_CHAPTER = ROOT / "docs" / "chapters" / "attention-sql.md"


def run_check(cwd: Path, page: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run(
        [sys.executable, str(CHECK), page], cwd=cwd, env=env, capture_output=True, text=True, timeout=900
    )


def plant_faults(text: str) -> tuple[str, dict[str, str]]:
    """The chapter with four faults, and the start of the message each must get."""
    page = read_page(text)
    lines = text.splitlines()
    # 1. A wrong output line: the first line of the first output block gets words the code does
    #    not print (its numbers stay, so no prose number loses its check).
    index = next(i for i, b in enumerate(page.blocks) if b.is_python and page.output_after(i) is not None)
    output = page.output_after(index)
    wrong_line = output.start + 1
    lines[wrong_line - 1] += " (planted)"
    # 1b. The same inside the first collapsed Deeper box that holds a block with an output.
    deeper = [box for box in story.boxes(text) if box.is_deeper]
    boxed = [
        i
        for i, b in enumerate(page.blocks)
        if b.is_python and page.output_after(i) is not None and any(x.start < b.start <= x.end for x in deeper)
    ]
    assert boxed, f"{PLANTED_CHAPTER.name} has no Deeper box with a block and its output to plant a fault in"
    boxed_output = page.output_after(boxed[0])
    boxed_wrong_line = boxed_output.start + 1
    lines[boxed_wrong_line - 1] += " (planted)"
    # 2. A number in prose that no output shows, on its own line after "## The idea".
    idea = next(n for n, line in enumerate(lines, 1) if line.startswith("## The idea"))
    lines.insert(idea, f"\nThe weight is {PLANTED_NUMBER} here.")
    number_line = idea + 2
    # 3. A quiz of six questions: drop the questions after the sixth.
    text = "\n".join(lines) + "\n"
    questions = quiz(text)
    assert len(questions) >= 7
    divs = list(re.finditer(r'<div class="quiz" markdown>.*?</div>\n', text, re.DOTALL))
    for div in reversed(divs[6:]):
        text = text[: div.start()] + text[div.end() :]
    sixth = quiz(text)[-1]["line"]
    block_line = page.blocks[index].start + (2 if page.blocks[index].start > idea else 0)
    wrong_line += 2 if wrong_line > idea else 0  # the planted sentence adds two lines
    boxed_block_line = page.blocks[boxed[0]].start + (2 if page.blocks[boxed[0]].start > idea else 0)
    boxed_wrong_line += 2 if boxed_wrong_line > idea else 0
    return text, {
        "wrong output": f":{wrong_line}: the output block differs from what the block at line {block_line} printed; "
        "put what it printed (the + lines) in the output block, or fix the code:",
        "wrong output in a Deeper box": f":{boxed_wrong_line}: the output block differs from what the block at "
        f"line {boxed_block_line} printed; put what it printed (the + lines) in the output block, or fix the code:",
        "prose number": f":{number_line}: {PLANTED_NUMBER} is not in any verified output; print it in a block "
        "whose ```output shows it",
        "six questions": f":{sixth}: the quiz has 6 question(s); write at least 7, each in its own "
        '<div class="quiz" markdown> (format in CONTRIBUTING.md)',
    }


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    chapter = PLANTED_CHAPTER
    tmp = tmp_path_factory.mktemp("check")
    chapters = tmp / "docs" / "chapters"
    chapters.mkdir(parents=True)
    text, messages = plant_faults(chapter.read_text(encoding="utf-8"))
    (chapters / chapter.name).write_text(text, encoding="utf-8")
    if chapter.with_suffix(".py").is_file():
        shutil.copy(chapter.with_suffix(".py"), chapters / chapter.with_suffix(".py").name)
    where = f"docs/chapters/{chapter.name}"
    return run_check(tmp, where), where, messages


@pytest.mark.parametrize("fault", ["wrong output", "wrong output in a Deeper box", "prose number", "six questions"])
def test_make_check_names_each_planted_fault(planted, fault):
    result, where, messages = planted
    assert result.returncode == 1, result.stdout + result.stderr
    reported = [line for line in result.stdout.splitlines() if line.startswith(where + ":")]
    assert any(line.startswith(where + messages[fault]) for line in reported), (messages[fault], result.stdout)


def test_make_check_reports_each_fault_once(planted):
    result, where, _ = planted
    reported = [line for line in result.stdout.splitlines() if line.startswith(where + ":")]
    assert len(reported) == 4, result.stdout
    assert re.search(
        rf"^make check: 4 problem\(s\) in {re.escape(where)} \(\d+ blocks and rules run, 0 skipped\) in [\d.]+ s$",
        result.stdout,
        re.M,
    )


def test_make_check_passes_a_clean_page(tmp_path):
    page = tmp_path / "docs" / "page.md"
    page.parent.mkdir()
    page.write_text("# t\n\nIt is 0.25 and 0.5.\n\n```python\nprint(1 / 4)\n```\n\n```output\n0.25\n```\n")
    result = run_check(tmp_path, "docs/page.md")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "make check: no problems in docs/page.md (1 blocks and rules run, 0 skipped)" in result.stdout


def test_make_check_refuses_a_missing_page(tmp_path):
    result = run_check(tmp_path, "docs/nope.md")
    assert result.returncode == 2
    assert "usage: make check PAGE=docs/chapters/<name>.md" in result.stderr
