"""How to run the snippets: the line under each title, the notebooks' install
cell and the footer all name the installed qkv, whose version's one home is
pyproject.toml (docs/hooks/install_line.py)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from mkdocs.exceptions import PluginError

import hooks  # docs/hooks, on pytest's pythonpath
import install_line
import notebooks

ROOT = Path(__file__).resolve().parent.parent
VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]
CHAPTERS = sorted(p.relative_to(ROOT / "docs").as_posix() for p in (ROOT / "docs" / "chapters").glob("*.md"))


def test_the_line_names_the_version_in_pyproject_and_what_it_needs():
    line = install_line.read().markdown()
    assert f"`pip install qkv=={VERSION}`" in line
    assert "needs Python 3.11+" in line and "`numpy>=1.26,<3`" in line
    assert re.search(r"Checked with Python \d+\.\d+\.\d+ and NumPy \d+\.\d+", line), line


def test_a_stale_install_fails_the_build(tmp_path):
    # Planted: pyproject.toml moved on (a version bump) but the installed
    # metadata, which the pages read, did not.
    pyproject = tmp_path / "pyproject.toml"
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    pyproject.write_text(text.replace(f'version = "{VERSION}"', 'version = "9.9.9"', 1), encoding="utf-8")
    with pytest.raises(install_line.StaleInstall) as caught:
        install_line.read(pyproject)
    assert str(caught.value) == (
        f"installed qkv says version '{VERSION}' but pyproject.toml says '9.9.9': "
        "run `make install` (the site takes these from the installed package)"
    )


def test_a_missing_install_fails_the_build():
    with pytest.raises(install_line.StaleInstall, match="qkv-not-there is not installed: run `make install`"):
        install_line.read(dist="qkv-not-there")


@pytest.fixture
def install():
    hooks._INSTALL[:] = [install_line.read()]
    return hooks._INSTALL[0]


@pytest.mark.parametrize("src_uri", ["index.md", *CHAPTERS])
def test_home_and_every_chapter_get_one_line_under_the_title(src_uri, install):
    source = (ROOT / "docs" / src_uri).read_text(encoding="utf-8")
    assert "pip install qkv" not in source  # one template, not copied into pages
    page = hooks.under_title(source, src_uri)
    lines = page.splitlines()
    title = next(i for i, line in enumerate(lines) if line.startswith("# "))
    assert lines[title + 2] == install.markdown()
    assert page.count("pip install qkv==") == 1


def test_other_pages_get_no_line(install):
    source = (ROOT / "docs" / "verification.md").read_text(encoding="utf-8")
    assert hooks.under_title(source, "verification.md") == source


def test_a_page_without_a_title_is_named(install):
    with pytest.raises(PluginError, match=r"docs/chapters/untitled\.md: no '# ' title to put the install line under"):
        hooks.under_title("No title here.\n", "chapters/untitled.md")


def test_notebooks_install_the_same_version(install):
    cell = install.notebook_cell()
    assert f'"install -q qkv=={VERSION}"' in cell
    chapter = notebooks.chapter_notebook("# T\n\n```python\nprint(1)\n```\n", install=install)
    assert chapter.cells[0].source == cell
    for name in notebooks.EXERCISES:
        exercise = notebooks.exercise_notebook(name, install=install)
        assert exercise.cells[1].source == cell
        assert f"`pip install qkv=={VERSION}`" in exercise.cells[0].source


@pytest.mark.build
def test_built_pages_and_footer_show_the_version(built_site):
    for page in ["index.html", *(c[:-3] + "/index.html" for c in CHAPTERS)]:
        html = (built_site / page).read_text(encoding="utf-8")
        assert html.count('<p class="qkv-install">') == 1, page
        assert f"<code>pip install qkv=={VERSION}</code>" in html, page
    for page in built_site.rglob("*.html"):
        if "search" not in page.parts:
            html = page.read_text(encoding="utf-8")
            if "md-copyright" in html:
                assert f"<code>qkv {VERSION}</code>" in html, page
