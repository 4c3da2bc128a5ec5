"""Which numbers in a page's prose are checked, and which are not.

A number in prose is *checked* when either

* it is written as ``{{ name }}``: the build fills it in from the library
  (a ``@value`` in the page's companion module), or
* it appears, equal after rounding to the prose's decimals, in an ``output``
  block of the same page: a block whose text CI compares with what the code
  right above it printed (not a doctest's, not a skipped block's).

Numbers that must be checked: any with two or more decimals (``0.9985``,
``-0.4161`` or ``−0.4161`` with U+2212, ``2.66x``), any large integer (five or
more digits, or with thousands separators: ``18,944,000``, ``18 944 001``
with spaces, thin or no-break spaces) and any number in scientific notation
(``1.5e-3``). Exempt: integers below 10,000 written without separators
(positions, dimensions, "Table 3", years) and numbers with one decimal. Code,
output blocks, HTML comments, link targets (not their titles) and arXiv ids
are not prose. Alt text, captions and widget labels are, reported at the
line of the companion module that declares them.

Notebook pages count too: the markdown cells of ``docs/notebooks/*.py``
(checked against what their code cells print, run in a fresh interpreter)
and of ``docs/exercises/*.ipynb`` (against their stored outputs).
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import parts  # docs/hooks, on pytest's pythonpath
from page_blocks import read_page, split_page, verified_outputs

#: Characters that separate thousands: comma, space, no-break, thin and narrow no-break space.
_GROUP = r"(?:,\d{3})+|(?:[ \u00a0\u2009\u202f]\d{3})+"
CHECKED_NUMBER = re.compile(
    r"(?<![\w.,])-?(?:"
    r"\d+(?:\.\d+)?[eE][-+]?\d+"  # scientific notation
    rf"|\d{{1,3}}(?:{_GROUP})(?:\.\d+)?"  # thousands separators
    r"|\d{5,}(?:\.\d+)?"  # five or more digits
    r"|\d+\.\d{2,}"  # two or more decimals
    r")(?![\d]|\.\d|,\d{3}|[ \u00a0\u2009\u202f]\d{3}\b)"
)
ANY_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?(?:[eE][-+]?\d+)?")
MINUS_SIGNS = str.maketrans({"\u2212": "-", "\u2012": "-", "\ufe63": "-", "\uff0d": "-"})
NOT_PROSE = [
    re.compile(r"<!--.*?-->", re.DOTALL),  # comments and sybil directives
    re.compile(r"\{\{\s*[a-z0-9_]+\s*\}\}"),  # build-time values
    re.compile(r"arXiv:\d{4}\.\d{4,5}", re.IGNORECASE),
    re.compile(r'\b(?:src|href|width|height)="[^"]*"'),
]
#: A link's target is not prose; its title (``[x](url "title")``) is.
LINK_TARGET = re.compile(r"\]\(\s*(?:<[^>]*>|[^\s)]*)(?P<title>\s+(?:\"[^\"]*\"|'[^']*'|\([^)]*\)))?\s*\)")
LINK_DEFINITION = re.compile(r"^(?P<label>[ \t]*\[[^\]]+\]:)[ \t]*(?:<[^>]*>|\S+)", re.MULTILINE)
HOW_TO_FIX = (
    "print it in a block whose ```output shows it (rounded no further than written here), "
    "or write it as {{ name }} with a @value in the page's companion module"
)


def _decimals(token: str) -> int:
    mantissa = token.lower().split("e")[0]
    return len(mantissa.split(".")[1]) if "." in mantissa else 0


def _value(token: str) -> float:
    return float(re.sub(r"[,\s\u00a0\u2009\u202f]", "", token))


def _significant(token: str) -> int:
    digits = re.sub(r"\D", "", token.lower().split("e")[0]).lstrip("0")
    return max(len(digits), 1)


def is_shown(token: str, outputs: list[str]) -> bool:
    """Is ``token`` an output number, possibly rounded to fewer decimals?"""
    wanted = _value(token)
    scientific = "e" in token.lower()
    places = _decimals(token)
    for output in outputs:
        for candidate in ANY_NUMBER.findall(output.translate(MINUS_SIGNS)):
            candidate = candidate.rstrip(",")
            try:
                value = _value(candidate)
            except ValueError:
                continue
            if scientific:
                # 1.5e-3 is checked by 0.0015 or 1.53e-03: equal to the prose's significant digits.
                if value == wanted or (value and float(f"{value:.{_significant(token) - 1}e}") == wanted):
                    return True
            elif _decimals(candidate) >= places and abs(round(value, places) - wanted) < 1e-9:
                return True
    return False


def _blank(text: str, patterns) -> str:
    for pattern in patterns:
        text = pattern.sub(lambda m: "\n" * m.group(0).count("\n"), text)
    return text


#: What Markdown and HTML hide inside a number a reader sees whole: a
#: backslash escape (``0\.4444``), a character reference (``0.4&#52;44``), an
#: empty or inline tag (``0.44<b></b>44``), emphasis markers (``0.4*4*44``).
_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")
_INLINE_TAG = re.compile(r"</?(?:b|i|em|strong|span|sub|sup|code|mark|small|wbr|a)\b[^>]*>", re.IGNORECASE)
_EMPHASIS_IN_NUMBER = re.compile(r"(?<=[\d.,])[*_]+(?=[\d.,])")


def as_rendered(line: str) -> str:
    """A prose line as a reader sees its numbers: escapes, character
    references, inline tags and emphasis between digits removed."""
    line = html.unescape(_INLINE_TAG.sub("", _ESCAPE.sub(r"\1", line)))
    return _EMPHASIS_IN_NUMBER.sub("", line)


def prose_without_code(lines: list[str]) -> list[str]:
    """The prose lines with comments, values, link targets and attributes blanked out."""
    text = "\n".join(lines).translate(MINUS_SIGNS)
    text = _blank(text, NOT_PROSE[:1])
    text = "\n".join(as_rendered(line) for line in text.split("\n"))
    text = LINK_TARGET.sub(lambda m: "] " + (m["title"] or "").strip(), text)
    text = LINK_DEFINITION.sub(lambda m: m["label"], text)
    return _blank(text, NOT_PROSE[1:]).split("\n")


def unchecked_in(
    prose: list[tuple[int, str]], outputs: list[str], where: str, hint: bool = False, field: str = ""
) -> list[str]:
    """``where:line: number ...`` for every number in ``prose`` that no output
    shows; ``field`` names where in the line it stands ("in the alt text of ...")."""
    problems = []
    suffix = f"; {HOW_TO_FIX}" if hint else ""
    for (number, _), line in zip(prose, prose_without_code([line for _, line in prose])):
        for match in CHECKED_NUMBER.finditer(line):
            if not is_shown(match.group(0), outputs):
                problems.append(f"{where}:{number}: {match.group(0)}{field} is not in any verified output{suffix}")
    return problems


def unchecked_in_parts(text: str, page_parts: parts.PageParts, outputs: list[str], where: str, hint: bool) -> list[str]:
    """Numbers in the alt text, caption or label of each figure and widget the
    page shows, at the line of the companion module that declares it."""
    companion = where[:-3] + ".py"
    problems = []
    for match in parts.SHORTCODE.finditer(text):
        kind, name = match["kind"], match["name"]
        declared = (page_parts.figures if kind == "figure" else page_parts.widgets).get(name)
        if declared is None:
            continue  # an unknown name is the parts check's to report
        fields = [("alt text", declared.alt), ("caption", declared.caption)] if kind == "figure" else []
        fields += [("label", declared.label)] if kind == "widget" else []
        for field, words in fields:
            of = f" (in the {field} of {kind} '{name}', shown on {where})"
            problems += unchecked_in([(declared.line, words)], outputs, companion, hint, of)
    return problems


def unchecked_numbers(path: Path, where: str | None = None, hint: bool = False) -> list[str]:
    """``file:line: number`` for every prose number that nothing checks.

    ``hint=True`` adds how to fix it to each message.
    """
    if path.suffix == ".ipynb":
        return unchecked_in_ipynb(path, where or str(path), hint)
    if path.suffix == ".py":
        return unchecked_in_percent_notebook(path, where or str(path), hint)
    # Alt text, captions and labels are prose too, reported where they are declared.
    text = path.read_text(encoding="utf-8")
    blocks, prose = split_page(text)
    outputs = verified_outputs(blocks, text)
    where = where or str(path)
    found = unchecked_in(prose, outputs, where, hint) + unchecked_in_display(text, outputs, where)
    return found + unchecked_in_parts(text, parts.load_page(path), outputs, where, hint)


#: ``<!-- numbers: <why> -->`` right before a display block: its numbers are
#: not results (an example of a message, a made-up diff) and need no check.
NUMBERS_MARKER = re.compile(r"<!--\s*numbers:\s*(?P<why>\S.*?)\s*-->")


def unchecked_in_display(text: str, outputs: list[str], where: str) -> list[str]:
    """Numbers in display-only blocks (```text, ```console, ```json, ...),
    which no code checks: each must be in a verified output, or the block
    carries a marker saying why its numbers are not results."""
    page = read_page(text)
    lines = text.splitlines()
    problems = []
    for block in page.blocks:
        if block.is_python or block.language == "output":
            continue
        before = next((line for line in reversed(lines[: block.start - 1]) if line.strip()), "")
        if NUMBERS_MARKER.search(before):
            continue
        for offset, line in enumerate(block.text.splitlines(), 1):
            for match in CHECKED_NUMBER.finditer(line.translate(MINUS_SIGNS)):
                if not is_shown(match.group(0), outputs):
                    problems.append(
                        f"{where}:{block.start + offset}: {match.group(0)} in a ```{block.language or 'display'} "
                        "block is not in any verified output; print it in a block whose ```output shows it, or "
                        "put `<!-- numbers: <why they are not results> -->` right before the block"
                    )
    return problems


# --- notebook pages ----------------------------------------------------------------

_CELL = re.compile(r"^# %%(?P<rest>.*)$")


def percent_cells(text: str) -> list[tuple[str, list[tuple[int, str]]]]:
    """A jupytext percent file as (cell type, [(line, text)]) with markdown's ``# `` removed."""
    cells: list[tuple[str, list[tuple[int, str]]]] = []
    for number, line in enumerate(text.splitlines(), 1):
        if match := _CELL.match(line):
            cells.append(("markdown" if "[markdown]" in match["rest"] else "code", []))
        elif cells:
            kind, lines = cells[-1]
            lines.append((number, re.sub(r"^# ?", "", line) if kind == "markdown" else line))
    return cells


def unchecked_in_percent_notebook(path: Path, where: str, hint: bool = False) -> list[str]:
    """Numbers in a percent notebook's markdown cells, checked against what its code prints."""
    from docs_pipeline import run_alone

    cells = percent_cells(path.read_text(encoding="utf-8"))
    prose = [line for kind, lines in cells if kind == "markdown" for line in lines]
    program = "\n\n".join("\n".join(text for _, text in lines) for kind, lines in cells if kind == "code")
    if not any(CHECKED_NUMBER.search(line) for line in prose_without_code([t for _, t in prose])):
        return []  # nothing to check: do not run the notebook
    result = run_alone(program)
    outputs = [result.stdout] if result.returncode == 0 else []
    return unchecked_in(prose, outputs, where, hint)


def unchecked_in_ipynb(path: Path, where: str, hint: bool = False) -> list[str]:
    """Numbers in an .ipynb's markdown cells, checked against its stored outputs; lines are the file's."""
    raw = path.read_text(encoding="utf-8")
    notebook = json.loads(raw)
    outputs = [
        "".join(output.get("text", "")) + "".join(output.get("data", {}).get("text/plain", ""))
        for cell in notebook["cells"]
        if cell["cell_type"] == "code"
        for output in cell.get("outputs", [])
    ]
    prose, position = [], 0
    for cell in notebook["cells"]:
        source = cell["source"] if isinstance(cell["source"], list) else cell["source"].splitlines(True)
        for line in source:
            found = raw.find(json.dumps(line), position)
            if found >= 0:
                position = found
            if cell["cell_type"] == "markdown":
                prose.append((raw.count("\n", 0, position) + 1, line.rstrip("\n")))
    return unchecked_in(prose, outputs, where, hint)
