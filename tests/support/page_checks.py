"""Page-local checks that ``make check`` runs without a full build, each
problem as ``file:line: what to fix``:

* links and ``#anchors`` from the page to any page of ``docs/`` (the
  headings' ids from Python-Markdown with mkdocs.yml's extensions, as the
  build makes them);
* spelling (codespell, the project's word list) of the page and its
  companion module;
* ruff on the companion module;
* a chapter's notebook has at least MIN_CELLS code cells;
* the page's parts (figures, widgets, values) load: a mistake in the
  companion module is reported at its line, not as a traceback.

What needs the built site or a browser stays in ``make test`` (NOT_CHECKED).
"""

from __future__ import annotations

import functools
import importlib
import re
import subprocess
import sys
import traceback
from pathlib import Path
from urllib.parse import unquote, urlsplit

import yaml

ROOT = Path(__file__).resolve().parent.parent.parent
MIN_CELLS = 5
#: What only ``make test`` checks: printed at the end of every ``make check``.
NOT_CHECKED = (
    "not checked here (make test checks them): the strict build, links in the built HTML (theme, notebooks), "
    "the browser (loads, widgets, quizzes, axe, layout, length in phone screens), each block from the built "
    "wheel, the notebook run, and the other pages"
)

HREF = re.compile(r'\bhref="([^"]*)"')
ID = re.compile(r'\bid="([^"]*)"')


def _python_name(loader, suffix, node):
    module, _, name = suffix.rpartition(".")
    return getattr(importlib.import_module(module), name)


@functools.cache
def _extensions() -> tuple[list[str], dict]:
    """mkdocs.yml's markdown_extensions, as Python-Markdown takes them."""

    class Loader(yaml.SafeLoader):
        pass

    Loader.add_multi_constructor("tag:yaml.org,2002:python/name:", _python_name)
    config = yaml.load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"), Loader=Loader)
    names, configs = [], {}
    for entry in config.get("markdown_extensions", []):
        if isinstance(entry, dict):
            (name, options), *_ = entry.items()
            names.append(name)
            configs[name] = options or {}
        else:
            names.append(entry)
    return names, configs


@functools.cache
def render(path: Path) -> str:
    """A Markdown page as HTML, with the build's extensions (ids included)."""
    import markdown

    names, configs = _extensions()
    return markdown.Markdown(extensions=names, extension_configs=configs).convert(path.read_text(encoding="utf-8"))


def ids_of(path: Path) -> set[str]:
    return set(ID.findall(render(path)))


def _line_of(text: str, needle: str) -> int:
    for number, line in enumerate(text.splitlines(), 1):
        if needle in line:
            return number
    return 1


def docs_of(page: Path) -> Path:
    """The docs/ folder a page lies in (its nearest ancestor of that name)."""
    return next((p for p in page.resolve().parents if p.name == "docs"), page.resolve().parent)


def link_problems(page: Path, where: str) -> list[str]:
    """Every link from ``page`` to a page of its docs/ (or an anchor on it)
    that the build would not resolve."""
    docs = docs_of(page)
    text = page.read_text(encoding="utf-8")
    problems = []
    for href in dict.fromkeys(HREF.findall(render(page))):
        parts = urlsplit(href)
        if parts.scheme or parts.netloc or href.startswith(("mailto:", "data:")) or not href:
            continue
        target = (page.parent / unquote(parts.path)).resolve() if parts.path else page.resolve()
        needle = href if href in text else (parts.path or "#" + parts.fragment)
        at = f"{where}:{_line_of(text, needle)}"
        if not target.is_file():
            if not target.is_relative_to(docs) or not target.with_suffix(".md").is_file():
                problems.append(f"{at}: the link to {href} names no file of docs/ ({target.name} not found)")
                continue
            target = target.with_suffix(".md")
        if parts.fragment and target.suffix == ".md" and parts.fragment not in ids_of(target):
            headings = sorted(i for i in ids_of(target) if not i.startswith(("__", "fn", "qkv")))
            near = [i for i in headings if parts.fragment.split("-")[0] in i][:5] or headings[:5]
            problems.append(
                f"{at}: the link to {href} names no heading of {target.relative_to(docs.parent)} "
                f"(its ids include: {', '.join(near)})"
            )
    return problems


def _shown_as(output: str, paths: dict[Path, str]) -> str:
    """Tool output with each absolute path replaced by the name the user gave."""
    for path, name in paths.items():
        output = output.replace(str(path), name)
    return output


def codespell_findings(*paths: str | Path) -> list[str]:
    """codespell's findings in ``paths``, one ``file:line: word ==> fix`` each,
    with the project's word list: run from the repository root, so that it
    reads pyproject.toml's [tool.codespell], as on the command line."""
    names = {Path(path).resolve(): str(path) for path in paths}
    result = subprocess.run(
        [sys.executable, "-m", "codespell_lib", *map(str, names)], cwd=ROOT, capture_output=True, text=True
    )
    found = [line for line in _shown_as(result.stdout, names).splitlines() if line.strip()]
    if result.returncode not in (0, 65) or (result.returncode == 65) != bool(found):
        raise RuntimeError(f"codespell exited {result.returncode}:\n{result.stdout}{result.stderr}")
    return found


def spelling_problems(*paths: Path) -> list[str]:
    return [
        f"{line}; fix the word, or if it is right (a name), add it in lowercase to tests/support/spelling_words.txt"
        for line in codespell_findings(*paths)
    ]


def ruff_problems(module: Path) -> list[str]:
    """``ruff check`` and ``ruff format --check`` on one module (the project's rules)."""
    ruff, names = [sys.executable, "-m", "ruff"], {module.resolve(): str(module)}
    checked = subprocess.run(
        [*ruff, "check", "--output-format", "concise", "--quiet", str(module.resolve())],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    lines = _shown_as(checked.stdout, names).splitlines()
    problems = [line for line in lines if re.match(r"^\S+:\d+:\d+: ", line)]
    formatted = subprocess.run(
        [*ruff, "format", "--check", "--quiet", str(module.resolve())], cwd=ROOT, capture_output=True
    )
    if formatted.returncode == 1:
        problems.append(f"{module}:1: not formatted as ruff formats it; run `.venv/bin/ruff format {module}`")
    return problems


def parts_problems(page: Path, where: str) -> list[str]:
    """The page's parts must load and be used rightly: each mistake at its file:line."""
    import parts

    try:
        page_parts = parts.load_page(page)
        problems = parts.problems(page.read_text(encoding="utf-8"), page_parts, where)
        for value in page_parts.values.values():
            value()  # a value that raises is the companion module's problem, at its line (not a traceback)
        return problems
    except parts.PartsError as error:
        return str(error).splitlines()
    except Exception as error:  # noqa: BLE001 - any error in the companion module, shown at its line
        companion = parts.companion_of(page)
        frames = [f for f in traceback.extract_tb(error.__traceback__) if Path(f.filename) == companion.resolve()]
        line = frames[-1].lineno if frames else getattr(error, "lineno", None) or 1
        return [f"{where[:-3]}.py:{line}: the companion module raised {type(error).__name__}: {error}"]


def notebook_problems(page: Path, where: str) -> list[str]:
    """A chapter's notebook needs at least MIN_CELLS code cells, its install cell counted."""
    import notebooks
    import parts

    cells = notebooks.chapter_notebook(parts.expand_page(page)).cells
    code = [c for c in cells if c.cell_type == "code"]
    if len(code) >= MIN_CELLS:
        return []
    return [
        f"{where}:1: the chapter's notebook has {len(code)} code cells (its install cell counted); it needs at "
        f"least {MIN_CELLS}: top-level ```python blocks and those in Deeper boxes become cells, those in "
        "content tabs do not"
    ]
