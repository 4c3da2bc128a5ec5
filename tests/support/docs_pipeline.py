"""How the Python on the site is verified: sybil parsers for docs/*.md.

Every fenced block whose language is Python-like (``python``, ``py``,
``python3``, ``py3``, ``pycon``), with or without attributes such as
``title="x.py"`` or ``linenums="1"``, and at any indentation (content tabs,
admonitions), is collected:

* a block that starts with ``>>>`` (or is ``pycon``) runs as a doctest;
* any other block runs as code with its stdout captured. If the fence right
  after it is an ``output`` fence, what the code printed must equal that
  block's text exactly (trailing spaces ignored). A block that prints but has
  no ``output`` fence fails too: the page would hide what the code does.

Failures name the Markdown file and the line of the block (and tracebacks
point at the failing line inside the block).
"""

from __future__ import annotations

import contextlib
import difflib
import io
import re
from collections.abc import Iterable
from doctest import ELLIPSIS, NORMALIZE_WHITESPACE

from sybil import Document, Example, Region, Sybil
from sybil.evaluators.doctest import DocTestEvaluator
from sybil.evaluators.python import pad
from sybil.parsers.abstract.doctest import DocTestStringParser
from sybil.parsers.markdown import ClearNamespaceParser, SkipParser
from sybil.parsers.markdown.lexers import RawFencedCodeBlockLexer

#: Fence languages treated as Python. Anything in this set is executed.
PYTHON_LANGUAGES = frozenset({"python", "py", "python3", "py3", "pycon"})
#: The language of the block that shows what the previous block prints.
OUTPUT_LANGUAGE = "output"
DOCTEST_FLAGS = NORMALIZE_WHITESPACE | ELLIPSIS

# The info string: a language word, then anything (attributes).
_INFO = re.compile(r"[ \t]*(?P<language>[\w+.-]*)(?P<attributes>[^\n]*)$\n", re.MULTILINE)


def normalise_output(text: str) -> str:
    lines = [line.rstrip() for line in text.strip("\n").splitlines()]
    return "\n".join(lines)


class CodeWithOutputEvaluator:
    """Run a code block; compare what it prints with the page's output block."""

    def __init__(self, expected: str | None, output_line: int | None) -> None:
        self.expected = expected
        self.output_line = output_line

    def __call__(self, example: Example) -> str | None:
        __tracebackhide__ = True
        source = pad(example.parsed, example.line + example.parsed.line_offset)
        code = compile(source, example.path, "exec", dont_inherit=True)
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            exec(code, example.namespace)
        example.namespace.pop("__builtins__", None)
        actual = normalise_output(printed.getvalue())
        where = f"{example.path}:{example.line}"
        if self.expected is None:
            if actual:
                return (
                    f"{where}: this block printed output but the page shows no "
                    f"```output block after it. It printed:\n{actual}"
                )
            return None
        expected = normalise_output(self.expected)
        if actual != expected:
            diff = "\n".join(
                difflib.unified_diff(
                    expected.splitlines(),
                    actual.splitlines(),
                    fromfile=f"page (output block at line {self.output_line})",
                    tofile="what the code printed",
                    lineterm="",
                )
            )
            return f"{where}: printed output differs from the page:\n{diff}"
        return None


class PythonFenceParser:
    """Collect every Python-like fence in a Markdown document."""

    def __init__(self) -> None:
        self.lexer = RawFencedCodeBlockLexer(info_pattern=_INFO)
        self.doctest_parser = DocTestStringParser(DocTestEvaluator(DOCTEST_FLAGS))

    def __call__(self, document: Document) -> Iterable[Region]:
        fences = list(self.lexer(document))
        for index, region in enumerate(fences):
            language = region.lexemes["language"]
            if language not in PYTHON_LANGUAGES:
                continue
            source = region.lexemes["source"]
            if language == "pycon" or source.lstrip().startswith(">>>"):
                for doctest_region in self.doctest_parser(source, document.path):
                    doctest_region.adjust(region, source)
                    yield doctest_region
                continue
            expected, output_line = None, None
            following = fences[index + 1] if index + 1 < len(fences) else None
            if (
                following is not None
                and following.lexemes["language"] == OUTPUT_LANGUAGE
                and not document.text[region.end : following.start].strip()
            ):
                expected = str(following.lexemes["source"])
                output_line = document.text.count("\n", 0, following.start) + 1
            region.parsed = source
            region.evaluator = CodeWithOutputEvaluator(expected, output_line)
            yield region


def _reset_global_state(namespace: dict) -> None:
    """Give every page a fresh start: default print options, no open figures.

    A page may set NumPy print options in a visible block; they must not leak
    into the next page, whose blocks a reader runs in a fresh interpreter.
    """
    import matplotlib

    matplotlib.use("Agg")  # figures drawn in a snippet must not open a window
    import matplotlib.pyplot as plt
    import numpy as np

    np.set_printoptions(**_DEFAULT_PRINT_OPTIONS)
    plt.close("all")


def _default_print_options() -> dict:
    import numpy as np

    options = np.get_printoptions()
    options.pop("override_repr", None)  # not accepted back by set_printoptions
    return options


_DEFAULT_PRINT_OPTIONS = _default_print_options()


def docs_sybil(path: str = "docs") -> Sybil:
    """The Sybil that runs docs/**/*.md (one namespace per page)."""
    return Sybil(
        parsers=[PythonFenceParser(), SkipParser(), ClearNamespaceParser()],
        path=path,
        patterns=["*.md", "**/*.md"],
        setup=_reset_global_state,
        teardown=_reset_global_state,
        name="docs",
    )
