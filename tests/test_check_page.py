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
import time
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
#: check reads too, the one whose whole check costs least (6.9 CPU-s;
#: attention-sql.md takes 9.7 now that the check runs links, spelling and
#: ruff as well).
PLANTED_CHAPTER = ROOT / "docs" / "chapters" / "scale.md"


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
    # The whole docs tree (the chapter links to other pages, which make check resolves) and the
    # benchmark results its companion module reads, as in the repository.
    shutil.copytree(ROOT / "docs", tmp / "docs", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "benchmarks" / "results", tmp / "benchmarks" / "results")
    (tmp / "node_modules").symlink_to(ROOT / "node_modules")  # sql.js, whose SQLite version the page states
    text, messages = plant_faults(chapter.read_text(encoding="utf-8"))
    (tmp / "docs" / "chapters" / chapter.name).write_text(text, encoding="utf-8")
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


def write_tree(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def test_a_broken_anchor_a_misspelling_and_a_short_alt_text_are_named_without_a_traceback(tmp_path):
    """Issue 27: three faults that used to pass make check (or crash it), each one file:line."""
    write_tree(
        tmp_path,
        {
            "docs/other.md": "# Other\n\n## A heading\n\nText.\n",
            "docs/new.md": "# New\n\nSee [the heading](other.md#a-headin).\n\nThe order of teh words.\n\n"
            "<!-- qkv:figure short -->\n",
            "docs/new.py": 'from parts import figure\n\n\n@figure("short", alt="A plot.", caption="c")\n'
            'def short():\n    return "<svg/>"\n',
        },
    )
    started = time.monotonic()
    result = run_check(tmp_path, "docs/new.md")
    seconds = time.monotonic() - started
    out = result.stdout + result.stderr
    assert result.returncode == 1, out
    assert "Traceback" not in out, out
    reported = [line for line in result.stdout.splitlines() if re.match(r"^docs/new\.(md|py):\d+: ", line)]
    assert len(reported) == 3, out
    assert reported[0].startswith(
        "docs/new.md:3: the link to other.md#a-headin names no heading of docs/other.md (its ids include: a-heading"
    ), out
    assert reported[1].startswith("docs/new.md:5: teh ==> the"), out
    assert reported[2].startswith("docs/new.py:4: figure short: alt text must say what the figure shows"), out
    assert result.stdout.rstrip().splitlines()[-1].startswith("make check: not checked here (make test checks"), out
    assert seconds <= 10, seconds


def test_a_missing_page_a_lint_error_few_cells_and_an_unknown_module_are_named(tmp_path):
    chapter = (
        "# Demo\n\n[Gone](nowhere.md).\n\n```python\nimport nosuchpackage\n```\n\nThe value is {{ demo_value }}.\n"
    )
    write_tree(
        tmp_path,
        {
            "docs/chapters/demo.md": chapter,
            "docs/chapters/demo.py": 'import os\nfrom parts import value\n\n\n@value("demo_value")\n'
            'def demo_value():\n    return "1"\n',
        },
    )
    result = run_check(tmp_path, "docs/chapters/demo.md")
    out = result.stdout
    assert result.returncode == 1, out + result.stderr
    # With its stderr: once (CI, a loaded machine) the run printed nothing to stdout.
    assert "docs/chapters/demo.md:3: the link to nowhere.md names no file of docs/ (nowhere.md not found)" in out, (
        out + result.stderr
    )
    assert (
        "docs/chapters/demo.md:1: the chapter's notebook has 2 code cells (its install cell counted); it needs" in out
    )
    assert re.search(r"^docs/chapters/demo\.py:1:8: F401 \[\*\] `os` imported but unused$", out, re.M), out
    assert re.search(
        r"^docs/chapters/demo\.md:6: the block at line 5 raised: ModuleNotFoundError: No module named "
        r"'nosuchpackage'; a block may import the standard library, numpy, qkv, .* To use another package: add it",
        out,
        re.M,
    ), out


def test_a_value_that_raises_is_named_at_its_line_without_a_traceback(tmp_path):
    """A {{ value }} whose function raises (chapter 9's read a file the planted copy lacked)
    is the companion module's problem at the raising line, not a traceback of make check."""
    write_tree(
        tmp_path,
        {
            "docs/chapters/demo.md": "# Demo\n\nThe version is {{ demo_version }}.\n",
            "docs/chapters/demo.py": 'from pathlib import Path\n\nfrom parts import value\n\n\n@value("demo_version")\n'
            'def demo_version():\n    return Path("node_modules/gone.wasm").read_text()\n',
        },
    )
    result = run_check(tmp_path, "docs/chapters/demo.md")
    out = result.stdout + result.stderr
    assert result.returncode == 1, out
    assert "Traceback" not in out, out
    assert re.search(
        r"^docs/chapters/demo\.py:8: the companion module raised FileNotFoundError: .*node_modules/gone\.wasm",
        result.stdout,
        re.M,
    ), out
