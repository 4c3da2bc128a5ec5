"""The package's ``.sql`` files as the pages' runnable SQL blocks: one home
for the helpers of chapter 9 (``docs/chapters/attention-sql.py``) and
chapter 9b (``docs/chapters/attention-sql-layer.py``).

A block is the statements of a ``qkv.sql`` file as the library runs them
(``qkv.sql.query_text``), without their comment lines, in a fence that the
page's Run buttons (``docs/javascripts/sql-runner.js``) find by class; the
rows a block inserts are computed from the toy data when the site is built.
"""

from __future__ import annotations

import re
import textwrap

import numpy as np

import qkv.sql


def sql_block(text: str, *classes: str) -> str:
    """A fenced SQL block; the page's Run buttons (sql-runner.js) find it by class."""
    attrs = " ".join(["." + "sql", ".qkv-sql", *("." + c for c in classes)])
    return "```{" + attrs + "}\n" + text.rstrip("\n") + "\n```"


def statements(name: str) -> str:
    """The statements of one of the package's ``.sql`` files, without its comment lines.

    The page's SQL blocks show the files' SQL as it runs; the comments that
    explain it are in the files (``qkv.sql.query_text(name)`` prints them),
    and the page's prose says what they say. On a phone a comment line is
    cut off at the screen's edge anyway.
    """
    lines = qkv.sql.query_text(name).splitlines()
    return "\n".join(line for line in lines if not line.lstrip().startswith("--"))


def compact(sql: str, width: int = 64) -> str:
    """Each CREATE TABLE statement of ``sql`` on as few lines of at most ``width``
    characters as it fits (tables.sql's three take 6 lines instead of 18); the
    other statements as they are written."""
    out = []
    for statement in filter(None, (part.strip() for part in sql.split(";"))):
        if not statement.upper().startswith("CREATE TEMP TABLE"):
            out.append(statement + ";")
            continue
        flat = re.sub(r"\s+\)", ")", re.sub(r"\(\s+", "(", " ".join(statement.split())))
        out.append(textwrap.fill(flat + ";", width, subsequent_indent="  ", break_long_words=False))
    return "\n".join(out)


def in_box(text: str) -> str:
    """``text`` for a ``{{ value }}`` inside a Deeper box: every line after the
    first indented 4 spaces (the shortcode's own indent places the first)."""
    return text.replace("\n", "\n    ")


def insert_long_form(table: str, arr, columns: tuple[str, ...] = ("pos", "dim", "val"), per_line: int = 6) -> str:
    """An INSERT of ``arr`` in long form: one row per entry, its indices then its value.

    A 2-D array gives ``(row, column, value)`` rows (``columns`` names them),
    a 1-D array ``(index, value)`` rows; ``per_line`` rows to a line.
    """
    arr = np.asarray(arr, dtype=np.float64)
    rows = ["(" + ", ".join([*(str(i) for i in index), repr(float(val))]) + ")" for index, val in np.ndenumerate(arr)]
    lines = ",\n  ".join(", ".join(rows[i : i + per_line]) for i in range(0, len(rows), per_line))
    return f"INSERT INTO {table} ({', '.join(columns)}) VALUES\n  {lines};"
