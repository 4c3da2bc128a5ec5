"""Performance budgets of every page of the site, measured by Lighthouse.

Not a test (timings vary from run to run): a benchmark that prints a table.
Run it with ``make bench``. It builds the site, serves it on 127.0.0.1 and
runs Lighthouse 12 (npm, pinned in package.json) with the mobile preset in
Debian's Chromium, then checks the budgets. The local server gzips text as
GitHub Pages, where the site is published, does; bytes are transfer sizes.

* performance >= 95, accessibility = 100, best practices = 100 (mobile preset);
* bytes transferred on first load <= 800 KB; no single script over 300 KB.

Each page is audited QKV_BENCH_RUNS times (default 3) and the median run is
reported with the range of performance scores, since single runs vary by
about ten points. Run it on a quiet machine: Lighthouse's simulated
throttling multiplies the main-thread time it observes, so other work on
the machine lowers the scores (sinusoidal: 97-100 quiet, 81-92 at load 2,
66-83 at load 10, on 2 cores). QKV_BENCH_PAGES (comma-separated page names, e.g.
``home,multi-head,exercises/sql-softmax``) audits only those pages. Exit status 1 when a budget is missed, so it can gate a
release by hand.
"""

from __future__ import annotations

import functools
import gzip
import http.server
import io
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LIGHTHOUSE = ROOT / "node_modules" / ".bin" / "lighthouse"
CHROMIUM = os.environ.get("QKV_CHROMIUM", "/usr/bin/chromium")
CHROME_FLAGS = "--headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking --disable-component-update --disable-sync"
BUDGET = {"performance": 95, "accessibility": 100, "best-practices": 100}
RUNS = int(os.environ.get("QKV_BENCH_RUNS", "3"))  # per page; the median run is reported
MAX_PAGE_BYTES = 800 * 1024
MAX_SCRIPT_BYTES = 300 * 1024


COMPRESSIBLE = (".html", ".css", ".js", ".json", ".svg", ".xml", ".map")


class GzipHandler(http.server.SimpleHTTPRequestHandler):
    """Serve text gzip-compressed, as GitHub Pages (the real host) does."""

    def log_message(self, *args):
        pass

    def send_head(self):
        path = Path(self.translate_path(self.path))
        if path.is_dir():
            path = path / "index.html"
        accepts = "gzip" in self.headers.get("Accept-Encoding", "")
        if not (accepts and path.is_file() and path.suffix in COMPRESSIBLE):
            return super().send_head()
        body = gzip.compress(path.read_bytes(), compresslevel=6)
        self.send_response(200)
        self.send_header("Content-Type", self.guess_type(str(path)))
        self.send_header("Content-Encoding", "gzip")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        return io.BytesIO(body)


def page_name(page: str) -> str:
    """How QKV_BENCH_PAGES and the table name a page: its path without the
    slashes, "home" for the home page (chapters/scale/ -> chapters/scale)."""
    return page.strip("/") or "home"


def audited_pages(site: Path) -> list[str]:
    """Every page of the built site (home, chapters, exercises, notebooks, ...),
    or those QKV_BENCH_PAGES names, by name or last part (``scale`` is
    chapters/scale/); a name that matches no page is an error."""
    pages = []
    for index in sorted(site.rglob("index.html")):
        rel = index.parent.relative_to(site).as_posix()
        pages.append("" if rel == "." else rel + "/")
    pages.sort()
    wanted = [name.strip().strip("/") for name in os.environ.get("QKV_BENCH_PAGES", "").split(",") if name.strip()]
    names = {page: page_name(page) for page in pages}
    chosen = [p for p in pages if not wanted or {names[p], names[p].rsplit("/", 1)[-1]} & set(wanted)]
    unknown = sorted(w for w in wanted if not any(w in (n, n.rsplit("/", 1)[-1]) for n in names.values()))
    if unknown:
        raise SystemExit(f"QKV_BENCH_PAGES names no page {unknown}; the pages are {sorted(names.values())}")
    return chosen


def audit(url: str, out: Path) -> dict:
    subprocess.run(
        [
            str(LIGHTHOUSE),
            url,
            "--quiet",
            "--output=json",
            f"--output-path={out}",
            "--only-categories=performance,accessibility,best-practices",
            f"--chrome-flags={CHROME_FLAGS}",
            "--form-factor=mobile",
        ],
        check=True,
        env={**os.environ, "CHROME_PATH": CHROMIUM},
    )
    report = json.loads(out.read_text())
    scores = {k: round(100 * report["categories"][k]["score"]) for k in BUDGET}
    items = report["audits"]["network-requests"]["details"]["items"]
    scripts = [i.get("transferSize", 0) for i in items if i.get("resourceType") == "Script"]
    return {
        **scores,
        "bytes": int(report["audits"]["total-byte-weight"]["numericValue"]),
        "largest_script": max(scripts, default=0),
        "lcp_ms": round(report["audits"]["largest-contentful-paint"]["numericValue"]),
        "cls": round(report["audits"]["cumulative-layout-shift"]["numericValue"], 3),
    }


def main() -> int:
    if not LIGHTHOUSE.exists():
        print("Lighthouse is not installed: run `npm ci` (make install does).", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        site = Path(tmp) / "site"
        subprocess.run(
            [sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(site)], cwd=ROOT, check=True
        )
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(GzipHandler, directory=str(site)))
        threading.Thread(target=server.serve_forever, daemon=True).start()
        base = f"http://127.0.0.1:{server.server_address[1]}/"
        time.sleep(5)  # let the build's notebook kernels exit before timing anything
        rows = []
        for page in audited_pages(site):
            runs = sorted(
                (audit(base + page, Path(tmp) / "report.json") for _ in range(RUNS)),
                key=lambda r: r["performance"],
            )
            median = runs[len(runs) // 2]
            median["spread"] = f"{runs[0]['performance']}-{runs[-1]['performance']}"
            rows.append((page, median))
        server.shutdown()
    header = f"{'page':34} {'perf':>5} {'range':>7} {'a11y':>5} {'best':>5} {'KB':>7} {'max JS KB':>10} {'LCP ms':>7} {'CLS':>6}  budget"
    print(header)
    print("-" * len(header))
    failed = False
    for page, r in rows:
        ok = (
            all(r[k] >= v for k, v in BUDGET.items())
            and r["bytes"] <= MAX_PAGE_BYTES
            and r["largest_script"] <= MAX_SCRIPT_BYTES
        )
        failed |= not ok
        print(
            f"{page_name(page):34} {r['performance']:5d} {r['spread']:>7} {r['accessibility']:5d} {r['best-practices']:5d} "
            f"{r['bytes'] / 1024:7.1f} {r['largest_script'] / 1024:10.1f} {r['lcp_ms']:7d} {r['cls']:6.3f}  {'ok' if ok else 'MISSED'}"
        )
    print(f"\nmedian of {RUNS} Lighthouse runs per page (range = lowest-highest performance score)")
    print(
        f"budgets: performance >= {BUDGET['performance']}, accessibility >= {BUDGET['accessibility']}, "
        f"best practices >= {BUDGET['best-practices']}, "
        f"page <= {MAX_PAGE_BYTES // 1024} KB, each script <= {MAX_SCRIPT_BYTES // 1024} KB"
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
