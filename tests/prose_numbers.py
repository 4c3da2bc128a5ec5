"""Which numbers in a page's prose are checked, and which are not.

A number in prose is *checked* when either

* it is written as ``{{ name }}``: the build fills it in from the library
  (``docs/_site/values.py``), or
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
from dataclasses import dataclass
from pathlib import Path

FENCE_OPEN = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})[ \t]*(?P<lang>[\w+.-]*)(?P<rest>[^\n]*)$")
PYTHON_LANGUAGES = {"python", "py", "python3", "py3", "pycon"}
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


@dataclass(frozen=True)
class Block:
    language: str
    start: int  # 1-based line of the opening fence
    end: int  # 1-based line of the closing fence
    text: str


def split_page(text: str) -> tuple[list[Block], list[tuple[int, str]]]:
    """Fenced blocks, and the remaining prose lines as (line number, text)."""
    lines = text.splitlines()
    blocks: list[Block] = []
    prose: list[tuple[int, str]] = []
    index = 0
    while index < len(lines):
        match = FENCE_OPEN.match(lines[index])
        if match is None:
            prose.append((index + 1, lines[index]))
            index += 1
            continue
        fence = match["fence"]
        closing = re.compile(rf"^[ \t]*{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$")
        end = index + 1
        while end < len(lines) and not closing.match(lines[end]):
            end += 1
        body = "\n".join(line[len(match["indent"]):] for line in lines[index + 1 : end])
        blocks.append(Block(match["lang"].lower(), index + 1, end + 1, body))
        index = end + 1
    return blocks, prose


def verified_outputs(blocks: list[Block], text: str) -> list[str]:
    """Text of output blocks that directly follow a Python block (CI compares them)."""
    lines = text.splitlines()
    verified = []
    for before, block in zip(blocks, blocks[1:]):
        between = "\n".join(lines[before.end : block.start - 1]).strip()
        if block.language == "output" and before.language in PYTHON_LANGUAGES and not between:
            verified.append(block.text)
    return verified


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
    text = path.read_text(encoding="utf-8")
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
