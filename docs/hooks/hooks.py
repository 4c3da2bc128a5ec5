"""MkDocs hooks: a page's parts from the library, math as MathML, nothing off-site.

* ``on_config`` loads every page's parts (figures, widgets, build-time values
  declared in the companion module next to the page, see ``parts.py``),
  importing ``qkv`` and the companions afresh, so ``mkdocs serve`` picks up
  edits to ``src/qkv`` and to companions (``watch:`` in mkdocs.yml).
* ``on_files`` adds each figure's SVG and each widget's JSON as generated
  files, and turns every chapter into a downloadable notebook (``notebooks.py``).
* ``on_page_markdown`` expands ``<!-- qkv:figure name -->``,
  ``<!-- qkv:widget name -->`` and ``{{ name }}``; any misuse fails the build
  with ``file:line``.
* ``on_config`` also reads the installed qkv's version and requirements
  (``install_line.py``): the home page and every chapter get one line under
  the title saying how to run their code, and the footer shows the version.
* ``on_page_content`` turns TeX into MathML at build time (no math JavaScript,
  no web fonts: Chromium renders MathML Core natively). Markdown pages carry
  TeX from pymdownx.arithmatex; notebook pages carry ``$...$`` from nbconvert.
  Notebook pages also lose the CDN script tags nbconvert adds (MathJax,
  Mermaid) so that no page asks a third-party host for anything.
* A page whose front matter has ``sql_runner: true`` gets
  ``javascripts/sql-runner.js`` (Run buttons on its SQL blocks); the build
  copies sql.js (SQLite compiled to WebAssembly) from ``node_modules`` into
  ``javascripts/sqljs/``, so the browser never asks another host for it.
* Notebook pages are sanitised (``safety.sanitise_notebook``, nh3): no script
  or event handler from a notebook's cells or outputs reaches the page.
  Their inline JupyterLab CSS (over 500 KB) becomes one cached stylesheet
  (``notebook_css.py``), written by ``on_post_build``.
* Then every page's own content, as built (after Markdown, sanitising and
  math), is read with an HTML parser (``safety.page_code``): a script,
  ``<iframe>``, ``<object>``, ``<embed>``, ``on*=`` handler, ``javascript:``
  URL, or an attribute Material's scripts act on (``data-md-*``,
  ``data-clipboard-*``, ``data-copy``, ``id="__..."``) fails the build at the page's source
  line, unless its front matter says ``allow_inline_scripts: true`` (named in
  the build log). TeX copied into MathML is escaped (``mathml``), so a formula
  makes no markup; front matter, which the theme shows unescaped, holds no
  ``<``, ``>`` or ``"`` in any value or key however nested, and no bytes
  (``!!binary``); ``title`` and the other keys the theme prints are strings. The front-matter switches (``sql_runner``, ``csp_wasm``,
  ``allow_inline_scripts``) are YAML booleans; ``sql_runner: true`` needs a
  SQL runner block on the page.
* ``on_post_page`` (and ``on_post_template`` for 404.html) gives each page its
  Content-Security-Policy ``<meta>`` (``safety.with_csp``: the hashes of its
  inline scripts; ``'wasm-unsafe-eval'`` only with ``csp_wasm: true`` in the
  front matter) and fails the build on any third-party resource load in it,
  as ``docs/<page>:<line>`` (where the URL is in the source) and ``<built
  file>:<line>``; ``on_post_build`` checks every other HTML, CSS
  and SVG file of the site the same way.
* Before the build's own math (``_check_authored``), whatever the front
  matter says: no bidirectional control character in a page's source or
  content, no ``<bdo>`` or ``dir=``, no MathML written by hand
  (``safety.bidi_in_source``, ``safety.authored_markup``).
* ``on_files`` refuses a Markdown page under another suffix than ``.md``, a
  notebook page outside ``notebooks.NOTEBOOK_PAGES`` and a file under
  ``docs/`` of a suffix not in ``safety.DOCS_SUFFIXES`` (``docs_files_problems``).
* Files under ``docs/`` that are not pages are copied as they are, so
  ``on_post_build`` also refuses a script, handler or ``javascript:`` URL in
  every other HTML, SVG or XML file of the site (``safety.static_file_code``,
  as ``docs/<file>:<line>``) and gives such HTML files the policy ``<meta>``.
"""

from __future__ import annotations

import datetime
import html
import logging
import re
import sys
from pathlib import Path, PurePosixPath
from xml.etree.ElementTree import tostring

from latex2mathml.converter import convert_to_element as tex_to_element
from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File
from mkdocs.utils import get_relative_url

sys.path.insert(0, str(Path(__file__).parent))

import install_line  # noqa: E402
import notebook_css  # noqa: E402
import notebooks  # noqa: E402
import parts  # noqa: E402
import safety  # noqa: E402

log = logging.getLogger("mkdocs.plugins.qkv")

_ARITHMATEX = re.compile(
    r'<(?P<tag>span|div) class="arithmatex">\s*'
    r"(?:\\\((?P<inline>.*?)\\\)|\\\[(?P<block>.*?)\\\])"
    r"\s*</(?P=tag)>",
    re.DOTALL,
)
# Regions of notebook HTML where a dollar sign is not math.
_VERBATIM = re.compile(r"(<pre\b.*?</pre>|<code\b.*?</code>|<script\b.*?</script>|<style\b.*?</style>)", re.DOTALL)
_DISPLAY_DOLLARS = re.compile(r"\$\$(.+?)\$\$", re.DOTALL)
_INLINE_DOLLARS = re.compile(r"(?<![\\$])\$(?!\s)([^$\n]+?)(?<!\s)\$(?!\$)")
_SCRIPT = re.compile(r"<script\b(?P<attrs>[^>]*)>(?P<body>.*?)</script>", re.DOTALL | re.IGNORECASE)
_EMPTY_OR_REMOTE_SRC = re.compile(r"""\ssrc=["'](?:(?:https?:)?//[^"']*)?["']""", re.IGNORECASE)


#: A character reference latex2mathml writes into an element's text (``&#x000A0;``).
_CHARACTER_REFERENCE = re.compile(r"&amp;(#(?:x[0-9a-fA-F]+|[0-9]+);)")


def mathml(tex: str, *, display: bool) -> str:
    """MathML for one TeX formula; a formula that cannot convert fails the build.

    Text the formula copies (``\\text{...}``) is escaped: ``<mtext>`` is an
    HTML integration point, so a ``<script>`` in it would run. latex2mathml's
    own ``convert`` un-escapes its whole output; here only the character
    references it writes itself are kept, and those are text.

    >>> mathml(r"\\text{<b>x</b> & y}", display=False)
    '<math xmlns="http://www.w3.org/1998/Math/MathML" display="inline"><mrow><mtext>&lt;b&gt;x&lt;/b&gt;&#x000A0;&amp;&#x000A0;y</mtext></mrow></math>'
    """
    try:
        element = tex_to_element(tex.strip(), display="block" if display else "inline")
    except Exception as error:  # latex2mathml raises several types
        raise ValueError(f"cannot convert TeX to MathML: {tex!r}: {error}") from error
    converted = _CHARACTER_REFERENCE.sub(r"&\1", tostring(element, encoding="unicode"))
    if display:
        # A wide formula scrolls inside this box instead of widening the page
        # on a phone; tabindex lets keyboard users scroll it too.
        return f'<div class="qkv-math" tabindex="0">{converted}</div>'
    return converted


def _arithmatex_to_mathml(content: str) -> str:
    def replace(match: re.Match[str]) -> str:
        if match["inline"] is not None:
            return mathml(html.unescape(match["inline"]), display=False)
        return mathml(html.unescape(match["block"]), display=True)

    return _ARITHMATEX.sub(replace, content)


def _dollars_to_mathml(content: str) -> str:
    parts = _VERBATIM.split(content)
    for index in range(0, len(parts), 2):  # even parts are outside verbatim regions
        text = _DISPLAY_DOLLARS.sub(lambda m: mathml(html.unescape(m[1]), display=True), parts[index])
        parts[index] = _INLINE_DOLLARS.sub(lambda m: mathml(html.unescape(m[1]), display=False), text)
    return "".join(parts)


def _drop_offsite_scripts(content: str) -> str:
    """Remove nbconvert's MathJax and Mermaid loaders (CDN URLs or empty src)."""

    def keep(match: re.Match[str]) -> str:
        attrs, body = match["attrs"], match["body"]
        offsite = _EMPTY_OR_REMOTE_SRC.search(attrs) or "x-mathjax-config" in attrs or "https://" in body
        return "" if offsite else match.group(0)

    return _SCRIPT.sub(keep, content)


def _is_notebook(page) -> bool:
    """Pages rendered by mkdocs-jupyter (see its include: in mkdocs.yml)."""
    src = page.file.src_uri
    return src.endswith(".ipynb") or (src.startswith("notebooks/") and src.endswith(".py"))


_PARTS: dict[str, parts.PageParts] = {}

#: sql.js, installed by ``npm ci`` (package-lock.json), and where the site serves it.
SQLJS_DIST = Path(__file__).resolve().parents[2] / "node_modules" / "sql.js" / "dist"
SQLJS_FILES = ("sql-wasm.js", "sql-wasm.wasm")
SQLJS_SITE_DIR = "javascripts/sqljs"
SQL_RUNNER = "javascripts/sql-runner.js"


def sqljs_files(dist: Path = SQLJS_DIST) -> dict[str, Path]:
    """Site path -> file in node_modules for sql.js; PluginError if it is not installed."""
    missing = [name for name in SQLJS_FILES if not (dist / name).is_file()]
    if missing:
        raise PluginError(
            f"sql.js is not installed ({', '.join(missing)} missing in {dist}): run `npm ci` "
            "(package-lock.json pins it); the Run buttons of pages with sql_runner: true need it"
        )
    return {f"{SQLJS_SITE_DIR}/{name}": dist / name for name in SQLJS_FILES}


def runner_tag(page_url: str) -> str:
    """The script tag that loads sql-runner.js, relative to the page."""
    return f'<script src="{get_relative_url(SQL_RUNNER, page_url)}" defer></script>'


def _fresh_imports() -> None:
    """Forget qkv and the companions so that a rebuild imports them anew."""
    for name in list(sys.modules):
        if name == "qkv" or name.startswith(("qkv.", parts.COMPANION_PREFIX)):
            del sys.modules[name]


_INSTALL: list[install_line.Install] = []


def on_config(config):
    _fresh_imports()
    try:
        _PARTS.clear()
        _PARTS.update(parts.load(Path(config.docs_dir)))
        _INSTALL[:] = [install_line.read()]
    except (parts.PartsError, install_line.StaleInstall) as error:
        raise PluginError(str(error)) from None
    # The footer (overrides/partials/copyright.html) shows the version.
    config.extra["qkv_version"] = _INSTALL[0].version
    return config


def docs_files_problems(files, config) -> list[str]:
    """What under docs/ the build refuses (security re-review 6b, T3 and T4): a
    Markdown page under another suffix than ``.md`` or a file of a suffix not
    in ``safety.DOCS_SUFFIXES`` (``safety.docs_file_problem``), and a notebook
    page (as mkdocs-jupyter's ``include`` decides) outside the places the tests
    read (``notebooks.NOTEBOOK_PAGES``)."""
    jupyter = config.plugins.get("mkdocs-jupyter")
    docs = Path(config.docs_dir).resolve()
    problems = []
    for file in files:
        if file.generated_by or not file.abs_src_path or file.inclusion.is_excluded():
            continue
        if not Path(file.abs_src_path).resolve().is_relative_to(docs):
            continue  # the theme's own files
        if problem := safety.docs_file_problem(file.src_uri):
            problems.append(problem)
        elif (
            notebooks.at_a_notebook_place(file.src_uri)
            and file.src_uri.endswith(".ipynb")
            and PurePosixPath(file.src_uri).stem not in notebooks.EXERCISES
        ):
            problems.append(
                f"docs/{file.src_uri}: an .ipynb page that notebooks.py does not generate: the build runs it again "
                "and shows fresh outputs, while the prose check reads the outputs stored in the file, which can say "
                "anything (security re-review 8b, W5): add it to notebooks.EXERCISES and generate it "
                "(python docs/hooks/notebooks.py), or write it as a percent notebook under docs/notebooks/"
            )
        elif jupyter is not None and jupyter.should_include(file) and not notebooks.at_a_notebook_place(file.src_uri):
            problems.append(
                f"docs/{file.src_uri}: a notebook page (mkdocs-jupyter's include, matched from the right) outside "
                f"the places the checks read ({', '.join('docs/' + p for p in notebooks.NOTEBOOK_PAGES)}), so its "
                "numbers would never be checked: move it to one of them"
            )
    return problems


def on_files(files, config):
    if problems := docs_files_problems(files, config):
        raise PluginError("\n".join(problems))
    _STATIC_SOURCES.clear()
    for file in files:
        if (
            file.abs_src_path
            and not file.is_documentation_page()
            and Path(file.src_uri).suffix in (safety.DOCUMENT_SUFFIXES)
        ):
            _STATIC_SOURCES[file.dest_uri] = f"docs/{file.src_uri}"
    for page in _PARTS.values():
        for fig in page.figures.values():
            files.append(File.generated(config, fig.path, content=fig.svg()))
        for widget in page.widgets.values():
            files.append(File.generated(config, widget.path, content=widget.json()))
    for site_path, source in sqljs_files().items():
        files.append(File.generated(config, site_path, abs_src_path=str(source)))
    for chapter in [f for f in files if _is_chapter(f.src_uri)]:
        source = Path(chapter.abs_src_path).read_text(encoding="utf-8")
        notebook = notebooks.nbformat.writes(
            notebooks.chapter_notebook(fill_parts(source, chapter.src_uri), install=_INSTALL[0])
        )
        files.append(File.generated(config, chapter.src_uri[:-3] + ".ipynb", content=notebook))
    return files


def _is_chapter(src_uri: str) -> bool:
    return src_uri.startswith("chapters/") and src_uri.endswith(".md")


def fill_parts(markdown: str, src_uri: str) -> str:
    """``markdown`` with its page's shortcodes and ``{{ name }}`` expanded."""
    page_parts = _PARTS.get(src_uri) or parts.PageParts(src_uri)
    try:
        return parts.expand(markdown, page_parts, f"docs/{src_uri}")
    except parts.PartsError as error:
        raise PluginError(str(error)) from None


def under_title(markdown: str, src_uri: str) -> str:
    """What goes under a page's title: how to run its code, the notebook link."""
    lines = ""
    if install_line.carries_line(src_uri):
        lines += "\n\n" + _INSTALL[0].markdown()
    if _is_chapter(src_uri):
        # The same chapter as a notebook, generated in on_files.
        name = src_uri.split("/")[-1][:-3]
        lines += f"\n\n[Download this chapter as a notebook]({name}.ipynb){{ download }}"
    if not lines:
        return markdown
    if not re.search(r"^# .+$", markdown, flags=re.MULTILINE):
        raise PluginError(f"docs/{src_uri}: no '# ' title to put the install line under")
    return re.sub(r"^(# .+)$", lambda m: m[1] + lines + "\n", markdown, count=1, flags=re.MULTILINE)


#: Front-matter switches: each is ``true`` or ``false`` (a YAML boolean) or absent.
FLAGS = ("sql_runner", "csp_wasm", safety.ALLOW_SCRIPTS)


def flag(page, name: str) -> bool:
    """The front-matter switch ``name`` of ``page``; anything but a YAML boolean fails the build
    (``csp_wasm: "no"`` would otherwise count as true)."""
    value = page.meta.get(name, False)
    if not isinstance(value, bool):
        raise PluginError(
            f"docs/{page.file.src_uri}: {name}: {value!r} in the front matter is not a YAML boolean; "
            f"write {name}: true, or leave it out"
        )
    return value


#: Front-matter keys the theme prints as text (``page.meta.<key>``, ``page.title``): each is a
#: string when present, since a mapping, list or bytes would print as its Python repr.
THEME_TEXT_KEYS = ("title", "description", "subtitle", "author", "status", "icon", "template")
#: What YAML's safe loader makes besides strings and containers; ``str()`` of them holds no markup.
_PLAIN_SCALARS = (bool, int, float, type(None), datetime.date)


def _front_matter_strings(value, key: str = ""):
    """(where, text) for every string in front matter, however nested: the
    values, the keys of every mapping (``!!omap`` and ``!!set`` included), the
    items of every list. Bytes (YAML's ``!!binary``) and any type YAML's safe
    loader does not make raise ValueError naming where.

    >>> list(_front_matter_strings({"title": "A", "hide": ["toc"], "extra": {"k": 1}}))
    [('title', 'title'), ('title', 'A'), ('hide', 'hide'), ('hide[0]', 'toc'), ('extra', 'extra'), \
('extra.k', 'k')]
    >>> list(_front_matter_strings({"title": b"<b>"}))
    Traceback (most recent call last):
    ...
    ValueError: title: b'<b>' is bytes (YAML's !!binary): front matter holds text
    """
    if isinstance(value, str):
        yield key, value
    elif isinstance(value, dict):
        for name, item in value.items():
            plain = isinstance(name, str) and re.fullmatch(r"[\w-]+", name)
            where = (f"{key}.{name}" if key else name) if plain else f"{key}[{name!r}]"
            yield from _front_matter_strings(name, where)
            yield from _front_matter_strings(item, where)
    elif isinstance(value, (list, tuple, set, frozenset)):
        for index, item in enumerate(value):
            yield from _front_matter_strings(item, f"{key}[{index}]")
    elif isinstance(value, (bytes, bytearray)):
        raise ValueError(f"{key}: {value[:60]!r} is bytes (YAML's !!binary): front matter holds text")
    elif not isinstance(value, _PLAIN_SCALARS):
        raise ValueError(f"{key}: {value!r} is a {type(value).__name__}, which front matter does not hold")


def check_front_matter(page) -> None:
    """Front matter the theme puts into the page as it is (``title`` into the
    header, the nav and ``<title>``, ``description`` into a ``<meta
    content="...">``) holds no markup: a ``<``, ``>`` or ``"`` in any value or
    key, however nested, fails the build, and so do bytes (``!!binary``). The
    keys the theme prints (``THEME_TEXT_KEYS``) are strings, not mappings or
    lists (whose Python repr would print). Each switch (``FLAGS``) is a YAML
    boolean."""
    where = f"docs/{page.file.src_uri}: front matter"
    for key in THEME_TEXT_KEYS:
        value = page.meta.get(key)
        if value is not None and not isinstance(value, (str, int, float)):
            kind = {dict: "a mapping", list: "a list", bytes: "bytes (YAML's !!binary)"}.get(type(value))
            raise PluginError(
                f"{where} {key}: {value!r} is {kind or 'a ' + type(value).__name__}; the theme prints {key} "
                "as text, so write it as a string"
            )
    try:
        strings = list(_front_matter_strings(page.meta))
    except ValueError as error:
        raise PluginError(f"{where} {error}") from None
    for key, value in strings:
        if re.search(r'[<>"]', value):
            raise PluginError(
                f"{where} {key}: {value!r}: the theme puts front-matter values "
                'into the page unescaped, so they hold no <, > or "'
            )
    for name in FLAGS:
        flag(page, name)


def on_page_markdown(markdown: str, page, config, files):
    where = f"docs/{page.file.src_uri}"
    check_front_matter(page)
    if flag(page, "csp_wasm") and not flag(page, "sql_runner"):
        raise PluginError(
            f"{where}: csp_wasm: true loosens the page's Content-Security-Policy for WebAssembly, which only "
            "the SQL runner uses; this page has no sql_runner: true, so remove csp_wasm"
        )
    markdown = fill_parts(markdown, page.file.src_uri)
    return under_title(markdown, page.file.src_uri)


_SUPERSCRIPTS = dict(zip("0123456789+-=()ni", "⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁼⁽⁾ⁿⁱ"))
_SYMBOLS = {"cdot": "·", "times": "×", "infty": "∞", "ldots": "…"}
_HEADING = re.compile(r"<h(?P<n>[1-6])\b(?P<attrs>[^>]*)>(?P<body>.*?)</h(?P=n)>", re.DOTALL)


def tex_as_text(tex: str) -> str:
    """A heading's formula as plain text, for the table of contents, the tab
    title and the search index, which show text, not MathML:
    ``O(L^2 d)`` -> ``O(L² d)``, ``d_{\text{model}}`` -> ``d_model``."""
    text = re.sub(r"\\(?:text|mathrm|mathit|operatorname)\{([^{}]*)\}", r"\1", tex)
    text = re.sub(r"\\sqrt\{([^{}]*)\}", r"√\1", text)
    text = re.sub(r"\^\{?\\top\}?", "ᵀ", text)
    text = re.sub(r"\\(cdot|times|infty|ldots)\b", lambda m: _SYMBOLS[m[1]], text)

    def superscript(match: re.Match[str]) -> str:
        body = match[1] or match[2]
        return "".join(_SUPERSCRIPTS[c] for c in body) if all(c in _SUPERSCRIPTS for c in body) else "^" + body

    text = re.sub(r"\^(?:\{([^{}]*)\}|(\w))", superscript, text)
    text = re.sub(r"_\{([^{}]*)\}", r"_\1", text)
    text = text.replace("{", "").replace("}", "").replace("\\", "")
    return re.sub(r"\s+", " ", text).strip()


def _headings_as_text(html_content: str) -> str:
    """Formulas in headings become text (the heading's anchor text feeds the
    table of contents and the search index)."""

    def heading(match: re.Match[str]) -> str:
        body = _ARITHMATEX.sub(
            lambda m: html.escape(tex_as_text(html.unescape(m["inline"] or m["block"]))), match["body"]
        )
        return f"<h{match['n']}{match['attrs']}>{body}</h{match['n']}>"

    return _HEADING.sub(heading, html_content)


def _toc_as_text(items) -> None:
    for item in items:
        # The title is HTML (the theme shows it as is): the formula's text is escaped.
        item.title = re.sub(
            r"\\\((.*?)\\\)", lambda m: html.escape(tex_as_text(html.unescape(m[1])), quote=False), item.title
        )
        _toc_as_text(item.children)


#: Parts of a notebook page a search result must not show: the "In [n]:"
#: prompts, the copy button ("Copied!"), the copy button's hidden second copy
#: of each cell's code, and the "¶" after each heading.
_NOT_SEARCHED = re.compile(
    r'<(?P<tag>div|a) class="(?P<cls>(?:jp-InputPrompt|jp-OutputPrompt|zeroclipboard-container|clipboard-copy-txt|'
    r'anchor-link)\b[^"]*)"'
)


def _searchable_notebook(html_content: str) -> str:
    """Mark what the search index must skip (Material's ``data-search-exclude``)."""
    return _NOT_SEARCHED.sub(lambda m: f'<{m["tag"]} class="{m["cls"]}" data-search-exclude', html_content)


def on_page_content(html_content: str, page, config, files):
    _toc_as_text(page.toc)
    html_content = _headings_as_text(html_content)
    if _is_notebook(page):
        try:
            source = Path(page.file.abs_src_path).read_text(encoding="utf-8") if page.file.abs_src_path else ""
            html_content = safety.sanitise_notebook(html_content, f"docs/{page.file.src_uri}", source)
            html_content, theme = notebook_css.shared_stylesheet(
                html_content, lambda path: get_relative_url(path, page.url), f"docs/{page.file.src_uri}"
            )
        except ValueError as error:
            raise PluginError(str(error)) from None
        _JUPYTER_THEMES.add(theme)
        html_content = _drop_offsite_scripts(html_content)
        _check_authored(html_content, page)
        html_content = _dollars_to_mathml(html_content)
        html_content = _searchable_notebook(html_content)
    else:
        _check_authored(html_content, page)
    html_content = _arithmatex_to_mathml(html_content)
    _check_own_content(html_content, page)
    return html_content


def _check_authored(html_content: str, page) -> None:
    """Before the build's own math: no bidirectional control in the page's
    source (fences, notebook cells and outputs included) or content, no
    ``<bdo>`` or ``dir=``, no MathML written by hand (``safety.authored_markup``).
    A page's front matter allows none of them (security re-review 6b, T1, T2)."""
    where = f"docs/{page.file.src_uri}"
    source = ""
    if page.file.abs_src_path:
        source = Path(page.file.abs_src_path).read_text(encoding="utf-8", errors="replace")
    problems = safety.bidi_in_source(source, where, json_escapes=where.endswith(".ipynb"))
    own = html_content
    if _is_notebook(page):  # nbconvert's template header is not the notebook's
        own = own[max(own.find(safety.NOTEBOOK_START), 0) :]
        problems += raw_cells(page.file.abs_src_path, where, source)
        if where.endswith(".py"):
            problems += not_percent(where, source)
    problems += safety.authored_markup(own, where, source)
    if problems:
        raise PluginError("\n".join(problems))


def notebook_cells(path: str | Path, source: str) -> list[tuple[str, list[tuple[int, str]]]]:
    """The cells a notebook page shows, read as mkdocs-jupyter reads them (``jupytext.read(path)``: the
    format a jupytext header declares, else the one jupytext guesses), the one home of that reading (the
    build's refusals and the prose check use it; security re-review 9b, X2, X3). Each cell as (cell type,
    [(line, text)]): its source's lines (a markdown cell's without the ``# `` jupytext removes), each at
    the line of ``source`` (the file) that holds it, searched in order; a line no file line holds (an empty
    one, one jupytext or JSON escaping changed) is given the line of the one before it in the cell, or of
    the cell's first line found: never dropped."""
    import json

    import jupytext

    lines = source.splitlines()
    cursor, cells = 0, []
    for cell in jupytext.read(str(path)).cells:
        located: list[int | None] = []
        for text in cell.source.splitlines():
            wanted = text.strip()
            escaped = json.dumps(wanted)[1:-1]
            found = None
            if wanted:
                found = next((i for i in range(cursor, len(lines)) if wanted in lines[i] or escaped in lines[i]), None)
            if found is not None:
                cursor = found + 1
            located.append(found)
        first = next((i for i in located if i is not None), cursor)
        numbers, previous = [], first
        for index in located:
            previous = index if index is not None else previous
            numbers.append(previous + 1)
        cells.append((cell.cell_type, list(zip(numbers, cell.source.splitlines()))))
    return cells


def raw_cells(path: str, where: str, source: str) -> list[str]:
    """A notebook page's raw cells (``notebook_cells``): nbconvert shows a raw cell's text as HTML, which
    the prose check never reads (security re-review 8b, W4, W5). Each as ``<where>:<line>`` of its first line."""
    problems = []
    for kind, cell in notebook_cells(path, source):
        if kind == "raw":
            number, first = next(
                ((n, text.strip()) for n, text in cell if text.strip()), (cell[0][0] if cell else 1, "")
            )
            problems.append(
                f"{where}:{number}: a raw cell ({first[:40]!r}): nbconvert shows its text as HTML, which the "
                "prose check never reads: make it a markdown cell"
            )
    return problems


#: The two cell markers a percent notebook page may use, and what looks like any cell marker jupytext knows.
PERCENT_MARKERS = ("# %%", "# %% [markdown]")
_MARKER_LIKE = re.compile(r"^\s*#\s*(?:%%|In\[|<\w+cell>)")


def not_percent(where: str, source: str) -> list[str]:
    """A notebook page written in another form than the percent notebook the rules are written for
    (security re-review 9b, X2, X3): one jupytext reads in another format (a header declaring one, or
    no cell markers: jupytext's light format makes each comment paragraph a markdown cell), and each
    line that looks like a cell marker but is not exactly ``# %%`` or ``# %% [markdown]`` (``# %% title
    [markdown]``, ``# %%[markdown]``, ``#%%``, ``# In[1]:``, ``# <codecell>``: jupytext reads each its
    own way)."""
    from jupytext.formats import guess_format

    problems = []
    found = guess_format(source, ".py")[0]
    if found != "percent":
        problems.append(
            f"{where}:1: jupytext reads this notebook page in its {found!r} format (a jupytext header declares "
            "it, or there is no `# %%` cell marker), not as a percent notebook, the one form the rules for "
            "notebook pages are written for (security re-review 9b, X2): start each cell at a line `# %%` (code) "
            "or `# %% [markdown]` (markdown), with no jupytext header declaring another format"
        )
    for number, line in enumerate(source.splitlines(), 1):
        if _MARKER_LIKE.match(line) and line not in PERCENT_MARKERS:
            problems.append(
                f"{where}:{number}: {line.strip()[:40]!r} looks like a cell marker, which jupytext reads its own "
                "way (security re-review 9b, X3): the two forms allowed are exactly `# %%` (a code cell) and "
                "`# %% [markdown]` (a markdown cell)"
            )
    return problems


#: A block the SQL runner gives a Run button (sql-runner.js: ``div.qkv-sql``).
_SQL_RUNNER_BLOCK = re.compile(r"<div\b[^>]*\bclass=\"(?:[^\"]*\s)?qkv-sql(?:\s[^\"]*)?\"")


def _check_own_content(html_content: str, page) -> None:
    """The page's own content, as built (after Markdown, the notebook's
    sanitising and math): no script, handler, ``javascript:`` URL or attribute
    the theme's scripts act on (``safety.page_code``), unless its front matter
    allows scripts, which the build log then says. A page that asks for the
    SQL runner has a block for it."""
    where = f"docs/{page.file.src_uri}"
    if flag(page, "sql_runner") and not _SQL_RUNNER_BLOCK.search(html_content):
        raise PluginError(
            f"{where}: sql_runner: true, but the page has no SQL block for it (a ```{{.sql .qkv-sql}} fence); "
            "the runner and the WebAssembly its csp_wasm allows would serve nothing: remove both, or add the block"
        )
    if flag(page, safety.ALLOW_SCRIPTS):
        log.info("%s: scripts of its own allowed by its front matter (%s: true)", where, safety.ALLOW_SCRIPTS)
        return
    own = html_content
    if _is_notebook(page):  # nbconvert's template header (its scripts, CSS) is not the notebook's
        own = own[max(own.find(safety.NOTEBOOK_START), 0) :]
    source = ""
    if page.file.abs_src_path:
        source = Path(page.file.abs_src_path).read_text(encoding="utf-8", errors="replace")
    if problems := safety.page_code(own, where, source):
        raise PluginError("\n".join(problems))


def with_sql_runner(output: str, page) -> str:
    """A page with ``sql_runner: true`` gets the script of its Run buttons."""
    if flag(page, "sql_runner"):
        tag = runner_tag(page.url)
        if "</body>" not in output:
            raise PluginError(f"docs/{page.file.src_uri}: no </body> to put the SQL runner script before")
        output = output.replace("</body>", tag + "\n</body>", 1)
    return output


def on_post_page(output: str, page, config):
    output = with_sql_runner(output, page)
    where = f"docs/{page.file.src_uri} -> {page.file.dest_uri}"
    # sql.js compiles SQLite's WebAssembly: the page says so (csp_wasm: true).
    output = _with_csp(output, where, wasm=flag(page, "csp_wasm"))
    problems = safety.third_party_loads(output, page.file.dest_uri)
    if problems and page.file.abs_src_path:
        source = Path(page.file.abs_src_path).read_text(encoding="utf-8", errors="replace")
        problems = safety.located_in_source(problems, f"docs/{page.file.src_uri}", source)
    _fail_on_third_party_loads(problems, where)
    _CHECKED.add(page.file.dest_uri)
    return output


#: Built files already checked for third-party loads in on_post_page.
_CHECKED: set[str] = set()


#: True under `mkdocs serve` (on_startup): its live-reload script is inline and
#: differs on every request, so no hash can allow it.
_SERVING: list[bool] = [False]


def on_startup(command, dirty):
    _SERVING[0] = command == "serve"


def _with_csp(output: str, where: str, *, wasm: bool) -> str:
    """The page with its Content-Security-Policy (sql.js needs WebAssembly: wasm)."""
    try:
        return safety.with_csp(output, where, wasm=wasm, live_reload=_SERVING[0])
    except ValueError as error:
        raise PluginError(str(error)) from None


def _fail_on_third_party_loads(problems: list[str], where: str) -> None:
    if problems:
        raise PluginError(
            f"{where}: loads resources from another host (the site loads nothing from "
            "another host; vendor the file or drop it):\n  " + "\n  ".join(problems)
        )


#: Built files copied from docs/ as they are (an .html demo, an .svg figure): site path -> docs/ path.
_STATIC_SOURCES: dict[str, str] = {}


def check_static_documents(site: Path) -> None:
    """Every built HTML, SVG or XML file that is not a page (what docs/ holds
    besides pages, the figures the hooks draw) runs no script: opened in its
    own tab it would run on the site's origin, and an SVG or XML file carries
    no Content-Security-Policy. A script, handler or ``javascript:`` URL
    fails the build as ``docs/<file>:<line>`` (``safety.static_file_code``),
    and so does, in an SVG or XML file, a CSS ``url()`` that is not one of
    its own ``#id`` or an ``href`` to another host (``safety.static_file_loads``).
    Each such HTML file then gets the pages' Content-Security-Policy."""
    problems: list[str] = []
    for path in sorted(site.rglob("*")):
        rel = path.relative_to(site).as_posix()
        if rel in _CHECKED or path.suffix.lower() not in safety.DOCUMENT_SUFFIXES or not path.is_file():
            continue
        data = path.read_bytes()
        if unreadable := safety.not_plain_utf8(data, _STATIC_SOURCES.get(rel, rel)):
            problems.append(unreadable)
            continue
        text = data.decode("utf-8")
        problems += safety.static_file_code(text, _STATIC_SOURCES.get(rel, rel))
        if path.suffix.lower() in safety.XML_SUFFIXES:  # no policy there: it names nothing elsewhere
            problems += safety.static_file_loads(text, _STATIC_SOURCES.get(rel, rel))
        if not problems and path.suffix.lower() in safety.HTML_SUFFIXES:
            path.write_text(_with_csp(text, _STATIC_SOURCES.get(rel, rel), wasm=False), encoding="utf-8")
    if problems:
        raise PluginError("\n".join(problems))


#: The JupyterLab themes the notebook pages link to (notebook_css.py), written by on_post_build.
_JUPYTER_THEMES: set[str] = set()


def on_pre_build(config):
    _CHECKED.clear()
    _JUPYTER_THEMES.clear()


def on_post_template(output: str, template_name: str, config):
    """404.html: the same policy and check as the pages."""
    if not template_name.endswith(".html"):
        return output
    output = _with_csp(output, template_name, wasm=False)
    _fail_on_third_party_loads(safety.third_party_loads(output, template_name), template_name)
    _CHECKED.add(template_name)
    return output


def on_post_build(config):
    """Write the notebook pages' JupyterLab stylesheet; refuse a script in any
    other built HTML, SVG or XML file and give such HTML the policy
    (``check_static_documents``); then check every other built file a page
    loads or is for third-party loads: HTML, CSS, SVG."""
    site = Path(config.site_dir)
    for theme in sorted(_JUPYTER_THEMES):
        path, css = notebook_css.stylesheet(theme)
        (site / path).parent.mkdir(parents=True, exist_ok=True)
        (site / path).write_text(css, encoding="utf-8")
    check_static_documents(site)
    problems: list[str] = []
    for path in sorted(site.rglob("*")):
        rel = path.relative_to(site).as_posix()
        if rel in _CHECKED or path.suffix not in {".html", ".css", ".svg"} or not path.is_file():
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        if path.suffix == ".css":
            problems += safety.css_file_loads(text, rel)
        else:
            problems += safety.third_party_loads(text, rel)
    _fail_on_third_party_loads(problems, config.site_dir)
