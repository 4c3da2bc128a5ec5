"""A page's parts: declared next to the page, used by one name, misuse fails
the build with file:line (docs/hooks/parts.py, docs/hooks/hooks.py)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import parts  # docs/hooks, on pytest's pythonpath

ROOT = Path(__file__).resolve().parent.parent

COMPANION = """
from parts import figure, value, widget
from plotting import plt


@figure("demo-line", alt="A straight line rising from the lower left to the upper right corner.",
        caption="A line.", width=480)
def demo_line():
    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1])
    return fig


@widget("demo-widget", label="Interactive figure: a demo", height="10rem")
def demo_widget():
    return {"answer": 42}


@value("demo_value")
def demo_value():
    return "0.5000"
"""


def make_docs(tmp_path: Path, page: str, companion: str | None = COMPANION, name: str = "demo") -> Path:
    docs = tmp_path / "docs"
    (docs / "chapters").mkdir(parents=True)
    (docs / "chapters" / f"{name}.md").write_text(textwrap.dedent(page).lstrip(), encoding="utf-8")
    if companion is not None:
        (docs / "chapters" / f"{name}.py").write_text(companion, encoding="utf-8")
    return docs


def expand(tmp_path: Path, page: str, companion: str | None = COMPANION) -> str:
    docs = make_docs(tmp_path, page, companion)
    return parts.expand_page(docs / "chapters" / "demo.md", docs)


def test_the_site_declares_every_part_it_uses():
    everything = parts.load()
    for page in everything:
        parts.expand_page(ROOT / "docs" / page)  # raises PartsError on any misuse
    figures = [f for p in everything.values() for f in p.figures.values()]
    widgets = [w for p in everything.values() for w in p.widgets.values()]
    assert figures and widgets


def test_shortcodes_and_values_expand(tmp_path):
    text = expand(
        tmp_path,
        """
        # Demo

        The value is {{ demo_value }}.

        <!-- qkv:figure demo-line -->

        <!-- qkv:widget demo-widget -->
        """,
    )
    assert "The value is 0.5000." in text
    assert (
        '![A straight line rising from the lower left to the upper right corner.](../figures/demo-line.svg){ width="480" }'
        in text
    )
    assert "<figcaption>A line.</figcaption>" in text
    assert 'data-widget="demo-widget"' in text and 'style="min-height: 10rem; --qkv-phone-min-height: 10rem"' in text
    assert 'aria-label="Interactive figure: a demo"' in text


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (
            "<!-- qkv:figure no-such-figure -->",
            "docs/chapters/demo.md:3: unknown figure 'no-such-figure': declare it with @figure('no-such-figure', ...) in docs/chapters/demo.py (declared there: demo-line)",
        ),
        ("<!-- qkv:widget nope -->", "docs/chapters/demo.md:3: unknown widget 'nope'"),
        ("<!-- qkv:figur demo-line -->", "docs/chapters/demo.md:3: malformed shortcode '<!-- qkv:figur demo-line -->'"),
        ("<!-- qkv:figure Demo_Line -->", "docs/chapters/demo.md:3: malformed shortcode"),
        ("See <!-- qkv:figure demo-line --> here.", "docs/chapters/demo.md:3: malformed shortcode"),
        (
            "It is {{ no_such_value }}.",
            "docs/chapters/demo.md:3: unknown value {{ no_such_value }}: declare it with @value('no_such_value') in docs/chapters/demo.py",
        ),
        ("It is {{ Demo_Value }}.", "docs/chapters/demo.md:3: malformed value '{{ Demo_Value }}'"),
    ],
)
def test_misuse_is_reported_with_file_and_line(tmp_path, line, message):
    with pytest.raises(parts.PartsError) as error:
        expand(tmp_path, f"# Demo\n\n{line}\n")
    assert message in str(error.value)


def test_a_page_without_companion_cannot_use_parts(tmp_path):
    with pytest.raises(parts.PartsError, match=r"demo.md:1: unknown figure 'x'.*declared there: none"):
        expand(tmp_path, "<!-- qkv:figure x -->\n", companion=None)


def test_declarations_are_checked(tmp_path):
    """Each mistake in a declaration is named at the companion's line of the declaration."""
    short_alt = 'from parts import figure\n\n@figure("f", alt="A plot.", caption="c")\ndef f():\n    return "<svg/>"\n'
    companion = tmp_path / "docs" / "chapters" / "demo.py"
    with pytest.raises(parts.PartsError, match=rf"^{companion}:3: figure f: alt text must say what the figure shows"):
        expand(tmp_path, "# Demo\n", companion=short_alt)
    bad_height = 'from parts import widget\n\n\n@widget("w", label="l", height="big")\ndef w():\n    return {}\n'
    with pytest.raises(parts.PartsError, match=r"b/docs/chapters/demo.py:4: widget w: height must be a CSS length"):
        parts.load_page(
            make_docs(tmp_path / "b", "# Demo\n", bad_height) / "chapters" / "demo.md",
            tmp_path / "b" / "docs",
        )
    bad_name = 'from parts import value\n\n@value("Bad-Name")\ndef v():\n    return "1"\n'
    with pytest.raises(parts.PartsError, match=r"c/docs/chapters/demo.py:3: value 'Bad-Name': names are lowercase"):
        parts.load_page(
            make_docs(tmp_path / "c", "# Demo\n", bad_name) / "chapters" / "demo.md", tmp_path / "c" / "docs"
        )


def test_a_name_declared_by_two_pages_is_an_error(tmp_path):
    docs = make_docs(tmp_path, "# One\n")
    (docs / "chapters" / "other.md").write_text("# Two\n")
    (docs / "chapters" / "other.py").write_text(COMPANION)
    with pytest.raises(
        parts.PartsError, match="figures/demo-line.svg is declared by both chapters/demo.md and chapters/other.md"
    ):
        parts.load(docs)


def test_the_build_fails_on_an_unknown_part_naming_file_and_line(tmp_path):
    """The real hooks in a real (small) mkdocs build: the error reaches the user."""
    docs = make_docs(tmp_path, "# Demo\n\nText.\n\n<!-- qkv:figure missing -->\n")
    (tmp_path / "mkdocs.yml").write_text(
        "site_name: demo\n"
        f"hooks:\n  - {ROOT / 'docs' / 'hooks' / 'hooks.py'}\n"
        "exclude_docs: |\n  *.py\n"
        "markdown_extensions:\n  - md_in_html\n  - attr_list\n"
    )
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(tmp_path / "site")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert result.returncode != 0
    assert "docs/chapters/demo.md:5: unknown figure 'missing'" in result.stderr
    assert docs.is_dir()


def test_alt_text_and_captions_count_as_prose(tmp_path):
    """A number in a figure's alt text, caption or a widget's label that no output shows is
    caught, at the line of the companion module that declares it, naming the field."""
    from prose_numbers import unchecked_numbers

    companion = (
        COMPANION.replace("lower left to the upper right corner.", "lower left to 0.1234 at the upper right.")
        .replace('caption="A line."', 'caption="A line to 0.5678."')
        .replace('label="Interactive figure: a demo"', 'label="Interactive figure: 0.9012"')
    )
    docs = make_docs(
        tmp_path, "# Demo\n\n<!-- qkv:figure demo-line -->\n\n<!-- qkv:widget demo-widget -->\n", companion
    )
    page = docs / "chapters" / "demo.md"
    assert unchecked_numbers(page, "docs/chapters/demo.md") == [
        "docs/chapters/demo.py:6: 0.1234 (in the alt text of figure 'demo-line', shown on docs/chapters/demo.md) "
        "is not in any verified output",
        "docs/chapters/demo.py:6: 0.5678 (in the caption of figure 'demo-line', shown on docs/chapters/demo.md) "
        "is not in any verified output",
        "docs/chapters/demo.py:14: 0.9012 (in the label of widget 'demo-widget', shown on docs/chapters/demo.md) "
        "is not in any verified output",
    ]


def test_a_widget_reserves_its_phone_height_on_a_phone(tmp_path):
    companion = COMPANION.replace('height="10rem")', 'height="10rem", phone_height="14rem")')
    html = expand(tmp_path, "# Demo\n\n<!-- qkv:widget demo-widget -->\n", companion)
    assert 'style="min-height: 10rem; --qkv-phone-min-height: 14rem"' in html
    plain = expand(tmp_path / "b", "# Demo\n\n<!-- qkv:widget demo-widget -->\n")
    assert 'style="min-height: 10rem; --qkv-phone-min-height: 10rem"' in plain
    bad = COMPANION.replace('height="10rem")', 'height="10rem", phone_height="tall")')
    with pytest.raises(parts.PartsError, match="widget demo-widget: phone_height must be a CSS length"):
        expand(tmp_path / "c", "# Demo\n", bad)
