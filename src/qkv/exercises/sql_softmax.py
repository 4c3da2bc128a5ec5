"""Exercise 3, the softmax as a window query (chapter "Attention is a query").

The learner writes ``softmax_query()``, a function that returns the text of
one SQL ``SELECT``: given a table ``scores(qpos, kpos, score)``, it returns
``qpos, kpos, weight`` with each query's scores turned into softmax weights,
as ``weights.sql`` of ``qkv.sql`` does. The function runs in the child
process like any learner function; the SQL text it returns is plain data,
and the checks run it in a fresh in-memory SQLite, in a process of its
own, with guards (see :func:`run_learner_sql`): it may only read, its
process is killed after ``SQL_SECONDS`` of query time (or when the
exercise's time limit runs out, which the query's time counts against),
and its strings, rows and memory are capped. Expected weights come
from ``qkv.softmax``.

Examples
--------
>>> import numpy as np
>>> from qkv.exercises.sql_softmax import run_learner_sql
>>> scores = np.array([[2.0, 0.0, 1.0]])
>>> sql = ("WITH t AS (SELECT qpos, kpos, exp(score - MAX(score) OVER (PARTITION BY qpos)) AS e FROM scores) "
...        "SELECT qpos, kpos, e / SUM(e) OVER (PARTITION BY qpos) AS weight FROM t")
>>> columns, rows = run_learner_sql(sql, scores)
>>> columns, [round(r[2], 4) for r in rows]
(['qpos', 'kpos', 'weight'], [0.6652, 0.09, 0.2447])
"""

from __future__ import annotations

import json
import math
import os
import re
import selectors
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from qkv import toy
from qkv.attention import softmax
from qkv.exercises.compare import Variant, expect_close
from qkv.exercises.core import (
    CheckFailed,
    CheckList,
    Exercise,
    FunctionSpec,
    LearnerAborted,
    TimeBudget,
    call,
    current_budget,
)
from qkv.exercises.sandbox import hold_interrupts
from qkv.exercises.wire import safe_text, write_within

__all__ = ["EXERCISE", "run_learner_sql", "weights_from_rows", "weight_variants_sql"]

#: Wall-clock seconds one run of the learner's SQL may take, from the moment
#: the query starts (the process's own start is not counted). The time also
#: counts against the exercise's time limit (``--timeout``).
SQL_SECONDS = 2.0
#: Longest SQL text accepted, and longest string or blob a query may build.
MAX_SQL_CHARS = 20_000
MAX_VALUE_BYTES = 1_000_000
COLUMNS = ["qpos", "kpos", "weight"]
#: The wide-spread check's scores: the maximum at either end, the others 1e5 below it.
WIDE_SPREAD = np.array([[-1e5, -1e5, 0.0], [0.0, -1e5, -1e5]])

_COMMENTS_AND_STRINGS = re.compile(r"--[^\n]*|/\*.*?\*/|'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"", re.DOTALL)
#: Address space of the process that runs the learner's query.
SQL_MEMORY_BYTES = 512 * 1024 * 1024
#: Seconds allowed for that process to start (Python and sqlite3) and fill its
#: table, before the query runs: the checker's own work, not charged to the learner.
_START_SECONDS = 10.0
#: What ``python -I -S -c`` runs: the first line of its standard input, the program.
_BOOTSTRAP = "import json, sys; exec(json.loads(sys.stdin.readline()))"


def _runner_program() -> str:
    """The SQL runner's program: ``_confine.py`` and ``_sql_runner.py`` as they were
    when this module was imported, before any learner code ran (a file the
    learner's code rewrote later is not what runs)."""
    here = Path(__file__).parent
    lines = ["import types"]
    for name, module in (("_confine.py", "confine"), ("_sql_runner.py", "runner")):
        text = (here / name).read_text(encoding="utf-8")
        lines.append(f"{module} = types.ModuleType({'qkv_' + module!r})")
        lines.append(f"exec(compile({text!r}, {str(here / name)!r}, 'exec'), {module}.__dict__)")
    lines.append("runner.main(confine)")
    return "\n".join(lines) + "\n"


_RUNNER_PROGRAM = _runner_program()


def run_learner_sql(sql: Any, scores: np.ndarray, visible: np.ndarray | None = None) -> tuple[list[str], list[tuple]]:
    """Run the learner's SELECT on a table ``scores(qpos, kpos, score)``.

    Parameters
    ----------
    sql : str
        What ``softmax_query()`` returned.
    scores : numpy.ndarray, shape (L_q, L_k)
        One row of the table per visible entry.
    visible : numpy.ndarray of bool, shape (L_q, L_k), optional
        Which pairs have a row (a mask); all of them by default.

    Returns
    -------
    columns : list of str
        The result's column names, lower case.
    rows : list of tuple
        At most ``2 * L_q * L_k + 1`` rows (more are not read).

    Raises
    ------
    CheckFailed
        If ``sql`` is not a string of one statement, the database refuses
        it, or it tries to write.
    LearnerAborted
        If the query is still running after ``SQL_SECONDS``: the remaining
        checks would run it again, so they are not run (not fatal: the
        exercise's other functions are still checked).
    """
    if not isinstance(sql, str):
        raise CheckFailed(f"softmax_query() returned {type(sql).__name__}; return the SQL text as a str")
    if not sql.strip():
        raise CheckFailed("softmax_query() returned an empty string; return one SELECT statement")
    if len(sql) > MAX_SQL_CHARS:
        raise CheckFailed(f"the SQL text has {len(sql):,} characters; at most {MAX_SQL_CHARS:,} are accepted")
    visible = np.ones(scores.shape, dtype=bool) if visible is None else visible
    qpos, kpos = np.nonzero(visible)
    request = {
        "sql": sql,
        "rows": [[int(i), int(j), float(scores[i, j])] for i, j in zip(qpos, kpos)],
        "max_rows": 2 * scores.size + 1,
        "max_value_bytes": MAX_VALUE_BYTES,
        "memory_bytes": SQL_MEMORY_BYTES,
    }
    answer = _run_in_its_own_process(request)
    error = answer.get("error")
    if error == "warning":  # "You can only execute one statement at a time."
        raise CheckFailed(
            f"SQLite refused the query: {answer['message']}",
            "return one SELECT statement, without a second one after ';'",
        )
    if error == "denied":
        raise CheckFailed(
            f"SQLite refused the query: {answer['message']}",
            "the query may only read: one SELECT, no CREATE, INSERT, ATTACH or PRAGMA",
        )
    if error == "sqlite":
        raise CheckFailed(f"SQLite refused the query: {answer['message']}")
    if error == "no-result":
        raise CheckFailed("the statement returned no result set; write a SELECT")
    return list(answer["columns"]), [tuple(row) for row in answer["rows"]]


def _run_in_its_own_process(request: dict[str, Any]) -> dict[str, Any]:
    """Run the query in a fresh ``python -I -S`` process (``_sql_runner.py``), killed after
    SQL_SECONDS of query time, or sooner when the exercise's time budget
    (:func:`~qkv.exercises.core.current_budget`) runs out first: a single SQLite
    function call (a LIKE on a megabyte string) gives no progress handler a chance."""
    budget = current_budget()
    request = {**request, "checker": os.getpid(), "cpu_seconds": math.ceil(SQL_SECONDS) + 1}
    data = f"{json.dumps(_RUNNER_PROGRAM)}\n{json.dumps(request)}".encode()
    with hold_interrupts():
        runner = subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", _BOOTSTRAP],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env={},
            start_new_session=True,
        )
    try:
        out = _talk_to_runner(runner, data, budget)
    finally:
        if runner.poll() is None:
            runner.kill()
        runner.wait()
        for stream in (runner.stdin, runner.stdout):
            assert stream is not None
            stream.close()
    if runner.returncode != 0 or not out:
        raise CheckFailed(f"SQLite could not run the query (its process ended with status {runner.returncode})")
    try:
        return json.loads(out.decode("utf-8"))
    except ValueError:
        raise CheckFailed("SQLite's answer to the query could not be read") from None


def _read_until(fd: int, out: bytearray, seconds: float, *, line: bool) -> bool:
    """Read from ``fd`` into ``out`` until a newline (``line``) or the end; False if ``seconds`` ran out."""
    end = time.monotonic() + seconds
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        while not (line and b"\n" in out):
            left = end - time.monotonic()
            if left <= 0 or not selector.select(timeout=left):
                return False
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                return True
            out += chunk
    return True


def _talk_to_runner(runner: subprocess.Popen[bytes], data: bytes, budget: TimeBudget | None) -> bytes:
    """Send the program and request; return the answer. The query's time (from the runner's
    ``ready`` line to its answer) is charged to ``budget``."""
    assert runner.stdin is not None and runner.stdout is not None
    started = time.monotonic()
    try:
        sent = write_within(runner.stdin.fileno(), data, _START_SECONDS)
    except OSError:  # it ended before reading it all
        sent = 0.0
    runner.stdin.close()
    out = bytearray()
    fd = runner.stdout.fileno()
    left = _START_SECONDS - (time.monotonic() - started)
    if sent is None or not _read_until(fd, out, left, line=True):
        raise CheckFailed(f"SQLite's process did not start within {_START_SECONDS:g} s (a busy machine?)")
    head, _, rest = bytes(out).partition(b"\n")
    if head != b"ready":
        return bytes(out)  # it ended before the query ran: an empty answer, or an error
    limit = SQL_SECONDS if budget is None else min(SQL_SECONDS, budget.remaining())
    query_started = time.monotonic()
    out = bytearray(rest)
    finished = _read_until(fd, out, limit, line=False)
    if budget is not None:
        budget.spend(time.monotonic() - query_started)
    if finished:
        return bytes(out)
    runner.kill()  # each later check would wait as long again for the same query
    if limit < SQL_SECONDS:
        assert budget is not None
        raise LearnerAborted(budget.describe("in the query: an endless recursive CTE?"), fatal=True)
    raise LearnerAborted(
        f"the query was still running after {SQL_SECONDS:g} s (an endless recursive CTE, or a slow "
        "function on a long string?)",
        fatal=False,
    )


def weights_from_rows(columns: list[str], rows: list[tuple], visible: np.ndarray) -> np.ndarray:
    """The result as a (L_q, L_k) array (NULL -> nan; 0 where not visible).

    Raises CheckFailed if the columns are not ``qpos, kpos, weight``, the
    rows are not exactly one per visible pair, or a weight is not a number.

    Examples
    --------
    >>> import numpy as np
    >>> weights_from_rows(["qpos", "kpos", "weight"], [(0, 0, "n/a")], np.ones((1, 1), dtype=bool))
    Traceback (most recent call last):
    ...
    qkv.exercises.core.CheckFailed: the row (0, 0, 'n/a') has a weight that is not a number
    """
    if columns != COLUMNS:
        raise CheckFailed(
            f"expected the columns {', '.join(COLUMNS)}, got {', '.join(columns) or 'none'}",
            "name them with AS: SELECT qpos, kpos, ... AS weight",
        )
    out = np.zeros(visible.shape)
    seen = np.zeros(visible.shape, dtype=bool)
    if len(rows) > visible.sum():
        raise CheckFailed(f"expected {int(visible.sum())} rows, one per row of scores; got more ({len(rows)} or more)")
    for qpos, kpos, weight in rows:
        in_table = isinstance(qpos, int) and isinstance(kpos, int)
        in_table = in_table and 0 <= qpos < visible.shape[0] and 0 <= kpos < visible.shape[1]
        if not (in_table and visible[qpos, kpos]):
            raise CheckFailed(f"the row ({qpos!r}, {kpos!r}, ...) is not a (qpos, kpos) pair of the scores table")
        if seen[qpos, kpos]:
            raise CheckFailed(f"the pair (qpos, kpos) = ({qpos}, {kpos}) comes back twice; return one row per score")
        seen[qpos, kpos] = True
        if weight is not None and (isinstance(weight, bool) or not isinstance(weight, (int, float))):
            raise CheckFailed(
                f"the row ({qpos}, {kpos}, {safe_text(repr(weight), 60)}) has a weight that is not a number",
                "the weight must be a number (REAL): no text, no blob",
            )
        out[qpos, kpos] = np.nan if weight is None else float(weight)
    missing = np.argwhere(visible & ~seen)
    if len(missing):
        i, j = (int(x) for x in missing[0])
        raise CheckFailed(
            f"no row for (qpos, kpos) = ({i}, {j}): return one row per row of scores ({len(missing)} missing)"
        )
    return out


def _row_softmax(scores: np.ndarray, visible: np.ndarray) -> np.ndarray:
    out = np.zeros(scores.shape)
    for i in range(scores.shape[0]):
        if visible[i].any():
            out[i, visible[i]] = softmax(scores[i, visible[i]])
    return out


def weight_variants_sql(scores: np.ndarray, visible: np.ndarray) -> list[Variant]:
    """What the classic mistakes of a window softmax return on ``scores``.

    Examples
    --------
    >>> import numpy as np
    >>> s = np.array([[2.0, 0.0, 1.0]])
    >>> keys, running = weight_variants_sql(s, np.ones((1, 3), dtype=bool))[0]
    >>> keys, running.round(4).tolist()
    (('sql-window-order-by',), [[1.0, 0.1192, 0.2447]])
    """
    with np.errstate(all="ignore"):
        masked = np.where(visible, scores, -np.inf)  # (L_q, L_k)
        row_max = masked.max(axis=1, keepdims=True)
        e_row = np.where(visible, np.exp(masked - row_max), 0.0)
        running = np.where(visible, e_row / np.cumsum(e_row, axis=1), 0.0)
        e_raw = np.where(visible, np.exp(masked), 0.0)
        naive = np.where(visible, e_raw / e_raw.sum(axis=1, keepdims=True), 0.0)
        e_global = np.where(visible, np.exp(masked - masked.max()), 0.0)
        global_max = np.where(visible, e_global / e_global.sum(axis=1, keepdims=True), 0.0)
        whole_row = np.where(visible, e_row / e_row.sum(), 0.0)
        whole_raw = np.where(visible, e_raw / e_raw.sum(), 0.0)
    return [
        (("sql-window-order-by",), running),
        (("sql-no-partition",), whole_row),
        (("sql-no-partition",), whole_raw),
        (("sql-no-max",), naive),
        (("sql-global-max",), global_max),
    ] + [(("sql-shift-below-max",), shifted) for shifted in _shifted_below_max(scores, visible)]


def _shifted_below_max(scores: np.ndarray, visible: np.ndarray) -> list[np.ndarray]:
    """The weights of ``exp(score - shift) / SUM(...)`` for shifts other than the row's maximum.

    Each query's average, minimum, first and last score (in kpos order, as
    FIRST_VALUE and LAST_VALUE over the partition see it in SQLite), and
    the midpoints (max + avg) / 2 and (max + min) / 2. Any of them is right
    on paper; more than about 709 below the maximum, exp overflows and the
    weight is NULL.
    """
    with np.errstate(all="ignore"):
        masked = np.where(visible, scores, np.nan)  # (L_q, L_k), NaN where no row
        any_row = visible.any(axis=1)
        first = np.argmax(visible, axis=1)  # first visible kpos per query
        last = visible.shape[1] - 1 - np.argmax(visible[:, ::-1], axis=1)
        rows = np.arange(scores.shape[0])
        row_max = np.nanmax(np.where(any_row[:, None], masked, 0.0), axis=1)
        row_avg = np.nanmean(np.where(any_row[:, None], masked, 0.0), axis=1)
        row_min = np.nanmin(np.where(any_row[:, None], masked, 0.0), axis=1)
        shifts = [
            row_avg,
            row_min,
            scores[rows, first],
            scores[rows, last],
            (row_max + row_avg) / 2,
            (row_max + row_min) / 2,
        ]
        out = []
        for shift in shifts:
            e = np.where(visible, np.exp(np.where(visible, scores, 0.0) - shift[:, None]), 0.0)
            out.append(np.where(visible, e / e.sum(axis=1, keepdims=True), 0.0))
    return out


checks = CheckList()
Fn = Callable[..., Any]


def _bank_scores() -> np.ndarray:
    x = toy.bank_sentence(["money", "bank", "grows"])  # (3, 4)
    q, k = x @ toy.W_QUERY, x @ toy.W_KEY  # (3, 4) each
    return q @ k.T / np.sqrt(q.shape[1])  # (3, 4) @ (4, 3) -> (3, 3)


def _expect_weights(fn: Fn, scores: np.ndarray, visible: np.ndarray | None = None, note: str = "") -> None:
    visible = np.ones(scores.shape, dtype=bool) if visible is None else visible
    columns, rows = run_learner_sql(call(fn), scores, visible)
    actual = weights_from_rows(columns, rows, visible)
    expected = _row_softmax(scores, visible)
    expect_close(actual, expected, "weight", weight_variants_sql(scores, visible), note=note)


@checks.add(
    "softmax_query", "softmax_query() returns one SELECT with the columns qpos, kpos, weight, one row per score"
)
def _shape(fn: Fn) -> None:
    scores = _bank_scores()
    visible = np.ones(scores.shape, dtype=bool)
    weights_from_rows(*run_learner_sql(call(fn), scores, visible), visible)


@checks.add("softmax_query", "the query is a window query: an aggregate with OVER (PARTITION BY qpos)")
def _window(fn: Fn) -> None:
    sql = call(fn)
    code = _COMMENTS_AND_STRINGS.sub(" ", sql if isinstance(sql, str) else "")
    if not re.search(r"\bOVER\b", code, re.IGNORECASE):
        raise CheckFailed(
            "the query has no window function (no OVER outside comments and strings)",
            "write the row's maximum and total as MAX(score) OVER (PARTITION BY qpos) "
            "and SUM(...) OVER (PARTITION BY qpos)",
        )
    if not re.search(r"\bPARTITION\s+BY\b", code, re.IGNORECASE):
        raise CheckFailed(
            "the query's windows have no PARTITION BY: one softmax over every query's scores at once",
            mistakes=("sql-no-partition",),
        )


@checks.add("softmax_query", "bank example: bank's scores [2, 0, 1] give the weights [0.6652, 0.0900, 0.2447]")
def _bank(fn: Fn) -> None:
    _expect_weights(fn, _bank_scores(), note="expected values: qkv.softmax of each query's scores")


@checks.add("softmax_query", "a causal mask: each query's weights over the keys it has rows for sum to 1")
def _masked(fn: Fn) -> None:
    scores = np.random.default_rng(15).normal(size=(4, 4))
    visible = np.tril(np.ones((4, 4), dtype=bool))  # kpos <= qpos
    _expect_weights(fn, scores, visible)


@checks.add("softmax_query", "scores of +1000 and -1000 give finite weights: subtract each query's maximum")
def _large(fn: Fn) -> None:
    scores = np.array([[1000.0, 1001.0, 1002.0], [-1000.0, -1001.0, -1002.0]])
    _expect_weights(fn, scores)


@checks.add(
    "softmax_query",
    "a wide spread: scores [-1e5, -1e5, 0] and [0, -1e5, -1e5] give the weights [0, 0, 1] and [1, 0, 0] "
    "(shift by the maximum, not the average, minimum, first or last score)",
)
def _wide(fn: Fn) -> None:
    # exp(score - max) is exp(-1e5) = 0 and exp(0) = 1. Shifted by anything more than
    # about 709 below the maximum, the maximum's exp(...) overflows to inf and inf / inf
    # is NULL: the average (-66,667), the minimum and the midpoints (max + avg) / 2 and
    # (max + min) / 2 in both rows, the first score in the first row, the last score in
    # the second (the maximum sits at either end, so neither end is always the maximum).
    # Without any shift both rows are fine (exp(-1e5) = 0), so only the shift is named.
    _expect_weights(fn, WIDE_SPREAD)


EXERCISE = Exercise(
    name="sql-softmax",
    number=3,
    title="the softmax as a window query (SQL)",
    functions=(FunctionSpec("softmax_query", "softmax_query()"),),
    checks=tuple(checks),
    starter="sql_softmax.py",
)
