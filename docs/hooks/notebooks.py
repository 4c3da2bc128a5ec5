"""Notebooks made from the site's sources.

* ``chapter_notebook``: a chapter's Markdown as a Jupyter notebook (its
  ``python`` blocks become code cells, everything else stays Markdown), built
  with the site so that it never drifts from the page.
* ``exercise_notebook``: an exercise's starter template as a notebook: one
  cell per function to write, then the one-line check. These are committed
  under ``docs/exercises/`` (Colab opens notebooks from the repository) and a
  test checks that they equal what this module generates.

Run ``python docs/hooks/notebooks.py`` to rewrite the exercise notebooks,
e.g. after changing a starter or the repository URL in ``mkdocs.yml``.
"""

from __future__ import annotations

import ast
import importlib
import re
import sys
from pathlib import Path, PurePosixPath

import jupytext
import nbformat
import yaml

sys.path.insert(0, str(Path(__file__).parent))
import install_line  # noqa: E402
import story  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
EXERCISES_DIR = ROOT / "docs" / "exercises"
EXERCISES = {
    "input-layer": (
        "input_layer",
        "Exercise 1: the input layer",
        "chapters 1 to 4, from token ids to vectors with positions",
    ),
    "attention-head": (
        "attention_head",
        "Exercise 2: one attention head",
        "chapters 5 and 6, self-attention and masks",
    ),
    "sql-softmax": (
        "sql_softmax",
        "Exercise 3: the softmax as a window query",
        "chapter 9, attention as a SQL query",
    ),
}
#: The notebook pages, as globs under docs/: the one list the build and the tests share. The build
#: refuses a notebook page (mkdocs-jupyter's ``include`` in mkdocs.yml, matched from the right, so
#: ``docs/zz/exercises/x.ipynb`` is one) anywhere else (``hooks.on_files``, security re-review 6b, T3), and
#: the tests (prose numbers) read every file these globs find.
NOTEBOOK_PAGES = ("notebooks/*.py", "exercises/*.ipynb")


def notebook_pages(docs: Path = ROOT / "docs") -> list[Path]:
    """The notebook pages under ``docs``, sorted (``NOTEBOOK_PAGES``)."""
    return sorted(path for pattern in NOTEBOOK_PAGES for path in docs.glob(pattern))


def at_a_notebook_place(src_uri: str) -> bool:
    """Whether ``src_uri`` (relative to docs/) is where ``NOTEBOOK_PAGES`` looks, matched from the left.

    >>> at_a_notebook_place("exercises/a.ipynb"), at_a_notebook_place("zz/exercises/a.ipynb")
    (True, False)
    """
    path = PurePosixPath(src_uri)
    return any(len(path.parts) == len(PurePosixPath(p).parts) and path.match(p) for p in NOTEBOOK_PAGES)


KERNEL = {"display_name": "Python 3", "language": "python", "name": "python3"}


def site_config() -> dict:
    """mkdocs.yml as data; its ``!!python/name:module.attribute`` tags (a custom
    fence's formatter) become the objects they name."""

    class Loader(yaml.SafeLoader):
        pass

    def python_name(loader, suffix, node):
        module, _, attribute = suffix.removeprefix("name:").rpartition(".")
        return getattr(importlib.import_module(module), attribute)

    Loader.add_multi_constructor("tag:yaml.org,2002:python/", python_name)
    return yaml.load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"), Loader=Loader)


def repository_url() -> str:
    """The one place the repository URL lives: ``repo_url`` in mkdocs.yml."""
    return site_config()["repo_url"].rstrip("/")


def colab_url(name: str, repo: str | None = None) -> str:
    repo = repo or repository_url()
    path = re.sub(r"^https://github\.com/", "", repo)
    return f"https://colab.research.google.com/github/{path}/blob/main/docs/exercises/{name}.ipynb"


def _new_notebook(cells: list) -> nbformat.NotebookNode:
    notebook = nbformat.v4.new_notebook(cells=cells)
    notebook.metadata = {"kernelspec": KERNEL, "language_info": {"name": "python"}}
    for index, cell in enumerate(notebook.cells):
        cell["id"] = f"cell-{index}"  # stable ids: the file is byte-stable
    return notebook


def _install_of(install: install_line.Install | None) -> install_line.Install:
    return install or install_line.read()


def chapter_notebook(markdown: str, install: install_line.Install | None = None) -> nbformat.NotebookNode:
    """A chapter page as a notebook; top-level python fences become code cells.

    Deeper boxes are opened out first (``story.unwrap_deeper``): their code
    runs on the page, so it is part of the notebook too, in page order.

    The first code cell installs the qkv the page was checked with where it
    is missing (``install``: read from the installed package if not given).
    """
    parsed = jupytext.reads(story.unwrap_deeper(markdown), fmt="md")
    cells = [nbformat.v4.new_code_cell(_install_of(install).notebook_cell())]
    for cell in parsed.cells:
        if cell.cell_type == "code":
            cells.append(nbformat.v4.new_code_cell(cell.source))
        else:
            cells.append(nbformat.v4.new_markdown_cell(cell.source))
    return _new_notebook(cells)


def _starter_source(module: str) -> str:
    return (ROOT / "src" / "qkv" / "exercises" / "starters" / f"{module}.py").read_text(encoding="utf-8")


def exercise_notebook(
    name: str, repo: str | None = None, install: install_line.Install | None = None
) -> nbformat.NotebookNode:
    """The starter of exercise ``name`` as a notebook, ending with the check.

    Its first code cell installs the qkv release the site was checked with
    (``install``: read from the installed package if not given).
    """
    repo = repo or repository_url()
    install = _install_of(install)
    module, title, chapter = EXERCISES[name]
    source = _starter_source(module)
    tree = ast.parse(source)
    intro = ast.get_docstring(tree) or ""
    intro = intro.split("\n\n", 1)[1] if "\n\n" in intro else intro
    functions = [node for node in tree.body if isinstance(node, ast.FunctionDef)]
    imports = [
        ast.get_source_segment(source, node) for node in tree.body if isinstance(node, ast.Import | ast.ImportFrom)
    ]
    cells = [
        nbformat.v4.new_markdown_cell(
            f"# {title}\n\n"
            f"[Open in Colab]({colab_url(name, repo)}) (its first cell runs "
            f"`{install.pip}`). The chapter behind it: {chapter}.\n\n"
            "Write each function in the cell under its heading, then run the last "
            "cell: it calls your functions on small inputs, compares them with the "
            "reference implementation in `qkv`, and names the classic mistakes it "
            "recognises. Until you write them, the functions raise "
            "`NotImplementedError` and the check says so.\n\n"
            "From a terminal the same check is "
            f"`qkv-exercise check {name} your_file.py`."
        ),
        nbformat.v4.new_code_cell(install.notebook_cell()),
    ]
    if imports:  # exercise 3's starter imports nothing
        cells.append(nbformat.v4.new_code_cell("\n".join(imports)))
    for function in functions:
        # Plain text: a heading that is only code gets an empty table-of-contents link.
        cells.append(nbformat.v4.new_markdown_cell(f"## Write {function.name}"))
        cells.append(nbformat.v4.new_code_cell(ast.get_source_segment(source, function)))
    cells.append(nbformat.v4.new_markdown_cell("## Check your work"))
    cells.append(nbformat.v4.new_code_cell(f'from qkv.exercises import check\n\nreport = check("{name}", globals())'))
    return _new_notebook(cells)


def write_exercise_notebooks() -> list[Path]:
    EXERCISES_DIR.mkdir(exist_ok=True)
    written = []
    for name in EXERCISES:
        path = EXERCISES_DIR / f"{name}.ipynb"
        path.write_text(nbformat.writes(exercise_notebook(name)) + "\n", encoding="utf-8")
        written.append(path)
    return written


if __name__ == "__main__":
    for path in write_exercise_notebooks():
        print(f"wrote {path.relative_to(ROOT)}")
