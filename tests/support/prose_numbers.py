"""Which numbers in a page's prose are checked, and which are not.

A number in prose is *checked* when either

* it is written as ``{{ name }}``: the build fills it in from the library
  (a ``@value`` in the page's companion module), or
* it appears, equal after rounding to the prose's decimals, in an ``output``
  block of the same page: a block whose text CI compares with what the code
  right above it printed (not a doctest's, not a skipped block's).

Numbers that must be checked: any with two or more decimals (``0.9985``,
``.9985``, ``-0.4161`` or ``−0.4161`` with U+2212, ``2.66x``), any large integer (five or
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
number, a soft hyphen or zero-width character, a ``hidden`` element, a
character drawn like a full stop (U+2024) or a decimal comma (``0,7311``)
hide nothing. (CSS of a page's own, which could hide or draw one, fails the
build: ``safety.page_code``.) Formulas are
read from the MathML the build makes (``hooks.mathml``, through the build's
own math step), not from their TeX: what TeX command splits a number in the
source (``0.6\\color{teal}652``) does not matter, only what shows. Only the
``output`` fences the pipeline makes are output blocks: a hand-written
``class="qkv-output"`` element (drawn exactly like one) is prose, and so is
a ``<textarea>``'s text. Each unchecked number is then found on its source
line, for the message.

Notebook pages count too: the markdown cells of ``docs/notebooks/*.py``
(checked against what their code cells print, run in a fresh interpreter)
and of ``docs/exercises/*.ipynb`` (against their stored outputs). Each cell
is rendered as the site renders it: by nbconvert (no abbreviations or
attribute lists there), sanitised, ``$...$`` as MathML.
"""

from __future__ import annotations

import collections
import functools
import html
import json
import re
import secrets
import threading
import unicodedata
from html.parser import HTMLParser
from pathlib import Path
from xml.etree import ElementTree

import markdown
from mkdocs.utils.meta import get_data

import hooks  # docs/hooks, on pytest's pythonpath: the build's own math step
import notebooks
import parts
import safety
from page_blocks import OUTPUT_LANGUAGE, read_page, split_page, verified_outputs

#: Characters that separate thousands: comma, space, no-break, thin and narrow no-break space.
_GROUP = r"(?:,\d{3})+|(?:[ \u00a0\u2009\u202f]\d{3})+"
CHECKED_NUMBER = re.compile(
    r"(?<![\w.,])-?(?:"
    r"\d+(?:\.\d+)?[eE][-+]?\d+"  # scientific notation
    rf"|\d{{1,3}}(?:{_GROUP})(?:\.\d+)?"  # thousands separators
    r"|\d{5,}(?:\.\d+)?"  # five or more digits
    r"|\d*\.\d{2,}"  # two or more decimals (.6652 too)
    r")(?![\d]|\.\d|,\d{3}|[ \u00a0\u2009\u202f]\d{3}\b)"
)
ANY_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?(?:[eE][-+]?\d+)?")
MINUS_SIGNS = str.maketrans({"\u2212": "-", "\u2012": "-", "\ufe63": "-", "\uff0d": "-", "\u207b": "-"})
#: Characters drawn like a full stop (U+2024 ONE DOT LEADER, the small and
#: fullwidth full stops, ...): before a digit a reader reads a decimal point.
#: Not the middle dots (·, ⋅), which also mean "times" (0.5·0.25).
_DOT_LIKE = "\u2024\ufe52\uff0e\u0701\u0702\ua4f8\ua60e\U00010a50"
_DOT_LIKE_BEFORE_A_DIGIT = re.compile(f"[{_DOT_LIKE}](?=\\d)")
#: A decimal comma after a lone zero (0,7311): no thousands separator follows a lone 0.
_DECIMAL_COMMA = re.compile(r"(?<![\w.,])(-?0),(\d{2,})(?![\d,])")
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
#: ``3.7 × 10⁻¹⁴`` (TeX's ``3.7 \\times 10^{-14}``, HTML's ``3.7 × 10<sup>-14</sup>``) is 3.7e-14.
_TIMES_TEN_TO = re.compile(
    rf"(?<![\w.])(\d+(?:\.\d+)?)\s*[×⋅·]\s*10\s*(?:{_SUP}\s*([-+]?\d+)\s*{_END_SUP}|\^\s*\{{?\s*([-+]?\d+)\s*\}}?)"
)

# --- formulas: the text of the MathML the build makes -------------------------------

#: MathML elements whose children show apart from each other (a fraction's top and bottom, a table's cells).
_APART = frozenset({"mfrac", "msqrt", "mtd", "mtr", "mlabeledtr", "mmultiscripts"})
#: MathML elements that show nothing.
_UNSEEN = frozenset({"mphantom", "annotation", "annotation-xml", "mprescripts", "none"})
_MATH = re.compile(r"<math\b[^>]*>.*?</math\s*>", re.DOTALL | re.IGNORECASE)
_LENGTH = re.compile(r"\s*(-?\d*\.?\d+)\s*(em|ex|pt|px|mu)?\s*$")
_EM_PER = {"em": 1.0, "ex": 0.5, "pt": 0.1, "px": 1 / 16, "mu": 1 / 18, None: 1.0}


def _space(width: str) -> str:
    """What an ``<mspace width=...>`` shows between two digits: nothing (zero
    or negative, TeX's ``\\!``), a thin space (below 0.3em: ``\\,``, ``\\;``;
    :func:`as_seen` joins decimals split by one), or a space."""
    width = width.strip().lower()
    if width.startswith("negative"):
        return ""
    if width in {"thinmathspace", "mediummathspace", "thickmathspace", "veryverythinmathspace", "verythinmathspace"}:
        return _THIN
    match = _LENGTH.match(width)
    if match is None:
        return _SPACE
    ems = float(match[1]) * _EM_PER[match[2]]
    return "" if ems <= 0 else _THIN if ems < 0.3 else _SPACE


def _mathml_text(element, after: list[str], alone: bool = False, enclosed_apart: bool = True) -> str:
    """The text one MathML element shows, with superscripts and subscripts
    marked; what stands over or under a base (``\\overset``, ``\\hat``, a
    brace's label) goes to ``after``, apart from the base's neighbours.
    ``alone``: the element is its parent's only child. ``enclosed_apart``: a
    ``<menclose>`` (a strike or box drawn round its content) apart from its
    neighbours, else joined to them."""
    tag = element.tag.rsplit("}", 1)[-1].lower()
    children = list(element)
    if tag in _UNSEEN:
        return ""
    if tag == "mspace":
        return _space(element.get("width", "0"))
    if tag == "maction":
        children = children[:1]  # Chromium shows only the first child (security re-review 3b, S2)
    parts = [_mathml_text(child, after, len(children) == 1, enclosed_apart) for child in children]
    if tag in {"msup", "msub", "msubsup"} and len(parts) >= 2:
        marks = {"msup": [(_SUP, _END_SUP)], "msub": [(_SUB, _END_SUB)]}.get(tag, [(_SUB, _END_SUB), (_SUP, _END_SUP)])
        return parts[0] + "".join(f"{a}{script}{b}" for (a, b), script in zip(marks, parts[1:]))
    if tag in {"mover", "munder", "munderover"} and parts:
        after += [_SPACE + script + _SPACE for script in parts[1:]]
        return parts[0]
    if tag == "mroot" and len(parts) == 2:
        return _SPACE + parts[1] + _SPACE + parts[0] + _SPACE
    text = (element.text or "").strip()
    if tag == "mtext":
        text = (element.text or "").replace("\u00a0", " ")
    elif tag == "mo" and text == "," and not alone:
        text = "," + _THIN  # a comma between a formula's terms ([0.90, 0.10]); {,} is the one between digits
    inner = text + "".join(parts)
    if tag in _APART or (tag == "menclose" and enclosed_apart):
        inner = _SPACE + _SPACE.join(parts) + _SPACE
    return inner + (element.tail or "").strip()


def mathml_as_seen(math: str) -> str:
    r"""The text a MathML formula (as :func:`hooks.mathml` makes it) shows,
    its scripts marked: what :func:`as_seen` reads.

    >>> from hooks import mathml
    >>> [as_seen(mathml_as_seen(mathml(tex, display=False))) for tex in (r"3.7 \times 10^{-14}", r"0.6\color{teal}652")]
    ['3.7e-14', '0.6652']
    >>> [as_seen(mathml_as_seen(mathml(tex, display=False))) for tex in (r"0.6\vphantom{x}652", r"0.665\,2", "x_{0.25}")]
    ['0.6652', '0.6652', ' x  0.25 ']
    >>> as_seen(mathml_as_seen(mathml(r"\frac{0.66}{52} \approx 2\pi \times 464.1589", display=False)))
    ' 0.66 52 ≈2 π ×464.1589'
    """
    root = ElementTree.fromstring(math)

    def read(enclosed_apart: bool) -> str:
        after: list[str] = []
        text = _mathml_text(root, after, enclosed_apart=enclosed_apart) + "".join(after)
        # Each letter is a symbol of its own (x0.66 is x times 0.66), but 1.5e-3 stays a number.
        text = re.sub(r"(?<=\d)([eE])(?=[-+\u2212]?\d)", "\x08", text)
        text = re.sub(r"([^\W\d_]+)", r" \1 ", text).replace("\x08", "e")
        return text.replace(_SPACE, " ").replace(_THIN, "\u2009")

    text = read(enclosed_apart=True)
    if root.find(".//{*}menclose") is None and root.find(".//menclose") is None:
        return text
    # A strike or a box (\cancel, \boxed: <menclose>) is read apart from its neighbours (\cancel{0.6625}0.6652
    # shows 0.6625, struck through, then 0.6652, which read joined was 0.66250.6652, no number: security re-review
    # 9b, not covered); a number read joined only (\boxed{0.66}52: 0.6652) is read too.
    numbers = collections.Counter(m[0] for m in CHECKED_NUMBER.finditer(as_seen(text)))
    joined = collections.Counter(m[0] for m in CHECKED_NUMBER.finditer(as_seen(read(enclosed_apart=False))))
    return text + "".join(f" {token} " for token in (joined - numbers).elements())


def formula_as_seen(tex: str) -> str:
    """The text one TeX formula shows on the site: :func:`hooks.mathml`'s
    MathML, read by :func:`mathml_as_seen`. ``ValueError`` if it does not
    convert (the build fails on it too)."""
    return mathml_as_seen(hooks.mathml(tex, display=False))


def _with_math_as_text(page_html: str) -> str:
    """``page_html`` with each ``<math>`` element replaced by the text it shows
    (escaped). A ``<math>`` that is not well-formed XML stays as it is: its
    text is read as text."""

    def as_text(match: re.Match[str]) -> str:
        try:
            # No space around it: 0.<math><mn>5</mn></math> shows 0.5 (security re-review 3b, S2).
            return html.escape(mathml_as_seen(match[0]), quote=False)
        except ElementTree.ParseError:
            return match[0]

    return _MATH.sub(as_text, page_html)


def as_seen(text: str) -> str:
    """``text`` (what a page shows, with marked scripts) with its numbers as a
    reader reads them: no soft hyphens, zero-width or other invisible
    characters, ``a × 10^b`` as ``aeb``, a superscript or subscript apart from
    the digits around it, arXiv ids, minus signs, look-alike decimal points
    (``0․6652`` with U+2024) and decimal commas (``0,7311``) normalised.

    >>> as_seen("0\u20246652, 0,7311 and .0900")
    '0.6652, 0.7311 and .0900'
    """
    # Cn too: an unassigned code point in the default-ignorable ranges is drawn as nothing (security re-review 8b, W1).
    text = "".join(c for c in text if unicodedata.category(c) not in {"Cf", "Mn", "Cn"})
    text = _DOT_LIKE_BEFORE_A_DIGIT.sub(".", text)
    text = _DECIMAL_COMMA.sub(r"\1.\2", text)
    text = _SUPERSCRIPT_RUN.sub(lambda m: _SUP + m[0].translate(_SUPERSCRIPT_DIGITS) + _END_SUP, text)
    text = text.translate(MINUS_SIGNS)
    text = _TIMES_TEN_TO.sub(lambda m: f"{m[1]}e{m[2] or m[3]}", text)
    text = re.sub(rf"[{_SUP}{_SUB}]\s*[{_END_SUP}{_END_SUB}]", "", text)  # an empty <sup></sup>
    text = re.sub(f"[{_SUP}{_END_SUP}{_SUB}{_END_SUB}]", " ", text)
    # Decimals grouped by thin spaces (0.665 2, TeX's 0.665\,2) are one number.
    text = re.sub(r"\d+\.\d+(?:[\u2009\u202f]\d+)+", lambda m: re.sub("[\u2009\u202f]", "", m[0]), text)
    return ARXIV_ID.sub(" ", text)


#: Elements that end a line of text (the rest run on: 0.4<em>4</em>44 is 0.4444). Not ``<label>`` or
#: ``<input>``, which a browser draws inline (0.6<label>652</label> shows 0.6652; an ``<input
#: type="hidden">`` shows nothing at all: security re-review 7b, V1).
_BLOCK_TAGS = frozenset(
    "address article aside blockquote br dd details dialog div dl dt fieldset figcaption figure footer "
    "form h1 h2 h3 h4 h5 h6 header hr img legend li main nav ol option p section select summary "
    "table ul".split()
)
#: A table's parts: a line of their own only inside a ``<table>``. Outside one, HTML's tree builder
#: drops their tags (0.6<td>652</td> shows 0.6652: security re-review 7b, V1).
_TABLE_PART_TAGS = frozenset("caption colgroup tbody td tfoot th thead tr".split())
#: Elements whose text does not show: ``<pre>`` (every fenced block: code, read as code) and what never shows.
#: (A ``<textarea>`` shows its text: it is read.)
_CODE_TAGS = frozenset({"pre", "script", "style", "template"})
#: Elements whose text may not show, depending on the browser, the size the
#: page gives them or a class's CSS: a second reading leaves them out too, and
#: any element with a class (``tabbed-block``: a tab not selected), so that
#: 0.<noscript>x</noscript>3333 or 0.<svg width="0"><text>x</text></svg>3333
#: is read as 0.3333 as well (security re-review 4, R3); and an image, whose
#: alt text shows only if it fails to load (re-review 3b, S2).
_MAYBE_HIDDEN = frozenset(
    "svg canvas audio video noscript noembed noframes object picture iframe rp datalist title img".split()
)
#: Elements with no end tag (a hidden one hides only itself).
_VOID_TAGS = frozenset("area base br col embed hr img input link meta source track wbr".split())
#: Attributes a reader sees (or hears) as text.
_TEXT_ATTRIBUTES = ("alt", "title", "aria-label", "placeholder", "label", "value")


class _Shown(HTMLParser):
    """The text a page's HTML shows (formulas already replaced by their text, :func:`_with_math_as_text`)."""

    def __init__(self, hidden_classes: frozenset[str], maybe_hidden: bool = False) -> None:
        super().__init__(convert_charrefs=True)
        self.hidden_classes = hidden_classes
        # The second reading (shown_numbers): also leave out what may not show (_MAYBE_HIDDEN).
        self.maybe_hidden = maybe_hidden
        self.parts: list[str] = []
        self._skip: tuple[str, int] | None = None  # (tag, depth) of a code region
        self._tables = 0  # how many <table> elements are open

    def _breaks(self, tag: str) -> bool:
        """Whether ``tag`` starts or ends a line: a block, or a table's part inside a table."""
        return tag in _BLOCK_TAGS or (tag in _TABLE_PART_TAGS and self._tables > 0)

    def handle_starttag(self, tag, attrs):
        values = dict(attrs)
        classes = set((values.get("class") or "").split())
        if self._skip is not None:
            if tag == self._skip[0]:
                self._skip = (tag, self._skip[1] + 1)
            return
        maybe = self.maybe_hidden and (tag in _MAYBE_HIDDEN or bool(classes))
        hidden_input = tag == "input" and (values.get("type") or "").strip().lower() == "hidden"
        if tag in _CODE_TAGS or classes & self.hidden_classes or "hidden" in values or maybe or hidden_input:
            # A hidden element shows nothing (0.<span hidden>x</span>2447 shows 0.2447); a void one has no end.
            if tag not in _VOID_TAGS:
                self._skip = (tag, 1)
            return
        if tag == "table":
            self._tables += 1
        if self._breaks(tag):
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
        if tag in _CODE_TAGS:
            self.handle_endtag(tag)

    def handle_endtag(self, tag):
        if self._skip is not None:
            if tag == self._skip[0]:
                depth = self._skip[1] - 1
                self._skip = (tag, depth) if depth else None
            return
        if tag == "sup":
            self.parts.append(_END_SUP)
        elif tag == "sub":
            self.parts.append(_END_SUB)
        if self._breaks(tag):
            self.parts.append("\n")
        if tag == "table" and self._tables:
            self._tables -= 1

    def handle_data(self, data):
        if self._skip is None:
            self.parts.append(data)


_LOCAL = threading.local()


#: The extensions MkDocs adds before those of mkdocs.yml (mkdocs.config.defaults).
MKDOCS_BUILTIN_EXTENSIONS = ["toc", "tables", "fenced_code"]


def _site_markdown() -> tuple[markdown.Markdown, frozenset[str]]:
    """A converter with the site's Markdown extensions, as MkDocs loads them
    (its built-ins, then mkdocs.yml's), and the classes its custom fences get.

    The fences the pipeline makes (```` ```output ````) are the only output
    blocks: here their class is a name no page can write (``qkv-output`` plus
    a random suffix), so a hand-written ``class="qkv-output"`` element, which
    the site draws exactly like one, is read as prose."""
    if not hasattr(_LOCAL, "markdown"):
        names, configs = list(MKDOCS_BUILTIN_EXTENSIONS), {}
        for entry in notebooks.site_config()["markdown_extensions"]:
            name, options = (entry, {}) if isinstance(entry, str) else next(iter(entry.items()))
            names.append(name)
            configs[name] = dict(options or {})
        superfences = configs.get("pymdownx.superfences", {})
        fences = [dict(fence) for fence in superfences.get("custom_fences", [])]
        for fence in fences:
            if fence.get("class"):
                fence["class"] = f"{fence['class']}-{secrets.token_hex(8)}"
        if fences:
            configs["pymdownx.superfences"] = {**superfences, "custom_fences": fences}
        _LOCAL.markdown = markdown.Markdown(extensions=names, extension_configs=configs)
        _LOCAL.hidden = frozenset(fence["class"] for fence in fences if fence.get("class"))
    return _LOCAL.markdown, _LOCAL.hidden


def _notebook_markdown(source: str) -> str:
    """One notebook markdown cell as the site shows it: nbconvert's HTML (what
    mkdocs-jupyter uses: no abbreviations, no attribute lists), sanitised as
    the build does (``safety.sanitise_notebook``), ``$...$`` as MathML."""
    if not hasattr(_LOCAL, "nbconvert"):
        from nbconvert.exporters.html import HTMLExporter

        _LOCAL.nbconvert = HTMLExporter()
    rendered = _LOCAL.nbconvert.markdown2html({"cell": {}}, source)
    wrapped = safety.sanitise_notebook(safety.NOTEBOOK_START + rendered + safety.NOTEBOOK_END, "notebook cell")
    return hooks._dollars_to_mathml(wrapped)


def _page_markdown(markdown_text: str) -> tuple[str, frozenset[str]]:
    """A Markdown page's HTML as the site shows it: the site's extensions, then
    the build's math step (``hooks.py``: formulas in headings as text, the
    others as MathML); and the classes of its output blocks."""
    converter, hidden = _site_markdown()
    converter.reset()
    rendered = hooks._headings_as_text(converter.convert(markdown_text))
    # A heading's data-toc-label is shown in the table of contents instead of its text (the toc
    # extension moves it out of the heading): read as a line of its own (security re-review 7b, V2).
    rendered += "".join(f"\n<p>{label}</p>" for label in _toc_labels(converter.toc_tokens))
    try:
        rendered = hooks._arithmatex_to_mathml(rendered)
    except ValueError:
        pass  # a formula that does not convert fails the build; read its TeX as text
    return rendered, hidden


def _toc_labels(tokens: list[dict]) -> list[str]:
    """The ``data-toc-label`` of every heading in the toc extension's tokens (HTML, as the theme shows it)."""
    labels = []
    for token in tokens:
        if token.get("data-toc-label"):
            labels.append(token["name"])
        labels += _toc_labels(token.get("children", []))
    return labels


def shown_text(markdown_text: str, notebook: bool = False) -> str:
    """The text the site shows for ``markdown_text`` (a page, or with
    ``notebook=True`` one notebook markdown cell): rendered as the site renders
    it, code blocks and the pipeline's output blocks left out, alt text and
    titles in, formulas read from the build's MathML (:func:`mathml_as_seen`),
    then :func:`as_seen`. A ``{{ name }}`` is the build's (checked by
    construction): it shows no number here."""
    return _read(*_rendered(markdown_text, notebook))


def _rendered(markdown_text: str, notebook: bool) -> tuple[str, frozenset[str]]:
    """``markdown_text`` as the site renders it, formulas as text, and the classes its hidden fences get."""
    markdown_text = parts.VALUE_REF.sub("(value)", markdown_text)
    if notebook:
        rendered, hidden = _notebook_markdown(markdown_text), frozenset()
    else:
        rendered, hidden = _page_markdown(markdown_text)
    return _with_math_as_text(rendered), hidden


def _read(page_html: str, hidden: frozenset[str], maybe_hidden: bool = False) -> str:
    reader = _Shown(hidden, maybe_hidden)
    reader.feed(page_html)
    reader.close()
    return as_seen("".join(reader.parts))


def shown_numbers(markdown_text: str, notebook: bool = False) -> list[str]:
    r"""The numbers that must be checked among those ``markdown_text`` shows, in order.

    >>> shown_numbers(r"Weights 0.6&shy;652, 0.0<u></u>900 and $0.6{}652$; error $3.7 \times 10^{-14}$; d = 512.")
    ['0.6652', '0.0900', '0.6652', '3.7e-14']
    """
    page_html, hidden = _rendered(markdown_text, notebook)
    found = [match.group(0) for match in CHECKED_NUMBER.finditer(_read(page_html, hidden))]
    # A second reading without what may not show (_MAYBE_HIDDEN, any element with a class):
    # a number it finds that the first did not counts too.
    more = collections.Counter(m.group(0) for m in CHECKED_NUMBER.finditer(_read(page_html, hidden, True)))
    more.subtract(collections.Counter(found))
    return found + sorted(more.elements())


@functools.lru_cache(maxsize=4096)
def _numbers_of_line(line: str, notebook: bool = False) -> collections.Counter:
    """The numbers one source line shows alone, or read as a formula (a line
    inside ``$$ ... $$``), each as often as it shows."""
    alone = collections.Counter(shown_numbers(line.strip(), notebook))
    try:
        formula = as_seen(formula_as_seen(line))
    except ValueError:
        formula = ""  # not a formula alone
    return alone | collections.Counter(m.group(0) for m in CHECKED_NUMBER.finditer(formula))


def _locate(
    token: str,
    lines: list[str],
    numbers: list[int | None],
    start: int,
    code: set[int],
    taken: collections.Counter,
    notebook: bool = False,
) -> int | None:
    """The index of the line that shows ``token`` (once more than ``taken``
    counts for it there): the first from ``start`` on (then from the top),
    prose before code; failing that, the first whose digits are the token's
    with anything but digits between them."""
    order = [i for i in [*range(start, len(lines)), *range(start)] if numbers[i] is not None]
    for candidates in ([i for i in order if numbers[i] not in code], [i for i in order if numbers[i] in code]):
        for index in candidates:
            if _numbers_of_line(lines[index], notebook)[token] > taken[index, token]:
                taken[index, token] += 1
                return index
    digits = re.sub(r"\D", "", token.lower().split("e")[0])
    pattern = re.compile(r"(?<!\d)" + r"\D{0,40}?".join(digits) + r"(?!\d)")
    return next((i for i in order if pattern.search(lines[i])), None)


def _lines_of(prose: list[tuple[int | None, str]], notebook: bool = False) -> tuple[list[str], list[int | None]]:
    """``prose``'s lines and their numbers, an empty line (number ``None``) at each gap; ``notebook``:
    the cells are given, a ``(None, "")`` between two, and the line numbers are only where to report."""
    lines: list[str] = []
    numbers: list[int | None] = []
    for number, text in prose:
        if number is None or notebook:
            if number is None and numbers and numbers[-1] is not None:
                lines.append("")
                numbers.append(None)
            if number is None:
                continue
        elif numbers and numbers[-1] is not None and number != numbers[-1] + 1:
            lines.append("")
            numbers.append(None)
        lines.append(text)
        numbers.append(number)
    return lines, numbers


def _shown_in(lines: list[str], numbers: list[int | None], notebook: bool) -> list[str]:
    """The checked numbers ``lines`` show: one page, or (``notebook``) one
    notebook cell between gaps, each rendered alone."""
    if not notebook:
        return shown_numbers("\n".join(lines))
    cells = "\n".join("\x00" if number is None else line for line, number in zip(lines, numbers))
    return [token for cell in cells.split("\n\x00\n") for token in shown_numbers(cell, notebook=True)]


def unchecked_in(
    prose: list[tuple[int | None, str]],
    outputs: list[str],
    where: str,
    hint: bool = False,
    field: str = "",
    code: set[int] = frozenset(),
    notebook: bool = False,
) -> list[str]:
    """``where:line: number ...`` for every number the Markdown ``prose``
    (``(line, text)`` pairs; a gap in the line numbers ends a paragraph) shows
    that no output shows. The numbers are read from the rendered text (see
    :func:`shown_numbers`), then each is found on its source line; ``code``:
    lines of code blocks, searched last. ``field`` names where in the line it
    stands ("in the alt text of ..."). ``notebook``: the prose is a notebook's
    markdown cells, a ``(None, "")`` before each, each rendered alone as
    nbconvert renders it."""
    lines, numbers = _lines_of(prose, notebook)
    problems, cursor, taken = [], 0, collections.Counter()
    suffix = f"; {HOW_TO_FIX}" if hint else ""
    tokens = _shown_in(lines, numbers, notebook)
    for token in tokens:
        if is_shown(token, outputs):
            continue
        index = _locate(token, lines, numbers, cursor, set(code), taken, notebook)
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
    found += unchecked_in_front_matter(text, outputs, where, hint)
    found += unseen_code_blocks(text, where) + reordered_or_hand_made(text, where)
    return found + unchecked_in_parts(text, parts.load_page(path), outputs, where, hint)


def reordered_or_hand_made(text: str, where: str) -> list[str]:
    """What the build refuses because the checks would read another number
    than the reader sees (``safety.bidi_in_source``, ``safety.authored_markup``):
    a bidirectional control character anywhere in the page, a ``<bdo>``, a
    ``dir=`` and MathML written by hand (security re-review 6b, T1, T2). The
    numbers are read in the order the page stores them (:func:`as_seen` drops
    the controls), so each is a problem of its own here too."""
    converter, _ = _site_markdown()
    converter.reset()
    content = hooks._headings_as_text(converter.convert(_without_front_matter(text)))
    return safety.bidi_in_source(text, where) + safety.authored_markup(content, where, text)


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


def _without_front_matter(text: str) -> str:
    r"""The page with its front matter blanked (the line numbers stay), exactly
    as MkDocs strips it (``mkdocs.utils.meta.get_data``): a ``---`` block only
    when its YAML is a mapping, MultiMarkdown ``key: value`` lines at the top.
    A ``---`` block that is not a mapping is page content there (a heading, a
    paragraph), so it is read here too (security re-review 6b, T5).

    >>> _without_front_matter("---\ntitle: T\n---\n# T\n"), _without_front_matter("---\n0.6652\n---\n")
    ('\n\n\n# T\n', '---\n0.6652\n---\n')
    """
    content, _ = get_data(text)
    removed = text[: len(text) - len(content)]
    if not text.endswith(content):  # get_data changed the text (line endings): strip nothing rather than guess
        return text
    return "\n" * removed.count("\n") + content


#: Front-matter keys whose text the reader sees, and where (Material's templates): ``title`` is the
#: page's ``<h1>`` when its content has none (``partials/content.html``), the header, the tab title
#: and the nav entry; ``subtitle`` is printed under the nav entry (``partials/nav-item.html``);
#: ``description`` is the ``<meta name="description">`` that search engines and link previews show.
SHOWN_FRONT_MATTER = {
    "title": "shown as the page's heading when its content has none, in the tab title and in the nav",
    "subtitle": "shown under the page's entry in the nav",
    "description": "shown by search engines and link previews",
}


def unchecked_in_front_matter(text: str, outputs: list[str], where: str, hint: bool = False) -> list[str]:
    """Numbers in the front-matter values the theme prints (``SHOWN_FRONT_MATTER``), read as the
    browser reads them (the theme prints them as they are: a character reference is its character),
    each named at its key's line (security re-review 7b, V2).

    >>> unchecked_in_front_matter("---\\ntitle: The weight is 0.6&#54;52\\n---\\n\\nText.\\n", [], "p.md")[0][:30]
    'p.md:2: 0.6652 (in the front m'
    """
    content, meta = get_data(text)
    head = text[: len(text) - len(content)] if text.endswith(content) else ""
    suffix = f"; {HOW_TO_FIX}" if hint else ""
    problems = []
    for key, shown in SHOWN_FRONT_MATTER.items():
        value = meta.get(key)
        if value is None or isinstance(value, (dict, list, bytes)):
            continue  # not text: the build refuses it (hooks.check_front_matter)
        key_line = re.compile(rf"""^["']?{key}["']?\s*:""")
        line = next((n for n, source in enumerate(head.splitlines(), 1) if key_line.match(source)), None)
        at = f"{where}:{line}" if line else where
        for token in (m.group(0) for m in CHECKED_NUMBER.finditer(_read(f"<p>{value}</p>", frozenset()))):
            if not is_shown(token, outputs):
                problems.append(
                    f"{at}: {token} (in the front matter's {key}, {shown}) is not in any verified output{suffix}"
                )
    return problems


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


def notebook_prose(cells: list[tuple[str, list[tuple[int, str]]]]) -> list[tuple[int | None, str]]:
    """The markdown cells of ``cells`` (``hooks.notebook_cells``) as :func:`unchecked_in`'s notebook prose."""
    prose: list[tuple[int | None, str]] = []
    for kind, lines in cells:
        if kind == "markdown":
            prose += [(None, ""), *lines]
    return prose


def unchecked_in_percent_notebook(path: Path, where: str, hint: bool = False) -> list[str]:
    """Numbers in a notebook page's markdown cells, checked against what its code cells print; the cells
    are those the site shows (``hooks.notebook_cells``: ``jupytext.read``, security re-review 9b, X2,
    X3); what the build refuses in a notebook page (``hooks.raw_cells``, ``hooks.not_percent``) is named too."""
    from docs_pipeline import run_alone

    source = path.read_text(encoding="utf-8")
    refused = safety.bidi_in_source(source, where) + hooks.raw_cells(path, where, source)
    refused += hooks.not_percent(where, source)
    cells = hooks.notebook_cells(path, source)
    prose = notebook_prose(cells)
    if not _shown_in(*_lines_of(prose, notebook=True), notebook=True):
        return refused  # no number in the prose: nothing to run the code for
    program = "\n\n".join("\n".join(text for _, text in lines) for kind, lines in cells if kind == "code")
    result = run_alone(program)
    outputs = [result.stdout] if result.returncode == 0 else []
    return unchecked_in(prose, outputs, where, hint, notebook=True) + refused


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
        prose += [(None, "")] if cell["cell_type"] == "markdown" else []
        for line in source:
            found = raw.find(json.dumps(line), position)
            if found >= 0:
                position = found
            if cell["cell_type"] == "markdown":
                prose.append((raw.count("\n", 0, position) + 1, line.rstrip("\n")))
    bidi = safety.bidi_in_source(raw, where, json_escapes=True)
    return unchecked_in(prose, outputs, where, hint, notebook=True) + bidi
