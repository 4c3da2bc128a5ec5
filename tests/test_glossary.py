"""The glossary (tests/support/glossary.py): at least 30 terms, each one
sentence with one link to the section that introduces it, and that page
links the term back. Each rule has a planted fault."""

from __future__ import annotations

from pathlib import Path

from glossary import MIN_TERMS, entries, glossary_problems

ROOT = Path(__file__).resolve().parent.parent
GLOSSARY = ROOT / "docs" / "glossary.md"


def test_the_glossary_keeps_its_promises():
    text = GLOSSARY.read_text(encoding="utf-8")
    assert len(entries(text)) >= MIN_TERMS
    problems = glossary_problems(text, "docs/glossary.md")
    assert not problems, "\n".join(problems)


def planted(tmp_path: Path, entry: str, chapter: str = "It uses a [thing](../glossary.md#thing).\n") -> list[str]:
    (tmp_path / "chapters").mkdir()
    (tmp_path / "chapters" / "one.md").write_text(f"# One\n\n## The idea\n\n{chapter}", encoding="utf-8")
    return glossary_problems(f"# Glossary\n\n## Part\n\n{entry}", "glossary.md", docs=tmp_path)


GOOD = "### Thing { #thing }\nA thing is what it is.\n[Chapter 1: the idea](chapters/one.md#the-idea)\n"


def test_a_well_formed_entry_is_fine_but_too_few_terms_are_named(tmp_path):
    assert planted(tmp_path, GOOD) == [f"glossary.md:1: the glossary has 1 terms; it needs at least {MIN_TERMS}"]


def test_an_entry_without_its_link_is_named(tmp_path):
    problems = planted(tmp_path, GOOD.replace("[Chapter 1: the idea](chapters/one.md#the-idea)", "Chapter 1."))
    assert problems[1:] == [
        "glossary.md:5: 'Thing' needs exactly one link to the section that introduces it, "
        "[Chapter N: section](chapters/<page>.md#<section>); it has 0"
    ]


def test_an_entry_of_two_sentences_is_named(tmp_path):
    problems = planted(tmp_path, GOOD.replace("what it is.", "what it is. It is also more."))
    assert problems[1:] == [
        "glossary.md:5: 'Thing': say what it is in one sentence, ending with a full stop, before the link"
    ]


def test_a_term_its_page_never_links_back_is_named(tmp_path):
    problems = planted(tmp_path, GOOD, chapter="It uses a thing, unlinked.\n")
    assert problems[1:] == [
        "glossary.md:5: 'Thing' is introduced on chapters/one.md, which never links it here: link its "
        "first use there to (../glossary.md#thing)"
    ]
