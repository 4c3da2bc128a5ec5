"""The site as it is published: under a sub-path (GitHub Pages serves a
project site at /<repo>/), with a Content-Security-Policy on every page.

* The built site served under /qkv/ by a small loopback server that answers
  a missing URL with 404.html and status 404, as GitHub Pages does: a chapter
  and the 404 page load every stylesheet and script, and the styles apply.
* Every page, once each, with its widgets, quizzes and Run buttons used:
  zero Content-Security-Policy violations (securitypolicyviolation events and
  console messages), and a planted inline script is refused (the policy is
  really in force)."""

from __future__ import annotations

import functools
import http.server
import re
import threading
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from test_site_browser import site_pages

pytestmark = pytest.mark.browser

SUB_PATH = "/qkv/"


class _SubPathHandler(http.server.SimpleHTTPRequestHandler):
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


class _Body:
    def __init__(self, data: bytes) -> None:
        self.data = data

    def read(self, *args) -> bytes:
        data, self.data = self.data, b""
        return data

    def close(self) -> None:
        pass


@pytest.fixture(scope="module")
def sub_path_url(built_site):
    """http://127.0.0.1:<port>/qkv/ serving the built site (loopback only)."""
    handler = functools.partial(_SubPathHandler, directory=str(built_site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}{SUB_PATH}"
    server.shutdown()


def load_under_sub_path(browser, url: str, *, expect_status: int):
    """Load ``url``; return (page, context, problems): every request and its status."""
    context = browser.new_context(service_workers="block")
    page = context.new_page()
    problems: list[str] = []
    assets: list[str] = []

    def on_response(response):
        if response.url == url:
            if response.status != expect_status:
                problems.append(f"the page itself answered {response.status}, expected {expect_status}")
            return
        assets.append(response.url)
        if response.status >= 400:
            problems.append(f"HTTP {response.status} for {response.url}")

    page.on("response", on_response)
    page.on("requestfailed", lambda r: problems.append(f"request failed: {r.url} ({r.failure})"))
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    page.goto(url, wait_until="networkidle")
    page.wait_for_selector("html[data-qkv-measured]", state="attached", timeout=15000)
    return page, context, problems, assets


STYLED = """() => ({
    header: getComputedStyle(document.querySelector('.md-header')).position,
    sheets: [...document.styleSheets].filter(s => s.href).map(s => [s.href, s.cssRules.length]),
    bundle: typeof window.document$ === 'object' || typeof window.component$ === 'object',
})"""


@pytest.mark.parametrize(
    ("path", "status"),
    [("chapters/attention/", 200), ("chapters/no-such-chapter/", 404), ("no/such/deep/page.html", 404)],
)
def test_pages_and_the_404_page_load_their_assets_under_a_sub_path(browser, sub_path_url, path, status):
    url = sub_path_url + path
    page, context, problems, assets = load_under_sub_path(browser, url, expect_status=status)
    styled = page.evaluate(STYLED)
    context.close()
    css = [href for href, _ in styled["sheets"]]
    scripts = [a for a in assets if a.endswith(".js")]
    assert not problems, f"/qkv/{path}:\n" + "\n".join(problems)
    assert all(urlsplit(a).path.startswith(SUB_PATH) for a in assets), assets
    assert len(css) >= 3 and all(rules > 0 for _, rules in styled["sheets"]), styled["sheets"]
    assert any("/qkv/stylesheets/qkv.css" in href for href in css), css
    assert any("bundle" in s for s in scripts) and any(s.endswith("/qkv/javascripts/qkv.js") for s in scripts), scripts
    # Material's stylesheet is applied (the header is sticky) and its bundle ran.
    assert styled["header"] == "sticky", styled
    assert styled["bundle"], styled


def test_the_sub_path_server_answers_like_github_pages(sub_path_url):
    """The fixture itself: pages under /qkv/, 404.html with 404 elsewhere."""
    import urllib.error
    import urllib.request

    with urllib.request.urlopen(sub_path_url + "chapters/attention/") as response:
        assert response.status == 200
    for missing in (sub_path_url + "nope/", sub_path_url.replace(SUB_PATH, "/chapters/attention/")):
        with pytest.raises(urllib.error.HTTPError) as error:
            urllib.request.urlopen(missing)
        assert error.value.code == 404
        assert b'href="/qkv/assets/stylesheets/' in error.value.read()


# --- Content-Security-Policy --------------------------------------------------

RECORD_VIOLATIONS = """
window.__cspViolations = [];
document.addEventListener('securitypolicyviolation', e => window.__cspViolations.push(
    `${e.effectiveDirective} blocked ${e.blockedURI || 'inline'} at ${e.sourceFile}:${e.lineNumber}`));
"""

# Use every widget and quiz on the page once, as a reader would: pick the last
# option, move each slider to its end, press each button, click each canvas.
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
        const buttons = root.classList.contains('quiz')
            ? [...root.querySelectorAll('button')].slice(0, 1) : root.querySelectorAll('button');
        for (const button of buttons) { button.click(); used++; }
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


def csp_of(html: str) -> str:
    found = re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]+)">', html)
    return found[1] if found else ""


@pytest.fixture(scope="module")
def pages(built_site):
    return site_pages(built_site)


def test_every_page_carries_its_policy(built_site, pages):
    for path in pages + ["404.html"]:
        file = built_site / path if path.endswith(".html") else built_site / path / "index.html"
        html = file.read_text(encoding="utf-8")
        policy = csp_of(html)
        assert policy, f"/{path}: no Content-Security-Policy <meta>"
        directives = dict(d.strip().split(" ", 1) for d in policy.split(";"))
        assert directives["object-src"] == "'none'" and directives["base-uri"] == "'self'", policy
        assert directives["connect-src"] == "'self'", policy
        script_src = directives["script-src"].split()
        assert script_src[0] == "'self'" and "'unsafe-inline'" not in script_src, policy
        assert ("'wasm-unsafe-eval'" in script_src) == (path == "chapters/attention-sql/"), (path, policy)
        # The policy comes before any script, else those would run unchecked.
        assert html.index("Content-Security-Policy") < html.index("<script"), path


def open_recording(browser, url: str, *, expect_status: int = 200):
    """Load ``url`` with CSP violations recorded from the first script on;
    return (page, context, problems): console errors, page errors, failed or
    third-party requests, HTTP errors."""
    context = browser.new_context(viewport={"width": 1280, "height": 900}, service_workers="block")
    context.add_init_script(RECORD_VIOLATIONS)
    page = context.new_page()
    problems: list[str] = []

    def guard(route):
        request = route.request.url
        if request.startswith(("data:", "blob:")) or urlsplit(request).hostname == "127.0.0.1":
            route.continue_()
        else:
            problems.append(f"request to a third-party host: {request}")
            route.abort()

    def on_response(response):
        status = expect_status if response.url == url else 200
        if response.status != status and not (response.status < 400 and status < 400):
            problems.append(f"HTTP {response.status} for {response.url}")

    # The 404 page's own status is logged once as a console error; its assets
    # are checked one by one in on_response.
    expected_errors = ["Failed to load resource: the server responded with a status of 404 (Not Found)"] * (
        expect_status == 404
    )

    def on_console(message):
        if message.type != "error":
            return
        if message.text in expected_errors:
            expected_errors.remove(message.text)
        else:
            problems.append(f"console error: {message.text}")

    page.route("**/*", guard)
    page.on("console", on_console)
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    page.on("response", on_response)
    page.goto(url, wait_until="networkidle")
    page.wait_for_selector("html[data-qkv-measured]", state="attached", timeout=15000)
    return page, context, problems


def test_every_page_and_its_widgets_run_with_zero_csp_violations(browser, sub_path_url, pages):
    """One load per page (and the 404 page), served as published, under /qkv/."""
    failures, used, tables = [], 0, 0
    urls = [(path, 200) for path in pages] + [("no-such-page/", 404)]
    for path, status in urls:
        page, context, problems = open_recording(browser, sub_path_url + path, expect_status=status)
        page.wait_for_function("!document.querySelector('.qkv-widget[data-ready=loading]')", timeout=15000)
        used += page.evaluate(USE_WIDGETS)
        for button in page.locator(RUN_BUTTONS).all():
            button.scroll_into_view_if_needed()
            button.click()
            panel = button.locator("xpath=../following-sibling::div[contains(@class, 'qkv-sql-panel')][1]")
            panel.locator("table.qkv-sql-table, .qkv-sql-error, .qkv-sql-empty").first.wait_for(state="attached", timeout=30000)
            tables += panel.locator("table.qkv-sql-table").count()
        page.wait_for_timeout(200)
        violations = page.evaluate("window.__cspViolations")
        context.close()
        failures += [f"/qkv/{path}: CSP violation: {v}" for v in violations] + [f"/qkv/{path}: {p}" for p in problems]
    assert not failures, "\n".join(failures)
    assert used >= 20, f"only {used} widget and quiz controls were used"
    assert tables >= 5, f"only {tables} SQL Run buttons showed a result table"


def test_the_policy_is_in_force(browser, sub_path_url):
    """A script the build did not hash is refused, and the refusal is seen."""
    page, context, problems = open_recording(browser, sub_path_url)
    ran = page.evaluate(
        """() => new Promise(resolve => {
            window.__planted = false;
            const script = document.createElement('script');
            script.textContent = 'window.__planted = true';
            document.body.append(script);
            setTimeout(() => resolve(window.__planted), 100);
        })"""
    )
    violations = page.evaluate("window.__cspViolations")
    context.close()
    assert ran is False
    assert any(v.startswith("script-src-elem blocked inline") for v in violations), violations
