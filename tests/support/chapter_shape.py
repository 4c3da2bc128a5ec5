"""The shape every chapter promises, as ``file:line: what to fix`` messages.

The story's eight sections in order, a quiz of at least seven well-formed
questions, figures only through shortcodes (their alt text and captions are
declared in the page's companion module, see docs/hooks/parts.py), Deeper
boxes collapsed and titled with what they hold, and no
``TODO(chapter):`` placeholder left by ``make chapter``. The rules live in
docs/hooks/story.py; tests/test_chapters.py runs this on every chapter.
"""

from __future__ import annotations

import re
from pathlib import Path

import story  # docs/hooks, on pytest's pythonpath
from page_blocks import split_page

QUIZ = re.compile(r'<div class="quiz" markdown>(?P<body>.*?)</div>', re.DOTALL)
QUESTION = re.compile(r"^\*\*\d+\.\s.+\*\*[ \t]*$", re.MULTILINE)
CHOICE = re.compile(r"^- (?P<letter>[A-E])\.\s+\S", re.MULTILINE)
ANSWER = re.compile(r'^\?\?\?\+? success "Answer: (?P<letter>[A-E])"\s*$', re.MULTILINE)
IMAGE = re.compile(r"!\[[^\]]*\]\([^)]+\)|<img\b", re.IGNORECASE)
HEADING = re.compile(r"^## (?P<title>.+)$")


def _line(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def story_problems(text: str, where: str) -> list[str]:
    """Missing or misplaced story sections (H2 headings outside code blocks):
    a chapter's eight, or an aside's five (front matter ``kind: aside``)."""
    _, prose = split_page(text)
    headings = [(number, m["title"]) for number, line in prose if (m := HEADING.match(line))]
    problems, after, after_line = [], -1, 1
    sections = story.ASIDE_SECTIONS if story.page_kind(text) == story.ASIDE else story.SECTIONS
    prefixes = dict(zip((name for name, _ in story.SECTIONS), story.SECTION_PREFIXES))
    for name, purpose in sections:
        prefix = prefixes[name]
        found = [i for i, (_, title) in enumerate(headings) if title.startswith(prefix)]
        if not found:
            problems.append(
                f"{where}:{after_line}: missing the section '## {name}' ({purpose}); add it after this line"
            )
        elif found[0] < after:
            problems.append(
                f"{where}:{headings[found[0]][0]}: '## {name}' comes before the section it should "
                f"follow; the order is: {', '.join(n for n, _ in sections)}"
            )
        else:
            after, after_line = found[0], headings[found[0]][0]
    if not any(re.match(r"^# \S", line) for _, line in prose):
        problems.append(f"{where}:1: no '# Title' line at the top of the page")
    return problems


#: A choice's hint: a list item nested under the choice (four spaces in).
HINT = re.compile(r"^    - (?P<hint>\S.*)$")


def choice_texts(body: str) -> dict[str, dict[str, str]]:
    """Each choice of a quiz body: its text and its hint ("" if none)."""
    choices: dict[str, dict[str, str]] = {}
    current = None
    for line in body.splitlines():
        choice = re.match(r"^- (?P<letter>[A-E])\.\s+(?P<text>\S.*)$", line)
        hint = HINT.match(line)
        if choice:
            current = choices.setdefault(choice["letter"], {"text": choice["text"].strip(), "hint": ""})
        elif hint and current is not None:
            current["hint"] = (current["hint"] + " " + hint["hint"]).strip()
        elif current is not None and line.startswith("      ") and current["hint"]:
            current["hint"] += " " + line.strip()  # a hint wrapped onto the next line
        elif current is not None and line.startswith("  ") and not line.startswith("    ") and line.strip():
            current["text"] += " " + line.strip()  # a choice wrapped onto the next line
        elif not line.strip() or line.startswith("???"):
            current = None if line.startswith("???") else current
    return choices


def quiz(text: str) -> list[dict]:
    """Each question: its line, text, choice letters, answer letter, and
    each choice's text and hint."""
    questions = []
    for match in QUIZ.finditer(text):
        body = match["body"]
        question = QUESTION.search(body)
        answer = ANSWER.search(body)
        questions.append(
            {
                "line": _line(text, match.start()),
                "question": question.group(0) if question else None,
                "choices": CHOICE.findall(body),
                "answer": answer["letter"] if answer else None,
                "texts": choice_texts(body),
            }
        )
    return questions


def quiz_problems(text: str, where: str) -> list[str]:
    questions = quiz(text)
    problems = []
    least = story.MIN_ASIDE_QUESTIONS if story.page_kind(text) == story.ASIDE else story.MIN_QUESTIONS
    if len(questions) < least:
        line = questions[-1]["line"] if questions else 1
        problems.append(
            f"{where}:{line}: the quiz has {len(questions)} question(s); write at least "
            f'{least}, each in its own <div class="quiz" markdown> (format in CONTRIBUTING.md)'
        )
    for number, q in enumerate(questions, 1):
        at = f"{where}:{q['line']}: quiz question {number}"
        if not q["question"]:
            problems.append(f"{at} has no '**{number}. Question?**' line")
        if len(q["choices"]) < 2:
            problems.append(f"{at} has fewer than two choices ('- A. ...', '- B. ...')")
        elif q["choices"] != sorted(q["choices"]):
            problems.append(f"{at}: choices are out of order ({', '.join(q['choices'])})")
        if q["answer"] is None:
            problems.append(f"{at} has no answer line ('??? success \"Answer: B\"')")
        elif q["answer"] not in q["choices"]:
            problems.append(f"{at}: the answer {q['answer']} is not one of its choices")
    return problems


def figure_problems(text: str, where: str) -> list[str]:
    """Images must come through ``<!-- qkv:figure name -->`` (alt text and caption declared)."""
    blocks, prose = split_page(text)
    return [
        f"{where}:{number}: an image written by hand; declare it with @figure in the page's "
        "companion module and write '<!-- qkv:figure name -->' instead"
        for number, line in prose
        if IMAGE.search(line)
    ]


def deeper_problems(text: str, where: str) -> list[str]:
    """Deeper boxes are collapsed notes whose title says what they hold."""
    problems = []
    for box in story.boxes(text):
        if not box.is_deeper:
            continue
        at = f"{where}:{box.start}: the Deeper box '{box.title}'"
        if box.marker != "???":
            how = "opens by default" if box.marker == "???+" else "cannot be collapsed"
            problems.append(f'{at} {how}; write ??? note "{box.title}" so that a first reading skips it')
        elif box.kind != "note":
            problems.append(f'{at} is a "{box.kind}" box; write ??? note "{box.title}"')
        words = box.title.removeprefix(story.DEEPER).removeprefix(":").split()
        if not box.title.startswith(story.DEEPER + ":") or len(words) < story.MIN_DEEPER_TITLE_WORDS:
            problems.append(
                f"{at} needs a title that says what it holds: 'Deeper: ' and at least "
                f"{story.MIN_DEEPER_TITLE_WORDS} words, e.g. 'Deeper: why Adam sees the axes'"
            )
    return problems


def placeholder_problems(text: str, where: str) -> list[str]:
    return [
        f"{where}:{number}: {line.strip().removeprefix('<!--').removesuffix('-->').strip()}"
        for number, line in enumerate(text.splitlines(), 1)
        if story.PLACEHOLDER in line
    ]


def chapter_problems(path: Path, where: str | None = None) -> list[str]:
    """Every shape problem of one chapter page, in page order, then its companion's placeholders."""
    where = where or str(path)
    text = path.read_text(encoding="utf-8")
    problems = (
        placeholder_problems(text, where)
        + story_problems(text, where)
        + quiz_problems(text, where)
        + figure_problems(text, where)
        + deeper_problems(text, where)
    )
    problems.sort(key=lambda p: int(p[len(where) + 1 :].split(":", 1)[0]))
    companion = path.with_suffix(".py")
    if companion.is_file():
        problems += placeholder_problems(companion.read_text(encoding="utf-8"), where[:-3] + ".py")
    return problems
