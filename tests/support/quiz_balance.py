"""Quizzes that test understanding, not test-taking: the right letter and
the longest option must not give the answer away, and every wrong option
carries a hint naming the misconception behind it.

* no letter is right in more than MAX_LETTER_SHARE of all questions, nor in
  more than MAX_LETTER_SHARE_IN_PAGE of one page's;
* the right option is the strictly longest in at most MAX_LONGEST_SHARE of
  all questions;
* every wrong option has a hint (a list item nested under it), which
  qkv.js shows when a reader picks it.
"""

from __future__ import annotations

import re
from collections import Counter

from chapter_shape import quiz

MAX_LETTER_SHARE = 0.35
MAX_LETTER_SHARE_IN_PAGE = 0.5
MAX_LONGEST_SHARE = 0.30
LETTERS = "ABCDE"


def _length(text: str) -> int:
    """What a reader sees of an option, roughly: markup and math delimiters dropped."""
    return len(re.sub(r"[`$*_\\{}]", "", text))


def right_is_longest(question: dict) -> bool:
    texts = question["texts"]
    right = texts.get(question["answer"])
    if right is None:
        return False
    others = [_length(t["text"]) for letter, t in texts.items() if letter != question["answer"]]
    return bool(others) and _length(right["text"]) > max(others)


def questions_of(pages: dict[str, str]) -> dict[str, list[dict]]:
    return {page: quiz(text) for page, text in pages.items() if quiz(text)}


def distribution(pages: dict[str, str]) -> str:
    """A table: per page, how often each letter is right, and how often the
    right option is the longest; then the totals."""
    rows = []
    totals, longest, count = Counter(), 0, 0
    for page, questions in questions_of(pages).items():
        letters = Counter(q["answer"] for q in questions)
        page_longest = sum(right_is_longest(q) for q in questions)
        totals += letters
        longest += page_longest
        count += len(questions)
        cells = " ".join(f"{letter}:{letters.get(letter, 0)}" for letter in LETTERS)
        rows.append(f"{page:<40} {len(questions):>3} questions  {cells}  right is longest: {page_longest}")
    cells = " ".join(
        f"{letter}:{totals.get(letter, 0)} ({totals.get(letter, 0) / max(count, 1):.0%})" for letter in LETTERS
    )
    rows.append(
        f"{'all pages':<40} {count:>3} questions  {cells}  right is longest: {longest} ({longest / max(count, 1):.0%})"
    )
    return "\n".join(rows)


def balance_problems(pages: dict[str, str]) -> list[str]:
    """Every rule the quizzes of ``pages`` (name -> Markdown) break."""
    problems = []
    every = questions_of(pages)
    all_questions = [q for questions in every.values() for q in questions]
    total = len(all_questions)
    for letter, n in sorted(Counter(q["answer"] for q in all_questions).items()):
        if n > MAX_LETTER_SHARE * total:
            problems.append(
                f"all pages: {letter} is the right answer in {n} of {total} questions ({n / total:.0%}); "
                f"at most {MAX_LETTER_SHARE:.0%}: reorder the options of some questions"
            )
    for page, questions in every.items():
        for letter, n in sorted(Counter(q["answer"] for q in questions).items()):
            if n > MAX_LETTER_SHARE_IN_PAGE * len(questions):
                problems.append(
                    f"{page}: {letter} is the right answer in {n} of {len(questions)} questions; at most half: "
                    "reorder the options of some questions"
                )
        for number, question in enumerate(questions, 1):
            for letter, choice in sorted(question["texts"].items()):
                if letter != question["answer"] and not choice["hint"]:
                    problems.append(
                        f"{page}:{question['line']}: quiz question {number}, choice {letter} has no hint: under it, "
                        "indented four spaces, '- <the misconception that makes a reader pick it, and why it is wrong>'"
                    )
    longest = [(page, n, q) for page, qs in every.items() for n, q in enumerate(qs, 1) if right_is_longest(q)]
    if len(longest) > MAX_LONGEST_SHARE * total:
        where = ", ".join(f"{page}:{q['line']} (question {n})" for page, n, q in longest[:10])
        problems.append(
            f"all pages: the right option is the longest in {len(longest)} of {total} questions "
            f"({len(longest) / total:.0%}); at most {MAX_LONGEST_SHARE:.0%}: tighten the right option or make the "
            f"others as specific; e.g. {where}"
        )
    return problems
