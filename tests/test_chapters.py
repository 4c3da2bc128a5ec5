"""The shape every chapter promises: the story's sections, a quiz of at least
seven questions with a valid answer each, figures with alt text and captions."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from page_blocks import split_page

ROOT = Path(__file__).resolve().parent.parent
CHAPTERS = sorted((ROOT / "docs" / "chapters").glob("*.md"))
#: The story every chapter tells, as H2 headings in this order (a heading may
#: add words after these; other H2 headings may sit between them).
REQUIRED_SECTIONS = (
    "The problem",
    "The idea",
    "The numbers by hand",
    "The code",
    "The database analog",
    "Common confusions",
    "Check your understanding",
    "Further reading",
)
MIN_QUESTIONS = 7

QUIZ = re.compile(r'<div class="quiz" markdown>(?P<body>.*?)</div>', re.DOTALL)
QUESTION = re.compile(r"^\*\*\d+\.\s.+\*\*[ \t]*$", re.MULTILINE)
CHOICE = re.compile(r"^- (?P<letter>[A-E])\.\s+\S", re.MULTILINE)
ANSWER = re.compile(r'^\?\?\?\+? success "Answer: (?P<letter>[A-E])"\s*$', re.MULTILINE)
IMAGE = re.compile(r"!\[(?P<alt>[^\]]*)\]\((?P<src>[^)]+)\)")
FIGURE = re.compile(r"<figure\b.*?</figure>", re.DOTALL)


def prose(page: Path) -> str:
    _, lines = split_page(page.read_text(encoding="utf-8"))
    return "\n".join(line for _, line in lines)


def quiz(page: Path) -> list[dict]:
    """Each question: its text, its choice letters, and the answer letter."""
    questions = []
    for match in QUIZ.finditer(page.read_text(encoding="utf-8")):
        body = match["body"]
        question = QUESTION.search(body)
        answer = ANSWER.search(body)
        questions.append(
            {
                "question": question.group(0) if question else None,
                "choices": CHOICE.findall(body),
                "answer": answer["letter"] if answer else None,
            }
        )
    return questions


@pytest.fixture(params=CHAPTERS, ids=lambda p: p.name)
def chapter(request) -> Path:
    return request.param


def test_there_are_chapters():
    assert len(CHAPTERS) >= 4


def story_problems(text: str) -> list[str]:
    """What is missing or out of order in a page's H2 story sections."""
    headings = re.findall(r"^## (.+)$", text, re.MULTILINE)
    problems, after = [], -1
    for section in REQUIRED_SECTIONS:
        found = [i for i, h in enumerate(headings) if h.startswith(section)]
        if not found:
            problems.append(f"missing the section '## {section}'")
        elif found[0] < after:
            problems.append(f"'## {section}' comes before the section it should follow")
        else:
            after = found[0]
    if not re.search(r"^# .+", text, re.MULTILINE):
        problems.append("no '# Title' line")
    return problems


def test_chapter_has_the_story_sections(chapter):
    problems = story_problems(prose(chapter))
    assert not problems, f"{chapter.name}: " + "; ".join(problems)


def test_story_check_catches_a_missing_and_a_misplaced_section():
    page = "# T\n\n" + "\n\n".join(f"## {s}" for s in REQUIRED_SECTIONS)
    assert story_problems(page) == []
    no_reading = page.replace("## Further reading", "## What comes next")
    assert story_problems(no_reading) == ["missing the section '## Further reading'"]
    swapped = page.replace("## The idea", "## X").replace("## The problem", "## The idea\n\n## The problem")
    assert story_problems(swapped.replace("## X", "")) == ["'## The idea' comes before the section it should follow"]


def test_quiz_has_enough_well_formed_questions(chapter):
    questions = quiz(chapter)
    assert len(questions) >= MIN_QUESTIONS, f"{chapter.name}: {len(questions)} quiz questions"
    for number, q in enumerate(questions, 1):
        assert q["question"], f"{chapter.name} quiz {number}: no **N. question** line"
        assert len(q["choices"]) >= 2, f"{chapter.name} quiz {number}: fewer than two choices"
        assert q["choices"] == sorted(q["choices"]), f"{chapter.name} quiz {number}: choices out of order"
        assert q["answer"] in q["choices"], f"{chapter.name} quiz {number}: answer {q['answer']} is not a choice"


def test_figures_have_alt_text_and_captions(chapter):
    text = chapter.read_text(encoding="utf-8")
    for image in IMAGE.finditer(text):
        assert len(image["alt"].split()) >= 8, f"{chapter.name}: alt text too short for {image['src']}"
    for figure in FIGURE.finditer(text):
        assert "<figcaption>" in figure.group(0), f"{chapter.name}: figure without a caption"
    images_outside_figures = len(IMAGE.findall(FIGURE.sub("", text)))
    assert images_outside_figures == 0, f"{chapter.name}: an image without <figure> and caption"


def test_quiz_parser_catches_a_wrong_answer_letter(tmp_path):
    page = tmp_path / "q.md"
    page.write_text(
        '<div class="quiz" markdown>\n\n**1. Q?**\n\n- A. x\n- B. y\n\n'
        '??? success "Answer: C"\n\n    Because.\n\n</div>\n'
    )
    assert quiz(page) == [{"question": "**1. Q?**", "choices": ["A", "B"], "answer": "C"}]
