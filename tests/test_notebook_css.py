"""Notebook pages link one cached JupyterLab stylesheet instead of inlining it
(docs/hooks/notebook_css.py); a page whose inline CSS is not mkdocs-jupyter's
fails the build naming the page."""

from __future__ import annotations

from pathlib import Path

import pytest

import notebook_css  # docs/hooks, on pytest's pythonpath
from site_sweep import site_pages

INDEX, LIGHT, DARK = "/* index */\n.jp-Cell { color: red; }\n", ".jupyter-wrapper { --x: 1; }\n", "/* dark */\n"


@pytest.fixture
def assets(tmp_path) -> Path:
    """A stand-in for mkdocs-jupyter's assets folder, small enough to read."""
    for name, css in [("index.css", INDEX), ("theme-light.css", LIGHT), ("theme-dark.css", DARK)]:
        (tmp_path / name).write_text(css, encoding="utf-8")
    return tmp_path


def page(*blocks: str) -> str:
    # As nbconvert's resources.include_css writes each block.
    return "<p>head</p>\n" + "\n".join(f'<style type="text/css">\n{css}</style>' for css in blocks) + "\n<p>cells</p>"


def test_the_inline_blocks_become_one_link_to_index_then_theme(assets):
    html, theme = notebook_css.shared_stylesheet(page(INDEX, LIGHT), lambda p: "../../" + p, "docs/x.ipynb", assets)
    path, content = notebook_css.stylesheet(theme, assets)
    assert theme == "theme-light.css"
    assert html == f'<p>head</p>\n<link rel="stylesheet" href="../../{path}">\n\n<p>cells</p>'
    assert content == INDEX + "\n" + LIGHT  # the page's order: the theme's rules win ties
    assert path.startswith("assets/stylesheets/jupyter-light.") and path.endswith(".css")


def test_the_file_name_changes_with_its_content(assets):
    """A browser never keeps a stale copy after mkdocs-jupyter changes its CSS."""
    before, _ = notebook_css.stylesheet("theme-light.css", assets)
    (assets / "index.css").write_text(INDEX + ".jp-Cell { color: blue; }\n", encoding="utf-8")
    notebook_css._read.cache_clear()
    after, _ = notebook_css.stylesheet("theme-light.css", assets)
    assert before != after


@pytest.mark.parametrize(
    "html",
    [
        page(INDEX.replace("red", "blue"), LIGHT),  # mkdocs-jupyter changed index.css
        page(INDEX),  # no theme block
        page(INDEX, LIGHT, DARK),  # two themes
        page(INDEX, INDEX, LIGHT),  # index.css twice
        page(LIGHT),  # no index.css
    ],
    ids=["changed", "no theme", "two themes", "index twice", "no index"],
)
def test_a_page_without_mkdocs_jupyters_blocks_once_is_named(assets, html):
    with pytest.raises(
        ValueError, match=r"^docs/notebooks/x\.py: mkdocs-jupyter's inline stylesheet .* is not in the page once"
    ):
        notebook_css.shared_stylesheet(html, lambda p: p, "docs/notebooks/x.py", assets)


def test_built_notebook_pages_link_the_shared_stylesheet(built_site):
    index = (notebook_css.ASSETS / "index.css").read_text(encoding="utf-8")
    assert len(index.encode()) > 500_000  # what each notebook page no longer carries (notebook_css.py)
    notebook_pages = [p for p in site_pages(built_site) if p.startswith(("notebooks/", "exercises/"))]
    assert len(notebook_pages) >= 4, notebook_pages
    path, content = notebook_css.stylesheet("theme-light.css")
    assert (built_site / path).read_text(encoding="utf-8") == content
    for rel in site_pages(built_site):
        html = (built_site / rel / "index.html").read_text(encoding="utf-8")
        linked = f'href="{"../" * rel.count("/")}{path}"' in html
        assert linked == (rel in notebook_pages), f"/{rel}: links {path}: {linked}"
        assert index[:2000] not in html, f"/{rel}: JupyterLab's CSS is inline"
        if rel in notebook_pages:
            # Each carried index.css (over 500 KB) inline before.
            assert len(html) < 150_000, f"/{rel}: {len(html)} characters"
