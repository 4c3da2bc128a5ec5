"""Notebooks: every chapter runs as a notebook and prints what its page shows, the committed exercise
notebooks are current, and a reader's path through an exercise works: the
check fails on the starter and passes on a correct answer."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

import needs
import notebooks  # docs/hooks, on pytest's pythonpath
import parts
import story
from docs_pipeline import notebook_output_problems
from page_blocks import read_page

ROOT = Path(__file__).resolve().parent.parent

CHAPTERS = sorted((ROOT / "docs" / "chapters").glob("*.md"))
SOLUTIONS = ROOT / "tests" / "exercise_files"


def execute(notebook: nbformat.NotebookNode, cwd: Path) -> nbformat.NotebookNode:
    NotebookClient(notebook, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(cwd)}}).execute()
    return notebook


def stdout_of(cell) -> str:
    return "".join(o.get("text", "") for o in cell.get("outputs", []) if o.get("name") == "stdout")


def check_chapter_notebook(chapter: Path, tmp_path: Path) -> None:
    """Run ``chapter`` as a notebook. A cell that needs a missing optional module
    (PyTorch) skips the notebook with needs.py's message (fails under CI=true)."""
    markdown = parts.expand_page(chapter)
    notebook = notebooks.chapter_notebook(markdown)
    code_cells = [c for c in notebook.cells if c.cell_type == "code"]
    assert len(code_cells) >= 5, f"{chapter.name}: only {len(code_cells)} code cells"
    missing = needs.missing_for("\n".join(c.source for c in code_cells))
    needs.require(missing is None, f"{chapter.name} as a notebook: {missing}")
    execute(notebook, tmp_path)  # raises CellExecutionError, naming the cell, on failure
    assert any(stdout_of(c) for c in code_cells)
    # What each cell printed is what the page shows (the docs run leaves a chapter's code to this
    # run and to test_copy_isolation: docs_pipeline.chapter_code_runs_elsewhere).
    where = str(chapter.relative_to(ROOT)) if chapter.is_relative_to(ROOT) else str(chapter)
    page = read_page(chapter.read_text(encoding="utf-8"))
    problems = notebook_output_problems(where, page, [(c.source, stdout_of(c)) for c in code_cells])
    assert not problems, "\n\n".join(problems)


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.name)
def test_chapter_runs_as_a_notebook(chapter, tmp_path):
    check_chapter_notebook(chapter, tmp_path)


@pytest.mark.parametrize("name", list(notebooks.EXERCISES))
def test_committed_exercise_notebooks_are_current(name):
    committed = (notebooks.EXERCISES_DIR / f"{name}.ipynb").read_text(encoding="utf-8")
    generated = nbformat.writes(notebooks.exercise_notebook(name)) + "\n"
    assert committed == generated, f"run `python docs/hooks/notebooks.py` to regenerate {name}.ipynb"


def test_the_repository_url_comes_from_mkdocs_yml_and_the_version_from_qkv():
    pip = notebooks.install_line.read().pip  # pip install qkv==<installed version>
    for name in notebooks.EXERCISES:
        text = (notebooks.EXERCISES_DIR / f"{name}.ipynb").read_text(encoding="utf-8")
        assert pip.replace("pip install", "install -q") in text
        assert notebooks.colab_url(name) in text
        assert notebooks.colab_url(name).startswith("https://colab.research.google.com/github/")


def solved(notebook: nbformat.NotebookNode, solution: Path) -> nbformat.NotebookNode:
    """The reader's notebook after pasting a correct answer into the function cells."""
    namespace: dict = {}
    source = solution.read_text(encoding="utf-8")
    exec(compile(source, str(solution), "exec"), namespace)
    for cell in notebook.cells:
        if cell.cell_type == "code" and cell.source.startswith("def "):
            name = cell.source.split("(", 1)[0][4:]
            assert name in namespace, f"{solution.name} has no {name}"
            cell.source = source  # the whole solution file defines every function
            break
    for cell in notebook.cells:  # the other starter cells would redefine them: drop them
        if cell.cell_type == "code" and cell.source.startswith("def "):
            cell.source = "pass"
    return notebook


@pytest.mark.parametrize(
    ("name", "solution"),
    [
        ("input-layer", "input_layer_solution.py"),
        ("attention-head", "attention_head_solution.py"),
        ("sql-softmax", "sql_softmax_solution.py"),
    ],
)
def test_a_readers_path_through_the_exercise(name, solution, tmp_path):
    path = notebooks.EXERCISES_DIR / f"{name}.ipynb"
    starter = execute(nbformat.read(path, as_version=4), tmp_path)
    first = stdout_of(starter.cells[-1])
    assert "not implemented" in first and "Result: 0 of" in first, first

    answer = solved(nbformat.read(path, as_version=4), SOLUTIONS / solution)
    second = stdout_of(execute(answer, tmp_path).cells[-1])
    assert "FAIL" not in second and "All done" in second, second


def test_a_readers_notebook_cannot_fool_or_end_the_check(tmp_path):
    """Planted faults in the kernel: NumPy's comparisons replaced, np.seterr(all="raise"),
    a wrong stretch, a function that calls os._exit(0). The check runs the functions
    elsewhere, compares elsewhere, fails them, and the kernel lives on."""
    path = notebooks.EXERCISES_DIR / "attention-head.ipynb"
    notebook = solved(nbformat.read(path, as_version=4), SOLUTIONS / "attention_head_solution.py")
    check_cell = notebook.cells.pop()
    faults = [
        "np.allclose = lambda *args, **kwargs: True\n"
        "np.isclose = lambda a, b, **kwargs: np.ones(np.shape(a), dtype=bool)\n"
        'np.seterr(all="raise")',
        "def attention_backward(Q, K, V, d_output):\n    return 0 * Q, 0 * K, 0 * V",
        "import os\n\n\ndef softmax(x, axis=-1):\n    os._exit(0)",
    ]
    notebook.cells += [nbformat.v4.new_code_cell(source) for source in faults]
    notebook.cells += [check_cell, nbformat.v4.new_code_cell('print("kernel alive", report.exit_code)')]
    executed = execute(notebook, tmp_path)
    report = stdout_of(executed.cells[-2])
    assert "FAIL  softmax: ended the process running it (exit status 0, as os._exit(0) does)" in report
    assert "FAIL  attention: ended the process running it" in report  # it calls softmax
    assert "FAIL  dQ matches the chain rule (qkv.attention_backward)" in report
    assert "Note:" not in report  # every function was rebuilt and ran in a child process
    assert stdout_of(executed.cells[-1]) == "kernel alive 1\n"


def test_a_deeper_boxs_code_becomes_cells_of_the_chapter_notebook():
    markdown = (
        '# t\n\n```python\nx = 1\n```\n\n??? note "Deeper: what x is made of"\n\n'
        "    Prose.\n\n    ```python\n    print(x)\n    ```\n\n    ```output\n    1\n    ```\n\nAfter.\n"
    )
    notebook = notebooks.chapter_notebook(markdown)
    assert [c.source for c in notebook.cells if c.cell_type == "code"][1:] == ["x = 1", "print(x)"]
    assert any("**Deeper: what x is made of**" in c.source for c in notebook.cells if c.cell_type == "markdown")


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.name)
def test_every_top_level_block_and_deeper_block_is_a_notebook_cell(chapter):
    """What a chapter runs on its page, top level or in a Deeper box, its notebook runs too."""
    markdown = parts.expand_page(chapter)
    deeper = [(b.start, b.end) for b in story.boxes(markdown) if b.is_deeper and not b.indent]
    blocks = [
        b
        for b in read_page(markdown).blocks
        if b.is_python
        and not b.is_doctest
        and (not b.indent or (b.indent == "    " and any(s < b.start <= e for s, e in deeper)))
    ]
    cells = [c.source for c in notebooks.chapter_notebook(markdown).cells if c.cell_type == "code"]
    for block in blocks:
        assert block.text.rstrip("\n") in cells, f"{chapter.name}:{block.start}: this block is no notebook cell"


STATE_LEAK_PAGE = (
    "# t\n\n```python\nimport numpy as np\nnp.set_printoptions(precision=2)\n```\n\n"
    "```python\nimport numpy as np\nprint(np.array([1 / 3]))\n```\n\n```output\n[0.33333333]\n```\n\n"
    "```python\nprint(1 + 1)\n```\n\n```output\n3\n```\n\n"
    "<!-- skip: next planted: a skipped block's output is not compared -->\n"
    "```python\nprint('x')\n```\n\n```output\ny\n```\n\n"
    "```python\nprint(4)\n```\n"
)


def test_a_notebook_that_prints_other_output_than_the_page_fails_at_the_pages_line(tmp_path):
    """The docs run leaves a chapter's code to this test and test_copy_isolation, so this one
    compares, planted: a block that prints its output alone but not after the block above it (a
    state the blocks share in one kernel), a wrong output, a print with no output block."""
    chapter = tmp_path / "leak.md"
    chapter.write_text(STATE_LEAK_PAGE, encoding="utf-8")
    with pytest.raises(AssertionError) as failed:
        check_chapter_notebook(chapter, tmp_path)
    message = str(failed.value)
    prefix = "leak.md:{}: in the chapter's notebook (its blocks run top to bottom in one kernel, each after what the blocks above it changed), "
    assert (prefix.format(14) + "the output block differs from what the block at line 8 printed") in message
    assert "-[0.33333333]" in message and "+[0.33]" in message  # alone it prints the page's output
    assert (prefix.format(22) + "the output block differs from what the block at line 17 printed") in message
    assert (prefix.format(34) + "this block printed output but the page shows no ```output block after it") in message
    assert message.count("the output block differs") == 2  # not the skipped block's
