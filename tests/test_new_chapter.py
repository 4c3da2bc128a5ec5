"""``make chapter``: the scaffold has every section, builds into a page, and
leaves only messages that say what to write (file:line)."""

from __future__ import annotations

import new_chapter  # docs/hooks, on pytest's pythonpath
import parts
import story
from chapter_shape import chapter_problems


def scaffold(tmp_path, slug="demo", title="Demo"):
    docs = tmp_path / "docs"
    (docs / "chapters").mkdir(parents=True)
    page = docs / "chapters" / f"{slug}.md"
    page.write_text(new_chapter.page_text(title, slug))
    page.with_suffix(".py").write_text(new_chapter.companion_text(title, slug))
    return docs, page


def test_the_scaffold_fails_only_on_what_is_left_to_write(tmp_path):
    docs, page = scaffold(tmp_path)
    problems = chapter_problems(page, "docs/chapters/demo.md")
    assert problems, "a fresh scaffold must not pass"
    for problem in problems:
        assert story.PLACEHOLDER in problem or "the quiz has 1 question(s)" in problem, problem
    assert any(p.startswith("docs/chapters/demo.py:") for p in problems)  # the figure's alt text
    # Every story section is there, in order, and the parts it uses are declared.
    assert not any("missing the section" in p or "comes before" in p for p in problems)
    assert "<figure" in parts.expand_page(page, docs)


def test_the_nav_entry_is_the_next_chapter_number():
    yml = (
        'nav:\n  - Words:\n      - "1. A": chapters/a.md\n  - More:\n      - "2. B": chapters/b.md\n'
        "  - Practice:\n      - x: y.md\n"
    )
    updated = new_chapter.add_to_nav(yml, "Demo", "demo")
    assert '      - "2. B": chapters/b.md\n      - "3. Demo": chapters/demo.md\n  - Practice:' in updated


def test_a_bad_name_is_refused(capsys):
    assert new_chapter.main(["Not_A_Slug", "Title"]) == 2
    assert "NAME must be lowercase words joined by hyphens" in capsys.readouterr().out
