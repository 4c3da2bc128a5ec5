"""The strict build itself, and what it must not contain."""

from __future__ import annotations

import re
from pathlib import Path

import parts  # docs/hooks, on pytest's pythonpath
from site_sweep import docs_pages, site_pages, unswept_pages  # tests/support

ROOT = Path(__file__).resolve().parent.parent
# Anything the browser would fetch on load: scripts, styles, images, fonts, frames.
REMOTE_LOAD = re.compile(
    r"""<(?:script|img|iframe|source|audio|video)\b[^>]*\ssrc=["'](?:https?:)?//"""
    r"""|<link\b[^>]*\brel=["'](?:stylesheet|preload|preconnect|icon|modulepreload)["'][^>]*href=["'](?:https?:)?//"""
    r"""|<script\b[^>]*\ssrc=["']["']"""
    r"""|import\(\s*["'](?:https?:)?//"""
    r"""|@import\s+url\(["']?(?:https?:)?//|url\(["']?https?://""",
    re.IGNORECASE,
)


def test_strict_build_succeeds(built_site):
    assert (built_site / "index.html").is_file()
    assert (built_site / "figures" / "pe-heatmap.svg").is_file()


def test_the_browser_sweep_covers_every_built_page(built_site):
    """The browser tests are parametrised by docs_pages(), known before the
    build; the build must make exactly those pages."""
    problems = unswept_pages(site_pages(built_site), docs_pages())
    assert not problems, "\n".join(problems)


def test_a_page_the_sweep_would_miss_is_named(tmp_path):
    docs, site = tmp_path / "docs", tmp_path / "site"
    for name in [
        "index.md",
        "chapters/a.md",
        "chapters/a.py",
        "hooks/h.py",
        "overrides/main.md",
        "notebooks/n.py",
        "exercises/e.ipynb",
    ]:
        (docs / name).parent.mkdir(parents=True, exist_ok=True)
        (docs / name).write_text("x")
    swept = docs_pages(docs)
    assert swept == ["", "chapters/a/", "exercises/e/", "notebooks/n/"]
    for page in [*swept, "extra/"]:
        (site / page).mkdir(parents=True, exist_ok=True)
        (site / page / "index.html").write_text("x")
    assert unswept_pages(site_pages(site), swept) == ["/extra/: built but not swept (docs_pages() does not list it)"]
    assert unswept_pages(swept[:-1], swept) == ["/notebooks/n/: swept but not built"]


def test_no_page_loads_anything_from_another_host(built_site):
    offenders = []
    for path in list(built_site.rglob("*.html")) + list(built_site.rglob("*.css")):
        if "search" in path.parts:
            continue
        for match in REMOTE_LOAD.finditer(path.read_text(encoding="utf-8", errors="replace")):
            offenders.append(f"{path.relative_to(built_site)}: {match.group(0)[:120]}")
    assert not offenders, "\n".join(offenders)


def test_no_tex_left_unconverted(built_site):
    for path in built_site.rglob("*.html"):
        text = path.read_text(encoding="utf-8")
        assert 'class="arithmatex"' not in text, f"{path}: math left for a JavaScript renderer"


#: What a formula left as TeX, or MathML flattened to text, looks like where only text is shown.
TEX_AS_TEXT = re.compile(r"\\[()\[\]]|\$|\\(?:text|frac|sqrt|top|cdot)|<math")


def _text_titles(built_site: Path) -> list[tuple[str, str]]:
    """(where, text) of everything a reader sees as plain text naming a
    heading: tab titles, table-of-contents links, search-index titles."""
    import json

    found = []
    for path in built_site.rglob("index.html"):
        text = path.read_text(encoding="utf-8")
        where = path.relative_to(built_site).as_posix()
        found += [(f"{where} <title>", t) for t in re.findall(r"<title>(.*?)</title>", text, re.DOTALL)]
        link = r'class="md-nav__link[^"]*"[^>]*>\s*<span class="md-ellipsis">\s*(.*?)\s*</span>'
        found += [(f"{where} navigation", title) for title in re.findall(link, text, re.S)]
    index = json.loads((built_site / "search" / "search_index.json").read_text(encoding="utf-8"))
    found += [(f"search index {doc['location']}", doc["title"]) for doc in index["docs"]]
    return found


def test_headings_show_no_tex_in_the_toc_the_tab_title_or_search(built_site):
    """A formula in a heading becomes text (the glossary's "Model width, $d_{\\text{model}}$" is
    "Model width, d_model"), never TeX or flattened MathML ('dmodel', 'O(L2d)')."""
    titles = _text_titles(built_site)
    assert any(text == "Model width, d_model" for where, text in titles if where.startswith("search index")), titles[:5]
    bad = [f"{where}: {text!r}" for where, text in titles if TEX_AS_TEXT.search(text) or "dmodel" in text]
    assert not bad, "\n".join(bad)


def test_a_heading_formula_becomes_text():
    import hooks

    assert hooks.tex_as_text(r"O(L^2 d)") == "O(L² d)"
    assert hooks.tex_as_text(r"d_{\text{model}}") == "d_model"
    assert hooks.tex_as_text(r"\sqrt{d_k}") == "√d_k"
    assert hooks.tex_as_text(r"Q K^\top") == "Q Kᵀ"
    html = '<h3 id="x">Why attention costs <span class="arithmatex">\\(O(L^2 d)\\)</span></h3>'
    assert hooks._headings_as_text(html) == '<h3 id="x">Why attention costs O(L² d)</h3>'
    assert TEX_AS_TEXT.search("Why attention costs \\(O(L^2 d)\\)")  # the planted fault: what the TOC showed


def test_figures_are_byte_stable(built_site):
    """Each figure drawn again equals the one the build wrote (the build is the
    first drawing: two builds give the same bytes)."""
    for page in parts.load().values():
        for fig in page.figures.values():
            built, again = (built_site / fig.path).read_text(encoding="utf-8"), fig.svg()
            assert built == again, f"{fig.path} changes from one build to the next"
            assert "<svg" in again


def serve_watch_problems(mkdocs_yml: str) -> list[str]:
    """What keeps ``make serve`` from rebuilding on edits to the library.

    ``mkdocs serve`` watches docs/ (pages, companion modules, build hooks);
    figures, values and widget data are computed from src/qkv, so mkdocs.yml
    must list it under ``watch:`` too.
    """
    import yaml

    class Loader(yaml.SafeLoader):
        pass

    # mkdocs.yml names Python objects (!!python/name:...); their values do not matter here.
    Loader.add_multi_constructor("tag:yaml.org,2002:python/", lambda loader, suffix, node: None)
    watched = [str(path).rstrip("/") for path in yaml.load(mkdocs_yml, Loader=Loader).get("watch") or []]
    if "src/qkv" not in watched:
        return [f"mkdocs.yml: watch: lists {watched}; add `- src/qkv` so that make serve rebuilds on library edits"]
    return []


def test_make_serve_rebuilds_on_edits_to_the_library():
    assert "mkdocs serve" in (ROOT / "Makefile").read_text()
    assert serve_watch_problems((ROOT / "mkdocs.yml").read_text()) == []


def test_a_mkdocs_yml_without_the_library_watched_is_reported():
    planted = (ROOT / "mkdocs.yml").read_text().replace("watch:\n  - src/qkv\n", "watch:\n  - docs/hooks\n")
    assert serve_watch_problems(planted) == [
        "mkdocs.yml: watch: lists ['docs/hooks']; add `- src/qkv` so that make serve rebuilds on library edits"
    ]


def test_search_shows_notebook_pages_without_prompts_buttons_or_second_copies(built_site):
    """Issue 25.6: results for notebook pages showed 'In [2]: Copied!' and each cell's code twice."""
    import json

    index = json.loads((built_site / "search" / "search_index.json").read_text(encoding="utf-8"))
    notebook_docs = [d for d in index["docs"] if d["location"].startswith(("exercises/", "notebooks/"))]
    assert notebook_docs
    problems = []
    for doc in notebook_docs:
        for junk in ("Copied!", "In\xa0[", "Out\xa0[", "¶"):
            if junk in doc["text"] or junk in doc["title"]:
                problems.append(f"{doc['location']}: {junk!r} in {doc['title']!r}")
    page = next(d for d in notebook_docs if d["location"] == "notebooks/first-look/")
    assert page["text"].count("import inspect") == 1, page["text"][:400]
    assert not problems, "\n".join(problems)


def test_a_notebook_pages_prompts_and_copy_buttons_are_kept_out_of_search():
    import hooks

    cell = (
        '<div class="jp-InputPrompt jp-InputArea-prompt">In&nbsp;[1]:</div>'
        '<div class="zeroclipboard-container"><span class="notice" hidden="">Copied!</span></div>'
        '<div class="clipboard-copy-txt" id="cell-1">import qkv</div><a class="anchor-link" href="#x">¶</a>'
    )
    marked = hooks._searchable_notebook(cell)
    assert marked.count("data-search-exclude") == 4, marked
    assert '<div class="jp-InputPrompt jp-InputArea-prompt" data-search-exclude>In&nbsp;[1]:</div>' in marked
