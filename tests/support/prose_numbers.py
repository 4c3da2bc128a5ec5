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
(``1.5e-3``, and ``3.7 \\times 10^{-14}`` in a formula). Exempt: integers
below 10,000 written without separators (positions, dimensions, "Table 3",
years) and numbers with one decimal. Code, output blocks, HTML comments,
link targets (not their titles) and arXiv ids are not prose. Alt text,
captions and widget labels are, reported at the line of the companion module
that declares them.

The numbers are those a reader sees: the page is rendered with the site's
Markdown extensions (mkdocs.yml) and its text read (:func:`shown_numbers`),
so an escape, a character reference, an inline tag or emphasis inside a
number, a soft hyphen or zero-width character, and TeX's ``{}`` or spaces in
a formula hide nothing. Each unchecked number is then found on its source
line, for the message.

Notebook pages count too: the markdown cells of ``docs/notebooks/*.py``
(checked against what their code cells print, run in a fresh interpreter)
and of ``docs/exercises/*.ipynb`` (against their stored outputs).
"""

from __future__ import annotations

import collections
import functools
import json
import re
import threading
import unicodedata
from html.parser import HTMLParser
from pathlib import Path

import markdown

import notebooks  # docs/hooks, on pytest's pythonpath
import parts
from page_blocks import OUTPUT_LANGUAGE, read_page, split_page, verified_outputs

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
MINUS_SIGNS = str.maketrans({"\u2212": "-", "\u2012": "-", "\ufe63": "-", "\uff0d": "-", "\u207b": "-"})
#: arXiv ids are not numbers (arXiv:1706.03762).
ARXIV_ID = re.compile(r"arXiv:\s*\d{4}\.\d{4,5}(?:v\d+)?", re.IGNORECASE)
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


# --- the numbers a reader sees -------------------------------------------------------

# Markers for a superscript and a subscript in the text a page shows.
_SUP, _END_SUP, _SUB, _END_SUB = "\x02", "\x03", "\x04", "\x05"
_SPACE, _THIN = "\x06", "\x07"  # a space that TeX shows (\ , \quad; \, \: \;)
_SUPERSCRIPT_DIGITS = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻", "0123456789+-")
_SUPERSCRIPT_RUN = re.compile("[⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻]+")
#: ``3.7 × 10⁻¹⁴`` (TeX's ``3.7 \times 10^{-14}``, HTML's ``3.7 × 10<sup>-14</sup>``) is 3.7e-14.
_TIMES_TEN_TO = re.compile(
    rf"(?<![\w.])(\d+(?:\.\d+)?)\s*[×⋅·]\s*10\s*(?:{_SUP}\s*([-+]?\d+)\s*{_END_SUP}|\^\s*\{{?\s*([-+]?\d+)\s*\}}?)"
)
#: TeX commands whose two arguments show apart (a fraction's top and bottom).
_TWO_PARTS = "[dtc]?frac|[dt]?binom|overset|underset|stackrel|overbrace|underbrace"
_PARTS = "\x0e"
#: TeX commands that show nothing.
_INVISIBLE = (
    "relax|displaystyle|textstyle|scriptstyle|scriptscriptstyle|left|right|middle|[bB]igg?[lrm]?|"
    "limits|nolimits|strut|mathstrut|allowbreak|nobreak|mkern|kern|hspace|negthinspace"
)
_TEX_TEXT = re.compile(r"\\(?:text(?:rm|bf|it|tt|sf|normal)?|mbox|hbox)\s*\{([^{}]*)\}")


def _math_as_seen(tex: str) -> str:
    """What a formula (no ``\\text``) shows: command names, braces and source
    spaces are not shown (``0.6{}652`` and ``0.6 652`` show 0.6652), spacing
    commands are, ``^``/``_`` make a superscript/subscript."""
    tex = tex.replace("\\\\", _SPACE)
    tex = re.sub(r"\\[,:;>]|\\thinspace(?![a-zA-Z])", _THIN, tex)
    tex = re.sub(r"\\(?:q?quad|enspace)(?![a-zA-Z])|\\ |~", _SPACE, tex)
    tex = re.sub(r"\\!", "", tex)
    tex = re.sub(r"\\(?:times|cdot)(?![a-zA-Z])", "×", tex)
    # A command's name is not shown: one that takes an argument (\mathbf{...}) or
    # shows nothing (\relax) leaves its neighbours together; a symbol (\pi,
    # \approx) stands between them.
    # A comma in a formula is punctuation, with space after it ([0.90, 0.10]);
    # {,} is TeX's comma between digits (18{,}944).
    tex = re.sub(r"\{\s*,\s*\}", "\x0f", tex).replace(",", "," + _THIN).replace("\x0f", ",")
    # \frac{a}{b} (and its kin) shows its arguments apart.
    tex = re.sub(rf"\\(?:{_TWO_PARTS})(?![a-zA-Z])", _PARTS, tex)
    tex = re.sub(rf"\\(?:[a-zA-Z]+\*?(?=\s*\{{)|(?:{_INVISIBLE})(?![a-zA-Z]))", "", tex)
    tex = re.sub(r"\\[a-zA-Z]+\*?", _SPACE, tex)
    tex = re.sub(r"\\(.)", r"\1", tex)  # \{ \% \&: the character
    while True:  # groups from the innermost out; ^{...} and _{...} become marked scripts
        before = tex
        tex = re.sub(rf"{_PARTS}\s*\{{([^{{}}]*)\}}", rf"{_SPACE}\1{_SPACE}", tex)
        tex = re.sub(rf"(?<![\^_{_PARTS}])\{{([^{{}}]*)\}}", r"\1", tex)
        tex = re.sub(r"\^\s*\{([^{}]*)\}", rf"{_SUP}\1{_END_SUP}", tex)
        tex = re.sub(r"_\s*\{([^{}]*)\}", rf"{_SUB}\1{_END_SUB}", tex)
        if tex == before:
            break
    tex = re.sub(r"\^\s*([^\s{}])", rf"{_SUP}\1{_END_SUP}", tex)
    tex = re.sub(r"_\s*([^\s{}])", rf"{_SUB}\1{_END_SUB}", tex)
    tex = re.sub(r"\s+", "", tex).replace("{", "").replace("}", "").replace("&", _SPACE)
    # Each letter is a symbol of its own (x0.66 is x times 0.66), but 1.5e-3 stays a number.
    tex = re.sub(r"(?<=\d)([eE])(?=[-+]?\d)", "\x08", tex)
    tex = re.sub(r"([^\W\d_]+)", r" \1 ", tex).replace("\x08", "e")
    return tex.replace(_SPACE, " ").replace(_THIN, "\u2009")


def tex_as_seen(tex: str) -> str:
    r"""The text a TeX formula shows, as far as its numbers go.

    >>> [as_seen(tex_as_seen(tex)) for tex in (r"3.7 \times 10^{-14}", "0.6{}652", r"\mathbf{0.6}\,652", "x_{0.25}")]
    ['3.7e-14', '0.6652', '0.6652', ' x  0.25 ']
    >>> as_seen(tex_as_seen(r"\frac{0.66}{52} \approx 2\pi \times 464.1589"))
    ' 0.66 52 2 ×464.1589'
    """
    out, position = [], 0
    for match in _TEX_TEXT.finditer(tex):
        out += [_math_as_seen(tex[position : match.start()]), match[1]]
        position = match.end()
    return "".join(out + [_math_as_seen(tex[position:])])


def as_seen(text: str) -> str:
    """``text`` (what a page shows, with marked scripts) with its numbers as a
    reader reads them: no soft hyphens, zero-width or other invisible
    characters, ``a × 10^b`` as ``aeb``, a superscript or subscript apart from
    the digits around it, arXiv ids and minus signs normalised."""
    text = "".join(c for c in text if unicodedata.category(c) not in {"Cf", "Mn"})
    text = _SUPERSCRIPT_RUN.sub(lambda m: _SUP + m[0].translate(_SUPERSCRIPT_DIGITS) + _END_SUP, text)
    text = text.translate(MINUS_SIGNS)
    text = _TIMES_TEN_TO.sub(lambda m: f"{m[1]}e{m[2] or m[3]}", text)
    text = re.sub(rf"[{_SUP}{_SUB}]\s*[{_END_SUP}{_END_SUB}]", "", text)  # an empty <sup></sup>
    text = re.sub(f"[{_SUP}{_END_SUP}{_SUB}{_END_SUB}]", " ", text)
    # Decimals grouped by thin spaces (0.665 2, TeX's 0.665\,2) are one number.
    text = re.sub(r"\d+\.\d+(?:[\u2009\u202f]\d+)+", lambda m: re.sub("[\u2009\u202f]", "", m[0]), text)
    return ARXIV_ID.sub(" ", text)


#: Elements that end a line of text (the rest run on: 0.4<em>4</em>44 is 0.4444).
_BLOCK_TAGS = frozenset(
    "address article aside blockquote br caption dd details dialog div dl dt fieldset figcaption figure footer "
    "form h1 h2 h3 h4 h5 h6 header hr img input label legend li main nav ol option p section select summary "
    "table tbody td tfoot th thead tr ul".split()
)
#: Elements whose text is code, not prose: ``<pre>`` (every fenced block) and what never shows.
_CODE_TAGS = frozenset({"pre", "script", "style", "template", "textarea"})
#: Attributes a reader sees (or hears) as text.
_TEXT_ATTRIBUTES = ("alt", "title", "aria-label", "placeholder", "label", "value")


class _Shown(HTMLParser):
    """The text a page's HTML shows, with math as TeX read by :func:`tex_as_seen`."""

    def __init__(self, hidden_classes: frozenset[str]) -> None:
        super().__init__(convert_charrefs=True)
        self.hidden_classes = hidden_classes
        self.parts: list[str] = []
        self._skip: tuple[str, int] | None = None  # (tag, depth) of a code region
        self._math: tuple[str, int, list[str]] | None = None

    def handle_starttag(self, tag, attrs):
        values = dict(attrs)
        classes = set((values.get("class") or "").split())
        if self._skip is not None:
            if tag == self._skip[0]:
                self._skip = (tag, self._skip[1] + 1)
            return
        if self._math is not None:
            if tag == self._math[0]:
                self._math = (tag, self._math[1] + 1, self._math[2])
            return
        if tag in _CODE_TAGS or classes & self.hidden_classes:
            self._skip = (tag, 1)
            return
        if "arithmatex" in classes:
            self._math = (tag, 1, [])
            return
        if tag in _BLOCK_TAGS:
            self.parts.append("\n")
        for name in _TEXT_ATTRIBUTES:
            if values.get(name):
                self.parts.append(f"\n{values[name]}\n")
        if tag == "sup":
            self.parts.append(_SUP)
        elif tag == "sub":
            self.parts.append(_SUB)

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)
        if tag in _CODE_TAGS or tag == self._math_tag():
            self.handle_endtag(tag)

    def _math_tag(self):
        return self._math[0] if self._math else None

    def handle_endtag(self, tag):
        if self._skip is not None:
            if tag == self._skip[0]:
                depth = self._skip[1] - 1
                self._skip = (tag, depth) if depth else None
            return
        if self._math is not None:
            if tag == self._math[0]:
                name, depth, tex = self._math
                if depth > 1:
                    self._math = (name, depth - 1, tex)
                else:
                    self.parts.append(" " + tex_as_seen(_strip_delimiters("".join(tex))) + " ")
                    self._math = None
            return
        if tag == "sup":
            self.parts.append(_END_SUP)
        elif tag == "sub":
            self.parts.append(_END_SUB)
        if tag in _BLOCK_TAGS:
            self.parts.append("\n")

    def handle_data(self, data):
        if self._skip is not None:
            return
        (self._math[2] if self._math is not None else self.parts).append(data)


def _strip_delimiters(tex: str) -> str:
    """arithmatex's ``\\(...\\)``, ``\\[...\\]`` or ``$...$`` around a formula, removed."""
    tex = tex.strip()
    for opening, closing in (("\\(", "\\)"), ("\\[", "\\]"), ("$$", "$$"), ("$", "$")):
        if tex.startswith(opening) and tex.endswith(closing) and len(tex) >= len(opening) + len(closing):
            return tex[len(opening) : len(tex) - len(closing)]
    return tex


_LOCAL = threading.local()


#: The extensions MkDocs adds before those of mkdocs.yml (mkdocs.config.defaults).
MKDOCS_BUILTIN_EXTENSIONS = ["toc", "tables", "fenced_code"]


def _site_markdown() -> tuple[markdown.Markdown, frozenset[str]]:
    """A converter with the site's Markdown extensions, as MkDocs loads them
    (its built-ins, then mkdocs.yml's), and the classes of its custom fences."""
    if not hasattr(_LOCAL, "markdown"):
        names, configs = list(MKDOCS_BUILTIN_EXTENSIONS), {}
        for entry in notebooks.site_config()["markdown_extensions"]:
            name, options = (entry, {}) if isinstance(entry, str) else next(iter(entry.items()))
            names.append(name)
            configs[name] = dict(options or {})
        fences = configs.get("pymdownx.superfences", {}).get("custom_fences", [])
        _LOCAL.markdown = markdown.Markdown(extensions=names, extension_configs=configs)
        _LOCAL.hidden = frozenset(fence["class"] for fence in fences if fence.get("class"))
    return _LOCAL.markdown, _LOCAL.hidden


def shown_text(markdown_text: str) -> str:
    """The text the site shows for ``markdown_text``: rendered with the site's
    Markdown extensions, code blocks and output blocks left out, alt text and
    titles in, formulas read by :func:`tex_as_seen`, then :func:`as_seen`.
    A ``{{ name }}`` is the build's (checked by construction): it shows no number here."""
    converter, hidden = _site_markdown()
    converter.reset()
    rendered = converter.convert(parts.VALUE_REF.sub("(value)", markdown_text))
    reader = _Shown(hidden)
    reader.feed(rendered)
    reader.close()
    return as_seen("".join(reader.parts))


def shown_numbers(markdown_text: str) -> list[str]:
    r"""The numbers that must be checked among those ``markdown_text`` shows, in order.

    >>> shown_numbers(r"Weights 0.6&shy;652, 0.0<u></u>900 and $0.6{}652$; error $3.7 \times 10^{-14}$; d = 512.")
    ['0.6652', '0.0900', '0.6652', '3.7e-14']
    """
    return [match.group(0) for match in CHECKED_NUMBER.finditer(shown_text(markdown_text))]


@functools.lru_cache(maxsize=4096)
def _numbers_of_line(line: str) -> collections.Counter:
    """The numbers one source line shows alone, or read as TeX (a line inside
    ``$$ ... $$``), each as often as it shows."""
    alone = collections.Counter(shown_numbers(line.strip()))
    as_tex = collections.Counter(m.group(0) for m in CHECKED_NUMBER.finditer(as_seen(tex_as_seen(line))))
    return alone | as_tex


def _locate(
    token: str, lines: list[str], numbers: list[int | None], start: int, code: set[int], taken: collections.Counter
) -> int | None:
    """The index of the line that shows ``token`` (once more than ``taken``
    counts for it there): the first from ``start`` on (then from the top),
    prose before code; failing that, the first whose digits are the token's
    with anything but digits between them."""
    order = [i for i in [*range(start, len(lines)), *range(start)] if numbers[i] is not None]
    for candidates in ([i for i in order if numbers[i] not in code], [i for i in order if numbers[i] in code]):
        for index in candidates:
            if _numbers_of_line(lines[index])[token] > taken[index, token]:
                taken[index, token] += 1
                return index
    digits = re.sub(r"\D", "", token.lower().split("e")[0])
    pattern = re.compile(r"(?<!\d)" + r"\D{0,40}?".join(digits) + r"(?!\d)")
    return next((i for i in order if pattern.search(lines[i])), None)


def unchecked_in(
    prose: list[tuple[int, str]],
    outputs: list[str],
    where: str,
    hint: bool = False,
    field: str = "",
    code: set[int] = frozenset(),
) -> list[str]:
    """``where:line: number ...`` for every number the Markdown ``prose``
    (``(line, text)`` pairs; a gap in the line numbers ends a paragraph) shows
    that no output shows. The numbers are read from the rendered text (see
    :func:`shown_numbers`), then each is found on its source line; ``code``:
    lines of code blocks, searched last. ``field`` names where in the line it
    stands ("in the alt text of ...")."""
    lines: list[str] = []
    numbers: list[int | None] = []
    for number, text in prose:
        if numbers and numbers[-1] is not None and number != numbers[-1] + 1:
            lines.append("")
            numbers.append(None)
        lines.append(text)
        numbers.append(number)
    problems, cursor, taken = [], 0, collections.Counter()
    suffix = f"; {HOW_TO_FIX}" if hint else ""
    for token in shown_numbers("\n".join(lines)):
        if is_shown(token, outputs):
            continue
        index = _locate(token, lines, numbers, cursor, set(code), taken)
        if index is None:
            problems.append(
                f"{where}: {token}{field} (as the page shows it; no one source line holds it) "
                f"is not in any verified output{suffix}"
            )
            continue
        cursor = index
        problems.append(f"{where}:{numbers[index]}: {token}{field} is not in any verified output{suffix}")
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
    blocks, _ = split_page(text)
    outputs = verified_outputs(blocks, text)
    where = where or str(path)
    # The whole page is rendered (what is code is what the site shows as code); blocks are searched last for a line.
    code = {number for block in blocks for number in range(block.start, block.end + 1)}
    lines = list(enumerate(_without_front_matter(text).splitlines(), 1))
    found = unchecked_in(lines, outputs, where, hint, code=code) + unchecked_in_display(text, outputs, where)
    found += unseen_code_blocks(text, where)
    return found + unchecked_in_parts(text, parts.load_page(path), outputs, where, hint)


#: A code block as the site renders it: ``<pre><code>`` (a linenums table adds a ``<pre>`` without one).
_RENDERED_CODE_BLOCK = re.compile(r"<pre\b[^>]*>(?:<span></span>)?<code\b")
_FENCE_LIKE = re.compile(r"^[ \t>]*(?:`{3,}|~{3,})")


def unseen_code_blocks(text: str, where: str) -> list[str]:
    """A code block the site shows that the page checks do not read (a fence
    in a blockquote, ``> ```python``): its numbers would go unchecked and its
    code unrun. ``where:line`` names the first fence-like line outside every
    block the checks read."""
    blocks, _ = split_page(text)
    converter, _ = _site_markdown()
    converter.reset()
    shown = len(_RENDERED_CODE_BLOCK.findall(converter.convert(_without_front_matter(text))))
    read = sum(block.language != OUTPUT_LANGUAGE for block in blocks)
    if shown <= read:
        return []
    inside = {number for block in blocks for number in range(block.start, block.end + 1)}
    line = next(
        (n for n, source in enumerate(text.splitlines(), 1) if n not in inside and _FENCE_LIKE.match(source)), None
    )
    return [
        f"{where}:{line or 1}: the page shows {shown} code blocks but its checks read {read}: a fence they do not "
        "see (inside a blockquote?) is neither run nor checked for numbers; write it as a fence of its own"
    ]


_FRONT_MATTER = re.compile(r"\A-{3}[ \t]*\n.*?\n(?:\.{3}|-{3})[ \t]*\n", re.DOTALL)


def _without_front_matter(text: str) -> str:
    """The page with its YAML front matter blanked (the line numbers stay)."""
    return _FRONT_MATTER.sub(lambda m: "\n" * m.group(0).count("\n"), text)


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
    if not shown_numbers("\n".join(text for _, text in prose)):
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
