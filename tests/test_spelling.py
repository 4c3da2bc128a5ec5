"""Spelling of the prose and the code: codespell over docs/, src/, README.md
and CONTRIBUTING.md and TESTING.md, with the project's own words in
tests/support/spelling_words.txt (pyproject.toml's [tool.codespell])."""

from __future__ import annotations

from pathlib import Path

from needs import available, require
from page_checks import codespell_findings

ROOT = Path(__file__).resolve().parent.parent
CHECKED = ("docs", "src", "README.md", "CONTRIBUTING.md", "TESTING.md")
WORDS = "tests/support/spelling_words.txt"


def misspellings(*paths: str | Path) -> list[str]:
    """codespell's findings in ``paths``, one ``file:line: word ==> fix`` each."""
    require(available("codespell_lib"), "codespell is not installed: `pip install -e '.[test]'` installs it")
    return codespell_findings(*paths)


def report(found: list[str]) -> str:
    return (
        "misspelled words (file:line: word ==> suggestion):\n"
        + "\n".join(found)
        + f"\nFix the word; if it is right (a name, an identifier), add it in lowercase to {WORDS}."
    )


def test_docs_code_and_readmes_are_spelled_right():
    found = misspellings(*CHECKED)
    assert not found, report(found)


def test_a_planted_misspelling_is_reported_with_file_and_line(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("# A page\n\nThe query reads the keys.\nTeh weights sum to one.\n")
    found = misspellings(page)
    assert found == [f"{page}:4: Teh ==> The"]
    message = report(found)
    assert f"{page}:4: Teh ==> The" in message
    assert WORDS in message


def test_the_word_list_is_used(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("Ke et al. (2021, TUPE) and dout = d_output.\n")
    assert misspellings(page) == []
