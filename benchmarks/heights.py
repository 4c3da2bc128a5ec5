"""How long every page is on a phone, in screens: the reader's path measured.

Not a test: a benchmark that prints a table. Run it with ``make bench-heights``.
It builds the site (or measures ``QKV_SITE``, an already built one), serves it
on 127.0.0.1 and loads every page in Debian's Chromium at 390 x 844 CSS px
(a phone), light palette, with every deferred block rendered. For each page
it prints the full scroll height in screens of 844 px:

* ``main``: as a reader first sees it, every collapsed box closed (the
  "Deeper" boxes, the quiz answers);
* ``open``: every "Deeper: ..." box opened (quiz answers stay closed), what a
  reader who opens every proof scrolls through;
* for a Markdown page, its words (as ``wc -w`` counts them, code included) on
  the main line and inside Deeper boxes, from its source.

``QKV_HEIGHT_WIDTH`` sets another width (e.g. 1280 for a desktop). A chapter
whose main line is over ``MAX_SCREENS`` (12) is marked, and the exit status is
1 when one is: the reader's budget from issue 23, measured, not asserted in
``make test``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "support"))
sys.path.insert(0, str(ROOT / "docs" / "hooks"))

import story  # noqa: E402
from site_sweep import (  # noqa: E402
    CHROMIUM,
    CHROMIUM_ARGS,
    MAX_SCREENS,
    SCREEN_HEIGHT,
    SUB_PATH,
    WIDTHS,
    SubPathHandler,
    page_height,
    render_deferred_blocks,
    serve,
    site_pages,
)

WIDTH = int(os.environ.get("QKV_HEIGHT_WIDTH", WIDTHS["phone"]))
#: The summary of a box that holds what a first reading may skip.
DEEPER = "Deeper"


OPEN_DEEPER = """(prefix) => {
    let opened = 0;
    for (const box of document.querySelectorAll('article details')) {
        const summary = box.querySelector(':scope > summary');
        if (summary && summary.textContent.trim().startsWith(prefix)) { box.open = true; opened++; }
    }
    return opened;
}"""
CLOSED_BOXES = "() => document.querySelectorAll('article details:not([open])').length"


def measure(browser, url: str) -> tuple[int, int, int]:
    """(height with boxes closed, height with Deeper boxes open, Deeper boxes)."""
    context = browser.new_context(viewport={"width": WIDTH, "height": SCREEN_HEIGHT}, color_scheme="light")
    try:
        page = context.new_page()
        page.goto(url, wait_until="load")
        page.wait_for_selector("html[data-qkv-measured]", state="attached", timeout=15000)
        # A function, not an expression: Playwright re-evals an expression on each
        # animation frame, which the page's CSP (no 'unsafe-eval') refuses.
        page.wait_for_function("() => !document.querySelector('.qkv-widget[data-ready=loading]')", timeout=15000)
        render_deferred_blocks(page)
        page.wait_for_timeout(100)
        closed = page_height(page)
        boxes = page.evaluate(OPEN_DEEPER, DEEPER)
        page.wait_for_timeout(100)
        opened = page_height(page)
        return closed, opened, boxes
    finally:
        context.close()


def words(page: str) -> tuple[int, int] | None:
    """(words on the main line, words inside Deeper boxes) of the page's
    Markdown source, or None for a page with none (a notebook)."""
    source = ROOT / "docs" / ((page.strip("/") or "index") + ".md")
    if not source.is_file():
        return None
    text = source.read_text(encoding="utf-8")
    lines = text.splitlines()
    boxed = {n for box in story.boxes(text) if box.is_deeper for n in range(box.start, box.end + 1)}
    deeper = sum(len(lines[n - 1].split()) for n in boxed)
    return len(text.split()) - deeper, deeper


def build(site: Path) -> None:
    subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(site)], cwd=ROOT, check=True)


def main() -> int:
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp:
        site = Path(os.environ["QKV_SITE"]) if os.environ.get("QKV_SITE") else Path(tmp) / "site"
        if not os.environ.get("QKV_SITE"):
            build(site)
        pages = site_pages(site)
        over = []
        server = serve(SubPathHandler, site, SUB_PATH)
        base = next(server)
        try:
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
                print(f"page heights at {WIDTH} px wide, in screens of {SCREEN_HEIGHT} px")
                print(
                    f"{'page':<34} {'main':>6} {'open':>6} {'Deeper boxes':>13} {'words main':>11} {'words Deeper':>13}"
                )
                for path in pages:
                    closed, opened, boxes = measure(browser, base + path)
                    name = path.strip("/") or "home"
                    flag = ""
                    if path.startswith("chapters/") and closed / SCREEN_HEIGHT > MAX_SCREENS:
                        flag = f"  over {MAX_SCREENS}"
                        over.append(name)
                    counted = words(path)
                    counts = f" {counted[0]:11d} {counted[1]:13d}" if counted else f" {'-':>11} {'-':>13}"
                    print(
                        f"{name:<34} {closed / SCREEN_HEIGHT:6.1f} {opened / SCREEN_HEIGHT:6.1f} {boxes:13d}"
                        f"{counts}{flag}"
                    )
                browser.close()
        finally:
            server.close()
        if over:
            print(f"main line over {MAX_SCREENS} screens: {', '.join(over)}")
        return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
