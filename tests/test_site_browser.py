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
    return page, context, problems


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


@pytest.mark.parametrize("scheme", SCHEMES)
def test_axe_finds_no_accessibility_violations(browser, site_url, pages, scheme):
    require(AXE.is_file(), "axe-core is not installed; run `npm ci` (make install does)")
    axe = AXE.read_text(encoding="utf-8")
    report = []
    for path in pages:
        page, context, problems = open_page(browser, site_url + path, scheme=scheme, width=1280)
        page.wait_for_function("!document.querySelector('.qkv-widget[data-ready=loading]')")
        page.add_script_tag(content=axe)
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
