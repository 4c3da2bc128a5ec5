"""Parts of docs/chapters/attention-sql.md computed when the site is built.

The SQL the page shows comes from the package's ``.sql`` files through
``qkv.sql.query_text`` (one home for the text: the page, the tests and the
library run the same files), without their comment lines
(docs/hooks/sql_blocks.py, shared with chapter 9b). PostgreSQL's and DuckDB's plans and the timing
table come from the committed result files of ``make plans-sql`` and
``make bench-sql`` (benchmarks/results/): not every reader has a PostgreSQL,
and timings are measured on purpose, not at build time.
"""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path

import qkv
import qkv.sql
from parts import value
from sql_blocks import compact, in_box, insert_long_form, sql_block, statements

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results"
#: The SQLite that the page's Run buttons load (docs/hooks/hooks.py copies it into the site).
SQLJS_WASM = ROOT / "node_modules" / "sql.js" / "dist" / "sql-wasm.wasm"
BANK = ("money", "bank", "grows")
# The padding example: the third position is filler, not a word.
PADDING_VALID = (True, True, False)
DATABASES = ("SQLite", "PostgreSQL", "DuckDB")


@value("sql_bank_tables")
def sql_bank_tables() -> str:
    """tables.sql, then the bank sentence's Q, K, V as rows (the page's first runnable block)."""
    x = qkv.toy.bank_sentence(list(BANK))  # (3, 4)
    q, k, v = x @ qkv.toy.W_QUERY, x @ qkv.toy.W_KEY, x @ qkv.toy.W_VALUE  # (3, 4) each
    inserts = "\n".join(insert_long_form(name, arr) for name, arr in (("q", q), ("k", k), ("v", v)))
    return sql_block(compact(statements("tables")) + "\n" + inserts)


for _name in ("weights", "output", "mask_pairs"):
    value("sql_" + _name)(lambda _name=_name: sql_block(statements(_name)))


@value("sql_scores")
def sql_scores() -> str:
    """scores.sql, then mask_none.sql: the scores, all of them visible (one runnable block)."""
    return sql_block(statements("scores") + "\n" + statements("mask_none"))


#: What the mask blocks return when run: the weights they leave.
SELECT_WEIGHTS = "SELECT qpos, kpos, weight FROM weights ORDER BY qpos, kpos;"


@value("sql_mask_causal")
def sql_mask_causal() -> str:
    """mask_causal.sql, then the weights it leaves (the views are late bound)."""
    rounded = SELECT_WEIGHTS.replace("weight FROM", "round(weight, 4) AS weight FROM")
    return sql_block(statements("mask_causal") + "\n" + rounded)


@value("sql_mask_padding")
def sql_mask_padding() -> str:
    """mask_padding.sql, then the tokens of the padding example and the weights they leave."""
    rows = ", ".join(f"({pos}, {'TRUE' if ok else 'FALSE'})" for pos, ok in enumerate(PADDING_VALID))
    tokens = f"INSERT INTO tokens (pos, valid) VALUES {rows};"
    return sql_block(compact(statements("mask_padding")) + "\n" + tokens + "\n" + SELECT_WEIGHTS)


@value("sqlite_version")
def sqlite_version() -> str:
    """The SQLite of the Python that builds the page (and runs its blocks)."""
    return sqlite3.sqlite_version


@value("sqljs_sqlite_version")
def sqljs_sqlite_version() -> str:
    """The SQLite compiled into sql.js, read from its WebAssembly (its one version string)."""
    found = set(re.findall(rb"(?<![\d.])3\.\d{1,2}\.\d{1,2}(?![\d.])", SQLJS_WASM.read_bytes()))
    if len(found) != 1:
        raise ValueError(f"expected one SQLite version string in {SQLJS_WASM}, found {sorted(found)}")
    return found.pop().decode()


def _plans() -> dict:
    return json.loads((RESULTS / "sql-plans.json").read_text(encoding="utf-8"))


def _plan_of(database: str, head: str) -> str:
    for entry in _plans()["plans"]:
        if entry["head"] == head:
            return entry["plans"][database]
    raise KeyError(f"sql-plans.json has no head {head!r}: run make plans-sql")


@value("plan_postgresql")
def plan_postgresql() -> str:
    """PostgreSQL's plan at L = 256, from the committed file, lines numbered for the reading
    (the page shows it in a Deeper box)."""
    lines = _plan_of("PostgreSQL", "random L=256").splitlines()
    return in_box("```text\n" + "\n".join(f"{n:>2} {line}" for n, line in enumerate(lines, 1)) + "\n```")


@value("plans_made")
def plans_made() -> str:
    data = _plans()
    v = data["versions"]
    return (
        f"`{data['command']}` on {data['date'][:10]}, PostgreSQL {v['postgresql']}, "
        f"DuckDB {v['duckdb']}, SQLite {v['sqlite']}"
    )


def _bench() -> dict:
    return json.loads((RESULTS / "sql-attention.json").read_text(encoding="utf-8"))


@value("bench_table")
def bench_table() -> str:
    """The measured table: rows of the score relation, and the time of each database and of NumPy
    in ms (the page shows it in a Deeper box). Six short columns fit the text column at 1280 px;
    the join's rows, d_k times the scores, are counted in the block above the plans."""
    data = _bench()
    head = "| L | scores (L²) | " + " | ".join(DATABASES) + " | NumPy |"
    rule = "|" + "---:|" * (2 + len(DATABASES) + 1)
    body = []
    for row in data["rows"]:
        times = " | ".join(f"{row['seconds'][n] * 1e3:.3f}" for n in (*DATABASES, "NumPy"))
        body.append(f"| {row['L']} | {row['score_rows']:,} | {times} |")
    return in_box("\n".join([head, rule, *body]))


@value("sql_exercise_wide_rows")
def sql_exercise_wide_rows() -> str:
    """The exercise checker's wide-spread rows, as the page names them: `[-1e5, -1e5, 0]` and ...."""
    from qkv.exercises.sql_softmax import WIDE_SPREAD

    def number(x: float) -> str:
        if x == 0 or abs(x) < 1e4:
            return f"{x:g}"
        mantissa, exponent = f"{x:.0e}".split("e")
        return f"{mantissa}e{int(exponent)}"

    rows = ["`[" + ", ".join(number(x) for x in row) + "]`" for row in WIDE_SPREAD]
    return ", ".join(rows[:-1]) + " and " + rows[-1]


@value("bench_machine")
def bench_machine() -> str:
    """What the result file says about where and how it was measured."""
    data = _bench()
    m, v, s = data["machine"], data["versions"], data["settings"]
    # More runnable work than cores: other jobs competed for the processors.
    busy = " (more work than cores: a busy machine)" if m["load_before"][0] > m["cores"] else ""
    return (
        f"`{data['command']}` on {data['date'][:10]}: {m['cpu']}, {m['cores']} cores, "
        f"load average {m['load_before'][0]} before and {m['load_after'][0]} after{busy}; "
        f"d_k = d_v = {s['d_k']}, the median of "
        f"{s['repeats']} runs after {s['warmup_runs']} warm-up; SQLite {v['sqlite']}, "
        f"PostgreSQL {v['postgresql']}, DuckDB {v['duckdb']} ({v['duckdb_threads']} threads), "
        f"NumPy {v['numpy']} ({_blas_threads(s)})"
    )


def _blas_threads(settings: dict) -> str:
    """NumPy's BLAS thread count as the result file records it (files before the setting do not)."""
    threads = settings.get("blas_threads")
    if threads is None:
        return "its BLAS threads not set by the script: OpenBLAS's default, one per core"
    return f"{threads} BLAS thread{'s' if threads != 1 else ''}"


def _ratio(database: str, index: int) -> float:
    row = _bench()["rows"][index]
    return row["seconds"][database] / row["seconds"]["NumPy"]


@value("bench_max_l")
def bench_max_l() -> str:
    return str(_bench()["rows"][-1]["L"])


def _ratio_range(index: int) -> str:
    ratios = sorted(_ratio(n, index) for n in DATABASES)
    return f"{ratios[0]:.2g} to {ratios[-1]:.3g}" if ratios[0] < 10 else f"{ratios[0]:.0f} to {ratios[-1]:.0f}"


@value("bench_slowdown_orders")
def bench_slowdown_orders() -> str:
    """How much slower than NumPy the databases were at the largest L: the measured range.

    Timings at these sizes (a few ms, on a shared machine) move by several
    times from size to size and run to run; the page says to read them as
    orders of magnitude. It states the measured ratios only: rounded to
    powers of ten, 53 read as "about 100" (a learner's finding).
    """
    return f"{_ratio_range(-1)} times NumPy's time"


def _flat(name: str, rows: list) -> str | None:
    """'between A and B ms from L = x to L = y' when ``name``'s time stayed within a factor 2 over ``rows``."""
    times = [row["seconds"][name] * 1e3 for row in rows]
    if max(times) >= 2 * min(times):
        return None
    low, high = min(times), max(times)
    digits = 0 if low >= 10 else 2
    return f"between {low:.{digits}f} and {high:.{digits}f} ms from L = {rows[0]['L']} to L = {rows[-1]['L']}"


@value("bench_numpy_flat")
def bench_numpy_flat() -> str:
    """NumPy's time below the largest L in this run (or its growth, if it grew)."""
    rows = _bench()["rows"][:-1]
    flat = _flat("NumPy", rows)
    if flat is not None:
        return (
            f"in this run NumPy's time stayed {flat}, while the rows grew "
            f"{rows[-1]['score_rows'] // rows[0]['score_rows']} times"
        )
    growth = rows[-1]["seconds"]["NumPy"] / rows[0]["seconds"]["NumPy"]
    return f"in this run NumPy's time grew {growth:.1f} times from L = {rows[0]['L']} to L = {rows[-1]['L']}"


@value("bench_ratio_change")
def bench_ratio_change() -> str:
    """Each contender's time growth from the second largest L to the largest, in this run.

    Only what was measured: one run's growth between two sizes is noisy (a
    referee timed DuckDB's process CPU over interleaved sizes and found it
    growing 5.6 times from L = 64 to 256 where a busy run's wall time looked
    flat), so the page does not say why a ratio moved.
    """
    rows = _bench()["rows"]
    before, after = rows[-2], rows[-1]
    work = after["score_rows"] // before["score_rows"]

    def growth(name: str) -> float:
        return after["seconds"][name] / before["seconds"][name]

    grew = ", ".join(f"{n}'s {growth(n):.1f}" for n in DATABASES)
    return (
        f"From L = {before['L']} to L = {after['L']} the rows grew {work} times; in this run NumPy's time grew "
        f"{growth('NumPy'):.1f} times, {grew}: one run's growth between two sizes moves from run to run."
    )


@value("bench_sqlite_growth")
def bench_sqlite_growth() -> str:
    """SQLite's time at the largest L over its time at the smallest."""
    rows = _bench()["rows"]
    return f"{rows[-1]['seconds']['SQLite'] / rows[0]['seconds']['SQLite']:.0f}"


@value("bench_l_growth")
def bench_l_growth() -> str:
    rows = _bench()["rows"]
    return f"{rows[-1]['L'] // rows[0]['L']}"


@value("bench_rows_growth")
def bench_rows_growth() -> str:
    rows = _bench()["rows"]
    return f"{rows[-1]['score_rows'] // rows[0]['score_rows']:,}"


@value("bench_max_error")
def bench_max_error() -> str:
    worst = max(e for row in _bench()["rows"] for e in row["max_abs_error"].values())
    return f"{worst:.1e}"
