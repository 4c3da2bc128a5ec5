"""The docs pipeline itself: every Python-like fence is collected, and a
failing block fails the run at the right file and line, whatever its form."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from needs import imported_modules
from page_blocks import DISPLAY_LANGUAGES, RUN_LANGUAGES, page_problems, read_page

ROOT = Path(__file__).resolve().parent.parent
TESTS = Path(__file__).resolve().parent
SUPPORT = TESTS / "support"
HOOKS = ROOT / "docs" / "hooks"

# Deliberately independent of the collector: any fence whose language looks
# like Python, in any syntax Markdown allows for it.
PYTHONISH_FENCE = re.compile(
    r"^(?P<indent>[ \t]*(?:>[ \t]*)*)(?P<fence>`{3,}|~{3,})[ \t]*\{?[ \t]*\.?"
    r"(?P<lang>python3?|py3?|pycon|ipython3?|python-repl)\b",
    re.IGNORECASE,
)
COLLECTED = re.compile(r"^(?P<file>\S+?\.md)::sybil:docs,line:(?P<line>\d+),column:\d+$", re.MULTILINE)

# The pytest runs below in the repository collect no test that uses
# hypothesis; its plugin imports it at collection (about a CPU-second a run;
# anyio's is off everywhere, pyproject.toml's addopts). The planted trees load
# no plugin at all (PYTEST_DISABLE_PLUGIN_AUTOLOAD): sybil comes from their conftest.
UNUSED_PLUGINS = ("-p", "no:hypothesispytest")
NO_PLUGINS = {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}


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


#: A pytest plugin whose docs run runs every block, a chapter's too (``make test``'s
#: leaves a chapter's code to test_copy_isolation and test_notebooks; ``make check``'s
#: runs it all): with ``--confcutdir docs`` the repository's conftest.py is not loaded.
RUN_ALL_PLUGIN = "from docs_pipeline import docs_sybil\npytest_collect_file = docs_sybil({docs!r}).pytest()\n"


def run_all_args(docs: Path, plugin_dir: Path) -> tuple[list[str], dict]:
    """pytest arguments and environment for a docs run that runs every block of ``docs``."""
    (plugin_dir / "run_all_docs.py").write_text(RUN_ALL_PLUGIN.format(docs=str(docs)), encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(plugin_dir), os.environ.get("PYTHONPATH", "")])}
    return ["--confcutdir", str(docs), "-p", "run_all_docs"], env


def collected_lines(docs: Path, cwd: Path, plugin_dir: Path | None = None) -> dict[str, set[int]]:
    """Run pytest --collect-only on ``docs``; map file name -> collected lines.
    With ``plugin_dir``, by a docs run that runs every block (:func:`run_all_args`)."""
    args, env = run_all_args(docs, plugin_dir) if plugin_dir is not None else ([], None)
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *UNUSED_PLUGINS, *args]
        + [str(docs)],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=env,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    found: dict[str, set[int]] = {}
    for match in COLLECTED.finditer(result.stdout):
        found.setdefault(Path(match["file"]).name, set()).add(int(match["line"]))
    return found


def uncollected(docs: Path, cwd: Path, plugin_dir: Path | None = None) -> list[str]:
    collected = collected_lines(docs, cwd, plugin_dir)
    missing = []
    for path in sorted(docs.rglob("*.md")):
        lines = collected.get(path.name, set())
        for start, end in python_fences(path):
            if not any(start <= line <= end for line in lines):
                missing.append(f"{path.relative_to(cwd)}:{start}: Python fence not collected by sybil")
    return missing


def make_tree(tmp_path: Path, pages: dict[str, str], tests: dict[str, str] | None = None) -> Path:
    """A throwaway project whose conftest uses the real docs pipeline."""
    (tmp_path / "conftest.py").write_text(
        f"import sys\nsys.path[:0] = [{str(SUPPORT)!r}, {str(TESTS)!r}, {str(HOOKS)!r}]\n"
        "from pathlib import Path\nfrom docs_pipeline import docs_sybil\n"
        "pytest_collect_file = docs_sybil(str(Path(__file__).parent / 'docs')).pytest()\n"
    )
    (tmp_path / "pytest.ini").write_text("[pytest]\naddopts = -p no:doctest -p no:cacheprovider -ra\n")
    docs = tmp_path / "docs"
    docs.mkdir()
    for name, text in pages.items():
        (docs / name).write_text(textwrap.dedent(text).lstrip())
    for name, text in (tests or {}).items():
        (tmp_path / name).write_text(textwrap.dedent(text).lstrip())
    return docs


def run_tree(tmp_path: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", *(args or ["docs"])],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={**(os.environ if env is None else env), **NO_PLUGINS},
        timeout=600,
    )


# --- the real docs ---------------------------------------------------------


def test_every_python_fence_in_docs_is_collected(tmp_path):
    """By the docs run that runs every block, as make check's does."""
    missing = uncollected(ROOT / "docs", ROOT, plugin_dir=tmp_path)
    assert not missing, "\n".join(missing)


def test_make_tests_docs_run_leaves_a_chapters_code_to_copy_isolation_and_the_notebook():
    """make test's docs run (the repository's conftest.py): a chapter's code blocks are not
    collected (test_copy_isolation runs each alone, test_notebooks the page top to bottom, and
    both compare what they print with the page); every other page's are."""
    collected = collected_lines(ROOT / "docs", ROOT)
    chapters = sorted((ROOT / "docs" / "chapters").glob("*.md"))
    assert len(chapters) >= 10
    for chapter in chapters:
        assert not collected.get(chapter.name), f"{chapter.name}: code collected by the docs run"
    others = [p for p in (ROOT / "docs").rglob("*.md") if p.parent.name != "chapters" and python_fences(p)]
    assert others, "no page outside docs/chapters with code"
    for page in others:
        lines = collected.get(page.name, set())
        for start, end in python_fences(page):
            assert any(start <= line <= end for line in lines), f"{page.name}:{start}: not collected"


def test_a_page_whose_code_runs_elsewhere_keeps_its_doctests_and_its_rules():
    """PageParser(code_runs_elsewhere): the code blocks of such a page are no examples; its
    doctests and the rules it breaks (here an output block under nothing) still are."""
    from sybil import Document

    from docs_pipeline import PageParser

    text = "# t\n\n```python\nprint(1)\n```\n\n```output\n1\n```\n\n```pycon\n>>> 1 + 1\n2\n```\n\nText.\n\n```output\n3\n```\n"
    kinds = {}
    for left_out in (False, True):
        regions = list(PageParser(lambda path, left_out=left_out: left_out)(Document(text, "x.md")))
        kinds[left_out] = sorted((text.count("\n", 0, r.start) + 1, type(r.evaluator).__name__) for r in regions)
    assert kinds[False] == [(3, "BlockEvaluator"), (11, "BlockEvaluator"), (18, "ProblemEvaluator")]
    assert kinds[True] == [(11, "BlockEvaluator"), (18, "ProblemEvaluator")]


def test_docs_have_python_fences_at_all():
    # Guards the test above against passing on an empty scan.
    assert sum(len(python_fences(p)) for p in (ROOT / "docs").rglob("*.md")) >= 5


# --- planted pages: one tree, one pytest run, one fault per page -------------

# name -> (page, what the run must print about it). Line numbers are the page's.
PLANTED = {
    # A failing line in each form a Python fence can take.
    "plain.md": (
        "# t\n\n```python\nx = 1\ny = 1 / 0\n```\n",
        ["plain.md:5: the block at line 3 raised: ZeroDivisionError"],
    ),
    "titled.md": (
        '# t\n\n```python title="a.py" linenums="1" hl_lines="2"\nx = 1\ny = 1 / 0\n```\n',
        ["titled.md:5: the block at line 3 raised: ZeroDivisionError"],
    ),
    "tabbed.md": (
        '# t\n\n=== "One"\n\n    ```python\n    x = 1\n    y = 1 / 0\n    ```\n',
        ["tabbed.md:7: the block at line 5 raised: ZeroDivisionError"],
    ),
    "admonition.md": (
        "# t\n\n!!! note\n\n    ```python\n    x = 1\n    y = 1 / 0\n    ```\n",
        ["admonition.md:7: the block at line 5 raised: ZeroDivisionError"],
    ),
    "doctest.md": (
        "# t\n\n```python\n>>> 1 + 1\n2\n>>> 2 + 2\n5\n```\n",
        ["doctest.md:6: doctest `2 + 2` expected:\n5\ngot:\n4"],
    ),
    "short.md": (
        "# t\n\n```py\nx = 1\ny = 1 / 0\n```\n",
        ["short.md:5: the block at line 3 raised: ZeroDivisionError"],
    ),
    "pycon.md": ("# t\n\n```pycon\n>>> 1 + 1\n3\n```\n", ["pycon.md:4: doctest `1 + 1` expected:\n3\ngot:\n2"]),
    "out.md": (
        "# t\n\n```python\nprint(2 + 2)\n```\n\n```output\n5\n```\n",
        [
            "out.md:8: the output block differs from what the block at line 3 printed; put what it printed "
            "(the + lines) in the output block, or fix the code:",
            "\n-5\n+4",
        ],
    ),
    # Issue 23: a wrong output inside a collapsed Deeper box fails as on the main line.
    "deeper.md": (
        '# t\n\n??? note "Deeper: what two and two make"\n\n    ```python\n    print(2 + 2)\n    ```\n\n'
        "    ```output\n    5\n    ```\n",
        [
            "deeper.md:10: the output block differs from what the block at line 5 printed; put what it printed "
            "(the + lines) in the output block, or fix the code:",
        ],
    ),
    "hidden.md": (
        "# t\n\n```python\nprint('surprise')\n```\n",
        ["hidden.md:3: this block printed output but the page shows no ```output block after it"],
    ),
    # Issue 11.1: fences that render as Python but are never run.
    "py2.md": (
        "# t\n\n```py2\nprint(1 / 0)\n```\n",
        ["py2.md:3: the fence language 'py2' is neither run nor display-only"],
    ),
    "python2.md": (
        "# t\n\n```python2\nprint(1 / 0)\n```\n",
        ["python2.md:3: the fence language 'python2' is neither run nor display-only"],
    ),
    "numpy.md": (
        "# t\n\n```numpy\nprint(1 / 0)\n```\n",
        ["numpy.md:3: the fence language 'numpy' is neither run nor display-only"],
    ),
    "nolang.md": (
        "# t\n\n```\nimport qkv\nprint(1 / 0)\n```\n",
        ["nolang.md:3: a fence with no language; write ```python to run it"],
    ),
    "attr.md": ("# t\n\n``` {.python}\nx = 1 / 0\n```\n", ["attr.md:3: a fence with no language"]),
    "indented.md": (
        "# t\n\nSome text.\n\n    import qkv\n    print(1 / 0)\n",
        [
            "indented.md:5: an indented code block (four spaces more than the text around it) is shown as code "
            "but never run"
        ],
    ),
    "rawhtml.md": (
        '# t\n\n<pre><code class="language-python">print(1 / 0)</code></pre>\n',
        [
            "rawhtml.md:3: code written as raw HTML (<pre>, <xmp>, <listing>, <plaintext> or "
            '<code class="language-...">) is shown but never run'
        ],
    ),
    # Issue 11.2: an output block with prose between it and the code.
    "gap.md": (
        "# t\n\n```python\nprint(4)\n```\n\nIt prints:\n\n```output\n5\n```\n",
        [
            "gap.md:9: this ```output block does not directly follow a ```python block",
            "gap.md:3: this block printed output but the page shows no ```output block",
        ],
    ),
    # Issue 11.3: a doctest followed by an output fence.
    "doctest_output.md": (
        "# t\n\n```pycon\n>>> 2 + 2\n4\n```\n\n```output\n5\n```\n",
        ["doctest_output.md:8: an ```output block under a doctest (>>> prompts)"],
    ),
    # Issue 11.4: a skip must say why; a skip without a reason skips nothing.
    "skip_bare.md": (
        "# t\n\n<!-- skip: next -->\n\n```pycon\n>>> 1 + 1\n3\n```\n",
        [
            "skip_bare.md:3: a skip without a reason; write `<!-- skip: next <why this block cannot run here> -->`",
            "skip_bare.md:6: doctest `1 + 1` expected:",
        ],
    ),
    "skip_reason.md": (
        "# t\n\n<!-- skip: next needs a GPU this machine lacks -->\n\n```python\nraise SystemExit(3)\n```\n",
        ["skip_reason.md:5: skipped by the page (line 3): needs a GPU this machine lacks"],
    ),
    # Issue 11.5: a block that exits or loops ends nothing but its own page's interpreter.
    "exit.md": (
        "# t\n\n```python\nimport os\nos._exit(0)\n```\n\n```python\nprint(1)\n```\n\n```output\n1\n```\n",
        [
            "exit.md:3: this block ended the Python process running this page's blocks (exit status 0, as "
            "os._exit() does)",
            "exit.md:8: not run: the block at line 3 ended or stalled the interpreter",
        ],
    ),
    "sysexit.md": (
        "# t\n\n```python\nimport sys\nsys.exit(0)\n```\n",
        ["sysexit.md:5: the block at line 3 exited (SystemExit); a block must not exit"],
    ),
    # It loops asleep: the pipeline's clock is its own (the answer that never
    # comes), and a busy loop would burn a core for the whole 5 s.
    "loop.md": (
        "# t\n\n```python\nimport time\n\nwhile True:\n    time.sleep(1)\n```\n",
        ["loop.md:3: this block ran longer than 5 s and was stopped (QKV_BLOCK_TIMEOUT)"],
    ),
    # After the exit and the loop (pages run in name order): still reported.
    "zz_after.md": (
        "# t\n\n```python\nassert 1 == 2, 'still reported'\n```\n",
        ["zz_after.md:4: the block at line 3 raised: AssertionError: still reported"],
    ),
    # <!-- clear-namespace --> starts the page's namespace afresh.
    "clear.md": (
        "# t\n\n```python\nx = 1\n```\n\n<!-- clear-namespace -->\n\n```python\nprint(x)\n```\n",
        ["clear.md:10: the block at line 9 raised: NameError: name 'x' is not defined"],
    ),
    "ok.md": ("# t\n\n```python\nprint(2 + 2)\n```\n\n```output\n4\n```\n", []),
    # Review L1: a line ```text``` is inline code (superfences), not a fence that hides the block below.
    "inline_fence.md": (
        "# t\n\n```text```\n\n```python\nprint(1 / 0)\n```\n",
        ["inline_fence.md:6: the block at line 5 raised: ZeroDivisionError"],
    ),
}


@pytest.fixture(scope="module")
def planted_run(tmp_path_factory) -> str:
    tmp_path = tmp_path_factory.mktemp("planted")
    make_tree(tmp_path, {name: text for name, (text, _) in PLANTED.items()})
    env = {**os.environ, "QKV_BLOCK_TIMEOUT": "5"}
    result = run_tree(tmp_path, env=env)
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    return output


@pytest.mark.parametrize("name", sorted(PLANTED))
def test_a_planted_fault_is_reported_at_file_and_line(planted_run, name):
    for message in PLANTED[name][1]:
        assert message in planted_run, f"{message!r} not in:\n{planted_run}"


def test_the_planted_run_ends_with_its_summary(planted_run):
    # 29 regions fail (skip_bare.md, gap.md and exit.md two each);
    # the skipped block is listed with its reason; ok.md, the good doctest,
    # clear.md's first block and its clear directive pass.
    summary = planted_run.strip().splitlines()[-1]
    assert re.fullmatch(r"29 failed, 4 passed, 1 skipped in [\d.]+s(?: \([\d:]+\))?", summary), summary
    assert re.search(r"^SKIPPED \[1\] .*skip_reason\.md:5: skipped by the page \(line 3\)", planted_run, re.M)


@pytest.mark.parametrize("tag", ["xmp", "listing", "plaintext", "XMP"])
def test_code_in_an_xmp_or_listing_element_is_raw_html_code(tag):
    """Review L2: <xmp> (and <listing>, <plaintext>) show code in monospace that nothing runs."""
    problems = page_problems(f"# t\n\n<{tag}>print(1 / 0)  # 0.3333</{tag}>\n", "p.md")
    assert [p for p in problems if p.startswith("p.md:3: code written as raw HTML (<pre>, <xmp>")], problems


def test_a_clean_page_has_no_problems():
    text = '# t\n\n=== "A"\n\n    ```python\n    print(1)\n    ```\n\n    ```output\n    1\n    ```\n\n- item\n\n    more of the item\n'
    assert page_problems(text, "p.md") == []


def test_no_display_language_is_highlighted_as_python():
    # The whitelist is honest: a display-only language must not render as Python.
    from pygments.lexers import get_lexer_by_name
    from pygments.lexers.python import PythonConsoleLexer, PythonLexer

    for language in DISPLAY_LANGUAGES:
        lexer = get_lexer_by_name(language)
        assert not isinstance(lexer, (PythonLexer, PythonConsoleLexer)), language
    for alias in PythonLexer.aliases + PythonConsoleLexer.aliases:
        assert alias in RUN_LANGUAGES or page_problems(f"```{alias}\nx\n```\n", "p.md"), alias


# --- a run that ends early is not green ---------------------------------------


def test_a_pytest_run_without_its_summary_fails(tmp_path):
    (tmp_path / "test_exit.py").write_text(
        "import os\n\ndef test_a_failure():\n    assert False\n\ndef test_zz_exit():\n    os._exit(0)\n"
    )
    (tmp_path / "pytest.ini").write_text("[pytest]\naddopts = -p no:cacheprovider\n")
    env = {**os.environ, **NO_PLUGINS}
    plain = subprocess.run(
        [sys.executable, "-m", "pytest", "-q"], cwd=tmp_path, capture_output=True, text=True, env=env
    )
    assert plain.returncode == 0  # the fault: pytest itself ends "green"
    guarded = subprocess.run(
        [sys.executable, str(SUPPORT / "pytest_finished.py"), "-q"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=env,
    )
    assert guarded.returncode == 1, guarded.stdout + guarded.stderr
    assert "pytest-finished: pytest exited with status 0 without printing its summary line" in guarded.stderr


def test_a_finished_run_passes_the_guard(tmp_path):
    (tmp_path / "test_ok.py").write_text("def test_ok():\n    assert True\n")
    (tmp_path / "pytest.ini").write_text("[pytest]\naddopts = -p no:cacheprovider\n")
    guarded = subprocess.run(
        [sys.executable, str(SUPPORT / "pytest_finished.py")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={**os.environ, **NO_PLUGINS},
    )
    assert guarded.returncode == 0, guarded.stdout + guarded.stderr
    assert "1 passed" in guarded.stdout


# --- PyTorch missing: skips with one message, fails under CI=true -----------------

HIDE_TORCH = '''
import sys


class _HideTorch:
    """A machine without PyTorch: importing it fails as if it were not installed."""

    def find_spec(self, name, path=None, target=None):
        if name == "torch" or name.startswith("torch."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, _HideTorch())
'''

TORCH_PAGE = (
    "# t\n\n```python\nimport torch\nprint(torch.ones(2).tolist())\n```\n\n```output\n[1.0, 1.0]\n```\n\n"
    '```python title="(continued)"\nprint(torch.zeros(1).tolist())\n```\n\n```output\n[0.0]\n```\n\n'
    + "".join(f"```python\nprint({n})\n```\n\n```output\n{n}\n```\n\n" for n in range(4))
)
TORCH_TESTS = """
from pathlib import Path

from test_copy_isolation import check_page_alone
from test_notebooks import check_chapter_notebook

PAGE = Path(__file__).parent / "docs" / "torch.md"


def test_copy_isolation():
    check_page_alone(PAGE, "docs/torch.md")


def test_notebook(tmp_path):
    check_chapter_notebook(PAGE, tmp_path)
"""


def torch_hidden_env(tmp_path: Path, ci: bool) -> dict:
    hide = tmp_path / "hide"
    hide.mkdir(exist_ok=True)
    (hide / "sitecustomize.py").write_text(HIDE_TORCH)
    env = {key: value for key, value in os.environ.items() if key != "CI"}
    env["PYTHONPATH"] = os.pathsep.join([str(hide), str(ROOT / "src"), env.get("PYTHONPATH", "")])
    if ci:
        env["CI"] = "true"
    return env


def real_torch_blocks() -> list[str]:
    """Sybil node ids of the blocks in docs/ that import torch."""
    ids = []
    for path in sorted((ROOT / "docs").rglob("*.md")):
        page = read_page(path.read_text(encoding="utf-8"))
        for block in page.blocks:
            if block.is_python and "torch" in imported_modules(block.text):
                ids.append(f"{path.relative_to(ROOT)}::sybil:docs,line:{block.start},column:1")
    return ids


def real_torch_notebooks() -> list[str]:
    """Node ids of the chapter-notebook tests whose notebook imports torch (code in
    content tabs does not become cells, so a chapter's torch tab may not count)."""
    import notebooks  # docs/hooks
    import parts

    ids = []
    for chapter in sorted((ROOT / "docs" / "chapters").glob("*.md")):
        cells = notebooks.chapter_notebook(parts.expand_page(chapter)).cells
        if any(c.cell_type == "code" and "torch" in imported_modules(c.source) for c in cells):
            ids.append(f"tests/test_notebooks.py::test_chapter_runs_as_a_notebook[{chapter.name}]")
    return ids


def test_the_hider_hides_torch(tmp_path):
    env = torch_hidden_env(tmp_path, ci=False)
    probe = "import needs; print(needs.available('torch'), needs.available('numpy'))"
    result = subprocess.run(
        [sys.executable, "-c", probe],
        env={**env, "PYTHONPATH": env["PYTHONPATH"] + os.pathsep + str(SUPPORT)},
        capture_output=True,
        text=True,
    )
    assert result.stdout.split() == ["False", "True"], result.stderr


@pytest.mark.parametrize("ci", [False, True], ids=["local", "CI=true"])
def test_without_torch_blocks_skip_locally_and_fail_in_ci(tmp_path, ci):
    make_tree(tmp_path, {"torch.md": TORCH_PAGE}, {"test_tree.py": TORCH_TESTS})
    result = run_tree(tmp_path, "docs", "test_tree.py", env=torch_hidden_env(tmp_path, ci))
    output = result.stdout + result.stderr
    summary = output.strip().splitlines()[-1]
    hint = "needs PyTorch, which is not installed here; to run it locally: `.venv/bin/pip install"
    if ci:
        assert result.returncode == 1, output
        assert re.fullmatch(r"4 failed, 4 passed in [\d.]+s(?: \([\d:]+\))?", summary), output
        assert "required in CI: docs/torch.md:3: " + hint in output
        assert "required in CI: torch.md as a notebook: " + hint in output
    else:
        assert result.returncode == 0, output
        # the torch block, the block that continues it, copy-isolation, the notebook
        assert re.fullmatch(r"4 passed, 4 skipped in [\d.]+s(?: \([\d:]+\))?", summary), output
        assert re.search(r"^SKIPPED \[1\] .*docs/torch\.md:3: " + re.escape(hint), output, re.M), output
        assert re.search(r"^SKIPPED \[1\] .*docs/torch\.md:12: " + re.escape(hint), output, re.M), output
        assert re.search(r"^SKIPPED \[1\] .*torch\.md as a notebook: " + re.escape(hint), output, re.M), output


def test_without_torch_the_real_torch_blocks_skip(tmp_path):
    """In the docs run that runs every block (make check's), and as the chapters' notebooks."""
    ids = real_torch_blocks()
    assert len(ids) >= 2, ids  # attention.md's PyTorch tab, learning-attention.md's masked row
    env = torch_hidden_env(tmp_path, ci=False)
    plugin_args, _ = run_all_args(ROOT / "docs", tmp_path)
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), env["PYTHONPATH"]])
    for args in ([*plugin_args, *ids], real_torch_notebooks()):
        result = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *UNUSED_PLUGINS, *args],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        output = result.stdout + result.stderr
        count = len(args) - len(plugin_args) if args[0] == "--confcutdir" else len(args)
        assert result.returncode == 0, output
        assert f"{count} skipped" in output.strip().splitlines()[-1], output
        assert output.count("needs PyTorch, which is not installed here") == count, output


def test_a_looping_block_does_not_outlive_a_killed_pytest():
    # pytest killed (or ended by os._exit) while a page's block loops: the page's
    # interpreter must not spin on forever.
    program = (
        "import json, os\nfrom docs_pipeline import PageWorker\nw = PageWorker()\n"
        "w.process.stdin.write(json.dumps({'kind': 'code', 'source': 'while True: pass', 'path': 'x.md', 'line': 1}) + '\\n')\n"
        "w.process.stdin.flush()\nprint(w.process.pid, flush=True)\nos._exit(0)\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SUPPORT), os.environ.get("PYTHONPATH", "")])}
    result = subprocess.run([sys.executable, "-c", program], env=env, capture_output=True, text=True, timeout=60)
    pid = int(result.stdout)
    for _ in range(100):
        if not Path(f"/proc/{pid}").exists() or "zombie" in Path(f"/proc/{pid}/status").read_text().lower():
            break
        time.sleep(0.1)
    else:
        os.kill(pid, 9)
        pytest.fail(f"the page worker {pid} still ran 10 s after its pytest ended")


def test_an_attribute_list_fence_is_display_only_for_a_display_language():
    # ```{.sql .qkv-sql} (the SQL chapter's Run blocks) is SQL shown, not run; an
    # attribute list naming Python would render as Python and never run.
    from page_blocks import read_page

    assert read_page("# t\n\n```{.sql .qkv-sql}\nSELECT 1;\n```\n").problems == []
    problems = read_page("# t\n\n``` {.python}\nx = 1 / 0\n```\n").problems
    assert [line for line, _ in problems] == [3] and "a fence with no language" in problems[0][1]
