"""Every page of the built site, in a real Chromium: it loads, math is
rendered, nothing is logged as an error, no request leaves 127.0.0.1, axe
finds nothing, and reading a chapter moves nothing.

The per-page checks assert on one load of each page per configuration
(palette x viewport, ``sweep`` in conftest.py, tests/support/site_sweep.py);
the tests that click, type or follow a link load their page themselves."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from needs import require
from site_sweep import (  # tests/support, on pytest's pythonpath
    AXE,
    AXE_RUN,
    COLOUR_RULES,
    CONFIGS,
    DOCS,
    MAX_SCREENS,
    SCHEMES,
    SCREEN_HEIGHT,
    WIDTHS,
    docs_pages,
    inject_axe,
    length_problems,
    open_page,
    reading_problems,
    render_deferred_blocks,
    serve,
)
from site_sweep import _search_index_without_documents as empty_search_index

pytestmark = pytest.mark.browser

#: Every page of the site (tests/test_site_build.py checks the build makes exactly these).
PAGES = docs_pages()
CHAPTERS = [p for p in PAGES if p.startswith("chapters/")]


def page_id(path: str) -> str:
    return path.rstrip("/") or "home"


@pytest.mark.parametrize("path", PAGES, ids=page_id)
@pytest.mark.parametrize("config", CONFIGS)
def test_every_page_loads_clean_offline(sweep, config, path):
    """No request leaves 127.0.0.1, nothing is logged as an error, no raw TeX,
    MathML laid out, no sideways overflow."""
    found = sweep.findings(path, config)
    problems = list(found.problems)
    if found.raw_tex:
        problems.append(f"raw TeX left in the text: {found.raw_tex}")
    if found.has_math:
        sizes = found.math_widths
        if not sizes or min(sizes) <= 0:
            problems.append(f"MathML not laid out (widths {sizes})")
    if found.overflow > 0:
        problems.append(f"page is {found.overflow}px wider than the {WIDTHS[config.split('-')[1]]}px viewport")
    failures = [f"/{path}: {p}" for p in problems]
    assert not failures, "\n".join(failures)


def test_a_request_to_another_host_is_named_and_not_sent(browser, tmp_path):
    """The offline guard of every sweep load (site_sweep.open_page), planted:
    a page that fetches from another host. Local, data: and blob: requests pass."""
    from site_sweep import SUB_PATH, SubPathHandler, serve

    (tmp_path / "index.html").write_text(
        '<html data-qkv-measured><body><img src="local.svg" alt="">'
        '<img src="http://example.invalid/tracker.png" alt="">'
        '<img src="data:image/gif;base64,R0lGODlhAQABAAAAACw=" alt=""></body></html>'
    )
    (tmp_path / "local.svg").write_text('<svg xmlns="http://www.w3.org/2000/svg"/>')
    server = serve(SubPathHandler, tmp_path, SUB_PATH)
    page, context, problems = open_page(browser, next(server), scheme="light", width=390)
    context.close()
    server.close()
    assert problems == [
        "request to a third-party host: http://example.invalid/tracker.png",
        "console error: Failed to load resource: net::ERR_FAILED",  # the aborted request
    ]


@pytest.mark.parametrize("path", ["verification/", "notebooks/first-look/"])
def test_math_is_rendered_on_markdown_and_notebook_pages(sweep, path):
    found = sweep.findings(path, "light-desktop")
    count = found.math_count
    assert count >= 2, f"/{path}: expected rendered MathML, found {count} <math> elements"
    assert not found.problems, found.problems


def test_copy_buttons_on_code_not_on_output(browser, site_url):
    page, context, problems = open_page(browser, site_url + "verification/", scheme="light", width=1280)
    python_blocks = page.locator(".language-python")
    output_blocks = page.locator(".qkv-output")
    assert python_blocks.count() > 0 and output_blocks.count() > 0
    copy = "button.md-code__button[data-md-type=copy], button.md-clipboard"
    assert python_blocks.first.locator(copy).count() == 1
    assert output_blocks.locator(copy).count() == 0
    # An output block shows the printed text as it is, labelled "Output".
    assert output_blocks.first.inner_text().strip() == "[0.09, 0.2447, 0.6652]\n1.0"
    context.close()
    assert not problems, problems


def test_search_works_offline(browser, site_url):
    page, context, problems = open_page(browser, site_url, scheme="light", width=1280, search=True)
    page.click("label.md-search__icon, .md-search__input", timeout=5000)
    page.focus("input.md-search__input")
    page.keyboard.type("sybil", delay=30)  # a word that appears in prose
    page.wait_for_selector(".md-search-result__item", timeout=10000)
    assert page.locator(".md-search-result__item").count() > 0
    context.close()
    assert not problems, problems


class _RouteThatFails:
    """A Playwright route whose fetch raises ``message``, as a closed page's does."""

    def __init__(self, message: str) -> None:
        self.message = message

    def fetch(self):
        from playwright.sync_api import Error

        raise Error(self.message)


def test_a_search_index_request_whose_page_closed_is_dropped_and_other_errors_are_raised():
    # The handler runs in Playwright's event loop: an error it raises resurfaces
    # in the next test's first call. A page closed mid-request is no error.
    empty_search_index(_RouteThatFails("Route.fetch: Request context disposed."))
    empty_search_index(_RouteThatFails("Route.fetch: Target page, context or browser has been closed"))
    with pytest.raises(Exception, match="net::ERR_CONNECTION_REFUSED"):
        empty_search_index(_RouteThatFails("Route.fetch: net::ERR_CONNECTION_REFUSED"))


def test_copy_button_puts_runnable_code_on_the_clipboard(browser, site_url):
    """Click every copy button on the verification page: each copies exactly a block of the page's
    source, which test_copy_isolation runs alone from the wheel (so it runs as copied); the first
    copied block is also run here, end to end."""
    from page_blocks import read_page

    source = read_page((DOCS / "verification.md").read_text(encoding="utf-8"))
    blocks_in_source = {block.text.strip() for block in source.blocks if block.is_python and not block.is_doctest}
    # A session's copy is its input lines without the prompts: nothing else runs that as a script.
    sessions = {
        "\n".join(line[4:] for line in block.text.splitlines() if line.startswith((">>> ", "... "))).strip()
        for block in source.blocks
        if block.is_doctest
    }
    context = browser.new_context(permissions=["clipboard-read", "clipboard-write"])
    page = context.new_page()
    page.goto(site_url + "verification/", wait_until="load")
    blocks = page.locator(".language-python, .language-py, .language-pycon")
    count = blocks.count()
    assert count >= 5
    ran = 0
    for index in range(count):
        block = blocks.nth(index)
        title = block.locator(".filename").all_inner_texts()
        if any("(continued)" in t for t in title):
            continue  # runs only after its predecessor; test_copy_isolation covers it
        # A block in a content tab shows only once its tab is selected.
        block.evaluate(
            """el => {
                const tab = el.closest('.tabbed-block');
                if (!tab) return;
                const index = [...tab.parentElement.children].indexOf(tab);
                tab.closest('.tabbed-set').querySelectorAll(':scope > .tabbed-labels > label')[index].click();
            }"""
        )
        block.scroll_into_view_if_needed()
        block.hover()
        block.locator("button.md-code__button[data-md-type=copy]").click()
        copied = page.evaluate("navigator.clipboard.readText()")
        lines = copied.splitlines()
        assert copied.strip(), f"block {index}: nothing copied"
        assert not any(line.startswith((">>>", "...")) for line in lines), copied
        assert copied.strip() in blocks_in_source | sessions, (
            f"block {index} copied what the page's source does not hold:\n{copied}"
        )
        if not ran or copied.strip() in sessions:
            result = subprocess.run([sys.executable, "-c", copied], capture_output=True, text=True, cwd="/")
            assert result.returncode == 0, f"block {index} copied:\n{copied}\nfailed:\n{result.stderr}"
        ran += 1
    context.close()
    assert ran >= 5


@pytest.mark.parametrize("path", PAGES, ids=page_id)
@pytest.mark.parametrize("scheme", SCHEMES)
def test_axe_finds_no_accessibility_violations(sweep, scheme, path):
    require(AXE.is_file(), "axe-core is not installed; run `npm ci` (make install does)")
    found = sweep.findings(path, f"{scheme}-desktop")
    report = [f"/{path} [{scheme}]: {v}" for v in found.axe] + [f"/{path}: {p}" for p in found.axe_problems]
    assert not report, "\n".join(report)


def test_the_sweeps_dark_findings_come_from_the_dark_palette(browser, built_site, tmp_path):
    """The dark-desktop findings are taken in the light desktop load after the header's toggle
    (site_sweep.SAME_LOAD). Planted: a rule that makes paragraphs unreadable in the dark palette
    only. The light findings must not see it; the dark ones must, once the colour transitions end."""
    import shutil

    from site_sweep import SUB_PATH, SubPathHandler, Sweep, serve

    require(AXE.is_file(), "axe-core is not installed; run `npm ci` (make install does)")
    site = tmp_path / "site"
    shutil.copytree(built_site, site, copy_function=os.link)  # hard links: quick, and the build is untouched
    css = site / "stylesheets" / "qkv.css"
    planted = css.read_text(encoding="utf-8") + '\n[data-md-color-scheme="slate"] article p { color: #232533; }\n'
    css.unlink()  # a new file, not a write through the link
    css.write_text(planted, encoding="utf-8")
    server = serve(SubPathHandler, site, SUB_PATH)
    sweep = Sweep(browser, next(server), site, {})
    light, dark = sweep.findings("glossary/", "light-desktop"), sweep.findings("glossary/", "dark-desktop")
    server.close()
    assert sweep.loads == 1
    assert not [v for v in light.axe if v.startswith("color-contrast")], light.axe
    assert [v for v in dark.axe if v.startswith("color-contrast")], dark.axe


def test_the_dark_palettes_colour_rules_catch_text_the_dark_palette_makes_unreadable(browser, site_url):
    """The dark load runs only COLOUR_RULES (the rest repeat the light load's findings): planted, a
    paragraph in the dark palette's own background colour, and a link told from its text by colour alone."""
    page, context, _ = open_page(browser, site_url + "chapters/order/", scheme="dark", width=1280)
    page.evaluate(
        """() => {
        const p = document.querySelector('article p');
        p.style.color = getComputedStyle(document.body).backgroundColor;
        p.insertAdjacentHTML('afterend', '<p style="color:#777">Text, <a href="#" style="color:#787878;'
            + 'text-decoration:none">a link</a>, text.</p>');
    }"""
    )
    inject_axe(page)
    violations = page.evaluate(AXE_RUN, [None, COLOUR_RULES])
    context.close()
    assert {v.split(" ", 1)[0] for v in violations} == {"color-contrast", "link-in-text-block"}, violations


def test_palette_follows_the_system_and_the_toggle(browser, site_url):
    """Dark system preference gives the dark palette before any click; the
    toggle switches it and the choice survives a reload."""
    page, context, problems = open_page(browser, site_url, scheme="dark", width=1280)
    scheme = lambda: page.evaluate("document.body.getAttribute('data-md-color-scheme')")  # noqa: E731
    assert scheme() == "slate"
    page.locator("form[data-qkv-palette] label:not([hidden])").click()
    assert scheme() == "default"
    page.reload(wait_until="load")
    assert scheme() == "default"
    page.locator("form[data-qkv-palette] label:not([hidden])").click()
    assert scheme() == "slate"
    context.close()
    assert not problems, problems


DEEP_LINKS = [
    ("chapters/attention/", "common-confusions"),
    ("chapters/learning-attention/", "the-database-analogies"),
    ("chapters/sinusoidal/", "common-confusions"),
]


@pytest.mark.parametrize("width_name", list(WIDTHS))
def test_links_to_headings_land_on_the_heading(browser, site_url, width_name):
    """Blocks below the first screen are rendered late (content-visibility),
    so their height is a guess at first; a link to a heading far down the
    page must still end with that heading at the top of the window."""
    for path, anchor in DEEP_LINKS:
        page, context, problems = open_page(
            browser, f"{site_url}{path}#{anchor}", scheme="light", width=WIDTHS[width_name]
        )
        page.wait_for_timeout(300)  # let scroll anchoring settle
        top = page.evaluate(f"document.getElementById('{anchor}')?.getBoundingClientRect().top ?? null")
        assert top is not None, f"/{path} has no heading #{anchor} (renamed? update DEEP_LINKS)"
        header = page.evaluate("document.querySelector('.md-header').getBoundingClientRect().height")
        context.close()
        assert header - 1 <= top <= header + 40, f"/{path}#{anchor}: heading at {top}px (header {header}px)"
        assert not problems, problems


def test_blocks_below_the_first_screen_wait_until_the_reader_comes(browser, site_url):
    """The mechanism behind the performance budget, and its promises: a block
    far down is not rendered at load, is rendered once scrolled to, holds the
    place of its real height (to the pixel) before that, and a code block in
    it that scrolls sideways is focusable before that too."""
    page, context, problems = open_page(browser, site_url + "chapters/attention/", scheme="light", width=375)
    deferred = page.evaluate(
        """[...document.querySelectorAll('.md-content .md-typeset > *')]
            .filter(n => getComputedStyle(n).contentVisibility === 'auto').length"""
    )
    last = page.locator(".md-typeset > .highlight").last
    rendered = "el => el.querySelector('code span').checkVisibility({contentVisibilityAuto: true})"
    before = last.evaluate(rendered)
    wide_but_unrendered = page.evaluate(
        """[...document.querySelectorAll('.md-typeset > .highlight pre > code')]
            .filter(c => !c.firstElementChild.checkVisibility({contentVisibilityAuto: true}))
            .filter(c => c.scrollWidth > c.clientWidth + 1)
            .map(c => c.getAttribute('tabindex'))"""
    )
    placeholders = page.evaluate(
        """[...document.querySelectorAll('.md-content .md-typeset > *')]
            .filter(n => n.style.containIntrinsicSize)
            .map(n => [n.tagName + '.' + n.className, parseFloat(n.style.containIntrinsicSize.split(' ')[1])])"""
    )
    render_deferred_blocks(page)
    real = page.evaluate(
        """[...document.querySelectorAll('.md-content .md-typeset > *')]
            .filter(n => n.style.containIntrinsicSize)
            .map(n => n.getBoundingClientRect().height)"""
    )
    page.evaluate("document.querySelector('style:last-of-type').remove()")
    wrong = [
        (name, round(guess, 1), round(height, 1))
        for (name, guess), height in zip(placeholders, real)
        if abs(guess - height) > 1
    ]
    last.scroll_into_view_if_needed()
    page.wait_for_timeout(200)
    after = last.evaluate(rendered)
    context.close()
    # Most blocks now sit inside Deeper boxes (one deferred block each), so the
    # chapter has fewer top-level blocks than it had; 25 keeps the test from
    # passing on a page where deferral never started.
    assert deferred >= 25, f"only {deferred} blocks use content-visibility: auto"
    assert len(placeholders) == deferred, (len(placeholders), deferred)
    assert not wrong, f"{len(wrong)} of {deferred} placeholder heights differ from the rendered ones: {wrong[:5]}"
    assert before is False and after is True, (before, after)
    assert wide_but_unrendered and set(wide_but_unrendered) == {"0"}, wide_but_unrendered
    assert not problems, problems


@pytest.mark.parametrize("path", CHAPTERS, ids=page_id)
@pytest.mark.parametrize("width_name", list(WIDTHS))
def test_reading_a_chapter_top_to_bottom_moves_nothing(sweep, width_name, path):
    """Load each chapter and scroll through it a step at a time: blocks that
    are rendered only as they come near (content-visibility) must not shift
    what the reader sees (cumulative layout shift < 0.01), and once rendered
    every block must sit exactly where it would with nothing deferred."""
    found = sweep.findings(path, f"light-{width_name}")
    failures = reading_problems(found) + [f"/{path}: {p}" for p in found.problems]
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("path", CHAPTERS, ids=page_id)
def test_a_chapters_main_line_is_at_most_12_phone_screens(sweep, path):
    """The reader's path: with every Deeper box and quiz answer closed, a
    chapter is at most MAX_SCREENS screens of a 390 x 844 phone."""
    found = sweep.findings(path, "light-phone")
    assert found.height > SCREEN_HEIGHT, found.height  # measured, not a default
    failures = length_problems(found)
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("path", PAGES, ids=page_id)
def test_nothing_is_cut_at_the_right_edge_on_a_phone(sweep, path):
    """Issue 25.2: at 390 px, outside code and tables, nothing makes the reader scroll
    sideways inside it: outputs and widgets wrap, formulas are broken into lines."""
    found = sweep.findings(path, "light-phone")
    assert not found.clipped, "\n".join(f"/{path}: {what}" for what in found.clipped)


def test_an_element_cut_at_the_right_edge_is_named(browser):
    """The guard: the same check on a planted page with an output too wide for a phone."""
    from site_sweep import CLIPPED

    context = browser.new_context(viewport={"width": WIDTHS["phone"], "height": SCREEN_HEIGHT})
    page = context.new_page()
    wide = "x" * 120
    page.set_content(
        "<article><div class='qkv-output' style='white-space: pre; overflow-x: auto'>" + wide + "</div>"
        "<pre style='overflow-x: auto'>" + wide + "</pre></article>"
    )
    found = page.evaluate(CLIPPED)
    context.close()
    assert len(found) == 1 and re.match(r'div\.qkv-output is \d+ px wide in \d+ px: "xxxx', found[0]), found


def test_a_formula_cut_at_the_top_is_named(browser):
    """The guard for tall glyphs: with the site's qkv.css, a formula box made lower than
    its fraction is named, and the same formula as qkv.css lays it out is not (before
    its padding, the top of "pos" in chapter 3 was cut)."""
    from site_sweep import CLIPPED

    context = browser.new_context(viewport={"width": WIDTHS["phone"], "height": SCREEN_HEIGHT})
    page = context.new_page()
    fraction = "<math display='block'><mfrac><mi>pos</mi><msup><mn>10000</mn><mi>k</mi></msup></mfrac></math>"
    page.set_content(
        "<article><div class='qkv-math' style='height: 20px'>" + fraction + "</div>"
        "<div class='qkv-math'>" + fraction + "</div><p>inline <math><mfrac><mi>pos</mi><mn>2</mn></mfrac></math></p>"
        "</article>"
    )
    page.add_style_tag(path=str(DOCS / "stylesheets" / "qkv.css"))
    found = page.evaluate(CLIPPED)
    context.close()
    assert len(found) == 1 and re.match(r"div\.qkv-math is \d+ px tall in \d+ px \(its glyphs are cut", found[0]), found


@pytest.mark.parametrize("planted", [True, False], ids=["too-long", "fits"])
def test_a_chapter_over_its_screens_is_named_with_what_to_do(browser, planted):
    """The length check's guard: the same measurement as the sweep on a page
    one screen over the budget, and on one a screen under it."""
    from site_sweep import PageFindings, page_height

    screens = MAX_SCREENS + 1 if planted else MAX_SCREENS - 1
    context = browser.new_context(viewport={"width": WIDTHS["phone"], "height": SCREEN_HEIGHT})
    page = context.new_page()
    page.set_content(
        "<!doctype html><style>body { margin: 0 } p { margin: 0; height: 844px }</style>"
        + "<p>a screen</p>" * screens
        + "<details><summary>Deeper: a closed box</summary><p>not counted</p><p>nor this</p></details>"
    )
    found = PageFindings("planted/", "light-phone", height=page_height(page))
    context.close()
    problems = length_problems(found)
    assert screens * SCREEN_HEIGHT < found.height < (screens + 0.2) * SCREEN_HEIGHT, found.height  # box closed
    if planted:
        assert problems == [
            f"/planted/: the main line is 13.0 phone screens ({found.height} px at 390 px wide), over 12; move "
            "what a first reading may skip (caveats, regimes, cross-library quirks, method) into "
            '??? note "Deeper: ..." boxes'
        ], problems
    else:
        assert problems == [], problems


@pytest.mark.parametrize("path", PAGES, ids=page_id)
@pytest.mark.parametrize("width_name", list(WIDTHS))
def test_figure_text_is_at_least_10_px_on_screen(sweep, built_site, width_name, path):
    """Every text of every figure, at the width the page shows it on a phone
    and on a desktop, is at least 10 CSS px (tests/support/figure_text.py)."""
    from urllib.parse import urlsplit

    from figure_text import small_text

    found = sweep.findings(path, f"light-{width_name}")
    problems = []
    for src, shown in found.figures:
        local = built_site / urlsplit(src).path.removeprefix("/qkv/")
        if local.suffix == ".svg":
            problems += small_text(local.stem, local.read_text(encoding="utf-8"), shown, WIDTHS[width_name])
    assert not problems, "\n".join(f"/{path}: {p}" for p in problems)


def test_a_figure_with_small_text_is_named():
    """The figure check's guard: a planted figure with 7-unit text in a
    640-unit-wide figure, shown 358 px wide on a phone, is 3.9 px: named."""
    from figure_text import small_text

    svg = (
        '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 640 200" width="640pt"><g>'
        '<text style="font-size: 12px">title</text><text style="font-size: 7px">tiny tick</text></g></svg>'
    )
    assert small_text("planted", svg, 358, 390) == [
        "figure planted: 2 of its 2 texts render under 10 px at 390 px wide, the smallest 'tiny tick' at 3.9 px "
        "(font 7 in a figure 640 units wide, shown 358 px wide); draw it narrower or with larger fonts, or serve "
        "a narrow variant"
    ]
    assert small_text("planted", svg, 1280, 1280) == []  # the same figure shown 1280 px wide: 14 px
    assert small_text("planted", svg.replace("7px", "22px").replace("12px", "20px"), 358, 390) == []


NOTEBOOK_ON_A_PHONE = """() => {
    const problems = [];
    for (const prompt of document.querySelectorAll('.jupyter-wrapper .jp-InputPrompt, .jupyter-wrapper .jp-OutputPrompt')) {
        const width = prompt.getBoundingClientRect().width;
        if (width > 0) { problems.push(`a prompt column ${Math.round(width)} px wide: ${prompt.textContent.trim()}`); break; }
    }
    for (const out of document.querySelectorAll('.jupyter-wrapper .jp-OutputArea-output pre')) {
        const style = getComputedStyle(out);
        if (style.wordBreak === 'break-all' || style.whiteSpace === 'pre') {
            problems.push(`output breaks ${style.wordBreak === 'break-all' ? 'mid-word' : 'nowhere'}: word-break ${style.wordBreak}, white-space ${style.whiteSpace}`);
            break;
        }
    }
    return problems;
}"""


@pytest.mark.parametrize("planted", [False, True], ids=["site", "planted"])
def test_notebook_pages_on_a_phone_hide_the_prompt_column_and_wrap_words(browser, site_url, planted):
    """Issue 25.5 at 390 px: the In [n]: column is hidden and printed output wraps between words;
    planted: the page with the JupyterLab rules put back is named."""
    page, context, problems = open_page(
        browser, site_url + "exercises/input-layer/", scheme="light", width=WIDTHS["phone"]
    )
    if planted:
        page.add_style_tag(
            content=".jupyter-wrapper .jp-InputPrompt { display: block !important }"
            " .jupyter-wrapper .jp-OutputArea-output pre { word-break: break-all !important }"
        )
    found = page.evaluate(NOTEBOOK_ON_A_PHONE)
    context.close()
    if planted:
        assert len(found) == 2 and re.match(r"a prompt column \d+ px wide", found[0]), found
        assert found[1] == "output breaks mid-word: word-break break-all, white-space pre-wrap", found
    else:
        assert found == [] and not problems, found + problems


#: A long page whose block at paragraph 30 grows by 300 px once the reader has
#: it in the upper part of the window, pushing down what they are reading.
GROWING = """<!doctype html><meta name=viewport content="width=device-width">
<style>p {{ height: 120px; margin: 0 }}</style>
{paragraphs}<div id=grows style="height: 0"></div>{more}
<script>
new IntersectionObserver(([e]) => {{ if ({planted} && e.isIntersecting) e.target.style.height = '300px'; }},
  {{rootMargin: '0px 0px -60% 0px'}}).observe(document.getElementById('grows'));
</script>"""


@pytest.mark.parametrize("planted", [True, False], ids=["grows", "steady"])
def test_a_block_that_grows_as_the_reader_reaches_it_is_reported(browser, planted):
    """The reading check's guard: the same scroll and measurement as the
    sweep, on a page with a planted late-growing block, and on the same page
    without it (so the check is not always failing either)."""
    from site_sweep import LAYOUT_SHIFTS, PageFindings, scroll_like_a_reader

    context = browser.new_context(viewport={"width": 375, "height": 900})
    page = context.new_page()
    text = "".join(f"<p>paragraph {i}</p>" for i in range(30))
    html = GROWING.format(paragraphs=text, more=text, planted=str(planted).lower())
    page.set_content(html)
    scroll_like_a_reader(page)
    found = PageFindings("planted/", "light-phone", reading_shift=page.evaluate(LAYOUT_SHIFTS))
    at_bottom = page.evaluate("scrollY + innerHeight >= document.documentElement.scrollHeight - 1")
    context.close()
    assert at_bottom
    problems = reading_problems(found)
    if planted:
        assert len(problems) == 1 and problems[0].startswith("/planted/: cumulative layout shift 0."), problems
        assert problems[0].endswith(" while reading"), problems
    else:
        assert problems == [], problems


@pytest.mark.parametrize("planted", [True, False], ids=["misstated", "true"])
def test_a_scrollbar_that_misstates_the_length_is_reported(browser, planted):
    """The scrollbar check's guard, with the site's qkv.css and qkv.js: a page whose
    deferred blocks include closed boxes with long content (qkv.js once counted
    what they hide: a phone's scrollbar said 20 screens for 12), and the same page
    with one block's placeholder planted four times too tall after qkv.js measured."""
    from site_sweep import PageFindings, page_height

    context = browser.new_context(viewport={"width": WIDTHS["phone"], "height": SCREEN_HEIGHT})
    page = context.new_page()
    # Far enough down that the browser leaves the boxes unrendered until scrolled to.
    paragraphs = "".join(f"<p>paragraph {i}, a line or two of text to read.</p>" for i in range(80))
    box = "<details><summary>Deeper: a closed box</summary>" + "<p>hidden</p>" * 80 + "</details>"
    html = "<!doctype html><div class='md-content'><article class='md-typeset'>" + paragraphs + box * 4
    html += paragraphs + "</article></div>"
    # qkv.js finds the site's root from its own URL: served, not inlined.
    page.route("http://planted.test/chapters/**", lambda route: route.fulfill(content_type="text/html", body=html))
    page.route(
        "http://planted.test/javascripts/qkv.js", lambda route: route.fulfill(path=DOCS / "javascripts" / "qkv.js")
    )
    page.goto("http://planted.test/chapters/planted/")
    page.add_style_tag(path=str(DOCS / "stylesheets" / "qkv.css"))
    page.add_script_tag(url="http://planted.test/javascripts/qkv.js")
    page.wait_for_selector("html[data-qkv-measured]", state="attached", timeout=15000)
    if planted:
        page.evaluate(
            "const p = [...document.querySelectorAll('article > p')].at(-1);"
            "p.style.containIntrinsicSize = 'auto ' + 4 * innerHeight + 'px'"
        )
    first = page_height(page)
    render_deferred_blocks(page)
    found = PageFindings("planted/", "light-phone", first_height=first, height=page_height(page))
    context.close()
    problems = reading_problems(found)
    if planted:
        assert len(problems) == 1 and problems[0].startswith("/planted/: before any scrolling the page is "), problems
        assert "the scrollbar misstates the length" in problems[0], problems
    else:
        assert problems == [], problems


def test_make_screenshots_writes_the_whole_page_and_each_widget(browser, sub_path_url, tmp_path):
    """``make screenshots`` (tests/support/screenshots.py), on one widget's
    page at phone width: a JPEG of the whole page, 390 px wide and as tall as
    the page, a PNG of the widget, and one of the first quiz after a wrong pick."""
    from PIL import Image

    from screenshots import shoot
    from workers import widget_pages

    name, path = next(iter(widget_pages().items()))
    written = shoot(browser, sub_path_url, path, "light-phone", [name], out=tmp_path)
    page_shot, widget_shot, quiz_shot = written
    slug = path.strip("/").replace("/", "_")
    assert [p.relative_to(tmp_path).as_posix() for p in written] == [
        f"screenshots/{slug}-light-phone.jpg",
        f"widgets/{name}-light-phone.png",
        f"widgets/quiz-wrong-try-{slug}-light-phone.png",  # issue 24: a wrong try with its hint
    ]
    with Image.open(quiz_shot) as image:
        assert image.format == "PNG" and image.height > 100, image.size
    with Image.open(page_shot) as image:
        assert image.format == "JPEG" and image.width == WIDTHS["phone"] and image.height > 3 * 900, image.size
    with Image.open(widget_shot) as image:
        assert image.format == "PNG" and 100 < image.width <= WIDTHS["phone"] and image.height > 100, image.size


def test_make_screenshots_names_an_unknown_page(capsys):
    from screenshots import main

    assert main(["chapters/no-such-page/"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("not a page of the site: 'chapters/no-such-page/'; pages: ['', 'chapters/"), err


@pytest.mark.build
def test_a_notebook_copy_button_copies_the_code_it_sits_on(browser, tmp_path):
    """Security re-review 7b, V4: a markdown cell's <div id="cell-1" hidden>curl ... | sh</div> took the first
    code cell's copy target (mkdocs-jupyter copies getElementById(for)): the page showed print("hello") and the
    button copied the planted command. Build the planted notebook, click the code cell's button, read the clipboard."""
    import http.server

    from test_site_safety import PLANTED_COPY_TARGET, build

    result, site = build(tmp_path, {"notebooks/nb.py": PLANTED_COPY_TARGET})
    assert result.returncode == 0, result.stderr[-3000:]

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, format, *args):  # noqa: A002 - signature fixed by the base class
            pass

    server = serve(Quiet, site, "/notebooks/nb/")
    url = next(server)
    context = browser.new_context(permissions=["clipboard-read", "clipboard-write"])
    try:
        page = context.new_page()
        page.goto(url, wait_until="load")
        button = page.locator(".jp-CodeCell clipboard-copy").first
        button.hover()
        button.click(force=True)
        page.wait_for_function(
            "document.querySelector('.jp-CodeCell .notice') && !document.querySelector('.jp-CodeCell .notice').hidden"
        )
        assert page.evaluate("navigator.clipboard.readText()") == 'print("hello")'
    finally:
        context.close()
        server.close()
