"""Start a chapter: ``make chapter NAME=<slug> TITLE="<title>"``.

Writes ``docs/chapters/<slug>.md`` with every story section (docs/hooks/story.py)
and a quiz stub, its companion ``docs/chapters/<slug>.py`` with one figure
declared, and the nav entry in mkdocs.yml; then prints what is left to write.
Every placeholder is a ``TODO(chapter):`` comment that ``make test`` and
``make check PAGE=...`` report with file:line until it is replaced.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import story

ROOT = Path(__file__).resolve().parents[2]
CHAPTERS = ROOT / "docs" / "chapters"
MKDOCS_YML = ROOT / "mkdocs.yml"
SLUG = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
TODO = story.PLACEHOLDER


def page_text(title: str, slug: str) -> str:
    sections = []
    for name, purpose in story.SECTIONS:
        body = f"<!-- {TODO} {purpose} -->"
        if name == "The code":
            body += (
                "\n\n```python\nimport qkv\n\nprint(qkv.softmax([0.0, 0.0]).tolist())\n```\n\n"
                "```output\n[0.5, 0.5]\n```\n\n"
                f"<!-- qkv:figure {slug}-figure -->"
            )
        if name == "Check your understanding":
            body += (
                '\n\n<div class="quiz" markdown>\n\n'
                f"**1. <!-- {TODO} a question a reader could get wrong -->**\n\n"
                "- A. A wrong answer.\n- B. The right answer.\n- C. Another wrong answer.\n\n"
                '??? success "Answer: B"\n\n'
                f"    <!-- {TODO} why B is right and why A and C are wrong -->\n\n</div>"
            )
        sections.append(f"## {name}\n\n{body}\n")
    return f"# {title}\n\n" + "\n".join(sections)


def companion_text(title: str, slug: str) -> str:
    return f'''"""Parts of docs/chapters/{slug}.md drawn from qkv when the site is built.

Declared here, used on the page by name (``<!-- qkv:figure name -->``,
``<!-- qkv:widget name -->``, ``{{{{ name }}}}``); see docs/hooks/parts.py.
"""

from __future__ import annotations

from parts import figure
from plotting import plt

import qkv


@figure(
    "{slug}-figure",
    alt="{TODO} say what the figure shows, in a sentence or two, with its numbers.",
    caption="{TODO} the caption under the figure.",
    width=640,
)
def {slug.replace("-", "_")}_figure() -> plt.Figure:
    fig, ax = plt.subplots(figsize=(6.4, 3.2))
    ax.plot([0, 1], qkv.softmax([0.0, 0.0]))  # {TODO} draw from qkv
    return fig
'''


def add_to_nav(yml: str, title: str, slug: str) -> str:
    """Add the chapter as the last numbered chapter, before the Practice section."""
    numbers = [int(n) for n in re.findall(r'^\s+- "(\d+)\. .*": chapters/', yml, re.MULTILINE)]
    entry = f'      - "{max(numbers, default=0) + 1}. {title}": chapters/{slug}.md\n'
    marker = "  - Practice:\n"
    if marker not in yml:
        raise SystemExit("mkdocs.yml has no '  - Practice:' nav section to put the chapter before")
    return yml.replace(marker, entry + marker, 1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("name", help="the page's file name without .md, e.g. rotary-positions")
    parser.add_argument("title", help='the chapter title, e.g. "Relative positions: RoPE and ALiBi"')
    args = parser.parse_args(argv)
    if not SLUG.match(args.name):
        print(f"NAME must be lowercase words joined by hyphens, e.g. rotary-positions; got {args.name!r}")
        return 2
    if not args.title.strip():
        print('TITLE is required, e.g. make chapter NAME=demo TITLE="Demo"')
        return 2
    page, companion = CHAPTERS / f"{args.name}.md", CHAPTERS / f"{args.name}.py"
    for path in (page, companion):
        if path.exists():
            print(f"{path.relative_to(ROOT)} already exists; pick another NAME")
            return 2
    page.write_text(page_text(args.title.strip(), args.name), encoding="utf-8")
    companion.write_text(companion_text(args.title.strip(), args.name), encoding="utf-8")
    MKDOCS_YML.write_text(add_to_nav(MKDOCS_YML.read_text(encoding="utf-8"), args.title.strip(), args.name))
    print(f"wrote {page.relative_to(ROOT)}, {companion.relative_to(ROOT)} and the nav entry in mkdocs.yml")
    print("left to write (make check PAGE=... lists them with file:line):")
    for path in (page, companion):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if TODO in line:
                what = line.split(TODO, 1)[1].split("-->")[0].strip().rstrip('",')
                print(f"  {path.relative_to(ROOT)}:{number}: {what}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
