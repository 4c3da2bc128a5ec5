"""Parts of docs/chapters/attention-sql.md computed when the site is built.

The SQL the page shows comes from the package's ``.sql`` files through
``qkv.sql.query_text`` (one home for the text: the page, the tests and the
library run the same files). PostgreSQL's and DuckDB's plans and the timing
table come from the committed result files of ``make plans-sql`` and
``make bench-sql`` (benchmarks/results/): not every reader has a PostgreSQL,
and timings are measured on purpose, not at build time.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

import qkv
import qkv.sql
from parts import value

RESULTS = Path(__file__).resolve().parents[2] / "benchmarks" / "results"
BANK = ("money", "bank", "grows")
# The padding example: the third position is filler, not a word.
PADDING_VALID = (True, True, False)
DATABASES = ("SQLite", "PostgreSQL", "DuckDB")


def sql_block(text: str, *classes: str) -> str:
    """A fenced SQL block; the page's Run buttons (sql-runner.js) find it by class."""
    attrs = " ".join(["." + "sql", ".qkv-sql", *("." + c for c in classes)])
    return "```{" + attrs + "}\n" + text.rstrip("\n") + "\n```"


def _package(name: str) -> str:
    return sql_block(qkv.sql.query_text(name))


def _rows(table: str, arr) -> str:
    pos, dim = np.indices(arr.shape)  # (L, d) each: the long form, row by row
    rows = [f"({p}, {d}, {float(arr[p, d])!r})" for p, d in zip(pos.ravel(), dim.ravel())]
    lines = ",\n  ".join(", ".join(rows[i : i + 4]) for i in range(0, len(rows), 4))
    return f"INSERT INTO {table} (pos, dim, val) VALUES\n  {lines};"


@value("sql_bank_tables")
def sql_bank_tables() -> str:
    """tables.sql, then the bank sentence's Q, K, V as rows (the page's first runnable block)."""
    x = qkv.toy.bank_sentence(list(BANK))  # (3, 4)
    q, k, v = x @ qkv.toy.W_QUERY, x @ qkv.toy.W_KEY, x @ qkv.toy.W_VALUE  # (3, 4) each
    inserts = "\n".join(_rows(name, arr) for name, arr in (("q", q), ("k", k), ("v", v)))
    header = "-- The bank sentence, money bank grows: the toy head's Q, K and V, one row per number."
    return sql_block(qkv.sql.query_text("tables") + "\n" + header + "\n" + inserts)


for _name in ("scores", "mask_none", "weights", "output", "mask_causal", "mask_padding", "mask_pairs"):
    value("sql_" + _name)(lambda _name=_name: _package(_name))


@value("sql_tokens_rows")
def sql_tokens_rows() -> str:
    rows = ", ".join(f"({pos}, {'TRUE' if ok else 'FALSE'})" for pos, ok in enumerate(PADDING_VALID))
    select = "SELECT qpos, kpos, weight FROM weights ORDER BY qpos, kpos;"
    return sql_block(f"INSERT INTO tokens (pos, valid) VALUES {rows};\n{select}")


def _plans() -> dict:
    return json.loads((RESULTS / "sql-plans.json").read_text(encoding="utf-8"))


def _plan_of(database: str, head: str) -> str:
    for entry in _plans()["plans"]:
        if entry["head"] == head:
            return entry["plans"][database]
    raise KeyError(f"sql-plans.json has no head {head!r}: run make plans-sql")


@value("plan_postgresql")
def plan_postgresql() -> str:
    """PostgreSQL's plan at L = 256, from the committed file, lines numbered for the reading."""
    lines = _plan_of("PostgreSQL", "random L=256").splitlines()
    return "```text\n" + "\n".join(f"{n:>2} {line}" for n, line in enumerate(lines, 1)) + "\n```"


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
    """The measured table: rows of the score relation and of the join, time per database and NumPy."""
    data = _bench()
    times = " | ".join(f"{n} ms" for n in (*DATABASES, "NumPy"))
    head = f"| L | score rows (L²) | join rows (L² d_k) | {times} |"
    rule = "|" + "---:|" * (3 + len(DATABASES) + 1)
    body = []
    for row in data["rows"]:
        times = " | ".join(f"{row['seconds'][n] * 1e3:.3f}" for n in (*DATABASES, "NumPy"))
        body.append(f"| {row['L']} | {row['score_rows']:,} | {row['join_rows']:,} | {times} |")
    return "\n".join([head, rule, *body])


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


@value("bench_numpy_growth")
def bench_numpy_growth() -> str:
    """NumPy's own time from the second largest L to the largest, against its work."""
    rows = _bench()["rows"]
    before, after = rows[-2], rows[-1]
    time_growth = after["seconds"]["NumPy"] / before["seconds"]["NumPy"]
    work_growth = after["score_rows"] // before["score_rows"]
    return (
        f"NumPy's own time grew {time_growth:.2g} times from L = {before['L']} to L = {after['L']}, "
        f"where its work grew {work_growth} times, with {_blas_threads(_bench()['settings'])}"
    )


def _ratio(database: str, index: int) -> float:
    row = _bench()["rows"][index]
    return row["seconds"][database] / row["seconds"]["NumPy"]


@value("bench_max_l")
def bench_max_l() -> str:
    return str(_bench()["rows"][-1]["L"])


def _power_of_ten(ratio: float) -> str:
    """The power of ten nearest to ``ratio`` (in log scale), written out: 9.9 -> "10"."""
    return f"{10 ** round(float(np.log10(ratio))):,}"


def _ratio_range(index: int) -> str:
    ratios = sorted(_ratio(n, index) for n in DATABASES)
    return f"{ratios[0]:.2g} to {ratios[-1]:.3g}" if ratios[0] < 10 else f"{ratios[0]:.0f} to {ratios[-1]:.0f}"


@value("bench_slowdown_orders")
def bench_slowdown_orders() -> str:
    """How much slower than NumPy the databases were at the largest L, as orders of magnitude.

    Timings at these sizes (a few ms, on a shared machine) move by several
    times from size to size and run to run, so the page states the nearest
    powers of ten, with the measured ratios in brackets.
    """
    ratios = sorted(_ratio(n, -1) for n in DATABASES)
    low, high = _power_of_ten(ratios[0]), _power_of_ten(ratios[-1])
    orders = f"about {low}" if low == high else f"about {low} to {high}"
    return f"{orders} times NumPy's time (nearest powers of ten; measured {_ratio_range(-1)} times)"


@value("bench_previous_ratios")
def bench_previous_ratios() -> str:
    """The databases' time over NumPy's at the second largest L: how much the ratios move."""
    rows = _bench()["rows"]
    return f"{_ratio_range(-2)} times at L = {rows[-2]['L']}"


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
