"""The docs pipeline itself: every Python-like fence is collected, and a
failing block fails the run at the right file and line, whatever its form."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SUPPORT = Path(__file__).resolve().parent / "support"

# Deliberately independent of the collector: any fence whose language looks
# like Python, in any syntax Markdown allows for it.
PYTHONISH_FENCE = re.compile(
    r"^(?P<indent>[ \t]*(?:>[ \t]*)*)(?P<fence>`{3,}|~{3,})[ \t]*\{?[ \t]*\.?"
    r"(?P<lang>python3?|py3?|pycon|ipython3?|python-repl)\b",
    re.IGNORECASE,
)
COLLECTED = re.compile(r"^(?P<file>\S+?\.md)::sybil:docs,line:(?P<line>\d+),column:\d+$", re.MULTILINE)


def python_fences(path: Path) -> list[tuple[int, int]]:
    """(opening line, closing line) of every Python-like fence, 1-based."""
    lines = path.read_text(encoding="utf-8").splitlines()
    fences, index = [], 0
    while index < len(lines):
        match = PYTHONISH_FENCE.match(lines[index])
        if match is None:
            index += 1
            continue
        fence = match["fence"]
        close = index + 1
        closing = re.compile(rf"^[ \t>]*{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$")
        while close < len(lines) and not closing.match(lines[close]):
            close += 1
        fences.append((index + 1, close + 1))
        index = close + 1
    return fences


def collected_lines(docs: Path, cwd: Path) -> dict[str, set[int]]:
    """Run pytest --collect-only on ``docs``; map file name -> collected lines."""
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", str(docs)],
        cwd=cwd,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    found: dict[str, set[int]] = {}
    for match in COLLECTED.finditer(result.stdout):
        found.setdefault(Path(match["file"]).name, set()).add(int(match["line"]))
    return found


def uncollected(docs: Path, cwd: Path) -> list[str]:
    collected = collected_lines(docs, cwd)
    missing = []
    for path in sorted(docs.rglob("*.md")):
        lines = collected.get(path.name, set())
        for start, end in python_fences(path):
            if not any(start <= line <= end for line in lines):
                missing.append(f"{path.relative_to(cwd)}:{start}: Python fence not collected by sybil")
    return missing


def make_tree(tmp_path: Path, pages: dict[str, str]) -> Path:
    """A throwaway project whose conftest uses the real docs pipeline."""
    (tmp_path / "conftest.py").write_text(
        f"import sys\nsys.path.insert(0, {str(SUPPORT)!r})\n"
        "from pathlib import Path\nfrom docs_pipeline import docs_sybil\n"
        "pytest_collect_file = docs_sybil(str(Path(__file__).parent / 'docs')).pytest()\n"
    )
    (tmp_path / "pytest.ini").write_text("[pytest]\naddopts = -p no:doctest -p no:cacheprovider\n")
    docs = tmp_path / "docs"
    docs.mkdir()
    for name, text in pages.items():
        (docs / name).write_text(textwrap.dedent(text).lstrip())
    return docs


def run_tree(tmp_path: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "docs"], cwd=tmp_path, capture_output=True, text=True
    )


# --- the real docs ---------------------------------------------------------


def test_every_python_fence_in_docs_is_collected():
    missing = uncollected(ROOT / "docs", ROOT)
    assert not missing, "\n".join(missing)


def test_docs_have_python_fences_at_all():
    # Guards the test above against passing on an empty scan.
    assert sum(len(python_fences(p)) for p in (ROOT / "docs").rglob("*.md")) >= 5


# --- planted pages -----------------------------------------------------------

# Each form holds one failing line; the number is that line in the file.
PLANTED = {
    "plain.md": ("# t\n\n```python\nx = 1\ny = 1 / 0\n```\n", 5),
    "titled.md": ('# t\n\n```python title="a.py" linenums="1" hl_lines="2"\nx = 1\ny = 1 / 0\n```\n', 5),
    "tabbed.md": ('# t\n\n=== "One"\n\n    ```python\n    x = 1\n    y = 1 / 0\n    ```\n', 7),
    "admonition.md": ("# t\n\n!!! note\n\n    ```python\n    x = 1\n    y = 1 / 0\n    ```\n", 7),
    "doctest.md": ("# t\n\n```python\n>>> 1 + 1\n2\n>>> 2 + 2\n5\n```\n", 6),
    "short.md": ("# t\n\n```py\nx = 1\ny = 1 / 0\n```\n", 5),
    "pycon.md": ("# t\n\n```pycon\n>>> 1 + 1\n3\n```\n", 4),
}


@pytest.mark.parametrize("name", sorted(PLANTED))
def test_a_failing_line_is_reported_at_file_and_line(tmp_path, name):
    text, line = PLANTED[name]
    make_tree(tmp_path, {name: text})
    result = run_tree(tmp_path)
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    assert f"{name}:{line}" in output, output
    assert "1 failed" in output, output


def test_output_block_mismatch_shows_a_diff(tmp_path):
    make_tree(tmp_path, {"out.md": "# t\n\n```python\nprint(2 + 2)\n```\n\n```output\n5\n```\n"})
    result = run_tree(tmp_path)
    assert result.returncode == 1
    assert "out.md:3: printed output differs from the page" in result.stdout
    assert "-5" in result.stdout and "+4" in result.stdout


def test_output_block_match_passes(tmp_path):
    make_tree(tmp_path, {"ok.md": "# t\n\n```python\nprint(2 + 2)\n```\n\n```output\n4\n```\n"})
    result = run_tree(tmp_path)
    assert result.returncode == 0, result.stdout
    assert "1 passed" in result.stdout


def test_printing_without_an_output_block_fails(tmp_path):
    make_tree(tmp_path, {"hidden.md": "# t\n\n```python\nprint('surprise')\n```\n"})
    result = run_tree(tmp_path)
    assert result.returncode == 1
    assert "hidden.md:3: this block printed output but the page shows no" in result.stdout


def test_an_uncollected_fence_is_named(tmp_path):
    # `{.python}` is valid Markdown that the collector does not take: the
    # coverage check must name it rather than let it go unrun.
    docs = make_tree(tmp_path, {"attr.md": "# t\n\n``` {.python}\nx = 1 / 0\n```\n\n```py\nok = 1\n```\n"})
    assert uncollected(docs, tmp_path) == ["docs/attr.md:3: Python fence not collected by sybil"]
