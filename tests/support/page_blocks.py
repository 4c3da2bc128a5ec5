"""Split a Markdown page into fenced blocks and prose lines.

Shared by the prose-number check and the copy-isolation check. Deliberately
simple: fences open with three or more backticks or tildes at any
indentation (content tabs, admonitions) and close with the same character.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

FENCE_OPEN = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})[ \t]*(?P<lang>[\w+.-]*)(?P<info>[^\n]*)$")
PYTHON_LANGUAGES = {"python", "py", "python3", "py3", "pycon"}
#: A block whose title contains this continues the block above it; the page
#: shows the title, and the copy test runs the block with its predecessors.
CONTINUED = "(continued)"


@dataclass(frozen=True)
class Block:
    language: str
    info: str  # the info string after the language (attributes such as title=)
    start: int  # 1-based line of the opening fence
    end: int  # 1-based line of the closing fence
    text: str

    @property
    def is_python(self) -> bool:
        return self.language in PYTHON_LANGUAGES

    @property
    def is_doctest(self) -> bool:
        return self.language == "pycon" or self.text.lstrip().startswith(">>>")

    @property
    def continues(self) -> bool:
        return CONTINUED in self.info


def split_page(text: str) -> tuple[list[Block], list[tuple[int, str]]]:
    """Fenced blocks, and the remaining prose lines as (line number, text)."""
    lines = text.splitlines()
    blocks: list[Block] = []
    prose: list[tuple[int, str]] = []
    index = 0
    while index < len(lines):
        match = FENCE_OPEN.match(lines[index])
        if match is None:
            prose.append((index + 1, lines[index]))
            index += 1
            continue
        fence = match["fence"]
        closing = re.compile(rf"^[ \t]*{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$")
        end = index + 1
        while end < len(lines) and not closing.match(lines[end]):
            end += 1
        body = "\n".join(line[len(match["indent"]) :] for line in lines[index + 1 : end])
        blocks.append(Block(match["lang"].lower(), match["info"], index + 1, end + 1, body))
        index = end + 1
    return blocks, prose


def output_after(blocks: list[Block], index: int, text: str) -> Block | None:
    """The output block right after ``blocks[index]``, if there is one."""
    if index + 1 >= len(blocks):
        return None
    block, following = blocks[index], blocks[index + 1]
    between = "\n".join(text.splitlines()[block.end : following.start - 1]).strip()
    if following.language == "output" and not between:
        return following
    return None


def verified_outputs(blocks: list[Block], text: str) -> list[str]:
    """Text of output blocks that directly follow a Python block (CI compares them)."""
    return [
        out.text
        for index, block in enumerate(blocks)
        if block.is_python and (out := output_after(blocks, index, text)) is not None
    ]
