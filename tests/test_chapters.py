"""The shape every chapter promises (tests/support/chapter_shape.py): the
story's sections in order, a quiz of at least seven questions with a valid
answer each, figures through shortcodes, no placeholder left unwritten."""

from __future__ import annotations

from pathlib import Path

import pytest

import story  # docs/hooks, on pytest's pythonpath
from chapter_shape import chapter_problems, quiz

ROOT = Path(__file__).resolve().parent.parent
CHAPTERS = sorted((ROOT / "docs" / "chapters").glob("*.md"))

WELL_FORMED = (
    "# Title\n\n"
    + "\n\n".join(f"## {name}" for name, _ in story.SECTIONS)
    + "\n\n"
    + "\n".join(
        f'<div class="quiz" markdown>\n\n**{n}. Q?**\n\n- A. x\n- B. y\n\n??? success "Answer: B"\n\n    Why.\n\n</div>\n'
        for n in range(1, 8)
    )
)


def problems_of(tmp_path: Path, text: str) -> list[str]:
    page = tmp_path / "page.md"
    page.write_text(text, encoding="utf-8")
    return chapter_problems(page, "page.md")


def test_there_are_chapters():
    assert len(CHAPTERS) >= 4


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.name)
def test_chapter_has_its_shape(chapter):
    problems = chapter_problems(chapter, str(chapter.relative_to(ROOT)))
    assert not problems, "\n".join(problems)


def test_a_well_formed_page_has_no_problems(tmp_path):
    assert problems_of(tmp_path, WELL_FORMED) == []


def test_a_missing_section_is_named_with_where_to_add_it(tmp_path):
    text = WELL_FORMED.replace("## Further reading", "## What comes next")
    assert problems_of(tmp_path, text) == [
        "page.md:15: missing the section '## Further reading' (the paper's sections and the best outside "
        "explanations of this topic); add it after this line"
    ]


def test_a_misplaced_section_is_named(tmp_path):
    text = WELL_FORMED.replace("## The idea\n\n", "").replace("## The problem", "## The idea\n\n## The problem")
    assert problems_of(tmp_path, text)[0].startswith(
        "page.md:3: '## The idea' comes before the section it should follow"
    )


def test_a_short_quiz_is_named(tmp_path):
    text = WELL_FORMED.split('<div class="quiz"')[0] + '<div class="quiz"' + WELL_FORMED.split('<div class="quiz"')[1]
    assert problems_of(tmp_path, text) == [
        'page.md:19: the quiz has 1 question(s); write at least 7, each in its own <div class="quiz" markdown> '
        "(format in CONTRIBUTING.md)"
    ]


def test_a_wrong_answer_letter_is_named(tmp_path):
    text = WELL_FORMED.replace('Answer: B"', 'Answer: C"', 1)
    assert problems_of(tmp_path, text) == ["page.md:19: quiz question 1: the answer C is not one of its choices"]
    assert quiz(text)[0] == {
        "line": 19,
        "question": "**1. Q?**",
        "choices": ["A", "B"],
        "answer": "C",
        "texts": {"A": {"text": "x", "hint": ""}, "B": {"text": "y", "hint": ""}},
    }


def test_a_hand_written_image_is_named(tmp_path):
    text = WELL_FORMED.replace("## The code", "## The code\n\n![a plot of something](x.svg)")
    assert problems_of(tmp_path, text) == [
        "page.md:11: an image written by hand; declare it with @figure in the page's companion module and "
        "write '<!-- qkv:figure name -->' instead"
    ]


def test_a_placeholder_is_named(tmp_path):
    text = WELL_FORMED.replace(
        "## The idea", f"## The idea\n\n<!-- {story.PLACEHOLDER} the idea in a few sentences -->"
    )
    assert problems_of(tmp_path, text) == ["page.md:7: TODO(chapter): the idea in a few sentences"]


DEEPER_BOX = '??? note "Deeper: why the axes matter to Adam"\n\n    A caveat.\n\n    ```python\n    x = 1\n    ```\n'


def test_a_collapsed_deeper_box_is_well_formed(tmp_path):
    text = WELL_FORMED.replace("## The code", "## The code\n\n" + DEEPER_BOX)
    assert problems_of(tmp_path, text) == []
    [box] = [b for b in story.boxes(text) if b.is_deeper]
    assert (box.start, box.end, box.title) == (11, 17, "Deeper: why the axes matter to Adam")


@pytest.mark.parametrize(
    ("box", "message"),
    [
        (
            DEEPER_BOX.replace("???", "???+"),
            "page.md:11: the Deeper box 'Deeper: why the axes matter to Adam' opens by default; write "
            '??? note "Deeper: why the axes matter to Adam" so that a first reading skips it',
        ),
        (
            DEEPER_BOX.replace("???", "!!!"),
            "page.md:11: the Deeper box 'Deeper: why the axes matter to Adam' cannot be collapsed; write "
            '??? note "Deeper: why the axes matter to Adam" so that a first reading skips it',
        ),
        (
            DEEPER_BOX.replace("note", "warning"),
            "page.md:11: the Deeper box 'Deeper: why the axes matter to Adam' is a \"warning\" box; write "
            '??? note "Deeper: why the axes matter to Adam"',
        ),
        (
            DEEPER_BOX.replace("Deeper: why the axes matter to Adam", "Deeper: more"),
            "page.md:11: the Deeper box 'Deeper: more' needs a title that says what it holds: 'Deeper: ' and "
            "at least 3 words, e.g. 'Deeper: why Adam sees the axes'",
        ),
    ],
    ids=["open", "not-collapsible", "kind", "vague-title"],
)
def test_a_misformed_deeper_box_is_named(tmp_path, box, message):
    text = WELL_FORMED.replace("## The code", "## The code\n\n" + box)
    assert problems_of(tmp_path, text) == [message]


def test_unwrapping_a_deeper_box_dedents_its_body_and_keeps_other_boxes():
    text = "# t\n\n" + DEEPER_BOX + '\nAfter.\n\n??? success "Answer: B"\n\n    Why.\n'
    assert story.unwrap_deeper(text) == (
        "# t\n\n**Deeper: why the axes matter to Adam**\n\nA caveat.\n\n```python\nx = 1\n```\n"
        '\nAfter.\n\n??? success "Answer: B"\n\n    Why.\n'
    )


ASIDE = (
    "---\nkind: aside\n---\n\n# An aside\n\n"
    + "\n\n".join(f"## {name}" for name, _ in story.ASIDE_SECTIONS)
    + "\n\n"
    + "\n".join(
        f'<div class="quiz" markdown>\n\n**{n}. Q?**\n\n- A. x\n- B. y\n\n??? success "Answer: B"\n\n    Why.\n\n</div>\n'
        for n in range(1, 4)
    )
)


def test_an_aside_needs_five_sections_and_three_questions(tmp_path):
    assert [name for name, _ in story.ASIDE_SECTIONS] == [
        "The problem",
        "The idea",
        "The code",
        "Check your understanding",
        "Further reading",
    ]
    assert problems_of(tmp_path, ASIDE) == []
    assert problems_of(tmp_path, ASIDE.replace("kind: aside", "kind: chapter"))[:1] == [
        "page.md:9: missing the section '## The numbers by hand' (a small example worked by hand, every number "
        "shown); add it after this line"
    ]
    short = ASIDE.split('<div class="quiz"')
    assert problems_of(tmp_path, '<div class="quiz"'.join(short[:3])) == [
        'page.md:30: the quiz has 2 question(s); write at least 3, each in its own <div class="quiz" markdown> '
        "(format in CONTRIBUTING.md)"
    ]
