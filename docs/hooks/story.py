"""The story every chapter tells: one home for the rules the chapter-shape
tests enforce and ``make chapter`` writes into a new page."""

from __future__ import annotations

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
#: Words of alt text a figure needs at least (say what it shows).
MIN_ALT_WORDS = 8
#: A placeholder left by ``make chapter``: the tests name each one until it is replaced.
PLACEHOLDER = "TODO(chapter):"
