"""Link check of a built site: every ``<a href>`` to a page of the site, and
every ``#fragment``, resolves to a file and an element id of the site.

``mkdocs build --strict`` validates the Markdown links it rewrites; this
checks what it cannot see: links written as HTML, links in notebook pages,
the theme's own links (navigation, footer, skip link) and links the build
hooks add.
"""

from __future__ import annotations

import html.parser
from pathlib import Path
from urllib.parse import unquote, urlsplit

#: Schemes that leave the site (checked by no one here: the site must build offline).
EXTERNAL = ("http", "https", "mailto", "javascript", "data", "tel")


class _Page(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.ids: set[str] = set()
        self.links: list[tuple[int, str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        for key in ("id", "name") if tag == "a" else ("id",):
            if values.get(key):
                self.ids.add(values[key])
        if tag == "a" and values.get("href") is not None:
            self.links.append((self.getpos()[0], values["href"]))


def _parse(path: Path) -> _Page:
    page = _Page()
    page.feed(path.read_text(encoding="utf-8"))
    page.close()
    return page


def _target(site: Path, page: Path, path: str, base: str) -> Path | None:
    """The file of ``site`` that a link's path (relative to ``page``) names;
    None if it climbs above the site's root or, for a path from the host's
    root (``/...``, as in 404.html), lies outside ``base`` (site_url's path)."""
    if path.startswith("/"):
        if not (path + "/").startswith(base):
            return None
        here, path = (), path[len(base) :]
    else:
        here = page.parent.relative_to(site).parts
    parts = _normalise(here + tuple(path.split("/")))
    if parts is None:
        return None
    target = site.joinpath(*parts)
    if path.endswith("/") or target.is_dir():
        target = target / "index.html"
    return target


def _normalise(parts: tuple[str, ...]) -> tuple[str, ...] | None:
    out: list[str] = []
    for part in parts:
        if part in ("", "."):
            continue
        if part == "..":
            if not out:
                return None  # above the site's root
            out.pop()
        else:
            out.append(part)
    return tuple(out) or (".",)


def broken_links(site: Path, base: str = "/") -> list[str]:
    """Every broken internal link of ``site``, as ``<page>:<line>: href="...": <why>``.

    ``base`` is the path of the site's URL (mkdocs.yml ``site_url``), which
    links from the host's root start with.
    """
    site = site.resolve()
    base = "/" + base.strip("/") + "/" if base.strip("/") else "/"
    pages = sorted(site.rglob("*.html"))
    parsed = {page: _parse(page) for page in pages}
    problems = []
    for page in pages:
        name = page.relative_to(site).as_posix()
        for line, href in parsed[page].links:
            parts = urlsplit(href)
            if parts.scheme in EXTERNAL or parts.netloc or href.startswith("//"):
                continue
            if parts.scheme:
                problems.append(f'{name}:{line}: href="{href}": unknown scheme {parts.scheme!r}')
                continue
            path, fragment = unquote(parts.path), unquote(parts.fragment)
            target = _target(site, page, path, base) if path else page
            if target is None:
                problems.append(f'{name}:{line}: href="{href}": points outside the site (base {base})')
                continue
            if not target.is_file():
                problems.append(
                    f'{name}:{line}: href="{href}": no such page in the built site '
                    f"({target.relative_to(site).as_posix()})"
                )
                continue
            if not fragment or target.suffix != ".html":
                continue
            if target not in parsed:
                parsed[target] = _parse(target)
            if fragment not in parsed[target].ids:
                problems.append(
                    f'{name}:{line}: href="{href}": no id="{fragment}" in {target.relative_to(site).as_posix()}'
                )
    return problems
