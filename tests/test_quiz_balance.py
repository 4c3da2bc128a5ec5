"""Every quiz on the site, read together (tests/support/quiz_balance.py):
no letter and no option length gives the answer away, and every wrong
option has a hint. Each rule has a planted failure."""

from __future__ import annotations

from pathlib import Path

from quiz_balance import balance_problems, distribution

ROOT = Path(__file__).resolve().parent.parent


def site_pages() -> dict[str, str]:
    docs = ROOT / "docs"
    return {
        str(page.relative_to(ROOT)): page.read_text(encoding="utf-8")
        for page in sorted(docs.rglob("*.md"))
        if page.relative_to(docs).parts[0] not in {"hooks", "overrides"}
    }


def test_every_quiz_on_the_site_is_balanced_and_hinted():
    pages = site_pages()
    table = distribution(pages)
    print(table)  # shown with -s, and in the failure below
    problems = balance_problems(pages)
    assert not problems, "\n".join(problems) + "\n\n" + table


def question(n: int, right: str, texts: dict[str, str], hints: bool = True) -> str:
    choices = "".join(
        f"- {letter}. {text}\n"
        + (f"    - Why {letter} tempts, and why it is wrong.\n" if hints and letter != right else "")
        for letter, text in texts.items()
    )
    return (
        f'<div class="quiz" markdown>\n\n**{n}. Q{n}?**\n\n{choices}\n??? success "Answer: {right}"\n\n'
        "    Why.\n\n</div>\n\n"
    )


def test_a_page_where_b_is_always_right_is_named():
    page = "".join(
        question(n, "B", {"A": "one option", "B": "two option", "C": "six option", "D": "ten option"})
        for n in range(1, 8)
    )
    problems = balance_problems({"docs/planted.md": page})
    assert problems[:2] == [
        "all pages: B is the right answer in 7 of 7 questions (100%); at most 35%: reorder the options of some "
        "questions",
        "docs/planted.md: B is the right answer in 7 of 7 questions; at most half: reorder the options of some "
        "questions",
    ], problems


def test_a_page_where_the_right_answer_is_always_the_longest_is_named():
    page = "".join(
        question(
            n,
            "ABCD"[n % 4],
            {letter: ("a much longer and careful option" if letter == "ABCD"[n % 4] else "short") for letter in "ABCD"},
        )
        for n in range(1, 8)
    )
    problems = balance_problems({"docs/planted.md": page})
    assert len(problems) == 1 and problems[0].startswith(
        "all pages: the right option is the longest in 7 of 7 questions (100%); at most 30%:"
    ), problems


def test_a_wrong_option_without_a_hint_is_named():
    page = "".join(
        question(
            n, "ABCD"[n % 4], {"A": "one option", "B": "two option", "C": "six option", "D": "ten option"}, hints=n != 1
        )
        for n in range(1, 8)
    )
    problems = balance_problems({"docs/planted.md": page})
    assert problems == [
        "docs/planted.md:1: quiz question 1, choice A has no hint: under it, indented four spaces, '- <the "
        "misconception that makes a reader pick it, and why it is wrong>'",
        "docs/planted.md:1: quiz question 1, choice C has no hint: under it, indented four spaces, '- <the "
        "misconception that makes a reader pick it, and why it is wrong>'",
        "docs/planted.md:1: quiz question 1, choice D has no hint: under it, indented four spaces, '- <the "
        "misconception that makes a reader pick it, and why it is wrong>'",
    ], problems


def test_a_balanced_hinted_page_passes():
    page = "".join(
        question(n, "ABCD"[n % 4], {"A": "one option", "B": "two option", "C": "six option", "D": "ten option"})
        for n in range(1, 8)
    )
    assert balance_problems({"docs/planted.md": page}) == []
