"""The browser side of the site tests: how a page is loaded and looked at,
and one sweep that loads each page once per browser configuration.

Loading a page costs about a second (``networkidle`` alone waits half a
second of quiet), so the per-page checks do not each load every page again:
``Sweep.findings(path, config)`` loads ``path`` once in ``config`` (palette
x viewport), runs every per-page check on that one load and keeps what each
found; the tests (tests/test_site_browser.py, test_widgets.py,
test_site_publish.py) are parametrised by page and configuration and assert
on those findings, each with its own message. The sweep loads the site as it
is published, under ``/qkv/`` from a server that answers like GitHub Pages.

What one load does, in order (scrolling and the widgets' use change the page,
so the order is part of the checks):

1. load with every request, console message, page error and HTTP status
   recorded, third-party requests refused, CSP violations recorded from the
   first script on; wait until qkv.js has measured and every widget is ready;
2. light palette: scroll a step at a time to each widget (the layout shift until it
   is seen), then to the bottom of a chapter (the shift while reading, and
   where each block sits before and after rendering every deferred block);
3. every deferred block rendered: raw TeX, MathML laid out, page overflow;
4. desktop: axe-core;
5. light desktop: the header's toggle to the dark palette, where the page is
   measured again and axe runs its colour rules (COLOUR_RULES): the
   ``dark-desktop`` findings; the toggle back;
6. light desktop: every widget, quiz and SQL Run button used once, then the
   CSP violations (and problems) of the whole visit.
"""

from __future__ import annotations

import functools
import http.server
import os
import re
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse, urlsplit

ROOT = Path(__file__).resolve().parent.parent.parent
DOCS = ROOT / "docs"

# TeX that survived the build would show up in the visible text like this.
RAW_TEX = re.compile(r"\\\(|\\\)|\\\[|\\\]|\$\$|\\frac|\\sqrt|\\sin|\\cos|\\text|\\left|\\top")
SCHEMES = ("light", "dark")
#: A phone is 390 x 844 CSS px (the width the developers' guide reads at).
WIDTHS = {"desktop": 1280, "phone": 390}
#: The reader's budget: a chapter's main line (every collapsed box closed),
#: at phone width, is at most this many screens of SCREEN_HEIGHT px
#: (benchmarks/heights.py prints every page's height, closed and open).
SCREEN_HEIGHT = 844
MAX_SCREENS = 12
#: Browser configurations the sweep loads, "<scheme>-<width name>": each
#: palette at desktop width (axe's contrast checks depend on the palette) and
#: each width in the light palette (overflow, reading and widget geometry
#: depend on the width). Not dark-phone: the palettes differ only in colours
#: (tests/test_palettes.py fails when a palette-specific rule sets anything
#: else), so it would repeat light-phone's geometry and dark-desktop's colours.
CONFIGS = ["light-desktop", "light-phone", "dark-desktop"]
#: No CSS transition still running (colours mid-way after a palette switch).
TRANSITIONS_DONE = """async () => {
    const frames = () => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
    await frames();
    // Blocks far down (content-visibility: auto) get their style only when something reads it,
    // and start their transition then: read every element's colours first (axe would read them
    // mid-way otherwise), then wait until no transition runs.
    for (const e of document.querySelectorAll('*')) { const s = getComputedStyle(e); s.color; s.backgroundColor; }
    for (let round = 0; round < 10; round++) {
        const running = document.getAnimations().filter(a => a instanceof CSSTransition && a.playState !== 'finished');
        if (!running.length) return true;
        await Promise.all(running.map(a => a.finished.catch(() => null)));
        await frames();
    }
    return false;
}"""
#: Configurations looked at in another's load: the dark palette at desktop width
#: is the light desktop load after the header's palette toggle (Sweep._visit).
SAME_LOAD = {"dark-desktop": "light-desktop"}
#: Every palette x width, for the screenshots (tests/support/screenshots.py).
ALL_CONFIGS = [f"{scheme}-{width}" for scheme in SCHEMES for width in WIDTHS]
SUB_PATH = "/qkv/"
CHROMIUM = os.environ.get("QKV_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


# --- which pages ----------------------------------------------------------------


def site_pages(built_site: Path) -> list[str]:
    """The pages of a built site, as paths under its root ("" is the home page)."""
    pages = []
    for index in sorted(built_site.rglob("index.html")):
        rel = index.parent.relative_to(built_site).as_posix()
        pages.append("" if rel == "." else rel + "/")
    return pages


def docs_pages(docs: Path = DOCS) -> list[str]:
    """The pages the build makes from ``docs`` (known before it runs, so tests
    can be parametrised by page): Markdown pages, notebooks, and the Python
    notebooks under notebooks/ (mkdocs.yml's exclude_docs)."""
    sources = [p for p in docs.rglob("*") if p.suffix in {".md", ".ipynb"}]
    sources += list((docs / "notebooks").glob("*.py"))
    pages = set()
    for source in sources:
        rel = source.relative_to(docs).with_suffix("").as_posix()
        if rel.split("/")[0] in {"hooks", "overrides"}:
            continue
        if rel == "index":
            pages.add("")
        elif rel.endswith("/index"):
            pages.add(rel[: -len("index")])
        else:
            pages.add(rel + "/")
    return sorted(pages)


#: What a palette-specific rule may set: properties that change colours only,
#: never where anything sits (so geometry checked in one palette holds in both).
COLOUR_ONLY = re.compile(r"(.*-)?color|color-scheme|background|fill|stroke|(box|text)-shadow")
#: A rule for one palette: Material's scheme attribute, or the system preference.
PALETTE_SELECTOR = re.compile(r"data-md-color-(scheme|media)|prefers-color-scheme")


def palette_rules_beyond_colour(css: str, filename: str) -> list[str]:
    """``filename:line`` for each declaration of a palette-specific rule in
    ``css`` that sets anything but a colour (``COLOUR_ONLY``). The sweep
    checks geometry (overflow, reading, widgets) in the light palette only
    (``CONFIGS``), which holds only while the palettes differ in colours."""
    import tinycss2  # a test dependency (pyproject.toml)

    problems = []

    def walk(rules, palette: bool) -> None:
        for rule in rules:
            prelude = tinycss2.serialize(getattr(rule, "prelude", None) or [])
            if rule.type == "at-rule" and rule.content is not None:
                inner = tinycss2.parse_blocks_contents(rule.content, skip_comments=True, skip_whitespace=True)
                walk(inner, palette or bool(PALETTE_SELECTOR.search(prelude)))
            elif rule.type == "qualified-rule" and (palette or PALETTE_SELECTOR.search(prelude)):
                declarations = tinycss2.parse_blocks_contents(rule.content, skip_comments=True, skip_whitespace=True)
                for item in declarations:
                    if item.type == "declaration" and not COLOUR_ONLY.fullmatch(item.lower_name):
                        problems.append(
                            f"{filename}:{item.source_line}: `{prelude.strip()}` sets {item.name} in one palette "
                            "only; palettes may differ in colours alone, because the browser sweep checks "
                            "geometry in the light palette (tests/support/site_sweep.py CONFIGS): set it for "
                            'both palettes, or add "dark-phone" to CONFIGS'
                        )

    walk(tinycss2.parse_stylesheet(css, skip_comments=True, skip_whitespace=True), False)
    return problems


def unswept_pages(built: list[str], swept: list[str]) -> list[str]:
    """Problems when the pages built and the pages swept differ."""
    problems = [f"/{p}: built but not swept (docs_pages() does not list it)" for p in built if p not in swept]
    problems += [f"/{p}: swept but not built" for p in swept if p not in built]
    return problems


# --- loading and looking --------------------------------------------------------

RECORD_VIOLATIONS = """
window.__cspViolations = [];
document.addEventListener('securitypolicyviolation', e => window.__cspViolations.push(
    `${e.effectiveDirective} blocked ${e.blockedURI || 'inline'} at ${e.sourceFile}:${e.lineNumber}`));
"""


# Any request but the local test server's and data:/blob: URLs; matched in
# the browser's driver, so that local requests are not intercepted.
OFF_SITE = re.compile(r"^(?!(?:https?://127\.0\.0\.1[:/]|data:|blob:))")
#: Material's search worker fetches the whole site's index (about 400 KB of
#: JSON) on every load and builds its lunr index from it: about 0.2 CPU-s of
#: Chromium's a load (measured on this site, 2026-12-05), in ~100 loads a run,
#: for a feature that only test_search_works_offline uses.
SEARCH_INDEX = "**/search/search_index.json"


def _search_index_without_documents(route) -> None:
    """The site's own search index, fetched from the test server, with its
    document list emptied: the worker still starts, fetches and builds, on
    nothing (the response keeps its status, which on_response checks).

    A test that closes its page while the index is in flight ends the request
    under the handler: Playwright raises "Target ... closed" or "Request
    context disposed" from the handler, and would re-raise it in the *next*
    test's first call (a failure there, seen on 2026-12-05). Nobody waits for
    that answer, so those two are ignored; any other error is raised."""
    from playwright.sync_api import Error as PlaywrightError

    try:
        response = route.fetch()
        index = response.json()
        index["docs"] = []
        route.fulfill(response=response, json=index)
    except PlaywrightError as error:
        if not any(gone in str(error) for gone in ("closed", "context disposed")):
            raise


def open_page(
    browser,
    url: str,
    *,
    scheme: str,
    width: int,
    csp: bool = False,
    assets: list[str] | None = None,
    wait_until: str = "load",
    search: bool = False,
):
    """Load ``url``; return (page, context, problems) with problems recorded.

    ``csp``: record Content-Security-Policy violations in ``window.__cspViolations``
    from the first script on; ``assets``: a list that gets every response's URL;
    ``wait_until``: Playwright's goto condition. ``load``, then what qkv.js
    signals, not ``networkidle`` (half a second of network quiet on every
    load): a test waits for what it uses, and requests made later are still
    recorded. ``search``: serve the search index whole; otherwise its document
    list is emptied (:data:`SEARCH_INDEX`)."""
    context = browser.new_context(
        color_scheme=scheme, viewport={"width": width, "height": 900}, service_workers="block"
    )
    if csp:
        context.add_init_script(RECORD_VIOLATIONS)
    if not search:
        context.route(SEARCH_INDEX, _search_index_without_documents)
    page = context.new_page()
    problems: list[str] = []

    def guard(route):
        host = urlparse(route.request.url).hostname
        if route.request.url.startswith(("data:", "blob:")) or host == "127.0.0.1":
            route.continue_()
        else:
            problems.append(f"request to a third-party host: {route.request.url}")
            route.abort()

    def on_response(response):
        if response.status >= 400:
            problems.append(f"HTTP {response.status} for {response.url}")
        if assets is not None and response.url != url:
            assets.append(response.url)

    # Only requests that leave the test server reach Python: a "**/*" route
    # would hold every asset for a round trip to this process (slow loads).
    page.route(OFF_SITE, guard)
    page.on("console", lambda m: m.type == "error" and problems.append(f"console error: {m.text}"))
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    page.on("response", on_response)
    page.goto(url, wait_until=wait_until)
    # After load, qkv.js measures which regions scroll sideways (some inside
    # blocks not rendered yet) and makes them focusable; check the result.
    page.wait_for_selector("html[data-qkv-measured]", state="attached", timeout=15000)
    return page, context, problems


# The layout shift so far, every shift counted. Core Web Vitals excuse shifts
# within 500 ms of input, and Chromium takes each Playwright call as input
# (a user gesture), which would excuse a shift made while the sweep scrolls;
# the sweep clicks and types nothing before it measures. Read after two
# frames, so that the shifts of the last scroll have been reported.
LAYOUT_SHIFTS = """() => new Promise(resolve => {
    let total = 0;
    new PerformanceObserver(list => {
        for (const entry of list.getEntries()) total += entry.value;
    }).observe({type: 'layout-shift', buffered: true});
    requestAnimationFrame(() => requestAnimationFrame(() => setTimeout(() => resolve(total), 50)));
})"""

BLOCK_TOPS = """[...document.querySelectorAll('.md-typeset > *')]
    .map(n => [n.tagName.toLowerCase() + '.' + n.className, Math.round(n.getBoundingClientRect().top + scrollY)])"""

# Scroll down a step at a time, two frames per step (so that every block
# coming near is rendered and laid out before the next step, as for a reader
# who pauses), until `until` is in the upper half of the window or the page
# ends. In the page itself: one round trip per scroll, not one per step.
READ_DOWN = """async ([until, step]) => {
    const frames = () => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
    for (let steps = 0; steps < 5000; steps++) {
        const atBottom = scrollY + innerHeight >= document.documentElement.scrollHeight - 1;
        if (atBottom || (until && until.getBoundingClientRect().top < innerHeight / 2)) return steps;
        scrollBy(0, step);
        await frames();
    }
    return -1;
}"""


def scroll_like_a_reader(page, until=None, step: int = 600) -> None:
    """Scroll down, ``step`` pixels (two thirds of the window) at a time,
    until ``until`` (a locator) is in the upper half of the window, or to
    the bottom of the page.

    Blocks below the first screen render as they come near
    (content-visibility: auto), so each step gives the page two frames to
    render and lay out what came near before the next. The layout shift
    does not depend on how a scroll is made: scrolling is not input that
    excuses a shift."""
    handle = until.element_handle() if until is not None else None
    steps = page.evaluate(READ_DOWN, [handle, step])
    if steps < 0:
        raise AssertionError(f"{page.url}: still scrolling after 5000 steps of {step} px")


#: How far the page's height before any scrolling (deferred blocks at the
#: heights qkv.js measured) may be from its height with every block rendered.
SCROLLBAR_TOLERANCE = 0.05


def reading_problems(found: PageFindings) -> list[str]:
    """What reading a chapter top to bottom got wrong: a scrollbar that
    misstates the page's length before the reader scrolls (qkv.js measured
    the deferred blocks wrong), a cumulative layout shift of 0.01 or more, or
    blocks that sit elsewhere once every deferred block is rendered."""
    problems = []
    if found.first_height and abs(found.first_height - found.height) > SCROLLBAR_TOLERANCE * found.height:
        problems.append(
            f"/{found.path}: before any scrolling the page is {found.first_height} px tall, "
            f"{found.height} px once every block is rendered: the scrollbar misstates the length "
            "(naturalHeight in qkv.js measures a deferred block wrong)"
        )
    if found.reading_shift is not None and found.reading_shift >= 0.01:
        problems.append(f"/{found.path}: cumulative layout shift {found.reading_shift:.4f} while reading")
    if found.moved:
        problems.append(
            f"/{found.path}: {len(found.moved)} blocks sit elsewhere than with nothing deferred, first {found.moved[0]}"
        )
    return problems


#: Elements of the article whose content is wider than their box, so that a
#: reader must scroll sideways inside them, except where scrolling is the
#: expected way to read: code (a block, a notebook's input cell) and tables in
#: Material's scrolling wrapper. An output block, a formula or a widget must
#: wrap instead. And formulas whose glyphs are taller than their box: their
#: overflow-y is hidden, so the top of a numerator or a sum's limits would be
#: cut off. Each is named by its tag, classes and first words.
CLIPPED = """() => {
    const found = [];
    const allowed = 'pre, code, .highlight, .highlight-ipynb, .jupyter-wrapper .jp-InputArea, .md-typeset__scrollwrap';
    for (const el of document.querySelectorAll('article *')) {
        if (el.scrollWidth <= el.clientWidth + 1 || el.clientWidth === 0) continue;
        if (!['auto', 'scroll', 'hidden', 'clip'].includes(getComputedStyle(el).overflowX)) continue;
        if (el.matches(allowed) || el.closest('pre, .highlight')) continue;
        if (el.closest('details:not([open]), [hidden]')) continue;
        if (found.some(outer => outer.el.contains(el))) continue;
        const name = el.tagName.toLowerCase() + [...el.classList].map(c => '.' + c).join('');
        found.push({el, text: `${name} is ${el.scrollWidth} px wide in ${el.clientWidth} px: "${el.textContent.trim().slice(0, 50)}"`});
    }
    for (const el of document.querySelectorAll('article .qkv-math, article math')) {
        if (el.scrollHeight <= el.clientHeight + 1 || el.clientHeight === 0) continue;
        if (!['auto', 'scroll', 'hidden', 'clip'].includes(getComputedStyle(el).overflowY)) continue;
        if (el.closest('details:not([open]), [hidden]')) continue;
        if (found.some(outer => outer.el.contains(el) || el.contains(outer.el))) continue;
        const name = el.tagName.toLowerCase() + [...el.classList].map(c => '.' + c).join('');
        found.push({el, text: `${name} is ${el.scrollHeight} px tall in ${el.clientHeight} px (its glyphs are cut at the top or bottom): "${el.textContent.trim().slice(0, 50)}"`});
    }
    return found.map(f => f.text);
}"""


def page_height(page) -> int:
    """The page's full scroll height in CSS px, as the reader first gets it."""
    return page.evaluate("document.documentElement.scrollHeight")


def length_problems(found: PageFindings) -> list[str]:
    """A chapter whose main line, at phone width with its boxes closed, is
    longer than MAX_SCREENS screens: what to do about it."""
    screens = found.height / SCREEN_HEIGHT
    if screens <= MAX_SCREENS:
        return []
    return [
        f"/{found.path}: the main line is {screens:.1f} phone screens ({found.height} px at "
        f"{WIDTHS['phone']} px wide), over {MAX_SCREENS}; move what a first reading may skip "
        '(caveats, regimes, cross-library quirks, method) into ??? note "Deeper: ..." boxes'
    ]


def render_deferred_blocks(page) -> None:
    """Render every block now, as scrolling through the page would.

    Blocks below the first screen start unrendered (content-visibility: auto
    in qkv.css) and clip what overflows them, so geometry checks (overflow,
    math widths, contrast) run on the page as the reader sees it after
    scrolling, not on placeholders."""
    page.add_style_tag(content=".md-typeset > * { content-visibility: visible !important; }")


AXE = ROOT / "node_modules" / "axe-core" / "axe.min.js"
#: axe-core's violations in the document, or in the elements a selector names.
#: Pass [selector or null, rule ids or null (every rule)].
AXE_RUN = """async ([selector, rules]) => (await axe.run(selector || document,
        rules ? {resultTypes: ['violations'], runOnly: {type: 'rule', values: rules}} : {resultTypes: ['violations']}))
    .violations
    .map(v => `${v.id} (${v.impact}) x${v.nodes.length}: ${v.nodes.slice(0, 3)
    .map(n => n.target.join(' ')).join(', ')}`)"""


#: The axe rules whose verdict depends on the palette. The palettes differ only
#: in colours (tests/test_palettes.py), so the dark palette's load runs these
#: and the light one runs every rule: the rest would repeat its findings (and
#: took about 40% of each dark axe run, 0.4-0.9 s a page).
COLOUR_RULES = ["color-contrast", "link-in-text-block"]


def inject_axe(page) -> None:
    """Load axe-core into the page as a script of the page's own origin: the
    site's Content-Security-Policy runs no inline script it did not hash."""
    url = page.evaluate("location.origin") + "/__test__/axe.min.js"
    page.route(url, lambda route: route.fulfill(body=AXE.read_bytes(), content_type="text/javascript"))
    page.add_script_tag(url=url)


STYLED = """() => ({
    header: getComputedStyle(document.querySelector('.md-header')).position,
    sheets: [...document.styleSheets].filter(s => s.href).map(s => [s.href, s.cssRules.length]),
    bundle: typeof window.document$ === 'object' || typeof window.component$ === 'object',
})"""

# Use every widget and quiz on the page once, as a reader would: pick the last
# option, move each slider to its end, press each button (every quiz choice,
# then its reveal button), click each canvas.
USE_WIDGETS = """() => {
    let used = 0;
    for (const root of document.querySelectorAll('.qkv-widget, .quiz')) {
        for (const select of root.querySelectorAll('select')) {
            select.selectedIndex = select.options.length - 1;
            select.dispatchEvent(new Event('change', {bubbles: true}));
            used++;
        }
        for (const range of root.querySelectorAll('input[type=range]')) {
            range.value = range.max;
            range.dispatchEvent(new Event('input', {bubbles: true}));
            used++;
        }
        // A quiz: every choice in turn (wrong picks show hints; after two, the
        // reveal button appears), then the reveal button if it is offered.
        for (const button of root.querySelectorAll('button')) {
            if (button.hidden) continue;
            button.click(); used++;
        }
        for (const button of root.querySelectorAll('button.qkv-reveal')) {
            if (!button.hidden) { button.click(); used++; }
        }
        for (const canvas of root.querySelectorAll('canvas')) {
            const box = canvas.getBoundingClientRect();
            canvas.dispatchEvent(new MouseEvent('click', {bubbles: true,
                clientX: box.left + box.width / 2, clientY: box.top + box.height / 2}));
            used++;
        }
    }
    return used;
}"""

RUN_BUTTONS = "button.qkv-sql-run"


def use_widgets_and_run_buttons(page) -> tuple[int, int, list[str]]:
    """Use every widget and quiz once and press every SQL Run button; return
    (controls used, Run buttons pressed, the database errors they showed)."""
    used = page.evaluate(USE_WIDGETS)
    runs, errors = 0, []
    for button in page.locator(RUN_BUTTONS).all():
        button.scroll_into_view_if_needed()
        button.click()
        runs += 1
        # Its result: the first output box after the button (its block's panel, or the scratch box's).
        output = button.locator("xpath=following::div[contains(@class, 'qkv-sql-output')][1]")
        output.locator("table.qkv-sql-table, .qkv-sql-error, .qkv-sql-empty").first.wait_for(
            state="attached", timeout=30000
        )
        errors += output.locator(".qkv-sql-error").all_inner_texts()
    page.wait_for_timeout(200)
    return used, runs, errors


# --- the site as published: under /qkv/, 404.html for anything missing ----------


class SubPathHandler(http.server.SimpleHTTPRequestHandler):
    """The built site under SUB_PATH; anything missing gets 404.html with 404."""

    def log_message(self, format, *args):  # noqa: A002 - signature fixed by the base class
        pass

    def send_head(self):
        path = urlsplit(self.path).path
        if not path.startswith(SUB_PATH) and path != SUB_PATH.rstrip("/"):
            return self._not_found()
        self.path = "/" + self.path[len(SUB_PATH) :] if path != SUB_PATH.rstrip("/") else self.path
        local = Path(self.translate_path(self.path))
        if local.is_dir() and not (local / "index.html").is_file():
            return self._not_found()
        if not local.exists():
            return self._not_found()
        return super().send_head()

    def _not_found(self):
        body = (Path(self.directory) / "404.html").read_bytes()
        self.send_response(404)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        return _Body(body)


class QuietServer(http.server.ThreadingHTTPServer):
    def handle_error(self, request, client_address):
        # A page closed while its requests were in flight (tests wait for what
        # they use, not for the network to fall quiet): not the site's error.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


def serve(handler_class, directory: Path, path: str):
    """Serve ``directory`` on 127.0.0.1 (a free port) until the generator is
    closed; yields the URL of ``path`` there."""
    handler = functools.partial(handler_class, directory=str(directory))
    server = QuietServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}{path}"
    finally:
        server.shutdown()


class _Body:
    def __init__(self, data: bytes) -> None:
        self.data = data

    def read(self, *args) -> bytes:
        data, self.data = self.data, b""
        return data

    def close(self) -> None:
        pass


# --- the sweep ------------------------------------------------------------------


@dataclass
class WidgetFindings:
    missing: str = ""  # the page has not exactly one such widget
    shift: float | None = None  # layout shift until the reader has scrolled to it (light)
    overflow: int = 0  # how much wider than the viewport the page is
    problems: list[str] = field(default_factory=list)


@dataclass
class PageFindings:
    path: str
    config: str
    problems: list[str] = field(default_factory=list)  # at load and while looking, before any use
    raw_tex: list[str] = field(default_factory=list)
    has_math: bool = False
    math_count: int = 0  # <math> elements in the article, shown or not
    math_widths: list[float] = field(default_factory=list)
    overflow: int = 0
    clipped: list[str] = field(default_factory=list)  # phone: elements cut at their right edge (CLIPPED)
    height: int = 0  # the page's scroll height, every deferred block rendered, collapsed boxes closed
    figures: list[tuple[str, float]] = field(default_factory=list)  # (src, shown width in CSS px) of each figure
    axe: list[str] | None = None  # desktop only
    axe_problems: list[str] = field(default_factory=list)
    reading_shift: float | None = None  # chapters, light only
    first_height: int = 0  # chapters, light only: the scroll height once qkv.js has measured, before any scrolling
    moved: list[tuple] = field(default_factory=list)
    widgets: dict[str, WidgetFindings] = field(default_factory=dict)
    # light desktop only: the whole visit's CSP violations and problems
    # after every control was used
    csp_violations: list[str] | None = None
    problems_after_use: list[str] = field(default_factory=list)
    used: int = 0
    runs: int = 0  # SQL Run buttons pressed
    sql_errors: list[str] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)  # where the visit's time went, by step


class Sweep:
    """Each page loaded once per configuration, on first request."""

    def __init__(self, browser, base_url: str, built_site: Path, widget_pages: dict[str, str]) -> None:
        self.browser, self.base_url, self.built_site = browser, base_url, built_site
        self.widgets_on = {}
        for name, path in widget_pages.items():
            self.widgets_on.setdefault(path, []).append(name)
        self.loads = 0
        self._cache: dict[tuple[str, str], PageFindings | Exception] = {}

    def findings(self, path: str, config: str) -> PageFindings:
        """What the one load of ``path`` in ``config`` found; an error while
        loading or looking is raised again for every check of that load.
        ``dark-desktop`` is looked at in the ``light-desktop`` load (:data:`SAME_LOAD`)."""
        key = (path, config)
        if key not in self._cache:
            loaded = SAME_LOAD.get(config, config)
            try:
                for found in self._visit(path, loaded):
                    self._cache[(path, found.config)] = found
            except Exception as error:  # noqa: BLE001 - kept and raised for each check
                self._cache[(path, loaded)] = error
                for other, load in SAME_LOAD.items():
                    if load == loaded:
                        self._cache[(path, other)] = error
        found = self._cache[key]
        if isinstance(found, Exception):
            raise found
        return found

    def _visit(self, path: str, config: str) -> list[PageFindings]:
        scheme, width_name = config.split("-")
        light, desktop = scheme == "light", width_name == "desktop"
        found = PageFindings(path, config)
        dark = PageFindings(path, "dark-desktop")
        started = [time.perf_counter()]

        def step(name: str) -> None:
            now = time.perf_counter()
            found.seconds[name] = round(found.seconds.get(name, 0) + now - started[0], 3)
            started[0] = now

        url = self.base_url + path
        page, context, problems = open_page(
            self.browser, url, scheme=scheme, width=WIDTHS[width_name], csp=True, wait_until="load"
        )
        self.loads += 1
        step("load")
        if light and path.startswith("chapters/"):
            found.first_height = page_height(page)
        try:
            # A function, not an expression: Playwright re-evals an expression on each
            # animation frame, which the page's CSP (no 'unsafe-eval') refuses.
            page.wait_for_function("() => !document.querySelector('.qkv-widget[data-ready=loading]')", timeout=15000)
            names = self.widgets_on.get(path, [])
            widgets = {}
            for name in names:
                widget = page.locator(f".qkv-widget[data-widget={name}]")
                found.widgets[name] = WidgetFindings()
                if widget.count() != 1:  # the widget's checks fail with this; the page's do not
                    found.widgets[name].missing = f"no {name} widget on /{path}"
                    continue
                page.wait_for_selector(f".qkv-widget[data-widget={name}][data-ready=true]", timeout=10000)
                widgets[name] = widget
            step("widgets ready")
            reading = light and path.startswith("chapters/")
            if light:
                order = sorted(widgets, key=lambda n: widgets[n].bounding_box()["y"])
                for name in order:
                    scroll_like_a_reader(page, until=widgets[name])
                    found.widgets[name].shift = page.evaluate(LAYOUT_SHIFTS)
                step("scroll to widgets")
            if reading:
                scroll_like_a_reader(page)
                found.reading_shift = page.evaluate(LAYOUT_SHIFTS)
                deferred = page.evaluate(BLOCK_TOPS)
                step("read to the bottom")
            render_deferred_blocks(page)
            if reading:
                rendered = page.evaluate(BLOCK_TOPS)
                found.moved = [(a[0], a[1], b[1]) for a, b in zip(deferred, rendered) if a != b]
                page.evaluate("scrollTo(0, 0)")
            text = page.inner_text("article")
            found.raw_tex = sorted(set(RAW_TEX.findall(text)))
            found.math_count = page.locator("article math").count()
            found.has_math = "<math" in (self.built_site / path / "index.html").read_text(encoding="utf-8")
            # Math inside a closed <details> (quiz answers) is not laid out yet.
            found.math_widths = page.eval_on_selector_all(
                "article math",
                "els => els.filter(e => !e.closest('details:not([open]), [hidden]'))"
                ".map(e => e.getBoundingClientRect().width)",
            )
            found.overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
            found.height = page_height(page)
            # The rest looks inside every collapsed box too (Deeper boxes, quiz answers): a formula
            # or a figure in a box must fit a phone as well once the reader opens it.
            page.evaluate("document.querySelectorAll('article details').forEach(d => { d.open = true; })")
            if not desktop:
                found.clipped = page.evaluate(CLIPPED)
            found.figures = page.eval_on_selector_all(
                "article figure img, article picture img",
                "els => els.map(e => [e.currentSrc || e.src, e.getBoundingClientRect().width])",
            )
            for name in widgets:
                found.widgets[name].overflow = found.overflow
            step("geometry")
            found.problems = list(problems)
            for name in widgets:
                found.widgets[name].problems = list(problems)
            if desktop and AXE.is_file():
                inject_axe(page)
                # Every rule: the dark palette's colour rules run in the same load (_look_in_the_dark_palette).
                found.axe = page.evaluate(AXE_RUN, [None, None])
                found.axe_problems = list(problems)
                step("axe")
            if light and desktop:
                self._look_in_the_dark_palette(page, found, dark, problems)
                step("dark palette")
                found.used, found.runs, found.sql_errors = use_widgets_and_run_buttons(page)
                found.csp_violations = page.evaluate("window.__cspViolations")
                found.problems_after_use = list(problems)
                step("use")
        finally:
            context.close()
        return [found, dark] if light and desktop else [found]

    @staticmethod
    def _look_in_the_dark_palette(page, light: PageFindings, dark: PageFindings, problems: list[str]) -> None:
        """The ``dark-desktop`` findings, from the light desktop load: switch to the
        dark palette with the header's toggle, as a reader does, measure again what
        the page shows (overflow, formulas laid out) and run axe's colour rules; then
        switch back. The palettes differ in colours only (``palette_rules_beyond_colour``),
        so the rest of the light load's findings hold in the dark palette too."""
        scheme = "() => document.body.getAttribute('data-md-color-scheme')"
        toggle = page.locator("form[data-qkv-palette] label:not([hidden])")
        toggle.click()
        page.wait_for_function(f"() => ({scheme})() === 'slate'", timeout=5000)
        # Colours change through CSS transitions (a tab's label: 250 ms): axe must see where they end.
        if not page.evaluate(TRANSITIONS_DONE):
            raise RuntimeError("colour transitions still running ten rounds after the palette toggle")
        dark.raw_tex, dark.has_math, dark.math_count = light.raw_tex, light.has_math, light.math_count
        dark.math_widths = page.eval_on_selector_all(
            "article math",
            "els => els.filter(e => !e.closest('details:not([open]), [hidden]')).map(e => e.getBoundingClientRect().width)",
        )
        dark.overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
        dark.height = page_height(page)
        for name, widget in light.widgets.items():
            dark.widgets[name] = WidgetFindings(missing=widget.missing, overflow=dark.overflow)
        if AXE.is_file():
            dark.axe = page.evaluate(AXE_RUN, [None, COLOUR_RULES])
        dark.problems = list(problems)
        dark.axe_problems = list(problems)
        for widget in dark.widgets.values():
            widget.problems = list(problems)
        toggle.click()
        page.wait_for_function(f"() => ({scheme})() === 'default'", timeout=5000)
