"""The glossary's parts: its A-Z index, made from the page's own term
headings when the site is built, so a new term is listed without a second
edit, and the sinusoidal base the notation table names, read from qkv."""

from __future__ import annotations

import inspect
import re
from itertools import groupby
from pathlib import Path

import qkv
from parts import value

GLOSSARY = Path(__file__).resolve().parent / "glossary.md"
#: A term heading: ``### Term { #id }`` (as tests/support/glossary.py reads it).
TERM = re.compile(r"^### (?P<term>.+?) \{ #(?P<id>[a-z0-9-]+) \}\s*$", re.MULTILINE)
#: Words that have no heading of their own: each is defined inside the entry
#: it points to (or is that entry's second name).
ALSO = {
    "Adam": "optimiser",
    "Backpropagation": "gradient-descent",
    "Batch": "padding-mask",
    "BPE": "bpe",
    "Decoder": "encoder-decoder",
    "FlashAttention": "online-softmax",
    "Key": "query-key-value",
    "Learning rate": "gradient-descent",
    "Multi-head attention": "head",
    "Pre-LN": "pre-ln",
    "Sliding window": "causal-mask",
    "Value": "query-key-value",
    "Weight (learned)": "parameter",
}


def _name(term: str) -> str:
    """A heading as the index lists it: no formula, no parenthesis."""
    term = re.sub(r",?\s*\$[^$]*\$", "", term)
    return re.sub(r"\s*\([^)]*\)", "", term).strip()


def a_to_z(text: str) -> str:
    """Every term heading of ``text`` and every ``ALSO`` word, A to Z, grouped by letter."""
    ids = {match["id"] for match in TERM.finditer(text)}
    unknown = sorted(name for name, target in ALSO.items() if target not in ids)
    if unknown:
        raise ValueError(f"docs/glossary.py: ALSO points {unknown} at no term heading of docs/glossary.md")
    terms = [(_name(match["term"]), match["id"]) for match in TERM.finditer(text)] + list(ALSO.items())
    terms.sort(key=lambda term: term[0].casefold())
    groups = []
    for letter, group in groupby(terms, key=lambda term: term[0][0].upper()):
        groups.append(f"**{letter}** " + ", ".join(f"[{name}](#{id_})" for name, id_ in group))
    return "**A–Z:** " + " · ".join(groups)


@value("glossary_a_to_z")
def glossary_a_to_z() -> str:
    return a_to_z(GLOSSARY.read_text(encoding="utf-8"))


@value("glossary_pe_base")
def glossary_pe_base() -> str:
    """The base of the sinusoidal table's frequencies: ``sinusoidal_encoding``'s default."""
    return f"{inspect.signature(qkv.sinusoidal_encoding).parameters['base'].default:,.0f}"
