"""Split a Markdown page into fenced blocks and prose lines, and name what
breaks the rules every page's code follows.

Shared by the docs pipeline (sybil), the prose-number check, the
copy-isolation check, the chapter-shape check and ``make check``: one reading
of a page. Fences open with three or more backticks or tildes at any
indentation (content tabs, admonitions), where pymdownx.superfences opens
one (:func:`opens_fence`), and close with the same character.

The fence-language rule, decided once: every fence names a language from a
whitelist, and each language on it is either *run* (:data:`RUN_LANGUAGES`)
or *display-only* (:data:`DISPLAY_LANGUAGES`, none of which Pygments
highlights as Python). Anything else, an unnamed fence, an indented code
block or code written as raw HTML is an error at its file:line
(:func:`page_problems`): nothing on a page may look like Python without
being run.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from pymdownx.superfences import RE_NESTED_FENCE_START

FENCE_OPEN = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})[ \t]*(?P<lang>[\w+.-]*)(?P<info>[^\n]*)$")
#: Fence languages that are run: doctest when the block starts with ``>>>``
#: (or is ``pycon``), otherwise code whose printed output is compared.
RUN_LANGUAGES = frozenset({"python", "py", "python3", "py3", "pycon"})
PYTHON_LANGUAGES = RUN_LANGUAGES  # the name other modules use
#: Display-only fence languages: shown, never run. ``output`` is special: it
#: must sit directly under the ``python`` block whose printed text it shows.
DISPLAY_LANGUAGES = frozenset(
    {
        "output",
        "text",
        "console",
        "sh",
        "bash",
        "sql",
        "json",
        "yaml",
        "toml",
        "markdown",
        "html",
        "css",
        "javascript",
        "latex",
        "diff",
    }
)
OUTPUT_LANGUAGE = "output"
#: A block whose title contains this continues the block above it; the page
#: shows the title, and the copy test runs the block with its predecessors.
CONTINUED = "(continued)"

SKIP = re.compile(r"<!--\s*skip\s*:(?P<rest>.*?)-->")
SKIP_NEXT = re.compile(r"^\s*next\b(?P<reason>.*)$", re.DOTALL)
CLEAR = re.compile(r"<!--\s*clear-namespace\s*-->")
OTHER_DIRECTIVE = re.compile(r"<!--\s*(?P<name>invisible-code-block|skip-?start|skip-?end)\b")
#: Raw HTML that shows code in monospace: <pre>, its obsolete forms <xmp>, <listing> and
#: <plaintext> (which browsers still render), and a highlighted <code class="language-...">.
RAW_HTML_CODE = re.compile(
    r"<(?:pre|xmp|listing|plaintext)\b|<code\b[^>]*\bclass=[\"'][^\"']*\blang(?:uage)?-", re.IGNORECASE
)
HTML_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
#: Lines that open a Markdown container whose content is indented by four
#: spaces: admonitions, collapsibles, content tabs, list items, footnotes.
CONTAINER = re.compile(r"^(?P<indent> *)(?:!!!|\?\?\?\+?|===|[-*+][ \t]|\d+\.[ \t]|\[\^[^\]]+\]:)")


@dataclass(frozen=True)
class Block:
    language: str
    info: str  # the info string after the language (attributes such as title=)
    start: int  # 1-based line of the opening fence
    end: int  # 1-based line of the closing fence
    text: str
    indent: str = ""

    @property
    def is_python(self) -> bool:
        return self.language in RUN_LANGUAGES

    @property
    def is_doctest(self) -> bool:
        return self.language == "pycon" or self.text.lstrip().startswith(">>>")

    @property
    def continues(self) -> bool:
        return CONTINUED in self.info


@dataclass
class Page:
    """A page's blocks and prose, which blocks the page skips, and why."""

    text: str
    blocks: list[Block]
    prose: list[tuple[int, str]]
    #: index of a skipped block -> (line of the directive, reason)
    skips: dict[int, tuple[int, str]] = field(default_factory=dict)
    #: lines of ``<!-- clear-namespace -->`` directives
    clears: list[int] = field(default_factory=list)
    #: (line, what is wrong and how to fix it)
    problems: list[tuple[int, str]] = field(default_factory=list)

    def output_after(self, index: int) -> Block | None:
        return output_after(self.blocks, index, self.text)

    def chain_head(self, index: int) -> int:
        """The block a ``(continued)`` block ultimately continues (itself otherwise)."""
        while index > 0 and self.blocks[index].continues:
            previous = [i for i in range(index) if self.blocks[i].is_python and not self.blocks[i].is_doctest]
            if not previous:
                break
            index = previous[-1]
        return index

    def chain(self, index: int) -> list[int]:
        """Indexes of the code blocks that run before and with ``blocks[index]``."""
        head = self.chain_head(index)
        return [i for i in range(head, index + 1) if self.blocks[i].is_python and not self.blocks[i].is_doctest]

    def skip_of(self, index: int) -> tuple[int, str] | None:
        """Why ``blocks[index]`` is not run (its own directive, or its chain head's)."""
        for i in self.chain(index) if self.blocks[index].continues else [index]:
            if i in self.skips:
                return self.skips[i]
        return None


def opens_fence(line: str) -> bool:
    """Does ``line`` open a fenced block, as pymdownx.superfences (which renders
    the site's fences) reads it? A line such as ````` ```text``` ````` does not:
    it is inline code, and the prose after it is prose.

    >>> opens_fence('```python title="the loss (continued)"'), opens_fence("   ```{.sql .qkv-sql}")
    (True, True)
    >>> opens_fence("```text```"), opens_fence("```not a fence```")
    (False, False)
    """
    match = FENCE_OPEN.match(line)
    if match is None:
        return False
    superfences = RE_NESTED_FENCE_START.match(line, len(match["indent"]))
    return superfences is not None and not superfences["unrecognized"]


def split_page(text: str) -> tuple[list[Block], list[tuple[int, str]]]:
    """Fenced blocks, and the remaining prose lines as (line number, text)."""
    lines = text.splitlines()
    blocks: list[Block] = []
    prose: list[tuple[int, str]] = []
    index = 0
    while index < len(lines):
        match = FENCE_OPEN.match(lines[index]) if opens_fence(lines[index]) else None
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
        blocks.append(Block(match["lang"].lower(), match["info"], index + 1, end + 1, body, match["indent"]))
        index = end + 1
    return blocks, prose


def _attribute_language(info: str) -> str | None:
    """The language of an attribute-list fence (```{.sql .qkv-sql} -> 'sql').

    Such fences are never run, so only a display-only language makes one
    acceptable; ```{.python} still fails as a fence with no language."""
    match = re.match(r"\s*\{\s*\.([\w+-]+)", info)
    return match.group(1) if match else None


def read_page(text: str) -> Page:
    """Blocks, prose, skip and clear directives, and every rule the page breaks."""
    blocks, prose = split_page(text)
    page = Page(text, blocks, prose)
    problems = page.problems
    starts = [block.start for block in blocks]

    # Fence languages: run, display-only, or an error.
    for index, block in enumerate(blocks):
        if block.language in RUN_LANGUAGES or block.language in DISPLAY_LANGUAGES:
            pass
        elif not block.language and _attribute_language(block.info) in DISPLAY_LANGUAGES:
            pass  # ```{.sql .qkv-sql}: a display-only language given as an attribute list
        elif not block.language:
            problems.append(
                (
                    block.start,
                    "a fence with no language; write ```python to run it, or a display-only "
                    f"language ({', '.join(sorted(DISPLAY_LANGUAGES - {OUTPUT_LANGUAGE}))})",
                )
            )
        else:
            problems.append(
                (
                    block.start,
                    f"the fence language '{block.language}' is neither run nor display-only; write "
                    "```python to run the block, or one of the display-only languages "
                    f"({', '.join(sorted(DISPLAY_LANGUAGES - {OUTPUT_LANGUAGE}))})",
                )
            )
        if block.language == OUTPUT_LANGUAGE:
            previous = blocks[index - 1] if index else None
            between = ""
            if previous is not None:
                between = "\n".join(text.splitlines()[previous.end : block.start - 1]).strip()
            if previous is not None and previous.is_python and previous.is_doctest and not between:
                problems.append(
                    (
                        block.start,
                        "an ```output block under a doctest (>>> prompts): the doctest shows and checks "
                        "its own output, this block is checked by nothing; delete it, or turn the "
                        "doctest into a ```python block without prompts",
                    )
                )
            elif previous is None or not previous.is_python or between:
                problems.append(
                    (
                        block.start,
                        "this ```output block does not directly follow a ```python block (only blank "
                        "lines may sit between them), so nothing compares it with what code printed; "
                        "move it right under the block that prints it",
                    )
                )

    # Directives and hand-written code, outside fences and outside comments.
    prose_text = "\n".join(line for _, line in prose)
    numbers = [number for number, _ in prose]
    for match in HTML_COMMENT.finditer(prose_text):
        line = numbers[prose_text.count("\n", 0, match.start())]
        comment = match.group(0)
        if skip := SKIP.fullmatch(comment):
            next_ = SKIP_NEXT.match(skip["rest"])
            reason = next_["reason"].strip().strip("\"'").strip() if next_ else ""
            following = [i for i, start in enumerate(starts) if start > line]
            if next_ is None:
                problems.append((line, "only `<!-- skip: next <why this block cannot run here> -->` is supported"))
            elif not reason:
                problems.append(
                    (
                        line,
                        "a skip without a reason; write `<!-- skip: next <why this block cannot run "
                        "here> -->` (skipped blocks are listed by every run and their numbers count as "
                        "unchecked)",
                    )
                )
            elif not following or not blocks[following[0]].is_python:
                problems.append((line, "`skip: next` must come right before a ```python block"))
            else:
                page.skips[following[0]] = (line, reason)
        elif CLEAR.fullmatch(comment):
            page.clears.append(line)
        elif other := OTHER_DIRECTIVE.match(comment):
            problems.append(
                (
                    line,
                    f"the directive '{other['name']}' is not supported: code in a comment is never "
                    "shown and '<!-- skip: next <reason> -->' is the only skip",
                )
            )
    uncommented = HTML_COMMENT.sub(lambda m: "\n" * m.group(0).count("\n"), prose_text).split("\n")
    for (number, _), line in zip(prose, uncommented):
        if RAW_HTML_CODE.search(line):
            problems.append(
                (
                    number,
                    "code written as raw HTML (<pre>, <xmp>, <listing>, <plaintext> or "
                    '<code class="language-...">) is shown but '
                    "never run; write it as a ```python fence (run) or a ```text fence (display-only)",
                )
            )
    problems.extend(_indented_code(text, blocks))
    problems.sort()
    return page


def _indented_code(text: str, blocks: list[Block]) -> list[tuple[int, str]]:
    """Markdown's indented code blocks (four spaces more than their container)."""
    in_fence = set()
    for block in blocks:
        in_fence.update(range(block.start, block.end + 1))
    comments = set()
    for match in HTML_COMMENT.finditer(text):
        first = text.count("\n", 0, match.start()) + 1
        comments.update(range(first, first + match.group(0).count("\n") + 1))
    problems = []
    containers: list[int] = []  # content indent of each open container
    previous_blank, code_indent = True, None
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.expandtabs(4)
        if not line.strip():
            previous_blank = True
            continue
        indent = len(line) - len(line.lstrip(" "))
        if code_indent is not None and indent >= code_indent:
            previous_blank = False
            continue
        code_indent = None
        while containers and indent < containers[-1]:
            containers.pop()
        if number in in_fence or number in comments:
            previous_blank = False
            continue
        base = containers[-1] if containers else 0
        if previous_blank and indent >= base + 4:
            problems.append(
                (
                    number,
                    "an indented code block (four spaces more than the text around it) is shown as "
                    "code but never run; put it in a ```python fence (run) or a ```text fence "
                    "(display-only), or indent it less",
                )
            )
            code_indent = base + 4
        elif container := CONTAINER.match(line):
            containers.append(len(container["indent"]) + 4)
        previous_blank = False
    return problems


def page_problems(text: str, where: str) -> list[str]:
    """``where:line: what is wrong and how to fix it`` for every rule the page breaks."""
    return [f"{where}:{line}: {message}" for line, message in read_page(text).problems]


def output_after(blocks: list[Block], index: int, text: str) -> Block | None:
    """The output block right after ``blocks[index]``, if there is one."""
    if index + 1 >= len(blocks):
        return None
    block, following = blocks[index], blocks[index + 1]
    between = "\n".join(text.splitlines()[block.end : following.start - 1]).strip()
    if following.language == OUTPUT_LANGUAGE and not between:
        return following
    return None


def verified_outputs(blocks: list[Block], text: str) -> list[str]:
    """Text of output blocks that CI compares with what the code above printed.

    An output block counts only directly under a code block (not a doctest)
    that the page does not skip.
    """
    page = read_page(text)
    return [
        out.text
        for index, block in enumerate(page.blocks)
        if block.is_python
        and not block.is_doctest
        and page.skip_of(index) is None
        and (out := output_after(page.blocks, index, text)) is not None
    ]
