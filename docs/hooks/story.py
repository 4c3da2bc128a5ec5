"""The story every chapter tells: one home for the rules the chapter-shape
tests enforce and ``make chapter`` writes into a new page."""

from __future__ import annotations

import re
from dataclasses import dataclass

#: H2 headings every chapter has, in this order. A heading may add words
#: after these (``## The problem: "bank" has one vector``); other H2 headings
#: may sit between them.
SECTIONS = (
    ("The problem", "what goes wrong without the idea of this chapter, in a reader's terms"),
    ("The idea", "the idea in a few sentences, before any formula"),
    ("The numbers by hand", "a small example worked by hand, every number shown"),
    ("The code", "short blocks, each with its printed output, that compute the same numbers with qkv"),
    ("The database analogy", "a runnable SQL snippet (sqlite3): where the analogy holds and where it breaks"),
    ("Common confusions", "mistakes other explanations make, each shown wrong by a block"),
    ("Check your understanding", "a quiz of at least 7 questions"),
    ("Further reading", "the paper's sections and the best outside explanations of this topic"),
)
#: What a section heading must start with (``The database analog`` admits
#: "analogy" and "analogies").
SECTION_PREFIXES = tuple(name.removesuffix("y") if name.endswith("analogy") else name for name, _ in SECTIONS)
MIN_QUESTIONS = 7
#: An aside is a short page beside the chapters (front matter ``kind: aside``):
#: one idea, a few blocks, a quiz of at least MIN_ASIDE_QUESTIONS, and these
#: sections in this order (others may sit between them).
ASIDE = "aside"
ASIDE_SECTIONS = tuple(
    (name, purpose)
    for name, purpose in SECTIONS
    if name in {"The problem", "The idea", "The code", "Check your understanding", "Further reading"}
)
MIN_ASIDE_QUESTIONS = 3
FRONT_MATTER = re.compile(r"\A---\n(?P<yaml>.*?)\n---\n", re.DOTALL)


def page_kind(text: str) -> str:
    """``"aside"`` when the page's front matter says ``kind: aside``, else ``"chapter"``."""
    match = FRONT_MATTER.match(text)
    if match and re.search(r"^kind:\s*aside\s*$", match["yaml"], re.MULTILINE):
        return ASIDE
    return "chapter"


#: Words of alt text a figure needs at least (say what it shows).
MIN_ALT_WORDS = 8
#: A placeholder left by ``make chapter``: the tests name each one until it is replaced.
PLACEHOLDER = "TODO(chapter):"

# --- Deeper boxes: what a first reading may skip ----------------------------
#: A chapter's main line reads fast; a caveat, a regime, a cross-library quirk,
#: a benchmark's method or the measurement behind a bounded claim goes into a
#: collapsed box whose title starts with this word and says what it holds:
#: ``??? note "Deeper: why Adam sees the axes"``. Its blocks run and are
#: checked as every other block; the chapter notebook shows them as cells.
DEEPER = "Deeper"
#: Words a Deeper box's title needs after "Deeper:" (say what it holds).
MIN_DEEPER_TITLE_WORDS = 3
#: A line that opens a box (pymdownx.details ``???``/``???+``, or an
#: admonition ``!!!``), with its type and quoted title.
BOX = re.compile(r'^(?P<indent> *)(?P<marker>\?\?\?\+?|!!!)[ \t]+(?P<kind>[\w-]+)(?:[ \t]+"(?P<title>[^"]*)")?[ \t]*$')


@dataclass(frozen=True)
class Box:
    """One box of a page: its opening line (1-based), the last line of its
    body, its marker (``???`` collapsed, ``???+`` open, ``!!!`` not
    collapsible), its type, title and indentation."""

    start: int
    end: int
    marker: str
    kind: str
    title: str
    indent: str

    @property
    def is_deeper(self) -> bool:
        return self.title.startswith(DEEPER)


def boxes(text: str) -> list[Box]:
    """Every box (``???``, ``???+``, ``!!!``) of a Markdown page, in order.

    A box's body is every following line indented further than its marker,
    blank lines included, up to the first line that is not (trailing blank
    lines are not part of it). Fences do not end a box: their lines are
    indented with it."""
    lines = text.splitlines()
    found = []
    fence = None
    for number, line in enumerate(lines, 1):
        stripped = line.lstrip()
        if fence:
            if stripped.startswith(fence):
                fence = None
            continue
        if stripped.startswith(("```", "~~~")):
            fence = stripped[:3]
            continue
        match = BOX.match(line)
        if not match:
            continue
        body_indent = len(match["indent"]) + 4
        end = number
        for later in range(number, len(lines)):
            text_line = lines[later]
            if not text_line.strip():
                continue
            if len(text_line) - len(text_line.lstrip(" ")) < body_indent:
                break
            end = later + 1
        found.append(Box(number, end, match["marker"], match["kind"], match["title"] or "", match["indent"]))
    return found


def unwrap_deeper(text: str) -> str:
    """The page with each top-level Deeper box opened out: its title becomes
    a bold line and its body is dedented, so that its fences are top-level
    (the chapter notebook makes them code cells, in page order)."""
    lines = text.splitlines()
    for box in reversed([b for b in boxes(text) if b.is_deeper and not b.indent]):
        body = [line[4:] if line.startswith("    ") else line.lstrip(" ") for line in lines[box.start : box.end]]
        lines[box.start - 1 : box.end] = [f"**{box.title}**", *body]
    return "\n".join(lines) + ("\n" if text.endswith("\n") else "")
