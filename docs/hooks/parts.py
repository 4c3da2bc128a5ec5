"""A page's parts (figures, widgets, build-time values), declared next to the page.

A page ``docs/chapters/<name>.md`` may have a companion module
``docs/chapters/<name>.py`` that declares everything the page shows that is
computed from ``qkv`` when the site is built::

    from parts import figure, value, widget

    @figure("pe-heatmap", alt="What the figure shows, in a sentence or two.",
            caption="The caption under it.", width=640)
    def pe_heatmap():
        fig, ax = plt.subplots()   # drawn from qkv
        ...
        return fig                  # or SVG text

    @value("sqrt_d_model_paper")
    def sqrt_d_model_paper():
        return f"{math.sqrt(512):.2f}"

    @widget("positions", label="Interactive figure: ...", height="44rem")
    def positions() -> dict:        # the JSON the widget's script shows
        ...

and the page uses each by its one name::

    <!-- qkv:figure pe-heatmap -->
    <!-- qkv:widget positions -->
    ... the wavelength is {{ sqrt_d_model_paper }} ...

The build (``hooks.py``) expands the shortcodes, writes ``figures/<name>.svg``
and ``data/<name>.json``, and fails with ``file:line`` on an unknown name, a
``{{ name }}`` that the page's companion does not define, or a malformed
shortcode; a mistake in a declaration is reported at the companion's line.
The notebook generator reads the page through the same expansion
(``expand``); the prose-number check reads alt text, captions and labels
as prose, reported at their declaration's line; the browser tests find
every widget through ``load()``.
"""

from __future__ import annotations

import importlib.util
import io
import json
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from story import MIN_ALT_WORDS

DOCS = Path(__file__).resolve().parent.parent

#: ``<!-- qkv:figure name -->`` and ``<!-- qkv:widget name -->``, alone on a line.
SHORTCODE = re.compile(
    r"^(?P<indent>[ \t]*)<!--\s*qkv:(?P<kind>figure|widget)[ \t]+(?P<name>[a-z0-9-]+)\s*-->[ \t]*$",
    re.MULTILINE,
)
#: Anything that looks like a shortcode, well formed or not.
SHORTCODE_LIKE = re.compile(r"<!--\s*qkv:.*?-->", re.DOTALL)
#: ``{{ name }}``: lowercase letters, digits and underscores.
VALUE_REF = re.compile(r"\{\{\s*(?P<name>[a-z0-9_]+)\s*\}\}")
VALUE_LIKE = re.compile(r"\{\{.*?\}\}")
NAME = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
VALUE_NAME = re.compile(r"^[a-z0-9_]+$")
#: Companion modules are imported under this prefix (``qkv_page_chapters_sinusoidal``).
COMPANION_PREFIX = "qkv_page_"


class PartsError(ValueError):
    """A page uses a part wrongly; the message starts with ``file:line``."""


@dataclass(frozen=True)
class Figure:
    name: str
    draw: Callable[[], Any]
    alt: str
    caption: str
    width: int
    line: int = 0  # where the companion module declares it

    @property
    def path(self) -> str:
        return f"figures/{self.name}.svg"

    def svg(self) -> str:
        drawn = self.draw()
        return drawn if isinstance(drawn, str) else _to_svg(drawn)


@dataclass(frozen=True)
class Widget:
    name: str
    data: Callable[[], dict]
    label: str
    height: str
    line: int = 0  # where the companion module declares it
    phone_height: str = ""  # reserved on a phone (qkv.css); height if empty

    @property
    def path(self) -> str:
        return f"data/{self.name}.json"

    def json(self) -> str:
        """The widget's data as compact JSON with a stable key order."""
        return json.dumps(self.data(), separators=(",", ":"), sort_keys=True)


@dataclass
class PageParts:
    """Everything one page's companion module declares."""

    page: str  # e.g. "chapters/sinusoidal.md", relative to docs/
    companion: Path | None = None
    figures: dict[str, Figure] = field(default_factory=dict)
    widgets: dict[str, Widget] = field(default_factory=dict)
    values: dict[str, Callable[[], str]] = field(default_factory=dict)


_declared: list[Figure | Widget | tuple[str, Callable[[], str]]] | None = None


def _declare(part: Any) -> None:
    if _declared is None:
        raise RuntimeError("parts are declared in a page's companion module, loaded by parts.load()")
    _declared.append(part)


def _declared_at() -> tuple[str, int]:
    """(file, line) of the declaration being made: the companion module's
    ``@figure(...)``, ``@widget(...)`` or ``@value(...)`` line."""
    frame = sys._getframe(2)
    return frame.f_code.co_filename, frame.f_lineno


def _error(at: tuple[str, int], message: str) -> PartsError:
    """A PartsError at ``file:line`` of the declaration, the file relative to
    the working directory where it lies under it (as the tests name files)."""
    path = Path(at[0])
    try:
        path = path.resolve().relative_to(Path.cwd().resolve())
    except ValueError:
        pass
    return PartsError(f"{path}:{at[1]}: {message}")


def figure(name: str, *, alt: str, caption: str, width: int = 640) -> Callable:
    """Declare a figure: ``draw()`` returns a matplotlib figure or SVG text."""
    at = _declared_at()
    _check_name(name, "figure", at)
    if len(alt.split()) < MIN_ALT_WORDS:
        raise _error(
            at, f"figure {name}: alt text must say what the figure shows ({MIN_ALT_WORDS} words or more), got {alt!r}"
        )
    if not caption.strip():
        raise _error(at, f"figure {name}: a caption is required")

    def register(draw: Callable[[], Any]) -> Callable[[], Any]:
        _declare(Figure(name, draw, alt.strip(), caption.strip(), int(width), at[1]))
        return draw

    return register


def widget(name: str, *, label: str, height: str, phone_height: str | None = None) -> Callable:
    """Declare a widget: ``data()`` returns the JSON its script shows.

    ``label`` names the region for screen readers; ``height`` (a CSS length)
    is reserved before the data loads, so nothing below the widget moves;
    ``phone_height`` is reserved instead on a screen 600 px wide or less,
    where the widget's rows wrap and it grows taller (``height`` if not given).
    """
    at = _declared_at()
    _check_name(name, "widget", at)
    for what, length in (("height", height), ("phone_height", phone_height or height)):
        if not re.fullmatch(r"\d+(\.\d+)?(rem|em|px)", length):
            raise _error(at, f"widget {name}: {what} must be a CSS length such as '24rem', got {length!r}")

    def register(data: Callable[[], dict]) -> Callable[[], dict]:
        _declare(Widget(name, data, label.strip(), height, at[1], phone_height or height))
        return data

    return register


def value(name: str) -> Callable:
    """Declare a build-time value: a function returning the text for ``{{ name }}``."""
    if not VALUE_NAME.match(name):
        raise _error(_declared_at(), f"value {name!r}: names are lowercase letters, digits and underscores")

    def register(compute: Callable[[], str]) -> Callable[[], str]:
        _declare((name, compute))
        return compute

    return register


def _check_name(name: str, kind: str, at: tuple[str, int]) -> None:
    if not NAME.match(name):
        raise _error(at, f"{kind} {name!r}: names are lowercase words joined by hyphens, e.g. 'pe-heatmap'")


def _to_svg(fig: Any) -> str:
    """Byte-stable SVG of a matplotlib figure (no date; ids salted in plotting.py)."""
    import matplotlib.pyplot as plt

    buffer = io.StringIO()
    fig.savefig(buffer, format="svg", bbox_inches="tight", metadata={"Date": None})
    plt.close(fig)
    return buffer.getvalue()


def companion_of(page: Path) -> Path:
    return page.with_suffix(".py")


def load_page(page: Path, docs: Path = DOCS) -> PageParts:
    """Import ``page``'s companion module (if any) and collect what it declares."""
    global _declared
    page = page.resolve()
    docs = docs.resolve()
    parts = PageParts(page.relative_to(docs).as_posix() if page.is_relative_to(docs) else page.name)
    companion = companion_of(page)
    if not companion.is_file():
        return parts
    parts.companion = companion
    module_name = COMPANION_PREFIX + re.sub(r"\W", "_", parts.page[:-3])
    spec = importlib.util.spec_from_file_location(module_name, companion)
    module = importlib.util.module_from_spec(spec)
    _declared = []
    # Companions import their helpers (parts, plotting) from this folder;
    # MkDocs restores sys.path after loading a hook, so put it back here.
    here = str(Path(__file__).resolve().parent)
    added = here not in sys.path
    if added:
        sys.path.insert(0, here)
    try:
        sys.modules[module_name] = module
        spec.loader.exec_module(module)
        declared = _declared
    finally:
        _declared = None
        if added:
            sys.path.remove(here)
    for part in declared:
        if isinstance(part, Figure):
            table, name = parts.figures, part.name
        elif isinstance(part, Widget):
            table, name = parts.widgets, part.name
        else:
            table, name, part = parts.values, part[0], part[1]
        if name in table:
            raise PartsError(f"{companion}: {name!r} is declared twice")
        table[name] = part
    return parts


def pages(docs: Path = DOCS) -> list[Path]:
    """Markdown pages (the build's own code and theme overrides excluded)."""
    return sorted(p for p in docs.rglob("*.md") if p.relative_to(docs).parts[0] not in {"hooks", "overrides"})


def load(docs: Path = DOCS) -> dict[str, PageParts]:
    """Every page's parts, keyed by the page's path relative to ``docs``.

    Figure and widget names are site-wide (they become file names), so a
    name declared by two pages is an error.
    """
    everything = {p.relative_to(docs).as_posix(): load_page(p, docs) for p in pages(docs)}
    owner: dict[str, str] = {}
    for page, parts in everything.items():
        for path in [f.path for f in parts.figures.values()] + [w.path for w in parts.widgets.values()]:
            if path in owner:
                raise PartsError(f"{path} is declared by both {owner[path]} and {page}")
            owner[path] = page
    return everything


def _line(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def problems(text: str, parts: PageParts, where: str) -> list[str]:
    """``file:line: message`` for every misuse of parts on one page."""
    found = []
    for match in SHORTCODE_LIKE.finditer(text):
        well_formed = SHORTCODE.match(text, text.rfind("\n", 0, match.start()) + 1)
        line = _line(text, match.start())
        if well_formed is None or well_formed.end() < match.end():
            found.append(
                f"{where}:{line}: malformed shortcode {match.group(0)!r}: write "
                "'<!-- qkv:figure name -->' or '<!-- qkv:widget name -->' alone on its line"
            )
            continue
        kind, name = well_formed["kind"], well_formed["name"]
        declared = parts.figures if kind == "figure" else parts.widgets
        if name not in declared:
            known = ", ".join(sorted(declared)) or "none"
            found.append(
                f"{where}:{line}: unknown {kind} {name!r}: declare it with @{kind}({name!r}, ...) in "
                f"{_companion_name(where)} (declared there: {known})"
            )
    for match in VALUE_LIKE.finditer(text):
        line = _line(text, match.start())
        ref = VALUE_REF.fullmatch(match.group(0))
        if ref is None:
            found.append(
                f"{where}:{line}: malformed value {match.group(0)!r}: write '{{{{ name }}}}' with a lowercase name"
            )
        elif ref["name"] not in parts.values:
            found.append(
                f"{where}:{line}: unknown value {{{{ {ref['name']} }}}}: declare it with "
                f"@value({ref['name']!r}) in {_companion_name(where)}"
            )
    return found


def _companion_name(where: str) -> str:
    return where[:-3] + ".py" if where.endswith(".md") else where + " (companion .py)"


def expand(text: str, parts: PageParts, where: str) -> str:
    """The page with shortcodes and values replaced; PartsError on any misuse."""
    found = problems(text, parts, where)
    if found:
        raise PartsError("\n".join(found))
    depth = parts.page.count("/")
    up = "../" * depth

    def shortcode(match: re.Match[str]) -> str:
        indent, name = match["indent"], match["name"]
        if match["kind"] == "figure":
            fig = parts.figures[name]
            return (
                # Image and caption on one line: on two, a figure at the top level of a page got a
                # <br /> between them (a 42 px gap, against 13 px for a figure in a box).
                f'{indent}<figure markdown="span">\n'
                f'{indent}  ![{fig.alt}]({up}{fig.path}){{ width="{fig.width}" }}'
                f"<figcaption>{fig.caption}</figcaption>\n"
                f"{indent}</figure>"
            )
        w = parts.widgets[name]
        return (
            f'{indent}<div class="qkv-widget" data-widget="{w.name}" role="region" '
            f'aria-label="{w.label}" style="min-height: {w.height}; --qkv-phone-min-height: {w.phone_height or w.height}">\n'
            f'{indent}<p class="qkv-note">This interactive figure needs JavaScript. '
            f"The code blocks on this page print the same numbers.</p>\n"
            f"{indent}</div>"
        )

    text = SHORTCODE.sub(shortcode, text)
    return VALUE_REF.sub(lambda m: parts.values[m["name"]](), text)


def expand_page(page: Path, docs: Path = DOCS) -> str:
    """A page's Markdown as the build sees it: its parts expanded (for tests and tools)."""
    page_parts = load_page(page, docs)
    return expand(page.read_text(encoding="utf-8"), page_parts, f"docs/{page_parts.page}")
