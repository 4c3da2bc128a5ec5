"""Every page of the built site, in a real Chromium: it loads, math is
rendered, nothing is logged as an error, and no request leaves 127.0.0.1."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlparse

import pytest

from needs import require

pytestmark = pytest.mark.browser

# TeX that survived the build would show up in the visible text like this.
RAW_TEX = re.compile(r"\\\(|\\\)|\\\[|\\\]|\$\$|\\frac|\\sqrt|\\sin|\\cos|\\text|\\left|\\top")
SCHEMES = ("light", "dark")
WIDTHS = {"desktop": 1280, "phone": 375}


def site_pages(built_site) -> list[str]:
    pages = []
    for index in sorted(built_site.rglob("index.html")):
        rel = index.parent.relative_to(built_site).as_posix()
        pages.append("" if rel == "." else rel + "/")
    return pages


@pytest.fixture(scope="module")
def pages(built_site):
    found = site_pages(built_site)
    assert "" in found and "verification/" in found, found
    return found


def open_page(browser, url: str, *, scheme: str, width: int):
    """Load ``url``; return (page, context, problems) with problems recorded."""
    context = browser.new_context(
        color_scheme=scheme, viewport={"width": width, "height": 900}, service_workers="block"
    )
    page = context.new_page()
    problems: list[str] = []

    def guard(route):
        host = urlparse(route.request.url).hostname
        if route.request.url.startswith(("data:", "blob:")) or host == "127.0.0.1":
            route.continue_()
        else:
            problems.append(f"request to a third-party host: {route.request.url}")
            route.abort()

    page.route("**/*", guard)
    page.on("console", lambda m: m.type == "error" and problems.append(f"console error: {m.text}"))
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    page.on(
        "response",
        lambda r: r.status >= 400 and problems.append(f"HTTP {r.status} for {r.url}"),
    )
    page.goto(url, wait_until="networkidle")
    # After load, qkv.js measures which regions scroll sideways (some inside
    # blocks not rendered yet) and makes them focusable; check the result.
    page.wait_for_selector("html[data-qkv-measured]", state="attached", timeout=15000)
    return page, context, problems


LAYOUT_SHIFTS = """() => new Promise(resolve => {
    let total = 0;
    new PerformanceObserver(list => {
        for (const entry of list.getEntries()) if (!entry.hadRecentInput) total += entry.value;
    }).observe({type: 'layout-shift', buffered: true});
    setTimeout(() => resolve(total), 500);
})"""


def scroll_like_a_reader(page, until=None, step: int = 300) -> None:
    """Scroll down with the mouse wheel, a step at a time, as a reader does,
    until ``until`` (a locator) is in the upper half of the window, or to
    the bottom of the page."""
    height = page.viewport_size["height"]
    for _ in range(1000):
        if until is not None and until.bounding_box()["y"] < height / 2:
            return
        at_bottom = page.evaluate("scrollY + innerHeight >= document.documentElement.scrollHeight - 1")
        if at_bottom:
            return
        page.mouse.wheel(0, step)
        page.wait_for_timeout(40)


def render_deferred_blocks(page) -> None:
    """Render every block now, as scrolling through the page would.

    Blocks below the first screen start unrendered (content-visibility: auto
    in qkv.css) and clip what overflows them, so geometry checks (overflow,
    math widths, contrast) run on the page as the reader sees it after
    scrolling, not on placeholders."""
    page.add_style_tag(content=".md-typeset > * { content-visibility: visible !important; }")


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("width_name", list(WIDTHS))
def test_every_page_loads_clean_offline(browser, site_url, pages, built_site, artifacts, scheme, width_name):
    failures = []
    shots = artifacts / "screenshots"
    shots.mkdir(exist_ok=True)
    for path in pages:
        page, context, problems = open_page(
            browser, site_url + path, scheme=scheme, width=WIDTHS[width_name]
        )
        render_deferred_blocks(page)
        text = page.inner_text("article")
        raw = RAW_TEX.findall(text)
        if raw:
            problems.append(f"raw TeX left in the text: {sorted(set(raw))}")
        has_math = "<math" in (built_site / path / "index.html").read_text(encoding="utf-8")
        if has_math:
            # Math inside a closed <details> (quiz answers) is not laid out yet.
            sizes = page.eval_on_selector_all(
                "article math",
                "els => els.filter(e => !e.closest('details:not([open]), [hidden]'))"
                ".map(e => e.getBoundingClientRect().width)",
            )
            if not sizes or min(sizes) <= 0:
                problems.append(f"MathML not laid out (widths {sizes})")
        overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
        if overflow > 0:
            problems.append(f"page is {overflow}px wider than the {WIDTHS[width_name]}px viewport")
        name = (path.strip("/").replace("/", "_") or "home") + f"-{scheme}-{width_name}.png"
        page.screenshot(path=str(shots / name), full_page=True)
        context.close()
        failures += [f"/{path}: {p}" for p in problems]
    assert not failures, "\n".join(failures)


def test_math_is_rendered_on_markdown_and_notebook_pages(browser, site_url):
    for path in ("verification/", "notebooks/first-look/"):
        page, context, problems = open_page(browser, site_url + path, scheme="light", width=1280)
        count = page.locator("article math").count()
        context.close()
        assert count >= 2, f"/{path}: expected rendered MathML, found {count} <math> elements"
        assert not problems, problems


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
    page, context, problems = open_page(browser, site_url, scheme="light", width=1280)
    page.click("label.md-search__icon, .md-search__input", timeout=5000)
    page.focus("input.md-search__input")
    page.keyboard.type("sybil", delay=30)  # a word that appears in prose
    page.wait_for_selector(".md-search-result__item", timeout=10000)
    assert page.locator(".md-search-result__item").count() > 0
    context.close()
    assert not problems, problems


def test_copy_button_puts_runnable_code_on_the_clipboard(browser, site_url):
    """Click every copy button on the verification page; run what it copied."""
    context = browser.new_context(permissions=["clipboard-read", "clipboard-write"])
    page = context.new_page()
    page.goto(site_url + "verification/", wait_until="networkidle")
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
        result = subprocess.run([sys.executable, "-c", copied], capture_output=True, text=True, cwd="/")
        assert result.returncode == 0, f"block {index} copied:\n{copied}\nfailed:\n{result.stderr}"
        ran += 1
    context.close()
    assert ran >= 5


AXE = Path(__file__).resolve().parent.parent / "node_modules" / "axe-core" / "axe.min.js"


def inject_axe(page) -> None:
    """Load axe-core into the page as a script of the page's own origin: the
    site's Content-Security-Policy runs no inline script it did not hash."""
    url = page.evaluate("location.origin") + "/__test__/axe.min.js"
    page.route(url, lambda route: route.fulfill(body=AXE.read_bytes(), content_type="text/javascript"))
    page.add_script_tag(url=url)


@pytest.mark.parametrize("scheme", SCHEMES)
def test_axe_finds_no_accessibility_violations(browser, site_url, pages, scheme):
    require(AXE.is_file(), "axe-core is not installed; run `npm ci` (make install does)")
    report = []
    for path in pages:
        page, context, problems = open_page(browser, site_url + path, scheme=scheme, width=1280)
        page.wait_for_function("!document.querySelector('.qkv-widget[data-ready=loading]')")
        render_deferred_blocks(page)  # tabindex was decided before, on the deferred page
        inject_axe(page)
        violations = page.evaluate(
            """async () => (await axe.run(document, {resultTypes: ['violations']})).violations
                .map(v => `${v.id} (${v.impact}) x${v.nodes.length}: ${v.nodes.slice(0, 3)
                .map(n => n.target.join(' ')).join(', ')}`)"""
        )
        context.close()
        report += [f"/{path} [{scheme}]: {v}" for v in violations] + [f"/{path}: {p}" for p in problems]
    assert not report, "\n".join(report)


def test_palette_follows_the_system_and_the_toggle(browser, site_url):
    """Dark system preference gives the dark palette before any click; the
    toggle switches it and the choice survives a reload."""
    page, context, problems = open_page(browser, site_url, scheme="dark", width=1280)
    scheme = lambda: page.evaluate("document.body.getAttribute('data-md-color-scheme')")  # noqa: E731
    assert scheme() == "slate"
    page.locator("form[data-qkv-palette] label:not([hidden])").click()
    assert scheme() == "default"
    page.reload(wait_until="networkidle")
    assert scheme() == "default"
    page.locator("form[data-qkv-palette] label:not([hidden])").click()
    assert scheme() == "slate"
    context.close()
    assert not problems, problems


DEEP_LINKS = [
    ("chapters/attention/", "the-database-analogies"),
    ("chapters/learning-attention/", "common-confusions"),
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
        top = page.evaluate(f"document.getElementById('{anchor}').getBoundingClientRect().top")
        header = page.evaluate("document.querySelector('.md-header').getBoundingClientRect().height")
        context.close()
        assert header - 1 <= top <= header + 40, f"/{path}#{anchor}: heading at {top}px (header {header}px)"
        assert not problems, problems


def test_blocks_below_the_first_screen_wait_until_the_reader_comes(browser, site_url):
    """The mechanism behind the performance budget, and its promises: a block
    far down is not rendered at load, is rendered once scrolled to, holds the
    place of its real height (to the pixel) before that, and a code block in
    it that scrolls sideways is focusable before that too."""
    page, context, problems = open_page(
        browser, site_url + "chapters/attention/", scheme="light", width=375
    )
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
    wrong = [(name, round(guess, 1), round(height, 1)) for (name, guess), height in zip(placeholders, real) if abs(guess - height) > 1]
    last.scroll_into_view_if_needed()
    page.wait_for_timeout(200)
    after = last.evaluate(rendered)
    context.close()
    assert deferred >= 40, f"only {deferred} blocks use content-visibility: auto"
    assert len(placeholders) == deferred, (len(placeholders), deferred)
    assert not wrong, f"{len(wrong)} of {deferred} placeholder heights differ from the rendered ones: {wrong[:5]}"
    assert before is False and after is True, (before, after)
    assert wide_but_unrendered and set(wide_but_unrendered) == {"0"}, wide_but_unrendered
    assert not problems, problems


BLOCK_TOPS = """[...document.querySelectorAll('.md-typeset > *')]
    .map(n => [n.tagName.toLowerCase() + '.' + n.className, Math.round(n.getBoundingClientRect().top + scrollY)])"""


@pytest.mark.parametrize("width_name", list(WIDTHS))
def test_reading_a_chapter_top_to_bottom_moves_nothing(browser, site_url, pages, width_name):
    """Load each chapter and scroll through it with the wheel: blocks that
    are rendered only as they come near (content-visibility) must not shift
    what the reader sees (cumulative layout shift < 0.01), and once rendered
    every block must sit exactly where it would with nothing deferred."""
    failures = []
    for path in [p for p in pages if p.startswith("chapters/")]:
        page, context, problems = open_page(browser, site_url + path, scheme="light", width=WIDTHS[width_name])
        scroll_like_a_reader(page)
        shift = page.evaluate(LAYOUT_SHIFTS)
        deferred = page.evaluate(BLOCK_TOPS)
        render_deferred_blocks(page)
        rendered = page.evaluate(BLOCK_TOPS)
        context.close()
        if shift >= 0.01:
            failures.append(f"/{path}: cumulative layout shift {shift:.4f} while reading")
        moved = [(a[0], a[1], b[1]) for a, b in zip(deferred, rendered) if a != b]
        if moved:
            failures.append(f"/{path}: {len(moved)} blocks sit elsewhere than with nothing deferred, first {moved[0]}")
        failures += [f"/{path}: {p}" for p in problems]
    assert not failures, "\n".join(failures)
