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

import re
from urllib.parse import urlsplit

import pytest

from site_sweep import (  # tests/support, on pytest's pythonpath
    RECORD_VIOLATIONS,
    STYLED,
    SUB_PATH,
    docs_pages,
    site_pages,
    use_widgets_and_run_buttons,
)

pytestmark = pytest.mark.browser

# ``sub_path_url`` (conftest.py) serves the built site under /qkv/ and answers a
# missing URL with 404.html and status 404 (tests/support/site_sweep.py).


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


JUPYTER_STYLED = """() => {
    const wrapper = getComputedStyle(document.querySelector('.jupyter-wrapper'));
    return {
        sheets: [...document.styleSheets].filter(s => s.href && s.href.includes('/jupyter-'))
            .map(s => [s.href, s.cssRules.length]),
        index: wrapper.getPropertyValue('--md-red-50').trim(),
        theme: wrapper.getPropertyValue('--jp-shadow-base-lightness').trim(),
    };
}"""


def test_a_notebook_page_applies_the_shared_jupyter_stylesheet(browser, sub_path_url):
    """The notebook pages' JupyterLab CSS is one linked file (docs/hooks/notebook_css.py):
    it loads under the sub-path and both its parts (index.css, then the theme) apply."""
    url = sub_path_url + "notebooks/first-look/"
    page, context, problems, _ = load_under_sub_path(browser, url, expect_status=200)
    styled = page.evaluate(JUPYTER_STYLED)
    context.close()
    assert not problems, "/qkv/notebooks/first-look/:\n" + "\n".join(problems)
    assert len(styled["sheets"]) == 1, f"expected one JupyterLab stylesheet: {styled}"
    ((href, rules),) = styled["sheets"]
    assert urlsplit(href).path.startswith(SUB_PATH + "assets/stylesheets/jupyter-light.") and rules > 1000, styled
    # A custom property from each part: mkdocs-jupyter's index.css and its theme-light.css.
    assert (styled["index"], styled["theme"]) == ("#ffebee", "0"), styled


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


def csp_of(html: str) -> str:
    found = re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]+)">', html)
    return found[1] if found else ""


#: The pages whose front matter asks for 'wasm-unsafe-eval' (the SQL playground's SQLite).
WASM_PAGES = {"chapters/attention-sql/", "chapters/attention-sql-layer/"}


def test_every_page_carries_its_policy(built_site):
    for path in site_pages(built_site) + ["404.html"]:
        file = built_site / path if path.endswith(".html") else built_site / path / "index.html"
        html = file.read_text(encoding="utf-8")
        policy = csp_of(html)
        assert policy, f"/{path}: no Content-Security-Policy <meta>"
        directives = dict(d.strip().split(" ", 1) for d in policy.split(";"))
        assert directives["object-src"] == "'none'" and directives["base-uri"] == "'self'", policy
        assert directives["connect-src"] == "'self'", policy
        script_src = directives["script-src"].split()
        assert script_src[0] == "'self'" and "'unsafe-inline'" not in script_src, policy
        # Only the pages that run SQLite compiled to WebAssembly (front matter csp_wasm: true).
        assert ("'wasm-unsafe-eval'" in script_src) == (path in WASM_PAGES), (path, policy)
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


PAGES = docs_pages()


@pytest.mark.parametrize("path", PAGES, ids=lambda p: p.rstrip("/") or "home")
def test_every_page_and_its_widgets_run_with_zero_csp_violations(sweep, path):
    """The sweep's light desktop load of each page, served as published under
    /qkv/, after every widget, quiz and Run button was used."""
    found = sweep.findings(path, "light-desktop")
    failures = [f"/qkv/{path}: CSP violation: {v}" for v in found.csp_violations]
    failures += [f"/qkv/{path}: {p}" for p in found.problems_after_use]
    assert not failures, "\n".join(failures)


def test_the_404_page_runs_with_zero_csp_violations(browser, sub_path_url):
    path = "no-such-page/"
    page, context, problems = open_recording(browser, sub_path_url + path, expect_status=404)
    # A function, not an expression: Playwright re-evals an expression on each
    # animation frame, which the page's CSP (no 'unsafe-eval') refuses.
    page.wait_for_function("() => !document.querySelector('.qkv-widget[data-ready=loading]')", timeout=15000)
    use_widgets_and_run_buttons(page)
    violations = page.evaluate("window.__cspViolations")
    context.close()
    failures = [f"/qkv/{path}: CSP violation: {v}" for v in violations] + [f"/qkv/{path}: {p}" for p in problems]
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("path", PAGES, ids=lambda p: p.rstrip("/") or "home")
def test_widgets_quizzes_and_run_buttons_were_used(sweep, built_site, path):
    """The sweep really used each page's controls (light desktop): at least
    one per quiz and widget the built page holds, and every SQL block's Run
    button and the scratch box's, which ran without a database error."""
    html = (built_site / path / "index.html").read_text(encoding="utf-8")
    quizzes, widgets = html.count('class="quiz"'), html.count('class="qkv-widget')
    sql_blocks = len(re.findall(r'<div class="[^"]*\bqkv-sql\b', html))
    found = sweep.findings(path, "light-desktop")
    assert found.used >= quizzes + widgets, (
        f"/qkv/{path}: {found.used} controls used, for {quizzes} quizzes and {widgets} widgets"
    )
    scratch = 1 if sql_blocks else 0  # the scratch box after the last block has a Run button too
    assert found.runs == sql_blocks + scratch, (
        f"/qkv/{path}: {found.runs} Run buttons pressed for {sql_blocks} SQL blocks and {scratch} scratch box"
    )
    assert not found.sql_errors, f"/qkv/{path}: {found.sql_errors}"


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
