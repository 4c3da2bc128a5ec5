"""Which numbers in a page's prose are checked, and which are not.

A number in prose is *checked* when either

* it is written as ``{{ name }}``: the build fills it in from the library
  (``docs/hooks/values.py``), or
* it appears, equal after rounding to the prose's decimals, in an ``output``
  block of the same page: a block whose text CI compares with what the code
  above it printed.

Numbers that must be checked: any with two or more decimals (``0.9985``,
``-0.4161``, ``2.66x``) and any large integer (five or more digits, or with
thousands separators: ``18,944,000``). Exempt: integers below 10,000 written
without separators (positions, dimensions, "Table 3", years) and numbers with
one decimal. Code, output blocks, HTML comments, link targets and arXiv ids
are not prose.
"""

from __future__ import annotations

import re
from pathlib import Path

import parts  # docs/hooks, on pytest's pythonpath
from page_blocks import split_page, verified_outputs

CHECKED_NUMBER = re.compile(
    r"(?<![\w.,])-?(?:\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d{5,}(?:\.\d+)?|\d+\.\d{2,})(?![\d]|\.\d|,\d{3})"
)
ANY_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?")
NOT_PROSE = [
    re.compile(r"<!--.*?-->", re.DOTALL),  # comments and sybil directives
    re.compile(r"\{\{\s*[a-z0-9_]+\s*\}\}"),  # build-time values
    re.compile(r"\]\([^)]*\)"),  # link targets
    re.compile(r"arXiv:\d{4}\.\d{4,5}", re.IGNORECASE),
    re.compile(r'\b(?:src|href|width|height)="[^"]*"'),
]


def _decimals(token: str) -> int:
    return len(token.split(".")[1]) if "." in token else 0


def _value(token: str) -> float:
    return float(token.replace(",", ""))


def is_shown(token: str, outputs: list[str]) -> bool:
    """Is ``token`` an output number, possibly rounded to fewer decimals?"""
    wanted, places = _value(token), _decimals(token)
    for output in outputs:
        for candidate in ANY_NUMBER.findall(output):
            candidate = candidate.rstrip(",")
            try:
                value = _value(candidate)
            except ValueError:
                continue
            if _decimals(candidate) >= places and abs(round(value, places) - wanted) < 1e-9:
                return True
    return False


def unchecked_numbers(path: Path) -> list[str]:
    """``file:line: number`` for every prose number that nothing checks."""
    # Shortcodes become the words a reader sees: alt text and captions are prose.
    text = parts.as_prose(path.read_text(encoding="utf-8"), parts.load_page(path))
    blocks, prose = split_page(text)
    outputs = verified_outputs(blocks, text)
    # Multi-line comments: blank them out of the prose before scanning.
    prose_text = "\n".join(line for _, line in prose)
    for pattern in NOT_PROSE:
        prose_text = pattern.sub(lambda m: "\n" * m.group(0).count("\n"), prose_text)
    problems = []
    for (number, _), line in zip(prose, prose_text.split("\n")):
        for match in CHECKED_NUMBER.finditer(line):
            if not is_shown(match.group(0), outputs):
                problems.append(f"{path}:{number}: {match.group(0)} is not in any verified output")
    return problems
