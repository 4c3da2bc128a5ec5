"""What the built site may run and load: sanitised notebook pages, no
third-party resource loads, a Content-Security-Policy on every page.

* ``sanitise_notebook``: the HTML mkdocs-jupyter makes of a notebook page is
  nbconvert's template (a header of ``<script>`` and ``<style>`` blocks: the
  copy buttons' script, Jupyter's CSS) followed by the notebook itself inside
  ``<div class="jupyter-wrapper">``. The notebook part (markdown cells, code
  cells, outputs: what a pull request controls) goes through nh3 (the
  html5ever-based ammonia sanitiser): no ``<script>``, ``<style>``, ``<iframe>``,
  ``<object>``, ``<form>``, no ``on*=`` handlers, no ``javascript:`` URLs, no
  ids or attributes that Material's own components answer to. The template's
  header stays as it is (it holds nothing from the notebook).
* ``third_party_loads``: every place a page would load something from
  another host when it opens (``src``, ``srcset``, ``data``, ``poster``,
  ``background``, SVG ``href``, ``<link rel=stylesheet|preload|...>``,
  CSS ``url()`` and ``@import`` in ``style`` attributes and ``<style>``
  blocks, ``<meta http-equiv=refresh>``, ``<base href>``), found by parsing
  the HTML (``html.parser``) and the CSS (tinycss2), each as
  ``<file>:<line>: ...``. Links (``<a href>``) to other sites are fine.
* ``page_code``: what in a page's own content, as built (after Markdown, the
  notebook sanitiser and math), would run code (``<script>``, ``<iframe>``,
  ``<object>``, ``<embed>``, ``on*=``, ``javascript:`` URLs) or be acted on by
  Material's scripts (``data-md-*``, ``data-clipboard-*``, ``data-copy``,
  ``id="__..."``), found by parsing the HTML and searching its raw text, each as
  ``<page>:<line>`` of the page's source.
* ``bidi_in_source`` and ``authored_markup``: what makes the reader see
  another order than the page holds (bidirectional controls, ``<bdo>``,
  ``dir=``) or hides part of a number (MathML written by hand), each as
  ``<page>:<line>``; the notebook sanitiser drops the first three.
* ``static_file_code`` and ``docs_file_problem``: a file under docs/ that is
  not a page runs no script (an SVG or XML one is read by an XML parser too),
  and its suffix is one the site has (``DOCS_SUFFIXES``); ``static_file_loads``:
  an SVG or XML one (opened in its own tab, no policy) names no CSS ``url()``
  but its own ``#id`` and no ``href`` to another host.
* ``content_security_policy``: the policy of one page, from its final HTML:
  ``script-src 'self'`` plus the SHA-256 of each inline script on it
  (``'wasm-unsafe-eval'`` too on pages that run sql.js), ``object-src 'none'``,
  ``base-uri 'self'``, ``connect-src 'self'``; ``with_csp`` puts it in a
  ``<meta>`` tag at the top of ``<head>``.
"""

from __future__ import annotations

import base64
import collections
import contextvars
import hashlib
import html
import re
import unicodedata
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import PurePosixPath
from xml.parsers import expat

import nh3
import tinycss2

# --- sanitising notebook pages ------------------------------------------------

NOTEBOOK_START = '<div class="jupyter-wrapper">'
NOTEBOOK_END = "<!-- jupyter-wrapper -->"

_SVG_TAGS = {
    "svg", "g", "path", "rect", "circle", "ellipse", "line", "polyline", "polygon",
    "text", "tspan", "title", "desc", "defs", "clipPath", "clippath",
}  # fmt: skip
_SVG_ATTRIBUTES = {
    "d", "fill", "fill-rule", "fill-opacity", "stroke", "stroke-width", "stroke-linecap",
    "stroke-linejoin", "stroke-opacity", "stroke-dasharray", "transform", "x", "y", "dx", "dy",
    "x1", "y1", "x2", "y2", "cx", "cy", "r", "rx", "ry", "points", "width", "height",
    "viewBox", "viewbox", "version", "preserveAspectRatio", "text-anchor", "font-size",
    "font-family", "font-weight", "opacity", "clip-path", "xmlns",
}  # fmt: skip
# No <bdo> (it draws its text right to left: authored_markup); its text stays.
NOTEBOOK_TAGS = (set(nh3.ALLOWED_TAGS) | _SVG_TAGS | {"clipboard-copy"}) - {"map", "area", "bdo"}
NOTEBOOK_ATTRIBUTES = {
    # style attributes stay only as _notebook_attribute allows (alignment);
    # <style> elements go: they restyle the page.
    # no dir= (right to left reorders a number's digits: authored_markup)
    "*": {"class", "id", "title", "lang", "hidden", "tabindex", "role", "style"},
    "a": {"href", "hreflang"},
    "img": {"src", "alt", "width", "height", "loading"},
    "td": {"colspan", "rowspan", "align"},
    "th": {"colspan", "rowspan", "align", "scope"},
    "ol": {"start"},
    "details": {"open"},
    "clipboard-copy": {"for"},
    **{tag: set(_SVG_ATTRIBUTES) for tag in _SVG_TAGS},
}
# The element and its content go: script, style and what runs or embeds.
NOTEBOOK_DROPPED = {"script", "style", "iframe", "object", "embed", "noscript", "template", "form", "math"}
NOTEBOOK_URL_SCHEMES = (set(nh3.ALLOWED_URL_SCHEMES) | {"data"}) - {"url"}


#: mkdocs-jupyter's copy buttons: ``<clipboard-copy for="cell-N">`` (notebook.html.j2) copies the text of
#: ``document.getElementById("cell-N")``, the first element with that id, which its template means to be
#: ``<div id="cell-N" class="clipboard-copy-txt">`` (nbconvert2.py) but a markdown cell before it could supply
#: (``<div id="cell-1" hidden>curl ... | sh</div>``: security re-review 7b, V4). The sanitiser renames the
#: template's pairs with a prefix no cell can write (from the hash of the page's notebook part, which holds the
#: cells) and drops every other id but a heading's (the anchors the table of contents links to).
#: (The HTML reaches the hook re-serialised: attributes in alphabetical order, ``<div class=... id=...>``.)
_TEMPLATE_COPY_TAG = re.compile(r'<(?:clipboard-copy\b[^<>]*?\sfor|div class="clipboard-copy-txt" id)="cell-(\d+)"')
_COPY_PREFIX: contextvars.ContextVar[str] = contextvars.ContextVar("copy_prefix", default="")
_HEADINGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})
COPY_TARGET_WHY = (
    "a notebook cell writes the markup of a code cell's copy target, so that cell's copy button would copy "
    "the cell's text instead of the code shown: delete it"
)


def _notebook_attribute(tag: str, attribute: str, value: str) -> str | None:
    """Keep no attribute that Material's or qkv's scripts would act on, and no id but a heading's and the
    template's copy targets (``_TEMPLATE_COPY_TAG``)."""
    copy_prefix = _COPY_PREFIX.get()
    if attribute == "id" or (tag == "clipboard-copy" and attribute == "for"):
        if copy_prefix and value.startswith(copy_prefix):
            return value  # the template's copy button and its target, renamed by sanitise_notebook
        if attribute == "for" or tag not in _HEADINGS or value.startswith(("__", "cell-", "qkv-copy-")):
            return None  # Material's own elements (__config, __search, ...) and the copy targets' names
    if attribute.startswith((*THEME_ATTRIBUTE_PREFIXES, "data-qkv")):
        return None
    if attribute == "style" and not allowed_style(value):
        return None  # CSS of the notebook's own (see _ALLOWED_STYLE)
    if attribute == "class":  # Material's classes (md-tooltip hides text) go, the rest stay
        return " ".join(c for c in value.split() if not c.startswith("md-")) or None
    if hiding_attribute(tag, attribute, value):
        return None
    return value


def _clean(fragment: str) -> str:
    """The fragment sanitised, without bidirectional controls (``BIDI_CONTROLS``) or invisible unassigned code points."""
    return _INVISIBLE_RANGES.sub("", BIDI_CONTROL.sub("", _nh3_clean(fragment)))


def _nh3_clean(fragment: str) -> str:
    return nh3.clean(
        fragment,
        tags=NOTEBOOK_TAGS,
        clean_content_tags=NOTEBOOK_DROPPED,
        attributes=NOTEBOOK_ATTRIBUTES,
        attribute_filter=_notebook_attribute,
        generic_attribute_prefixes={"data-", "aria-"},
        url_schemes=NOTEBOOK_URL_SCHEMES,
        link_rel=None,
        strip_comments=True,
    )


def sanitise_notebook(content: str, where: str, source: str = "") -> str:
    """mkdocs-jupyter's HTML for one page with the notebook part sanitised.

    The template's header (before ``<div class="jupyter-wrapper">``) is kept;
    after the notebook nothing is: mkdocs-jupyter appends a ``<style>`` there
    that holds the Python list of the header's CSS (``['pre { ...']``), a
    dead copy of about 5 KB a page (nbconvert2.py, 0.26.3), and no CSS of a
    notebook's own stays (``page_code``). No id a cell writes stays but a
    heading's: a code cell's copy button copies the element with its id
    (``_TEMPLATE_COPY_TAG``); ``source``, the notebook's text, is searched
    for the line of a cell that writes the template's copy target."""
    start = content.find(NOTEBOOK_START)
    end = content.rfind(NOTEBOOK_END)
    if start < 0 or end < start:
        raise ValueError(
            f"{where}: no {NOTEBOOK_START} ... {NOTEBOOK_END} in mkdocs-jupyter's output: "
            "its template changed; the notebook cannot be sanitised"
        )
    end += len(NOTEBOOK_END)
    header, notebook, tail = content[:start], content[start:end], content[end:]
    tail = nh3.clean(tail, tags=set(), clean_content_tags={"script", "style"}, attributes={}, strip_comments=True)
    prefix = f"qkv-copy-{hashlib.sha256(notebook.encode('utf-8')).hexdigest()[:16]}-"
    notebook = _TEMPLATE_COPY_TAG.sub(
        lambda m: m[0][: m.start(1) - m.start() - len("cell-")] + prefix + m[1] + '"', notebook
    )
    token = _COPY_PREFIX.set(prefix)
    try:
        cleaned = _clean(notebook)
    finally:
        _COPY_PREFIX.reset(token)
    # A cell that wrote the template's own markup (renamed with it) would come first: refused.
    targets = collections.Counter(re.findall(rf'\sid="({re.escape(prefix)}\d+)"', cleaned))
    if twice := [name for name, count in targets.items() if count > 1]:
        number = twice[0].rsplit("-", 1)[1]
        lines = source.split("\n")
        line = next((n for n, text in enumerate(lines, 1) if f"cell-{number}" in text), None)
        at = f"{where}:{line}" if line else where
        raise ValueError(f'{at}: <div id="cell-{number}" class="clipboard-copy-txt">: {COPY_TARGET_WHY}')
    return header + cleaned + tail


# --- third-party resource loads -------------------------------------------------

# <link rel=...> values that make the browser fetch (or connect) at once.
LOADING_RELS = {
    "stylesheet", "preload", "modulepreload", "prefetch", "preconnect", "dns-prefetch",
    "icon", "apple-touch-icon", "apple-touch-icon-precomposed", "mask-icon", "manifest",
}  # fmt: skip
URL_ATTRIBUTES = {"src", "data", "poster", "background", "codebase", "lowsrc", "dynsrc"}
SRCSET_ATTRIBUTES = {"srcset", "imagesrcset"}
SVG_HREF_TAGS = {"image", "use", "feimage", "script"}
_SCHEME = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.\-]*):")
_LOCAL_SCHEMES = {"data", "blob", "about", "javascript", "mailto", "tel"}
_REFRESH_URL = re.compile(r"""^\s*\d*\.?\d*\s*[;,]?\s*(?:url\s*=\s*)?["']?(?P<url>[^"']*)""", re.IGNORECASE)


def is_third_party(url: str) -> bool:
    """True if loading ``url`` from a page of this site would ask another host.

    As a browser reads it: tabs and newlines anywhere are dropped, spaces and
    control characters at the ends too, and ``\\`` counts as ``/``."""
    url = re.sub(r"[\t\n\r]", "", url).strip(
        "\x00\x01\x02\x03\x04\x05\x06\x07\x08\x0b\x0c\x0e\x0f"
        "\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f "
    )
    url = url.replace("\\", "/")
    if url.startswith("//"):
        return True
    scheme = _SCHEME.match(url)
    return bool(scheme) and scheme[1].lower() not in _LOCAL_SCHEMES


#: SVG's animation elements (SMIL): each sets an attribute of its target (``attributeName``) to its
#: ``to``, ``from``, ``by`` or each of its ``values`` in turn (security re-review 8b, W2).
ANIMATION_ELEMENTS = frozenset({"set", "animate", "animatecolor", "animatemotion", "animatetransform"})
_ANIMATION_VALUES = ("to", "from", "by", "values")


def animated_urls(tag: str, attributes: dict[str, str]) -> list[tuple[str, str]]:
    """(attribute, value) for each URL an SVG animation element (any prefix) sets a URL-valued attribute
    (``href``, ``xlink:href``, ``src``, ...) to that is not the document's own ``#id``; ``attributes``
    by lower-case name.

    >>> animated_urls("set", {"attributename": "xlink:href", "to": "http://x.example/a.png"})
    [('to', 'http://x.example/a.png')]
    >>> animated_urls("animate", {"attributename": "href", "values": "#a; #b"}), animated_urls("rect", {})
    ([], [])
    """
    if tag.rsplit(":", 1)[-1].lower() not in ANIMATION_ELEMENTS:
        return []
    target = attributes.get("attributename", "").strip().lower().rsplit(":", 1)[-1]
    if target not in _XML_URL_ATTRIBUTES:
        return []
    found = []
    for name in _ANIMATION_VALUES:
        for part in (attributes.get(name) or "").split(";") if name == "values" else [attributes.get(name) or ""]:
            if part.strip() and not part.strip().startswith("#"):
                found.append((name, part.strip()))
    return found


def _css_urls(tokens, line: int = 1):
    """(url, line) for each url()/src()/image-set() string/@import in CSS component values."""
    for token in tokens:
        kind = getattr(token, "type", None)
        token_line = line + (getattr(token, "source_line", 1) or 1) - 1
        if kind == "url":
            yield token.value, token_line
        elif kind == "function":
            if token.lower_name in {"url", "src", "image-set", "-webkit-image-set", "image"}:
                for arg in token.arguments:
                    if arg.type == "string":
                        yield arg.value, token_line
            yield from _css_urls(token.arguments, line)
        elif kind == "at-rule":
            if token.lower_at_keyword == "import":
                for arg in token.prelude:
                    if arg.type == "string":
                        yield arg.value, token_line
            yield from _css_urls(token.prelude, line)
            yield from _css_urls(token.content or [], line)
        elif kind == "qualified-rule":
            yield from _css_urls(token.prelude, line)
            yield from _css_urls(token.content, line)
        elif kind in {"() block", "[] block", "{} block"}:
            yield from _css_urls(token.content, line)
        elif kind == "declaration":
            yield from _css_urls(token.value, line)


def css_third_party_loads(css: str, line: int = 1) -> list[tuple[int, str]]:
    """(line, message) for each url() or @import in ``css`` that names another host."""
    rules = tinycss2.parse_stylesheet(css, skip_whitespace=True, skip_comments=True)
    return [
        (at, f"CSS url({url!r}) loads from another host") for url, at in _css_urls(rules, line) if is_third_party(url)
    ]


def _style_attribute_loads(css: str, line: int) -> list[tuple[int, str]]:
    tokens = tinycss2.parse_component_value_list(css, skip_comments=True)
    return [
        (line, f"style attribute url({url!r}) loads from another host")
        for url, _ in _css_urls(tokens, line)
        if is_third_party(url)
    ]


class _LoadFinder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[tuple[int, str]] = []
        self._style_line: int | None = None
        self._style: list[str] = []

    def _add(self, message: str) -> None:
        self.found.append((self.getpos()[0], message))

    def handle_starttag(self, tag, attrs):
        line = self.getpos()[0]
        values = {name.lower(): (value or "") for name, value in attrs}
        for name, value in values.items():
            if name in URL_ATTRIBUTES and is_third_party(value):
                self._add(f"<{tag} {name}={value!r}> loads from another host")
            elif name in SRCSET_ATTRIBUTES:
                for candidate in value.split(","):
                    url = candidate.strip().split(" ")[0] if candidate.strip() else ""
                    if url and is_third_party(url):
                        self._add(f"<{tag} {name}> candidate {url!r} loads from another host")
            elif name == "style":
                self.found += _style_attribute_loads(value, line)
            elif "(" in value:  # an SVG presentation attribute (fill, mask, clip-path, marker-*, cursor) is CSS
                self.found += [
                    (line, f"<{tag} {name}> url({url!r}) loads from another host")
                    for url, _ in _css_urls(tinycss2.parse_component_value_list(value, skip_comments=True), line)
                    if is_third_party(url)
                ]
        for name, value in animated_urls(tag, values):
            if is_third_party(value):
                target = values.get("attributename", "").strip()
                self._add(f"<{tag} attributeName={target!r} {name}={value!r}> loads from another host")
        if tag in SVG_HREF_TAGS:
            for name in ("href", "xlink:href"):
                if name in values and is_third_party(values[name]):
                    self._add(f"<{tag} {name}={values[name]!r}> loads from another host")
        if tag == "link":
            rels = set(values.get("rel", "").lower().split())
            if rels & LOADING_RELS and is_third_party(values.get("href", "")):
                self._add(f"<link rel={values.get('rel')!r} href={values.get('href')!r}> loads from another host")
        if tag == "base" and is_third_party(values.get("href", "")):
            self._add(f"<base href={values['href']!r}> makes every relative URL load from another host")
        if tag == "meta" and values.get("http-equiv", "").lower() == "refresh":
            url = _REFRESH_URL.match(values.get("content", ""))["url"]
            if is_third_party(url):
                self._add(f"<meta http-equiv=refresh content={values.get('content')!r}> sends the page to another host")
        if "srcdoc" in values:  # a frame's whole document, inline
            for message in third_party_loads(values["srcdoc"], "srcdoc"):
                self._add(f"<{tag} srcdoc>: {message.split(': ', 1)[1]}")
        if tag == "style":
            self._style_line, self._style = line, []

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)
        if tag == "style":
            self._style_line = None

    def handle_data(self, data):
        if self._style_line is not None:
            self._style.append(data)

    def handle_endtag(self, tag):
        if tag == "style" and self._style_line is not None:
            self.found += css_third_party_loads("".join(self._style), self._style_line)
            self._style_line = None


def third_party_loads(text: str, where: str) -> list[str]:
    """``<where>:<line>: <what>`` for each third-party resource load in an HTML page."""
    finder = _LoadFinder()
    finder.feed(text)
    finder.close()
    return [f"{where}:{line}: {message}" for line, message in sorted(finder.found)]


def css_file_loads(text: str, where: str) -> list[str]:
    return [f"{where}:{line}: {message}" for line, message in css_third_party_loads(text)]


# --- Content-Security-Policy ------------------------------------------------------


@dataclass
class _Script:
    attrs: dict
    body: str


class _ScriptFinder(HTMLParser):
    """Inline scripts, with their text exactly as the browser hashes it. A
    ``<script>`` inside ``<title>`` or ``<textarea>`` is text to a browser
    (which Python's parser does not know), so it is no script and gets no hash."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=False)
        self.scripts: list[_Script] = []
        self._text_only: str | None = None

    def handle_starttag(self, tag, attrs):
        if self._text_only:
            return
        if tag in {"title", "textarea"} and getattr(self, "_body", None) is None:
            self._text_only = tag
        elif tag == "script":
            self._attrs = {name.lower(): value for name, value in attrs}
            self._body: list[str] | None = []

    def handle_data(self, data):
        if getattr(self, "_body", None) is not None:
            self._body.append(data)

    def handle_endtag(self, tag):
        if self._text_only:
            self._text_only = None if tag == self._text_only else self._text_only
        elif tag == "script" and getattr(self, "_body", None) is not None:
            self.scripts.append(_Script(self._attrs, "".join(self._body)))
            self._body = None


def inline_script_hashes(text: str) -> list[str]:
    """'sha256-...' for each distinct inline script (no src) in the page, in order."""
    finder = _ScriptFinder()
    finder.feed(text)
    finder.close()
    hashes: list[str] = []
    for script in finder.scripts:
        if "src" in script.attrs:
            continue
        # The browser hashes the text after its input stream turned CR LF and CR into LF.
        body = script.body.replace("\r\n", "\n").replace("\r", "\n")
        digest = base64.b64encode(hashlib.sha256(body.encode("utf-8")).digest()).decode()
        if f"'sha256-{digest}'" not in hashes:
            hashes.append(f"'sha256-{digest}'")
    return hashes


def content_security_policy(text: str, *, wasm: bool = False, live_reload: bool = False) -> str:
    """The policy of the page ``text``. ``live_reload`` (``mkdocs serve`` only,
    never a built site): inline scripts allowed instead of hashed, because the
    server adds one that changes on every request."""
    inline = ["'unsafe-inline'"] if live_reload else inline_script_hashes(text)
    script_src = ["'self'"] + (["'wasm-unsafe-eval'"] if wasm else []) + inline
    return "; ".join(
        [
            "default-src 'self'",
            "script-src " + " ".join(script_src),
            # Inline <style> blocks and style attributes (Jupyter's CSS, the
            # SQL chapter's tables) stay allowed; only scripts are locked down.
            "style-src 'self' 'unsafe-inline'",
            "img-src 'self' data:",
            "font-src 'self' data:",
            "object-src 'none'",
            "base-uri 'self'",
            "connect-src 'self'",
            "form-action 'self'",
        ]
    )


_CHARSET = re.compile(r"<meta\s+charset=[^>]*>", re.IGNORECASE)


class _HeadFinder(HTMLParser):
    """Where the document's real ``<head>`` start tag ends, as a parser reads it (not a ``<head>`` in a
    comment or an attribute value: security re-review 8b, W3); ``before``: the first thing other than a
    doctype, a comment, whitespace or ``<html>`` that comes before it (a browser then opens the head
    itself and ignores a later ``<head>`` tag)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=False)
        self.end: int | None = None
        self.before = ""

    def _offset(self) -> int:
        line, column = self.getpos()
        return sum(map(len, self.rawdata.split("\n")[: line - 1])) + line - 1 + column

    def handle_starttag(self, tag, attrs):
        if self.end is not None or self.before:
            return
        if tag == "head":
            self.end = self._offset() + len(self.get_starttag_text() or "")
        elif tag != "html":
            self.before = f"<{tag}>"

    def handle_startendtag(self, tag, attrs):
        if self.end is None and not self.before:
            self.before = f"<{tag}/>"

    def handle_data(self, data):
        if self.end is None and not self.before and data.strip():
            self.before = repr(data.strip()[:30])


def with_csp(text: str, where: str, *, wasm: bool = False, live_reload: bool = False) -> str:
    """The page with its Content-Security-Policy ``<meta>`` at the top of
    ``<head>`` (after ``<meta charset>``, which must stay in the first 1024
    bytes), before any script. The ``<head>`` is the start tag an HTML parser
    finds (``_HeadFinder``), which must come before any content."""
    finder = _HeadFinder()
    finder.feed(text)
    finder.close()
    if finder.end is None:
        found = f"{finder.before} comes before any <head>" if finder.before else "no <head>"
        raise ValueError(
            f"{where}: {found}, so there is no <head> to put the Content-Security-Policy <meta> at the top of "
            "(a <head> in a comment or an attribute value is no head, and a browser opens the head itself at the "
            "first content): start the file <!doctype html><html><head>"
        )
    after_head = finder.end + len(text[finder.end :]) - len(text[finder.end :].lstrip())
    charset = _CHARSET.match(text, after_head)
    end = charset.end() if charset else finder.end
    policy = content_security_policy(text, wasm=wasm, live_reload=live_reload)
    policy = html.escape(policy, quote=False).replace('"', "&quot;")
    tag = f'\n    <meta http-equiv="Content-Security-Policy" content="{policy}">'
    return text[:end] + tag + text[end:]


_URL_IN_MESSAGE = re.compile(r"//[^'\"\s)]+")


def located_in_source(problems: list[str], source_name: str, source_text: str) -> list[str]:
    """Each ``<built>:<line>: <what>`` problem as ``<source>:<line>: <what> (built <built>:<line>)``
    when the URL it names appears in the page's source; unchanged otherwise
    (the load came from the theme or a hook)."""
    lines = source_text.splitlines()
    located = []
    for problem in problems:
        built, message = problem.split(": ", 1)
        url = _URL_IN_MESSAGE.search(message)
        number = next((n for n, line in enumerate(lines, 1) if url and url[0] in line), None)
        located.append(f"{source_name}:{number}: {message} (built {built})" if number else problem)
    return located


# --- a page's own content: no script, nothing the theme's scripts act on ---------

#: Elements that run or embed code: a page's content holds none.
CODE_ELEMENTS = frozenset({"script", "iframe", "object", "embed", "frame", "frameset", "applet"})
#: Elements that change what the page loads or shows without a script: a
#: ``<base href>`` makes the theme's relative ``<script src>`` load a file the
#: pull request put elsewhere under docs/ (security review 3b, S4); a ``<meta>``
#: refreshes or sets policy; a ``<template>`` can open a shadow root that
#: shows text the page's own text does not hold (S5).
REDIRECTING_ELEMENTS = frozenset({"base", "meta", "template"})
#: Attributes that Material's own scripts act on: ``class="md-..."`` (its
#: classes: ``md-tooltip`` hides text until hovered), ``data-md-*`` (its
#: components), ``data-clipboard-*`` (its copy button hands every element
#: with ``data-clipboard-text`` or ``data-clipboard-target`` to clipboard.js, so
#: a copy icon next to ``pip install qkv`` could copy another command) and
#: ``data-copy`` (a code block's copy button copies the value of its closest
#: ancestor with ``data-copy`` instead of the code shown). Ids
#: starting ``__`` are its elements (``__config``, ``__search``, ...), except
#: the tabs pymdownx.tabbed makes (``__tabbed_1_1``).
THEME_ATTRIBUTE_PREFIXES = ("data-md", "data-clipboard", "data-copy")
#: Front matter that lets one page keep scripts of its own (named in the build log).
ALLOW_SCRIPTS = "allow_inline_scripts"
_SCRIPT_SCHEMES = ("javascript", "vbscript")
#: Ids starting ``__`` that the content's own Markdown makes (pymdownx.tabbed's tabs).
_CONTENT_IDS = ("__tabbed_",)
#: A ``style=`` a page's content may carry: the alignment Markdown tables
#: write, and the space a widget's placeholder keeps (``parts.py``). Any
#: other CSS of a page's own, in a ``style=`` or a ``<style>``, could hide text
#: from the reader that the copy button still copies (Material copies
#: ``innerText``, which keeps text drawn at ``font-size: 0`` or hidden only
#: while ``[data-md-copying]`` is absent), or show a number the prose check
#: never reads (``::after { content: "0.6652" }``).
_ALLOWED_STYLE = {
    "text-align": re.compile(r"left|right|center"),
    "min-height": re.compile(r"\d+(?:\.\d+)?rem"),
    "--qkv-phone-min-height": re.compile(r"\d+(?:\.\d+)?rem"),
}


def allowed_style(value: str) -> bool:
    """Whether a ``style=`` holds only declarations a page's content may carry (``_ALLOWED_STYLE``).

    >>> allowed_style("text-align: right;"), allowed_style("min-height: 22rem; --qkv-phone-min-height: 25rem")
    (True, True)
    >>> allowed_style("text-align: right; font-size: 0"), allowed_style("display:none")
    (False, False)
    """
    declarations = [part.strip() for part in value.split(";") if part.strip()]
    for declaration in declarations:
        name, colon, setting = declaration.partition(":")
        pattern = _ALLOWED_STYLE.get(name.strip().lower())
        if not colon or pattern is None or not pattern.fullmatch(setting.strip().lower()):
            return False
    return True


def hiding_attribute(tag: str, name: str, value: str) -> bool:
    """Whether an SVG or MathML attribute can hide text, or draw it unreadable (CSS by another name).

    >>> hiding_attribute("text", "display", "none"), hiding_attribute("math", "display", "block")
    (True, False)
    >>> hiding_attribute("mn", "mathsize", "0"), hiding_attribute("g", "opacity", "0.01")
    (True, True)
    """
    name, value = name.lower(), value.strip().lower()
    if name in ("mathsize", "mathcolor", "mathbackground"):
        return True
    if name == "display":
        return tag != "math" or value not in ("block", "inline")
    if name == "visibility":
        return value in ("hidden", "collapse")
    number = re.match(r"[-+]?\d*\.?\d+", value)
    if name in ("opacity", "fill-opacity", "font-size") and number:
        return float(number[0]) < (1.0 if name == "font-size" else 0.1)
    return False


#: The same things found in the raw text: a browser may read markup where
#: Python's html.parser reads text (a comment closed by ``--!>``, a ``<style>``
#: inside ``<svg>``), so the raw text is searched too.
#: Each pattern but the first looks inside a tag (``<`` in text is always escaped), which
#: starts with any XML name start character (``<_:svg onload=...>``, ``<é:svg ...>``: security re-review 6b, T4).
_RAW = {
    "element": re.compile(
        r"<(?:[\w.-]+:)?(?:script|iframe|object|embed|frame|frameset|applet)(?=[\s/>])", re.IGNORECASE
    ),
    "handler": re.compile(r"<(?:[^\W\d]|:)[^<>]*?[\s\"'/](on[a-z]+\s*=)", re.IGNORECASE),
    "url": re.compile(r"<(?:[^\W\d]|:)[^<>]*?=\s*[\"']?\s*((?:javascript|vbscript):)", re.IGNORECASE),
    "theme": re.compile(
        r"<(?:[^\W\d]|:)[^<>]*?[\s\"'/]((?:data-md|data-clipboard|data-copy)[\w-]*\s*=|id\s*=\s*[\"']?__(?!tabbed_))",
        re.IGNORECASE,
    ),
    "style": re.compile(r"<(?:[\w.-]+:)?(?:style|link)(?=[\s/>])", re.IGNORECASE),
}
#: A ``style=`` in the raw text, with its value (checked by ``allowed_style``).
_RAW_STYLE_ATTRIBUTE = re.compile(
    r"<(?:[^\W\d]|:)[^<>]*?[\s\"'/](style)\s*=\s*(?:\"([^\"]*)\"|'([^']*)'|([^\s>]*))", re.IGNORECASE
)


def script_url(url: str) -> bool:
    """True if following or loading ``url`` runs code (``javascript:``, ``vbscript:``).

    Read as a browser reads it: tabs and newlines anywhere are dropped,
    spaces and control characters at the start too, the scheme in any case.

    >>> script_url(" JAVA\\tscript:alert(1)"), script_url("https://example.org/javascript:")
    (True, False)
    """
    url = re.sub(r"[\t\n\r]", "", url).lstrip("".join(map(chr, range(33))))
    scheme = _SCHEME.match(url)
    return bool(scheme) and scheme[1].lower() in _SCRIPT_SCHEMES


@dataclass(frozen=True)
class _Active:
    line: int  # in the HTML
    kind: str  # "element", "handler", "url" (these run code), "theme", "style", "redirect" or "animation"
    what: str
    clue: str  # text to look for in the page's source


class _ActiveFinder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[_Active] = []
        self._script: tuple[int, str] | None = None
        self._body: list[str] = []

    def _add(self, kind: str, what: str, clue: str) -> None:
        self.found.append(_Active(self.getpos()[0], kind, what, clue))

    def handle_starttag(self, tag, attrs):
        values = [(name.lower(), value or "") for name, value in attrs]
        local = tag.rsplit(":", 1)[-1]  # an XML prefix (<svg:script>) names the same element
        for name, value in values:
            if name.rsplit(":", 1)[-1].startswith("on"):
                self._add("handler", f"{name}= on <{tag}>", value or name)
            elif url := next(filter(script_url, [value, *(value.split(";") if name == "values" else [])]), None):
                # an SVG <animate values="#;javascript:..."> sets a link to each value in turn
                scheme, _, rest = re.sub(r"\s", "", url).partition(":")
                self._add("url", f"a {scheme.lower()}: URL in <{tag} {name}>", rest or url)
            elif name.startswith(THEME_ATTRIBUTE_PREFIXES):
                self._add("theme", f"{name} on <{tag}>", value or name)
            elif name == "style" and not allowed_style(value):
                self._add("style", f'style="{value[:60]}" on <{tag}>', value or name)
            elif name == "class" and (theirs := [c for c in value.split() if c.startswith("md-")]):
                self._add("theme", f'class="{" ".join(theirs)}" on <{tag}>', theirs[0])
            elif hiding_attribute(local, name, value):
                self._add("style", f'{name}="{value}" on <{tag}>', f"{name}=")
            elif name == "id" and value.startswith("__") and not value.startswith(_CONTENT_IDS):
                self._add("theme", f'id="{value}" on <{tag}>', value)
        for name, value in animated_urls(tag, dict(values)):
            target = dict(values).get("attributename", "").strip()
            self._add("animation", f"<{tag} attributeName={target!r} {name}={value!r}>", value)
        if local == "script":
            src = dict(values).get("src") or dict(values).get("href") or dict(values).get("xlink:href")
            self._script, self._body = (self.getpos()[0], tag, f'src="{src}"' if src else ""), []
        elif local in CODE_ELEMENTS:
            self._add("element", f"<{tag}>", next((v for _, v in values if v), f"<{tag}"))
        elif local in ("style", "link"):  # a <link rel=stylesheet> in the body applies too
            self._add("style", f"<{tag}>", f"<{tag}")
        elif local in REDIRECTING_ELEMENTS:
            self._add("redirect", f"<{tag}>", f"<{tag}")
        if hiding := [name for name, _ in values if name in ("popover", "shadowrootmode", "shadowroot")]:
            self._add("style", f"popover or shadow root on <{tag}>", hiding[0])

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)
        if tag.rsplit(":", 1)[-1] == "script":
            self.handle_endtag(tag)

    def handle_data(self, data):
        if self._script is not None:
            self._body.append(data)

    def handle_endtag(self, tag):
        if tag.rsplit(":", 1)[-1] == "script" and self._script is not None:
            line, name, src = self._script
            body = next((part.strip() for part in "".join(self._body).splitlines() if part.strip()), "")
            what = f"<{name}>" + (f" ({src})" if src else f" {body[:60]!r}" if body else "")
            self.found.append(_Active(line, "element", what, body or src or "<script"))
            self._script = None


def _active(content: str, xml: bool = False) -> list[_Active]:
    """What runs code or the theme acts on: read by html.parser, then (``xml``)
    by an XML parser (``_xml_active``), then searched for in the raw text."""
    finder = _ActiveFinder()
    finder.feed(content)
    finder.close()
    if finder._script is not None:  # a <script> never closed still runs
        finder.handle_endtag(finder._script[1])
    found = list(finder.found)
    seen = {(item.line, item.kind) for item in found}
    for item in _xml_active(content) if xml else []:
        if (item.line, item.kind) not in seen:
            seen.add((item.line, item.kind))
            found.append(item)
    for kind, pattern in _RAW.items():
        for match in pattern.finditer(content):
            line = content.count("\n", 0, match.start()) + 1
            if (line, kind) not in seen:
                seen.add((line, kind))
                snippet = match.group(match.lastindex or 0).strip(" \t\n\"'/=")
                found.append(_Active(line, kind, _misread(snippet), snippet))
    # A script URL written with character references (java&#9;script:, &#106;avascript:, javascript&colon;),
    # which a browser decodes (and whose tabs and newlines it drops) before it reads the scheme
    # (security re-review 9b, X1).
    for number, text_line in enumerate(content.split("\n"), 1):
        if "&" in text_line and (number, "url") not in seen:
            match = _RAW["url"].search(re.sub(r"[\t\r\n]", "", html.unescape(text_line)))
            if match:
                seen.add((number, "url"))
                found.append(_Active(number, "url", f"{match[1]!r} written with character references", match[1]))
    for match in _RAW_STYLE_ATTRIBUTE.finditer(content):
        line = content.count("\n", 0, match.start()) + 1
        value = html.unescape(next((group for group in match.groups()[1:] if group is not None), ""))
        if (line, "style") not in seen and not allowed_style(value):
            seen.add((line, "style"))
            found.append(_Active(line, "style", _misread(f"style={value[:60]}"), value or "style"))
    return sorted(found, key=lambda item: item.line)


def _misread(snippet: str) -> str:
    return f"{snippet!r}, which a browser may read as markup where Python's html.parser reads text (in a comment or a <style>)"


def _source_line(clue: str, lines: list[str], used: set[int]) -> int | None:
    """The first line of the source holding ``clue`` (one not named before, if there is one)."""
    for wanted in dict.fromkeys([clue, html.escape(clue, quote=False), clue[:40]]):
        hits = [number for number, line in enumerate(lines, 1) if wanted and wanted in line]
        if hits:
            return next((number for number in hits if number not in used), hits[0])
    return None


def page_code(content: str, where: str, source: str = "") -> list[str]:
    """What in a page's own content would run code, or would be acted on by
    the theme's scripts, one message each.

    Parameters
    ----------
    content : str
        The page's content as built: the HTML its Markdown (or notebook)
        became, math converted, without the theme around it.
    where : str
        The page's source, as messages name it (``docs/chapters/x.md``).
    source : str
        The page's source text, searched for each finding's line.

    Returns
    -------
    list of str
        ``<where>:<line>: <what>: <why>`` for each ``<script>``, ``<iframe>``,
        ``<object>``, ``<embed>``, ``on*=`` handler, ``javascript:`` URL,
        ``data-md-*``, ``data-clipboard-*`` or ``data-copy`` attribute, ``id="__..."``,
        ``<style>``, ``<link>`` and ``style=`` (but a table's alignment, ``allowed_style``),
        a ``class="md-..."`` and an SVG or MathML attribute that hides text (``hiding_attribute``);
        ``<where>: ...`` when no source line holds it. The built HTML is read,
        not the source's lines, so no Markdown or math trick hides one; the
        Content-Security-Policy hashes every inline script of a built page, so
        a script a pull request adds would otherwise run.

    Examples
    --------
    >>> page_code('<p>fine <code>&lt;script&gt;</code></p>', "docs/x.md")
    []
    >>> page_code('<p><b onmouseover="steal()">x</b></p>', "docs/x.md", "# X\\n\\n<b onmouseover=\\"steal()\\">x</b>")[0]
    'docs/x.md:3: onmouseover= on <b>: a page runs no script of its own (widgets live in docs/javascripts/qkv.js); \
if this page must, say `allow_inline_scripts: true` in its front matter'
    """
    lines = source.splitlines()
    used: set[int] = set()
    problems = []
    for item in _active(content):
        if item.kind == "redirect":
            why = (
                "a page's content carries no <base>, <meta> or <template> (a <base> moves where the theme's "
                "own scripts load from; a <meta> refreshes or sets policy; a <template> can open a shadow "
                "root that shows text the page does not hold)"
            )
        elif item.kind == "animation":
            why = (
                "an SVG animation sets a link or a resource to another URL than the page's own #id, which the "
                "checks of what a page loads never see in its markup (security re-review 8b, W2): animate only "
                "to #id, or draw the figure in docs/javascripts/qkv.js"
            )
        elif item.kind == "style":
            why = (
                "a page's content carries no CSS of its own (Material's copy button copies text that CSS can "
                "hide from the reader, and a number drawn by CSS is never checked); style it in "
                "docs/stylesheets/qkv.css, by a class"
            )
        elif item.kind == "theme":
            why = (
                "Material's own scripts act on it (its copy button copies any data-clipboard-text or "
                "-target, or a data-copy around a code block, instead of the code shown; its md-* classes hide or move text; data-md-* and "
                'id="__..." are its components); a page\'s content carries none'
            )
        else:
            why = (
                "a page runs no script of its own (widgets live in docs/javascripts/qkv.js); "
                f"if this page must, say `{ALLOW_SCRIPTS}: true` in its front matter"
            )
        number = _source_line(item.clue, lines, used)
        if number is None:
            problems.append(f"{where}: {item.what} (in the built page; no line of the source holds it): {why}")
        else:
            used.add(number)
            problems.append(f"{where}:{number}: {item.what}: {why}")
    return problems


# --- what a page's author writes: reading order, MathML by hand ----------------------

#: Characters that make a browser draw the text around them in another order
#: than it is stored: the embeddings, overrides and isolates (U+202A-U+202E,
#: U+2066-U+2069) and the marks (U+200E, U+200F, U+061C). ``0.66``, U+202E,
#: ``25``, U+202C shows 0.6652 where every check reads 0.6625 (security
#: re-review 6b, T1); the site has no right-to-left text.
BIDI_CONTROLS = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c"
BIDI_CONTROL = re.compile(f"[{BIDI_CONTROLS}]")
#: A JSON escape (a notebook's ``.ipynb``), a surrogate pair as one, not after an escaped backslash.
_JSON_ESCAPE = re.compile(
    r"(?<!\\)(?:\\\\)*\\u(?:([dD][89abAB][0-9a-fA-F]{2})\\u([dD][c-fC-F][0-9a-fA-F]{2})|([0-9a-fA-F]{4}))"
)
#: Unassigned code points (Unicode category Cn) in the default-ignorable ranges: U+2065, U+FFF0-U+FFF8,
#: U+E0000-U+E0FFF. A browser (Chromium: HarfBuzz) draws them as nothing, so 0.66<U+2065>52 shows 0.6652
#: where a check that takes the character for a separator reads 0.66 and 52 (security re-review 8b, W1).
_INVISIBLE_RANGES = re.compile("[\u2065\ufff0-\ufff8\U000e0000-\U000e0fff]")
UNASSIGNED_WHY = (
    "a browser draws an unassigned code point of the default-ignorable ranges (U+2065, U+FFF0-U+FFF8, "
    "U+E0000-U+E0FFF) as nothing (0.66<U+2065>52 shows 0.6652 where a check that takes it for a separator "
    "reads 0.66 and 52), and no text needs one: delete it"
)


def invisible_unassigned(character: str) -> bool:
    """Whether ``character`` is an unassigned code point a browser draws as nothing (``_INVISIBLE_RANGES``).

    >>> invisible_unassigned("\u2065"), invisible_unassigned("\U000e0080"), invisible_unassigned("\U000e0001")
    (True, True, False)
    """
    return bool(_INVISIBLE_RANGES.fullmatch(character)) and unicodedata.category(character) == "Cn"


def _unseen_character(character: str) -> bool:
    return character in BIDI_CONTROLS or invisible_unassigned(character)


def _json_escaped(line: str) -> list[str]:
    """The characters ``line`` (of a JSON file) writes as ``\\uXXXX`` escapes, a surrogate pair as one."""
    found = []
    for match in _JSON_ESCAPE.finditer(line):
        if match[1]:
            found.append(chr(0x10000 + ((int(match[1], 16) - 0xD800) << 10) + int(match[2], 16) - 0xDC00))
        else:
            found.append(chr(int(match[3], 16)))
    return found


#: A character reference, which the HTML may hold where the source wrote it.
_CHARACTER_REFERENCE = re.compile(r"&(?:#[xX][0-9a-fA-F]+|#[0-9]+|[a-zA-Z][a-zA-Z0-9]*);?")
BIDI_WHY = (
    "it makes a browser draw the text around it in another order than the page holds "
    "(0.66<U+202E>25<U+202C> shows 0.6652 where every check reads 0.6625), and the site has no "
    "right-to-left text: delete it"
)
BDO_WHY = (
    'it draws its text in another order than the page holds (0.66<bdo dir="rtl">25</bdo> shows 0.6652 '
    "where every check reads 0.6625), and the site has no right-to-left text: write the characters in the "
    "order they are read"
)
MATH_WHY = (
    "a page's formulas are TeX ($...$, \\(...\\)), which the build turns into MathML itself (hooks.mathml); "
    "MathML written by hand can hide part of a number from the reader (scriptlevel, mpadded, a <semantics> "
    "child after the first) while the checks read it: write the formula in TeX"
)
MARKER_WHY = (
    'a list\'s markers are numbers the browser draws from it (<ol start="18944001"> shows 18944001.) where '
    "the prose check never reads them (security re-review 8b, W6), and Markdown's own lists carry none: "
    "write the number in the item's text"
)
#: ``<bdo>`` and ``<math>`` (any prefix) and a ``dir=`` inside a tag, in the raw text.
_RAW_AUTHORED = re.compile(r"<(?:[\w.-]+:)?(bdo|math)(?=[\s/>])|<(?:[^\W\d]|:)[^<>]*?[\s\"'/](dir)\s*=", re.IGNORECASE)


def bidi_name(character: str) -> str:
    """``U+202E RIGHT-TO-LEFT OVERRIDE``."""
    return f"U+{ord(character):04X} {unicodedata.name(character, 'BIDIRECTIONAL CONTROL')}"


def _unseen_what(character: str, written: str = "") -> tuple[str, str]:
    """(what, why) of a bidirectional control or an invisible unassigned code point, ``written`` as a reference."""
    also = f", written {written!r}" if written else ""
    if character in BIDI_CONTROLS:
        return f"a bidirectional control character ({bidi_name(character)}{also})", BIDI_WHY
    return f"an invisible unassigned code point (U+{ord(character):04X}{also})", UNASSIGNED_WHY


def bidi_in_source(text: str, where: str, *, json_escapes: bool = False) -> list[str]:
    """``<where>:<line>: <control>: <why>`` for each line of a page's source
    (Markdown, code and display fences included; a notebook's cells and
    outputs) that holds a bidirectional control character (``BIDI_CONTROLS``);
    ``json_escapes``: also as a JSON escape (``\\u202e`` in an ``.ipynb``).

    >>> bidi_in_source("# T\\n\\nThe weight is 0.66\\u202e25\\u202c.\\n", "docs/x.md")[0].split(": it")[0]
    'docs/x.md:3: a bidirectional control character (U+202E RIGHT-TO-LEFT OVERRIDE)'
    """
    problems = []
    for number, line in enumerate(text.split("\n"), 1):
        found = [c for c in line if _unseen_character(c)]
        if json_escapes:
            found += [c for c in _json_escaped(line) if _unseen_character(c)]
        # One message per line for each kind: a bidirectional control, an invisible unassigned code point (W1).
        first = [next((c for c in found if (c in BIDI_CONTROLS) == bidi), "") for bidi in (True, False)]
        for character in filter(None, first):
            what, why = _unseen_what(character)
            problems.append(f"{where}:{number}: {what}: {why}")
    return problems


class _AuthoredFinder(HTMLParser):
    def __init__(self, content: str) -> None:
        super().__init__(convert_charrefs=True)
        self.lines = content.split("\n")
        self.found: list[tuple[int, str, str, str, str]] = []  # (line, name, what, why, clue)

    def handle_starttag(self, tag, attrs):
        local = tag.rsplit(":", 1)[-1]
        line, column = self.getpos()
        # The markup as written, longest first: what its source line holds (not a `<math>` in code before it).
        at = self.lines[line - 1][column:]
        clue = (at[:40], at[:20], self.get_starttag_text() or f"<{tag}")
        if local in ("bdo", "math"):
            self.found.append((line, local, f"<{tag}>", BDO_WHY if local == "bdo" else MATH_WHY, clue))
        for name, value in attrs:
            if name.lower() == "dir" and local != "bdo":  # a <bdo> is named once
                self.found.append((line, "dir", f'dir="{value or ""}" on <{tag}>', BDO_WHY, clue))
            elif (local, name.lower()) in (("ol", "start"), ("li", "value")):
                self.found.append((line, "marker", f'{name.lower()}="{value or ""}" on <{tag}>', MARKER_WHY, clue))


def authored_markup(content: str, where: str, source: str = "") -> list[str]:
    """What in a page's content, before the build's own math step (the HTML
    its Markdown became, or a notebook's sanitised cells), draws text in
    another order than it is stored or hides part of it from the checks:
    a bidirectional control character (a character reference too: the
    source's lines are read by :func:`bidi_in_source`), a ``<bdo>``, a
    ``dir=`` attribute, a list marker set by hand (``<ol start>``, ``<li value>``) and MathML written by hand (``<math>``: the build
    makes its own from TeX, :func:`hooks.mathml`). Each as
    ``<where>:<line>: <what>: <why>`` at the first source line holding it
    (``<where>: ...`` when none does).

    >>> authored_markup('<p>0.66<bdo dir="rtl">25</bdo></p>', "docs/x.md", '# X\\n\\n0.66<bdo dir="rtl">25</bdo>')[0]
    'docs/x.md:3: <bdo>: it draws its text in another order than the page holds (0.66<bdo dir="rtl">25</bdo> \
shows 0.6652 where every check reads 0.6625), and the site has no right-to-left text: write the characters in the \
order they are read'
    """
    finder = _AuthoredFinder(content)
    finder.feed(content)
    finder.close()
    found = [(line, what, why, clue) for line, _, what, why, clue in finder.found]
    seen = {(line, name) for line, name, *_ in finder.found}
    seen |= {(line, "dir") for line, name, *_ in finder.found if name == "bdo"}  # its dir= is the <bdo>'s
    for match in _RAW_AUTHORED.finditer(content):
        line = content.count("\n", 0, match.start()) + 1
        name = (match[1] or match[2]).lower()
        if (line, name) not in seen:
            seen.add((line, name))
            snippet = match[0] if name != "dir" else match[0][match.start(2) - match.start() :]
            found.append((line, _misread(snippet), MATH_WHY if name == "math" else BDO_WHY, snippet))
    in_source = {c for c in source if _unseen_character(c)}
    unseen = re.compile(f"[{BIDI_CONTROLS}]|{_INVISIBLE_RANGES.pattern}")
    for match in [*_CHARACTER_REFERENCE.finditer(content), *unseen.finditer(content)]:
        character = html.unescape(match[0])
        if _unseen_character(character) and match[0] not in in_source:  # the source's own are bidi_in_source's
            line = content.count("\n", 0, match.start()) + 1
            what, why = _unseen_what(character, match[0])
            found.append((line, what, why, match[0]))
    lines = source.split("\n")
    used: set[int] = set()
    problems = []
    for _, what, why, clue in sorted(found, key=lambda item: item[0]):
        clues = clue if isinstance(clue, tuple) else (clue,)
        number = next(filter(None, (_source_line(each, lines, used) for each in clues)), None)
        if number is None:
            problems.append(f"{where}: {what} (in the built page; no line of the source holds it): {why}")
        else:
            used.add(number)
            problems.append(f"{where}:{number}: {what}: {why}")
    return list(dict.fromkeys(problems))


# --- files copied to the site as they are -------------------------------------------

#: Suffixes a browser opens as a document that can run script (served as HTML, SVG or XML;
#: mime-db, which GitHub Pages serves by, gives ``.xsd`` and ``.rng`` ``application/xml`` and ``.svgz``
#: ``image/svg+xml``: security re-review 6b, T4).
DOCUMENT_SUFFIXES = frozenset(
    {".html", ".htm", ".shtml", ".xhtml", ".xht", ".svg", ".svgz", ".xml", ".xsl", ".xslt", ".xsd", ".rng"}
)
#: Of those, the ones served as HTML, which can carry a Content-Security-Policy ``<meta>``.
HTML_SUFFIXES = frozenset({".html", ".htm", ".shtml", ".xhtml", ".xht"})
#: Of those, the ones a browser reads as XML (with namespaces: any prefix names an element).
XML_SUFFIXES = DOCUMENT_SUFFIXES - {".html", ".htm", ".shtml"}
#: The suffixes a file under docs/ may have: pages (``.md``; ``.py`` and ``.ipynb`` notebook pages and
#: companion modules), the site's own CSS and JavaScript, and the documents ``static_file_code`` reads
#: (``.html``, ``.svg``). Anything else (``.xsd``, ``.rng``, ``.svgz``, an unknown suffix) fails the build
#: (``docs_file_problems``): a browser may open it as a document that no check reads.
DOCS_SUFFIXES = frozenset({".md", ".py", ".ipynb", ".css", ".js", ".html", ".svg"})


def docs_file_problem(src_uri: str) -> str | None:
    """Why a file under docs/ may not be there, or None: a Markdown page under
    another suffix than ``.md`` (which MkDocs builds, ``mkdocs.utils.markdown_extensions``,
    but no check reads), or a suffix not in ``DOCS_SUFFIXES`` (security re-review 6b, T3, T4).

    >>> docs_file_problem("chapters/x.md") is None, docs_file_problem("img/f.svg") is None
    (True, True)
    >>> docs_file_problem("zz/extra.markdown").split(": ")[:2]
    ['docs/zz/extra.markdown', 'a Markdown page named *.markdown']
    """
    from mkdocs.utils import markdown_extensions

    where, suffix = f"docs/{src_uri}", PurePosixPath(src_uri).suffix
    if suffix != ".md" and suffix in markdown_extensions:
        return (
            f"{where}: a Markdown page named *{suffix}: MkDocs builds it, but the checks read *.md pages only "
            "(its prose numbers, its Python blocks and their outputs), so what it shows is never checked: "
            f"rename it to {PurePosixPath(src_uri).stem}.md"
        )
    if suffix not in DOCS_SUFFIXES:
        return (
            f"{where}: a file named *{suffix or ' (no suffix)'} is copied to the site as it is, where a browser may "
            "open it as a document that runs script on the site's origin, and no check reads it (docs/ holds "
            f"{', '.join(sorted(DOCS_SUFFIXES))}): if the site needs it, add {suffix or 'its suffix'} to "
            "DOCS_SUFFIXES in docs/hooks/safety.py, and if a browser can open it as a document (HTML, SVG, XML: "
            "its type in mime-db), to DOCUMENT_SUFFIXES too, so that static_file_code reads it, with a planted test"
        )
    return None


#: Elements that run or embed code in an XML document (SVG's ``<foreignObject>`` holds HTML; SVG Tiny's
#: ``<handler>`` and ``<listener>`` run script).
XML_CODE_ELEMENTS = CODE_ELEMENTS | {"foreignobject", "handler", "listener"}


#: XML that makes markup the file's text does not hold: an entity (declared in
#: a DOCTYPE's internal subset) and a stylesheet processing instruction (XSLT).
_XML_MARKUP_MAKERS = re.compile(r"<!DOCTYPE[^>\[]*\[|<!ENTITY\b|<!ATTLIST\b|<\?xml-stylesheet\b", re.IGNORECASE)


def not_plain_utf8(data: bytes, where: str) -> str | None:
    """Why a static document's bytes cannot be checked as text, or None.

    A browser reads UTF-16 (a byte-order mark, or an encoding declaration)
    where a UTF-8 reading sees bytes that match no pattern, so such a file is
    refused rather than passed (security re-review 4, R2: a UTF-16 SVG's
    onload ran).

    >>> not_plain_utf8(b"<svg/>", "docs/f.svg") is None
    True
    >>> not_plain_utf8("<svg/>".encode("utf-16"), "docs/f.svg")
    'docs/f.svg: not plain UTF-8 (a NUL byte or an invalid sequence): save it as UTF-8 without a byte-order mark'
    """
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = "\0"
    if "\0" in text or data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return (
            f"{where}: not plain UTF-8 (a NUL byte or an invalid sequence): save it as UTF-8 without a byte-order mark"
        )
    # An escape byte (ISO-2022-JP's ESC ( B) or a declared encoding other than UTF-8 makes a browser read
    # other characters than these bytes say: <scr ESC(B ipt> is a <script> there (security review 3b, S1).
    declared = _DECLARED_ENCODING.search(text)
    if "\x1b" in text or (declared and declared[1].lower().replace("_", "-") not in ("utf-8", "utf8", "us-ascii")):
        return f"{where}: an escape byte or a declared encoding other than UTF-8: save it as UTF-8 and declare none"
    return None


def _xml_parser():
    parser = expat.ParserCreate(namespace_separator="\x01")  # in no XML 1.0 document
    parser.namespace_prefixes = True
    return parser


def _qualified(name: str) -> tuple[str, str]:
    """(local name, name as written) of an element or attribute that expat reports with namespaces."""
    uri_local_prefix = name.split("\x01")
    local = uri_local_prefix[1] if len(uri_local_prefix) > 1 else uri_local_prefix[0]
    prefix = uri_local_prefix[2] if len(uri_local_prefix) > 2 else ""
    return local, f"{prefix}:{local}" if prefix else local


def _xml_active(text: str) -> list[_Active]:
    """What in an XML document (SVG, XHTML, XML) runs code, read by an XML
    parser with namespaces, so an element or attribute counts by its local
    name whatever its prefix (``<_:svg onload=...>``, ``<h:script>``: security
    re-review 6b, T4). A document that does not parse is refused: a browser
    runs what comes before the error."""
    parser = _xml_parser()
    found: list[_Active] = []
    qualified = _qualified

    def start(name, attributes):
        line = parser.CurrentLineNumber
        local, tag = qualified(name)
        if local.lower() in XML_CODE_ELEMENTS:
            found.append(_Active(line, "element", f"<{tag}>", f"<{tag}"))
        for attribute, value in attributes.items():
            attribute_local, attribute_name = qualified(attribute)
            if attribute_local.lower().startswith("on"):
                found.append(_Active(line, "handler", f"{attribute_name}= on <{tag}>", value or attribute_name))
            elif url := next(
                filter(script_url, [value, *(value.split(";") if attribute_local == "values" else [])]), None
            ):
                scheme = re.sub(r"\s", "", url).partition(":")[0].lower()
                found.append(_Active(line, "url", f"a {scheme}: URL in <{tag} {attribute_name}>", value))

    parser.StartElementHandler = start
    try:
        parser.Parse(text, True)
    except expat.ExpatError as error:
        found.append(
            _Active(
                error.lineno,
                "element",
                f"not well-formed XML ({expat.errors.messages[error.code]}), which a browser shows as far as the "
                "error, running what comes before it, and which this check cannot read",
                "",
            )
        )
    return found


#: An encoding an XML declaration or a <meta charset> names.
_DECLARED_ENCODING = re.compile(r"""(?:encoding|charset)\s*=\s*["']?\s*([\w.:-]+)""", re.IGNORECASE)


#: Comment syntax that a browser (HTML5) and Python's html.parser end in different places: a browser
#: ends ``<!-->`` and ``<!--->`` at once and a comment at ``--!>``; html.parser ends one only at
#: ``--`` + optional whitespace + ``>``, which a browser does not end at ``-- >``. Every check reads a
#: file with html.parser, so the rest of such a file is another document to them than to a reader
#: (security re-review 9b, X1).
_COMMENT_DISAGREEMENTS = re.compile(r"<!---?>|--!>|--[ \t\r\n\f]+>")
COMMENT_WHY = (
    "a browser and Python's html.parser (which every check uses) end a comment in different places here, so "
    "the checks would read a different document from the one a reader's browser shows: write each comment "
    "as <!-- text --> with no '--' inside"
)


def static_file_code(text: str, where: str) -> list[str]:
    """What in a file copied to the site as it is (an ``.html`` demo, an
    ``.svg`` figure under ``docs/``) would run code, one message each.

    Parameters
    ----------
    text : str
        The file's text.
    where : str
        The file, as messages name it (``docs/img/figure.svg``).

    Returns
    -------
    list of str
        ``<where>:<line>: <what>: <why>`` for each ``<script>`` (``<svg:script>``
        too), ``<iframe>``, ``<object>``, ``<embed>``, ``on*=`` handler,
        ``javascript:`` URL, XML entity declaration and ``<?xml-stylesheet``
        (an entity's text and an XSLT's output are markup a browser makes
        from the file): opened in its own tab, the file runs it on the
        site's origin, and an SVG carries no Content-Security-Policy.

    Examples
    --------
    >>> static_file_code('<svg xmlns="http://www.w3.org/2000/svg"><rect width="1"/></svg>', "docs/f.svg")
    []
    >>> static_file_code('<svg><script>alert(1)</script></svg>', "docs/f.svg")[0].split(": a file")[0]
    "docs/f.svg:1: <script> 'alert(1)'"
    """
    why = (
        "a file under docs/ that is not a page is copied to the site as it is, where its script would run on "
        "the site's origin (an SVG opened in its own tab, an HTML demo): it runs none; draw it with "
        "docs/javascripts/qkv.js, or make it a page"
    )
    xml = PurePosixPath(where).suffix.lower() in XML_SUFFIXES
    active = [item for item in _active(text, xml) if item.kind in ("element", "handler", "url")]
    found = [(item.line, f"{item.what}: {why}") for item in active]
    for match in _COMMENT_DISAGREEMENTS.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        found.append((line, f"{match[0]!r}: {COMMENT_WHY}"))
    for match in _XML_MARKUP_MAKERS.finditer(text):
        what, how = (
            ("<?xml-stylesheet", "a browser runs the XSLT it names, which can build a script")
            if match[0].lower().startswith("<?xml")
            else (
                "a DOCTYPE's internal subset",
                "a browser expands its entities into markup (&#60;script&#62; becomes a script) and gives "
                "elements its default attributes (an onload)",
            )
        )
        line = text.count("\n", 0, match.start()) + 1
        found.append((line, f"{what}: {how} that this check never sees in the file's text; write the markup out"))
    return [f"{where}:{line}: {message}" for line, message in sorted(found, key=lambda item: item[0])]


#: Why a static SVG or XML file refers to nothing but its own elements.
STATIC_LOAD_WHY = (
    'a file under docs/ that is not a page is opened in its own tab (a figure\'s "open image in new tab", a '
    "link to it) without the pages' Content-Security-Policy, so the browser fetches what it names from there, "
    'telling that host who reads the site: refer only to the file\'s own elements (url(#id), href="#id"), '
    "or draw the resource into the file"
)
#: Attributes that name a resource by URL in an SVG or XML document (any element: ``href`` is SVG 2's ``xlink:href``).
_XML_URL_ATTRIBUTES = frozenset({"href", *URL_ATTRIBUTES})
#: A ``url(`` in the raw text, and what it names when that is the file's own element (``url(#id)``, ``url('#id')``).
_RAW_CSS_URL = re.compile(r"url\s*\((?!\s*[\"']?\s*#)", re.IGNORECASE)


def _css_references(css: str, line: int, stylesheet: bool = False) -> list[tuple[int, str]]:
    """(line, url) for each ``url()``, ``image-set()``, ``src()`` and ``@import`` in ``css`` (tinycss2)."""
    if stylesheet:
        tokens = tinycss2.parse_stylesheet(css, skip_whitespace=True, skip_comments=True)
    else:
        tokens = tinycss2.parse_component_value_list(css, skip_comments=True)
    return [(at, url) for url, at in _css_urls(tokens, line)]


def static_file_loads(text: str, where: str) -> list[str]:
    """What in a static SVG or XML file (``XML_SUFFIXES``) names a resource the browser would fetch when
    the file is opened in its own tab, where no Content-Security-Policy holds it back (security re-review 7b,
    V3): a CSS ``url()`` that is not the file's own ``#id`` (in any attribute: ``fill``, ``mask``,
    ``clip-path``, ``marker-*``, ``cursor``, ``filter``, ``style``; and in a ``<style>``), and an ``href``
    or ``src`` to another host. Read by an XML parser (entities and character references decoded), and
    each ``url(`` of the raw text too. ``<where>:<line>: <what>: <why>`` each.

    >>> static_file_loads('<svg xmlns="http://www.w3.org/2000/svg"><rect fill="url(#g)"/></svg>', "docs/f.svg")
    []
    >>> static_file_loads('<svg>\\n<rect mask="url(http://x.example/m.svg#m)"/></svg>', "docs/f.svg")[0].split(": a file")[0]
    "docs/f.svg:2: url('http://x.example/m.svg#m') in <rect mask>"
    """
    found: list[tuple[int, str]] = []
    parser = _xml_parser()
    style: list[tuple[int, str, list[str]]] = []  # open <style> elements: (line, name, text)

    def start(name, attributes):
        line = parser.CurrentLineNumber
        local, tag = _qualified(name)
        for attribute, value in attributes.items():
            attribute_local, attribute_name = _qualified(attribute)
            if "(" in value:
                for at, url in _css_references(value, line):
                    if not url.strip().startswith("#"):
                        found.append((at, f"url({url!r}) in <{tag} {attribute_name}>"))
            if attribute_local.lower() in _XML_URL_ATTRIBUTES and is_third_party(value):
                found.append((line, f"{attribute_name}={value!r} on <{tag}> names another host"))
        by_name = {_qualified(attribute)[1].lower(): value for attribute, value in attributes.items()}
        for name, value in animated_urls(local, by_name):
            target = by_name.get("attributename", "").strip()
            found.append(
                (line, f"<{tag} attributeName={target!r} {name}={value!r}> sets a URL, not the file's own #id")
            )
        if local.lower() == "style":
            style.append((line, tag, []))

    def text_of(data):
        if style:
            style[-1][2].append(data)

    def end(name):
        if style and _qualified(name)[1] == style[-1][1]:
            line, tag, parts = style.pop()
            for at, url in _css_references("".join(parts), line, stylesheet=True):
                if not url.strip().startswith("#"):
                    found.append((at, f"url({url!r}) in <{tag}>"))

    parser.StartElementHandler = start
    parser.EndElementHandler = end
    parser.CharacterDataHandler = text_of
    try:
        parser.Parse(text, True)
    except expat.ExpatError:
        pass  # static_file_code refuses a file that does not parse
    lines = {line for line, _ in found}
    for match in _RAW_CSS_URL.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        if line not in lines:
            lines.add(line)
            found.append((line, f"{text[match.start() : match.start() + 60]!r}, a url() the XML parser did not see"))
    return [f"{where}:{line}: {what}: {STATIC_LOAD_WHY}" for line, what in sorted(dict.fromkeys(found))]
