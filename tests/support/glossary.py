"""The glossary's promises, as ``file:line: what to fix`` messages.

``docs/glossary.md`` holds every term the chapters use: a ``### Term { #id }``
heading, one sentence, and one link to the section that introduces the term
(a page of the site and a ``#section``). The page it links to links the term
back to its entry (``glossary.md#id``) where it first uses it. At least
MIN_TERMS terms. Whether each ``#section`` exists is checked on the built
site (tests/test_links.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

DOCS = Path(__file__).resolve().parent.parent.parent / "docs"
MIN_TERMS = 30
TERM = re.compile(r"^### (?P<term>.+?) \{ #(?P<id>[a-z0-9-]+) \}\s*$")
LINK = re.compile(r"\[(?P<text>[^\]]+)\]\((?P<page>[\w/.-]+\.md)#(?P<section>[\w-]+)\)")
#: A sentence ends, and another starts, inside the text.
SENTENCE_BREAK = re.compile(r"[.;!?] +[A-Z]")


@dataclass
class Entry:
    term: str
    id: str
    line: int
    body: str  # the entry's text, link included


def entries(text: str) -> list[Entry]:
    """The glossary's terms, each with the text under its heading (up to the
    next heading)."""
    found: list[Entry] = []
    for number, line in enumerate(text.splitlines(), 1):
        if line.startswith("#"):
            match = TERM.match(line)
            found.append(Entry(match["term"], match["id"], number, "") if match else None)
        elif found and found[-1] is not None:
            found[-1].body += " " + line.strip()
    return [entry for entry in found if entry is not None]


def glossary_problems(text: str, where: str, docs: Path = DOCS) -> list[str]:
    """Every broken promise of the glossary ``text`` (at ``where``), its
    linked pages read from ``docs``."""
    terms = entries(text)
    problems = []
    if len(terms) < MIN_TERMS:
        problems.append(f"{where}:1: the glossary has {len(terms)} terms; it needs at least {MIN_TERMS}")
    for entry in terms:
        at = f"{where}:{entry.line}: '{entry.term}'"
        links = list(LINK.finditer(entry.body))
        if len(links) != 1:
            problems.append(
                f"{at} needs exactly one link to the section that introduces it, "
                f"[Chapter N: section](chapters/<page>.md#<section>); it has {len(links)}"
            )
            continue
        sentence = LINK.sub("", entry.body).strip()
        if not sentence.endswith(".") or SENTENCE_BREAK.search(sentence):
            problems.append(f"{at}: say what it is in one sentence, ending with a full stop, before the link")
        page = docs / links[0]["page"]
        if not page.is_file():
            problems.append(f"{at} links to {links[0]['page']}, which is not a page of docs/")
            continue
        back = f"glossary.md#{entry.id})"
        if back not in page.read_text(encoding="utf-8"):
            problems.append(
                f"{at} is introduced on {links[0]['page']}, which never links it here: link its first use "
                f"there to ({'../' * links[0]['page'].count('/')}glossary.md#{entry.id})"
            )
    return problems
