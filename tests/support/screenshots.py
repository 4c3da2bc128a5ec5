"""Screenshots of every page for a reviewer: ``make screenshots``.

Not a test (nothing is asserted on a picture), so not part of ``make test``:
it builds the site, serves it as published (under /qkv/), and writes for
every page and every palette x width (``ALL_CONFIGS``)

- ``artifacts/screenshots/<page>-<config>.jpg``: the whole page, every
  deferred block rendered (JPEG: a long page's full-page PNG takes twice as
  long to encode);
- ``artifacts/widgets/<widget>-<config>.png``: each widget, drawn;
- ``artifacts/widgets/quiz-wrong-try-<page>-<config>.png``: the page's first
  quiz after a wrong pick, with its hint (the reader's second try).

CI runs it after the tests and keeps ``artifacts/`` (.github/workflows/ci.yml).
``python tests/support/screenshots.py [page ...]`` takes pages as the sweep
names them (``chapters/attention/``; ``""`` is the home page).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from site_sweep import (
    ALL_CONFIGS,
    CHROMIUM,
    CHROMIUM_ARGS,
    SUB_PATH,
    WIDTHS,
    SubPathHandler,
    docs_pages,
    open_page,
    render_deferred_blocks,
    serve,
)

ROOT = Path(__file__).resolve().parent.parent.parent
ARTIFACTS = ROOT / "artifacts"


def shoot(browser, base_url: str, path: str, config: str, widgets: list[str], out: Path = ARTIFACTS) -> list[Path]:
    """Screenshot ``path`` in ``config`` ("<scheme>-<width name>") and each of
    its ``widgets`` (names) into ``out``; return the files written."""
    scheme, width_name = config.split("-")
    page, context, problems = open_page(browser, base_url + path, scheme=scheme, width=WIDTHS[width_name])
    written = []
    try:
        for name in widgets:
            page.wait_for_selector(f".qkv-widget[data-widget={name}][data-ready=true]", timeout=10000)
        render_deferred_blocks(page)
        shot = out / "screenshots" / ((path.strip("/").replace("/", "_") or "home") + f"-{config}.jpg")
        shot.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(shot), full_page=True, type="jpeg", quality=80)
        written.append(shot)
        for name in widgets:
            widget = page.locator(f".qkv-widget[data-widget={name}]")
            widget.scroll_into_view_if_needed()
            shot = out / "widgets" / f"{name}-{config}.png"
            shot.parent.mkdir(parents=True, exist_ok=True)
            widget.screenshot(path=str(shot))
            written.append(shot)
        quiz = page.locator(".quiz[data-ready=true]").first
        if quiz.count():
            right = quiz.get_attribute("data-answer")
            wrong = quiz.locator(f"button.qkv-choice:not([data-letter={right}])").first
            wrong.scroll_into_view_if_needed()
            wrong.click()
            shot = out / "widgets" / f"quiz-wrong-try-{path.strip('/').replace('/', '_') or 'home'}-{config}.png"
            shot.parent.mkdir(parents=True, exist_ok=True)
            quiz.screenshot(path=str(shot))
            written.append(shot)
    finally:
        context.close()
    return written


def main(pages: list[str]) -> int:
    from playwright.sync_api import sync_playwright

    from workers import build_site, widget_pages

    on_page: dict[str, list[str]] = {}
    for name, page in widget_pages().items():
        on_page.setdefault(page, []).append(name)
    unknown = [p for p in pages if p not in docs_pages()]
    if unknown:
        print(f"not a page of the site: {', '.join(map(repr, unknown))}; pages: {docs_pages()}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        site = Path(tmp) / "site"
        error = build_site(site)
        if error:
            print(error, file=sys.stderr)
            return 1
        server = serve(SubPathHandler, site, SUB_PATH)
        base_url = next(server)
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            count = 0
            for path in pages or docs_pages():
                for config in ALL_CONFIGS:
                    count += len(shoot(browser, base_url, path, config, on_page.get(path, [])))
            browser.close()
        server.close()
    print(f"{count} screenshots in {ARTIFACTS.relative_to(ROOT)}/")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
