"""The home page's parts: the two diagrams of the whole picture, bank's walk through
one head, and the figures the roadmap states (reading times, the library's
size), computed when the site is built."""

from __future__ import annotations

import ast
import math
from pathlib import Path
from xml.sax.saxutils import escape

import numpy as np

import qkv
from parts import figure, value
from story import boxes

DOCS = Path(__file__).resolve().parent
LIBRARY = DOCS.parent / "src" / "qkv"
#: Words a minute assumed for the reading times: technical prose with code.
WORDS_PER_MINUTE = 150
#: Diagram text size in SVG units; the diagrams are 360 units wide and shown
#: at most that wide, so on a 390 px phone the text keeps this size in CSS px.
FONT = 14
WIDTH = 360

# Colours that read on the white ground every figure gets (qkv.css).
INK, LINE, STREAM = "#1a1a1a", "#3949ab", "#c62828"
#: The database analogy's colour, and the word that starts each analogy.
DB, SQL = "#00695c", "SQL: "
FILLS = {"input": "#e8eaf6", "attention": "#fff3e0", "ffn": "#e8f5e9", "out": "#f3e5f5"}


class Svg:
    """A few shapes, written as SVG text (byte-stable, text kept as text)."""

    def __init__(self, height: int, title: str) -> None:
        self.height, self.title, self.items = height, title, []

    def box(self, x, y, w, h, lines: list[str], fill: str, *, bold: bool = False, bottom: str | None = None) -> None:
        """A box of centred lines; ``bottom``, a last line in the database colour."""
        self.items.append(
            f'<rect x="{x}" y="{y}" width="{w}" height="{h}" rx="6" fill="{fill}" stroke="{LINE}" stroke-width="1.5"/>'
        )
        count = len(lines) + (bottom is not None)
        top = y + h / 2 - (count - 1) * (FONT + 3) / 2
        for n, line in enumerate(lines):
            self.text(x + w / 2, top + n * (FONT + 3), line, bold=bold and n == 0)
        if bottom is not None:
            self.text(x + w / 2, top + len(lines) * (FONT + 3), bottom, colour=DB)

    def text(self, x, y, words: str, *, bold: bool = False, anchor: str = "middle", colour: str = INK) -> None:
        weight = ' font-weight="bold"' if bold else ""
        self.items.append(
            f'<text x="{x}" y="{y}" text-anchor="{anchor}" dominant-baseline="central" fill="{colour}"{weight}>'
            f"{escape(words)}</text>"
        )

    def plus(self, x, y, colour: str = STREAM) -> None:
        """A circled plus: the residual addition."""
        self.items.append(
            f'<circle cx="{x}" cy="{y}" r="10" fill="#ffffff" stroke="{colour}" stroke-width="2.5"/>'
            f'<path d="M{x - 6},{y} H{x + 6} M{x},{y - 6} V{y + 6}" stroke="{colour}" stroke-width="2.5"/>'
        )

    def arrow(self, x1, y1, x2, y2, colour: str = LINE) -> None:
        self.items.append(
            f'<line x1="{x1}" y1="{y1}" x2="{x2}" y2="{y2}" stroke="{colour}" stroke-width="2" '
            f'marker-end="url(#head-{colour[1:]})"/>'
        )

    def svg(self) -> str:
        markers = "".join(
            f'<marker id="head-{c[1:]}" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" '
            f'markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="{c}"/></marker>'
            for c in (LINE, STREAM)
        )
        return (
            f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {self.height}" '
            f'width="{WIDTH}" height="{self.height}" font-family="sans-serif" font-size="{FONT}" role="img">'
            f"<title>{escape(self.title)}</title><defs>{markers}</defs>" + "".join(self.items) + "</svg>\n"
        )


@figure(
    "transformer-block",
    alt=(
        "Diagram of the paper's decoder, top to bottom: text becomes token ids; each id reads its embedding "
        "row (a keyed lookup, chapter 1) and gets its position vector added (an order column, chapters 2 to 4); "
        "the sum enters the residual stream, a red line running down the left of one block, repeated 6 times "
        "in the paper; masked multi-head self-attention (a join, scored, then a weighted average, chapters 5 to 10), "
        "cross-attention over the encoder's output (chapter 7) and a feed-forward network each read the "
        "stream and add their output back, then each row is normalised; after the last block the stream "
        "leaves the red line and is multiplied by the transposed embedding matrix, giving a score for every "
        "vocabulary entry and so the next token."
    ),
    caption=(
        "The paper's decoder. Its encoder is the same stack without the mask and without cross-attention; "
        "its output is what cross-attention reads. GPT-style models keep a stack like this one, without "
        "cross-attention, and normalise before each sublayer (pre-LN, glossary). Teal: the database analogy."
    ),
    width=WIDTH,
)
def transformer_block() -> str:
    sublayers = [  # lines, analogy, fill, height
        (
            ["multi-head self-attention", "(ch. 5 to 10)", "masked: no later token (ch. 6)"],
            SQL + "join, weighted SUM (ch. 9)",
            "attention",
            90,
        ),
        (["cross-attention (ch. 7)", "reads the encoder's output"], None, "attention", 56),
        (["feed-forward network", "each token's row alone"], None, "ffn", 56),
    ]
    block_top, first = 172, 222
    block_end = first + sum(height + 44 for *_, height in sublayers) - 6
    out = block_end + 34  # the output layer's box
    s = Svg(out + 64, "Where embeddings, positions and attention sit in the paper's decoder")
    s.box(20, 10, 320, 44, ['text: "money bank grows"', "tokenizer → one id per token"], "#ffffff")
    s.arrow(95, 54, 95, 78)
    s.arrow(265, 54, 265, 78)
    s.box(20, 80, 150, 62, ["embedding rows", "E[ids]  (ch. 1)"], FILLS["input"], bottom=SQL + "keyed lookup")
    s.box(190, 80, 150, 62, ["position vectors", "(ch. 2, 3, 4)"], FILLS["input"], bottom=SQL + "order column")
    s.plus(180, 111)
    # The residual stream: from the sum of the two input rows, down the left
    # side of the block, out to the output layer.
    s.items.append(
        f'<polyline points="180,121 180,160 40,160 40,{block_end + 12} 180,{block_end + 12}" fill="none" '
        f'stroke="{STREAM}" stroke-width="4" stroke-linejoin="round"/>'
    )
    s.arrow(180, block_end + 10, 180, out - 2, STREAM)
    s.items.append(
        f'<rect x="8" y="{block_top}" width="344" height="{block_end - block_top}" rx="8" fill="none" '
        f'stroke="{LINE}" stroke-width="1.5" stroke-dasharray="6 4"/>'
    )
    s.text(52, block_top + 16, "one block, × 6 in the paper", bold=True, anchor="start")
    s.text(52, block_top + 34, "residual stream: one row per token", anchor="start", colour=STREAM)
    top = first
    for lines, analogy, fill, height in sublayers:
        s.box(84, top, 256, height, lines, FILLS[fill], bold=True, bottom=analogy)
        s.arrow(40, top + 16, 82, top + 16)
        s.arrow(84, top + height - 14, 50, top + height + 14, STREAM)
        s.plus(40, top + height + 22)
        s.text(56, top + height + 24, "add, then normalise each row", anchor="start", colour=STREAM)
        top += height + 44
    s.box(
        20,
        out,
        320,
        58,
        ["after the last block: × Eᵀ gives", "a score for every vocabulary", "entry → the next token"],
        FILLS["out"],
    )
    return s.svg()


@figure(
    "one-head",
    alt=(
        "Diagram of one attention head, top to bottom: the input rows X are multiplied by three learned "
        "matrices into queries Q (what each token looks for), keys K (what it offers) and values V (what it "
        "hands over); queries times keys transposed, divided by the square root of d_k, give an L by L table "
        "of scores; a softmax along each row turns them into weights; the weights times V give one "
        "contextual row per token."
    ),
    caption="One head: three views of the same rows, one table of scores, one weighted sum (chapter 5).",
    width=WIDTH,
)
def one_head() -> str:
    s = Svg(470, "Queries, keys and values flowing through one attention head")
    s.box(60, 10, 240, 44, ["X: one row per token", "L × d_model"], FILLS["input"], bold=True)
    for x in (60, 180, 300):
        s.arrow(180, 54, x, 92)
    for x, name, role in [
        (10, "Q = X W_Q", "looks for"),
        (130, "K = X W_K", "offers"),
        (250, "V = X W_V", "hands over"),
    ]:
        s.box(x, 94, 100, 58, [name, role], FILLS["attention"], bold=True)
    s.arrow(60, 152, 150, 190)
    s.arrow(180, 152, 180, 190)
    s.box(40, 192, 240, 58, ["scores S = Q Kᵀ / √d_k", "L × L: every query, every key"], FILLS["attention"], bold=True)
    s.arrow(160, 250, 160, 280)
    s.box(40, 282, 240, 58, ["weights A = softmax(S)", "each row sums to 1"], FILLS["attention"], bold=True)
    s.arrow(160, 340, 160, 380)
    s.items.append(f'<polyline points="300,152 300,411 290,411" fill="none" stroke="{LINE}" stroke-width="2"/>')
    s.arrow(290, 411, 282, 411)
    s.box(40, 382, 240, 58, ["output A V", "one contextual row per token"], FILLS["ffn"], bold=True)
    s.text(180, 458, "softmax(Q Kᵀ / √d_k) V", bold=True)
    return s.svg()


def _code_lines(path: Path) -> int:
    """Lines of code: not blank, not a comment, not a docstring."""
    source = path.read_text(encoding="utf-8")
    docstrings = set()
    for node in ast.walk(ast.parse(source)):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            if isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
                docstrings.update(range(body[0].lineno, body[0].end_lineno + 1))
    return sum(
        1
        for number, line in enumerate(source.splitlines(), 1)
        if line.strip() and not line.strip().startswith("#") and number not in docstrings
    )


def _hundreds(n: int) -> str:
    return f"{round(n, -2):,}"


@value("library_core_lines")
def library_core_lines() -> str:
    """The library behind the chapters, exercise checker excluded, to the hundred."""
    return _hundreds(sum(_code_lines(p) for p in LIBRARY.rglob("*.py") if "exercises" not in p.parts))


def _minutes(chapter: str) -> str:
    """Minutes to read a chapter's main line (Deeper boxes skipped)."""
    text = (DOCS / "chapters" / f"{chapter}.md").read_text(encoding="utf-8")
    lines = text.splitlines()
    boxed = {n for box in boxes(text) if box.is_deeper for n in range(box.start, box.end + 1)}
    words = sum(len(line.split()) for n, line in enumerate(lines, 1) if n not in boxed)
    return str(math.ceil(words / WORDS_PER_MINUTE))


CHAPTERS = (
    "embeddings",
    "order",
    "sinusoidal",
    "learned-positions",
    "attention",
    "learning-attention",
    "multi-head",
    "relative-positions",
    "attention-sql",
    "attention-sql-layer",
    "scale",
    "model-size",
)
#: The roadmap's short path, and the time it promises.
ONE_HOUR_PATH, ONE_HOUR = ("embeddings", "order", "attention"), 60

for _chapter in CHAPTERS:
    value("minutes_" + _chapter.replace("-", "_"))(lambda chapter=_chapter: _minutes(chapter))


@value("home_minutes_total")
def home_minutes_total() -> str:
    return str(sum(int(_minutes(chapter)) for chapter in CHAPTERS))


@value("home_minutes_one_hour")
def home_minutes_one_hour() -> str:
    """The one-hour path's minutes; the build fails if it outgrows its name."""
    minutes = sum(int(_minutes(chapter)) for chapter in ONE_HOUR_PATH)
    if minutes > ONE_HOUR:
        raise ValueError(
            f"docs/index.md: the one-hour path ({', '.join(ONE_HOUR_PATH)}) now takes {minutes} minutes: "
            "pick shorter chapters or reword the roadmap"
        )
    return str(minutes)


def _bank_row() -> tuple[list[float], list[float]]:
    """Bank's scaled scores and weights in "money bank grows", with chapter 5's matrices."""
    x = qkv.toy.bank_sentence(["money", "bank", "grows"])
    q, k = x @ qkv.toy.W_QUERY, x @ qkv.toy.W_KEY
    scores = (q @ k.T / np.sqrt(k.shape[1]))[1]
    return scores.tolist(), qkv.softmax(scores).tolist()


def _listed(items: list[str]) -> str:
    return ", ".join(items[:-1]) + " and " + items[-1]


@value("home_bank_scores")
def home_bank_scores() -> str:
    return _listed([f"{s:g}" for s in _bank_row()[0]])


@value("home_bank_weights")
def home_bank_weights() -> str:
    return _listed([f"{w:.4f}" for w in _bank_row()[1]])
