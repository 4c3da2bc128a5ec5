"""The table layout as a DBA's choice: one value per row against one vector per row, on three databases.

Not a test (timings vary from run to run): a benchmark that prints a table
and writes ``benchmarks/results/sql-layout.json``. Run it with
``make bench-layout`` on a quiet machine.

**What is measured: the two steps of a multi-head attention layer that
dominate it, not the whole layer.** The projection ``Q = x @ W_q.T + b_q``
(``L * E * E`` multiply-adds) and the scores of every head
``Q_h @ K_h.T / sqrt(d_head)`` (``L * L * E``) are the joins whose sizes the
layout decides; the softmax and the output projection that follow repeat
them (the softmax works on the score rows, the same in every layout). Each
step runs from its own loaded inputs: the projection from ``x``, the packed
``in_proj_weight`` ``[W_q; W_k; W_v]`` and ``in_proj_bias``; the scores from
NumPy's ``Q`` and ``K`` already split into heads, so that each step's time
and row counts are its own.

The layouts:

* **long form**, one value per row, ``(pos, dim, val)``: qkv.sql's own
  tables and queries, run verbatim from the package's files. The projection
  is ``mha_tables.sql`` + ``mha_project.sql`` (the view ``q_proj``: a join of
  ``query_in`` and ``in_proj`` on ``in_dim``, ``GROUP BY pos, out_dim``); the
  scores are ``mha_scores.sql`` (the view ``head_scores``: a join on
  ``(head, hdim)``, ``GROUP BY head, qpos, kpos``) over tables ``q_heads`` and
  ``k_heads`` that this script creates in place of ``mha_split.sql``'s views
  and fills with NumPy's projections (``LONG_HEADS_TABLES``).
* **arrays**, one vector per row: ``x_vec(pos, vec)``, ``w_vec(out_dim,
  bias, vec)`` (one row of ``in_proj_weight`` and its bias per row, all
  ``3E`` of them, cut by ``out_dim < d_model`` as in the long form),
  ``q_vec(head, pos, vec)`` and ``k_vec(head, pos, vec)``. A dot product is
  a function call per pair of rows, so the join pairs rows, not values.
  The library does not use this layout, so its SQL is here, not in the
  package: ``ARRAY_TABLES``, ``ARRAY_PROJECTION`` and ``ARRAY_SCORES`` below,
  with the per-database pieces in ``VECTOR``:

  - DuckDB: ``DOUBLE[]`` and ``list_dot_product``; the projection's result
    is one ``list(... ORDER BY out_dim)`` per position;
  - PostgreSQL: ``float8[]`` (``DOUBLE PRECISION[]``). PostgreSQL has no
    dot product of arrays built in (the ``vector`` type of the pgvector
    extension holds float4, which loses digits at 1e-7); the idiomatic SQL
    is a scalar subquery ``SELECT sum(a * b) FROM unnest(x, y) AS t(a, b)``
    (``unnest`` of two arrays zips them), and ``array_agg(... ORDER BY
    out_dim)`` builds the projected vector;
  - SQLite has no array type: JSON arrays in ``TEXT`` columns, the dot
    product ``SELECT SUM(e.value * (y ->> e.key)) FROM json_each(x) AS e``
    (``->>`` with an integer reads one element; SQLite keeps the last parsed
    JSON texts of a statement, so ``y`` is not parsed again for each
    element), the vector ``json_group_array`` over an ordered subquery. JSON
    is text: every dot product parses both vectors, and
    ``json_group_array`` writes 15 significant digits (about 1e-15
    relative, inside the 1e-12 check).
* **tiles** (blocks of b x b values per row, as the issue describes
  TranSQL+, arXiv 2502.02818) are not measured: a product of two tiles is a
  small matrix product per pair of rows, which none of the three databases
  has as a function, so it would be written as a list comprehension over
  b x b elements per pair, a different program rather than a layout.

For each point (``L`` in 8, 16, 32, 64 at ``E = 16``, and ``E`` in 8, 16,
32, 64 at ``L = 16``, ``num_heads = 2``), each step, layout and database:
the inputs are loaded (not timed), the step's result is read once and
checked against NumPy to 1e-12 (max absolute difference; a larger one stops
the run), then timed from the client as one ``SELECT`` of the step's view,
fetched whole: one warm-up run, then the median of ``--repeats`` runs.
NumPy's time is the same step on the same arrays, ``x @ W_q.T + b_q`` and
``Q_h @ K_h.transpose(0, 2, 1) / sqrt(d_head)``, each sample the mean of
enough calls to last 0.2 s, on one BLAS thread (as ``make bench-sql``, whose
``blas_threads`` this script shares). Then the row counts, as each database
reports them, from one more run of the query that is not timed:

* PostgreSQL: ``EXPLAIN (ANALYZE, FORMAT JSON)``. ``scanned`` is the rows
  every scan node read (table scans, and the ``Function Scan`` of
  ``unnest``: one row per element), actual rows plus rows removed by a
  filter, times loops; ``join_rows`` the largest join node's output (rows
  times loops); ``tuples`` the rows every node passed up, summed.
* DuckDB: ``EXPLAIN (ANALYZE, FORMAT JSON)``. ``scanned`` is
  ``rows_scanned`` of its table scans; ``join_rows`` the largest join's or
  cross product's ``intermediate_rows``; ``tuples`` every operator's
  ``intermediate_rows``, summed.
* SQLite has no EXPLAIN ANALYZE (its scan counters are not reachable from
  Python's ``sqlite3``): ``join_rows`` is ``COUNT(*)`` of the step's join
  written out without its ``GROUP BY`` (``JOIN_COUNTS``), and ``vm_steps`` the
  virtual-machine instructions the query ran (a progress handler called
  every instruction), with ``EXPLAIN QUERY PLAN`` as its plan.

Options: ``--lengths 8,16,32,64`` ``--widths 8,16,32,64``
``--fixed-length 16`` ``--fixed-width 16`` ``--heads 2`` ``--repeats 5``
``--out PATH``.
"""

from __future__ import annotations

import os
import sys

#: NumPy's BLAS threads, fixed before NumPy is imported: sql_attention.py's settings (a test holds them equal).
BLAS_THREADS = "1"
BLAS_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
if __name__ == "__main__":  # not on import: the tests import this module and keep their own settings
    for _var in BLAS_VARIABLES:
        os.environ[_var] = BLAS_THREADS

import argparse  # noqa: E402
import datetime  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import sqlite3  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
import timeit  # noqa: E402
from collections.abc import Callable  # noqa: E402
from contextlib import ExitStack  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

import qkv.sql  # noqa: E402
from machine import cpu_model  # noqa: E402
from qkv.sql import _dialect  # noqa: E402
from sql_attention import blas_threads, running_postgres, versions  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
RESULT = ROOT / "benchmarks" / "results" / "sql-layout.json"
SEED = 0
DATABASES = ("SQLite", "PostgreSQL", "DuckDB")
LAYOUTS = ("long form", "arrays")
STEPS = ("projection", "scores")
TOLERANCE = 1e-12

# --- long form: the package's own files, and the two tables mha_split.sql's views become here

LONG_HEADS_TABLES = """
CREATE TEMP TABLE q_heads (
  head INTEGER NOT NULL,
  pos INTEGER NOT NULL,
  hdim INTEGER NOT NULL,
  val DOUBLE PRECISION NOT NULL,
  PRIMARY KEY (head, pos, hdim)
);
CREATE TEMP TABLE k_heads (
  head INTEGER NOT NULL,
  pos INTEGER NOT NULL,
  hdim INTEGER NOT NULL,
  val DOUBLE PRECISION NOT NULL,
  PRIMARY KEY (head, pos, hdim)
);
"""

# --- arrays: one vector per row. {vector} is the database's array type (VECTOR).

ARRAY_TABLES = """
CREATE TEMP TABLE x_vec (
  pos INTEGER NOT NULL PRIMARY KEY,
  vec {vector} NOT NULL
);
CREATE TEMP TABLE w_vec (
  out_dim INTEGER NOT NULL PRIMARY KEY,
  bias DOUBLE PRECISION NOT NULL,
  vec {vector} NOT NULL
);
CREATE TEMP TABLE vec_shape (
  d_model INTEGER NOT NULL
);
CREATE TEMP TABLE q_vec (
  head INTEGER NOT NULL,
  pos INTEGER NOT NULL,
  vec {vector} NOT NULL,
  PRIMARY KEY (head, pos)
);
CREATE TEMP TABLE k_vec (
  head INTEGER NOT NULL,
  pos INTEGER NOT NULL,
  vec {vector} NOT NULL,
  PRIMARY KEY (head, pos)
);
"""

#: The projection x @ W_q.T + b_q: every input row meets every row of W_q
#: (out_dim < d_model of the packed in_proj), one dot product per pair, and
#: the pairs of one position are gathered into its projected vector.
ARRAY_PROJECTION = {
    "SQLite": """
CREATE TEMP VIEW q_proj_vec AS
SELECT pos, json_group_array(val) AS vec
FROM (
  SELECT x.pos, w.out_dim, {dot_xw} + w.bias AS val
  FROM x_vec AS x
  CROSS JOIN w_vec AS w
  CROSS JOIN vec_shape AS s
  WHERE w.out_dim < s.d_model
  ORDER BY x.pos, w.out_dim
)
GROUP BY pos;
""",
    "other": """
CREATE TEMP VIEW q_proj_vec AS
SELECT x.pos, {gather}({dot_xw} + w.bias ORDER BY w.out_dim) AS vec
FROM x_vec AS x
CROSS JOIN w_vec AS w
CROSS JOIN vec_shape AS s
WHERE w.out_dim < s.d_model
GROUP BY x.pos;
""",
}

#: The scores of every head: a query row meets the key rows of its head, one
#: dot product per (head, qpos, kpos); the vector's length is d_head.
ARRAY_SCORES = """
CREATE TEMP VIEW head_scores_vec AS
SELECT q.head, q.pos AS qpos, k.pos AS kpos,
       {dot_qk} / sqrt({length}(q.vec)) AS score
FROM q_vec AS q
JOIN k_vec AS k ON k.head = q.head;
"""

#: What differs per database in the array layout.
VECTOR = {
    "SQLite": {
        "vector": "TEXT",
        "dot": "(SELECT SUM(e.value * ({b} ->> e.key)) FROM json_each({a}) AS e)",
        "length": "json_array_length",
        "gather": "json_group_array",
    },
    "PostgreSQL": {
        "vector": "DOUBLE PRECISION[]",
        "dot": "(SELECT sum(t.a * t.b) FROM unnest({a}, {b}) AS t(a, b))",
        "length": "cardinality",
        "gather": "array_agg",
    },
    "DuckDB": {
        "vector": "DOUBLE[]",
        "dot": "list_dot_product({a}, {b})",
        "length": "len",
        "gather": "list",
    },
}

#: The timed query of each step and layout.
QUERIES = {
    ("projection", "long form"): "SELECT pos, dim, val FROM q_proj",
    ("scores", "long form"): "SELECT head, qpos, kpos, score FROM head_scores",
    ("projection", "arrays"): "SELECT pos, vec FROM q_proj_vec",
    ("scores", "arrays"): "SELECT head, qpos, kpos, score FROM head_scores_vec",
}

#: SQLite's row count of each step's join: the view's FROM and WHERE, counted.
JOIN_COUNTS = {
    ("projection", "long form"): (
        "SELECT COUNT(*) FROM query_in AS x JOIN in_proj AS w ON w.in_dim = x.dim "
        "JOIN in_bias AS b ON b.out_dim = w.out_dim CROSS JOIN layer_shape AS s WHERE w.out_dim < s.d_model"
    ),
    ("scores", "long form"): (
        "SELECT COUNT(*) FROM q_heads AS q JOIN k_heads AS k ON k.head = q.head AND k.hdim = q.hdim"
    ),
    ("projection", "arrays"): (
        "SELECT COUNT(*) FROM x_vec AS x CROSS JOIN w_vec AS w CROSS JOIN vec_shape AS s WHERE w.out_dim < s.d_model"
    ),
    ("scores", "arrays"): "SELECT COUNT(*) FROM q_vec AS q JOIN k_vec AS k ON k.head = q.head",
}


def array_sql(database: str) -> dict[str, str]:
    """The array layout's DDL and views for ``database``, as run."""
    parts = VECTOR[database]

    def dot(a: str, b: str) -> str:
        return parts["dot"].format(a=a, b=b)

    projection = ARRAY_PROJECTION["SQLite" if database == "SQLite" else "other"]
    return {
        "tables": ARRAY_TABLES.format(vector=parts["vector"]).strip(),
        "projection": projection.format(dot_xw=dot("x.vec", "w.vec"), gather=parts["gather"]).strip(),
        "scores": ARRAY_SCORES.format(dot_qk=dot("q.vec", "k.vec"), length=parts["length"]).strip(),
    }


# --- the data and NumPy's answers


@dataclass(frozen=True)
class Point:
    """One size: the inputs, and NumPy's result of each step."""

    length: int
    width: int
    heads: int
    x: np.ndarray  # (L, E)
    w_in: np.ndarray  # (3E, E), packed [W_q; W_k; W_v]
    b_in: np.ndarray  # (3E,)
    q_heads: np.ndarray  # (H, L, d_head), NumPy's Q split into heads
    k_heads: np.ndarray

    @property
    def d_head(self) -> int:
        return self.width // self.heads


def numpy_projection(x: np.ndarray, w_in: np.ndarray, b_in: np.ndarray) -> np.ndarray:
    width = x.shape[1]
    return x @ w_in[:width].T + b_in[:width]


def numpy_scores(q_heads: np.ndarray, k_heads: np.ndarray) -> np.ndarray:
    return q_heads @ k_heads.transpose(0, 2, 1) / np.sqrt(q_heads.shape[2])


def split_heads(m: np.ndarray, heads: int) -> np.ndarray:
    """(L, E) -> (H, L, E / H): head h owns columns h * d_head .. (h + 1) * d_head - 1, as mha_split.sql."""
    length, width = m.shape
    return np.ascontiguousarray(m.reshape(length, heads, width // heads).transpose(1, 0, 2))


def make_point(length: int, width: int, heads: int, seed: int = SEED) -> Point:
    """Seeded inputs; weights at the scale torch initialises (about 1 / sqrt(E))."""
    if width % heads:
        raise SystemExit(f"E={width} is not a multiple of num_heads={heads}")
    rng = np.random.default_rng([seed, length, width])
    x = rng.normal(size=(length, width))
    w_in = rng.normal(size=(3 * width, width)) / np.sqrt(width)
    b_in = rng.normal(size=3 * width) * 0.1
    q = numpy_projection(x, w_in, b_in)
    k = x @ w_in[width : 2 * width].T + b_in[width : 2 * width]
    return Point(length, width, heads, x, w_in, b_in, split_heads(q, heads), split_heads(k, heads))


def expected(point: Point, step: str) -> np.ndarray:
    if step == "projection":
        return numpy_projection(point.x, point.w_in, point.b_in)
    return numpy_scores(point.q_heads, point.k_heads)


def numpy_call(point: Point, step: str) -> Callable[[], np.ndarray]:
    if step == "projection":
        return lambda: numpy_projection(point.x, point.w_in, point.b_in)
    return lambda: numpy_scores(point.q_heads, point.k_heads)


# --- one step in one layout on one database


@dataclass(frozen=True)
class Case:
    """What to create, load and read for one step in one layout."""

    step: str
    layout: str
    views: tuple[str, ...]  # dependants first: the drop order
    tables: tuple[str, ...]
    statements: tuple[str, ...]

    @property
    def query(self) -> str:
        return QUERIES[(self.step, self.layout)]


def case(step: str, layout: str, database: str) -> Case:
    if layout == "long form":
        if step == "projection":
            text = qkv.sql.query_text("mha_tables") + "\n" + qkv.sql.query_text("mha_project")
            return Case(step, layout, ("v_proj", "k_proj", "q_proj"), qkv.sql.LAYER_TABLES, _statements(text))
        text = LONG_HEADS_TABLES + "\n" + qkv.sql.query_text("mha_scores")
        return Case(step, layout, ("head_scores",), ("q_heads", "k_heads"), _statements(text))
    sql = array_sql(database)
    tables = ("x_vec", "w_vec", "vec_shape", "q_vec", "k_vec")
    view = "q_proj_vec" if step == "projection" else "head_scores_vec"
    return Case(step, layout, (view,), tables, _statements(sql["tables"] + "\n" + sql[step]))


def _statements(text: str) -> tuple[str, ...]:
    return tuple(_dialect.statements(text))


def _long(arr: np.ndarray) -> list[list]:
    """An n-D array as columns of its indices and values: one row per value."""
    index = np.indices(arr.shape).reshape(arr.ndim, -1)
    return [*index.tolist(), arr.ravel().tolist()]


def _insert_vectors(conn, dialect: _dialect.Dialect, table: str, columns: tuple[str, ...], rows: list[tuple]) -> None:
    """Rows whose last column is a vector: a JSON text on SQLite, an array on the others."""
    if not rows:
        return
    if dialect is _dialect.SQLITE:
        rows = [(*row[:-1], json.dumps(row[-1])) for row in rows]  # repr of each float: exact
    placeholders = ", ".join(["%s" if dialect is _dialect.POSTGRESQL else "?"] * len(columns))
    sql = f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({placeholders})"
    if dialect is _dialect.POSTGRESQL:
        with conn.cursor() as cursor:
            cursor.executemany(sql, rows)
    elif dialect is _dialect.DUCKDB:
        # One statement: DuckDB's executemany costs about 0.5 ms a row.
        _dialect.load(conn, dialect, table, columns, [list(column) for column in zip(*rows)])
    else:
        conn.executemany(sql, rows)


def load(conn, dialect: _dialect.Dialect, this: Case, point: Point) -> None:
    """Fill the case's tables (not timed); PostgreSQL gets ANALYZE, as qkv.sql does."""
    width = point.width
    if (this.step, this.layout) == ("projection", "long form"):
        # Only what q_proj reads: the other inputs of mha_tables.sql stay empty.
        _dialect.load(conn, dialect, "query_in", ("pos", "dim", "val"), _long(point.x))
        _dialect.load(conn, dialect, "in_proj", ("out_dim", "in_dim", "val"), _long(point.w_in))
        _dialect.load(conn, dialect, "in_bias", ("out_dim", "val"), _long(point.b_in))
        _dialect.load(conn, dialect, "layer_shape", ("d_model", "d_head"), ([width], [point.d_head]))
    elif (this.step, this.layout) == ("scores", "long form"):
        for table, arr in (("q_heads", point.q_heads), ("k_heads", point.k_heads)):
            _dialect.load(conn, dialect, table, ("head", "pos", "hdim", "val"), _long(arr))
    elif this.step == "projection":
        _insert_vectors(conn, dialect, "x_vec", ("pos", "vec"), list(enumerate(point.x.tolist())))
        rows = [(i, bias, row) for i, (bias, row) in enumerate(zip(point.b_in.tolist(), point.w_in.tolist()))]
        _insert_vectors(conn, dialect, "w_vec", ("out_dim", "bias", "vec"), rows)
        _dialect.load(conn, dialect, "vec_shape", ("d_model",), ([width],))
    else:
        for table, arr in (("q_vec", point.q_heads), ("k_vec", point.k_heads)):
            rows = [(h, pos, vec) for h, head in enumerate(arr.tolist()) for pos, vec in enumerate(head)]
            _insert_vectors(conn, dialect, table, ("head", "pos", "vec"), rows)
    if dialect.analyze_after_load:
        for table in this.tables:
            _dialect.run(conn, dialect, f"ANALYZE {table}")


def read(rows: list[tuple], this: Case, point: Point) -> np.ndarray:
    """The step's rows as NumPy's array; NaN where a row is missing."""
    if this.step == "scores":
        out = np.full((point.heads, point.length, point.length), np.nan)
        for head, qpos, kpos, score in rows:
            out[head, qpos, kpos] = np.nan if score is None else score
        return out
    out = np.full((point.length, point.width), np.nan)
    if this.layout == "long form":
        for pos, dim, val in rows:
            out[pos, dim] = np.nan if val is None else val
        return out
    for pos, vec in rows:
        out[pos] = json.loads(vec) if isinstance(vec, str) else vec
    return out


# --- row counts from the plans


def _pg_nodes(node: dict, depth: int = 0):
    yield depth, node
    for child in node.get("Plans", []):
        yield from _pg_nodes(child, depth + 1)


def _duck_nodes(node: dict, depth: int = 0):
    yield depth, node
    for child in node.get("children", []):
        yield from _duck_nodes(child, depth + 1)


PG_JOINS = ("Hash Join", "Merge Join", "Nested Loop")
#: Scan nodes that read stored rows or a function's rows, not another node's.
PG_SCANS = ("Seq Scan", "Index Scan", "Index Only Scan", "Bitmap Heap Scan", "Function Scan")


def postgres_rows(plan: dict) -> dict:
    """PostgreSQL's EXPLAIN (ANALYZE, FORMAT JSON) in numbers: scanned, join_rows, tuples, and the nodes."""
    scanned = join_rows = tuples = 0
    nodes = []
    for depth, node in _pg_nodes(plan["Plan"]):
        loops = node.get("Actual Loops", 1)
        rows = round(node["Actual Rows"] * loops)
        tuples += rows
        kind = node["Node Type"]
        if kind in PG_SCANS:
            scanned += rows + round(node.get("Rows Removed by Filter", 0) * loops)
        if kind in PG_JOINS:
            join_rows = max(join_rows, rows)
        what = node.get("Relation Name") or node.get("Function Name") or ""
        sub = "SubPlan: " if node.get("Parent Relationship") == "SubPlan" else ""
        nodes.append(f"{'  ' * depth}{sub}{kind}{f' ({what})' if what else ''}: {rows:,} rows ({loops:,} loops)")
    return {"scanned": scanned, "join_rows": join_rows, "tuples": tuples, "plan": nodes}


DUCK_JOINS = ("JOIN", "CROSS_PRODUCT")


def duckdb_rows(plan: dict) -> dict:
    """DuckDB's EXPLAIN (ANALYZE, FORMAT JSON) in numbers: scanned, join_rows, tuples, and the operators."""
    scanned = join_rows = tuples = 0
    nodes = []
    top = None  # the depth of the query's own first operator
    for depth, node in _duck_nodes(plan):
        rows = node.get("intermediate_rows", 0)
        kind = node.get("type", node.get("name", "?"))
        if kind in ("RESULT_COLLECTOR", "EXPLAIN_ANALYZE"):
            continue
        top = depth if top is None else top
        depth -= top
        tuples += rows
        scanned += node.get("rows_scanned", 0)
        if any(word in kind for word in DUCK_JOINS):
            join_rows = max(join_rows, rows)
        table = node.get("extra_info", {}).get("Table", "")
        nodes.append(f"{'  ' * depth}{node.get('name', kind)}{f' ({table})' if table else ''}: {rows:,} rows")
    return {"scanned": scanned, "join_rows": join_rows, "tuples": tuples, "plan": nodes}


def sqlite_rows(conn: sqlite3.Connection, this: Case) -> dict:
    """SQLite's join rows (COUNT(*)), the VM instructions of one run of the query, and its plan."""
    join_rows = _dialect.fetch(conn, _dialect.SQLITE, JOIN_COUNTS[(this.step, this.layout)])[0][0]
    steps = 0

    def count() -> int:
        nonlocal steps
        steps += 1
        return 0

    conn.set_progress_handler(count, 1)
    try:
        _dialect.fetch(conn, _dialect.SQLITE, this.query)
    finally:
        conn.set_progress_handler(None, 0)
    plan = _dialect.plan_text(conn, _dialect.SQLITE, this.query).splitlines()
    return {"scanned": None, "join_rows": join_rows, "tuples": None, "vm_steps": steps, "plan": plan}


def plan_rows(conn, dialect: _dialect.Dialect, this: Case) -> dict:
    if dialect is _dialect.SQLITE:
        return sqlite_rows(conn, this)
    rows = _dialect.fetch(conn, dialect, f"EXPLAIN (ANALYZE, FORMAT JSON) {this.query}")
    if dialect is _dialect.POSTGRESQL:
        return postgres_rows(rows[0][0][0])  # psycopg parses the json: a list of one plan
    profile = json.loads(rows[0][1])
    return duckdb_rows(profile["operator"][0] if "operator" in profile else profile)


# --- timing


def time_query(conn, dialect: _dialect.Dialect, sql: str, repeats: int) -> float:
    _dialect.fetch(conn, dialect, sql)  # warm-up: caches, plans
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        _dialect.fetch(conn, dialect, sql)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def time_numpy(call: Callable[[], np.ndarray], repeats: int) -> float:
    timer = timeit.Timer(call)
    number, _ = timer.autorange()  # enough calls to last 0.2 s
    number = max(number, int(number * 0.2 / max(timer.timeit(number), 1e-9)))
    return statistics.median(t / number for t in timer.repeat(repeat=repeats, number=number))


def run_case(conn, database: str, step: str, layout: str, point: Point, repeats: int) -> dict:
    """Load one step in one layout, check it against NumPy to TOLERANCE, then time it and count its rows.

    ``repeats=0`` checks and counts without timing (the tests).
    """
    dialect = _dialect.dialect_of(conn)
    this = case(step, layout, database)
    want = expected(point, step)
    with _dialect.scratch(conn, dialect, this.views, this.tables):
        for statement in this.statements:
            _dialect.run(conn, dialect, statement)
        load(conn, dialect, this, point)
        got = read(_dialect.fetch(conn, dialect, this.query), this, point)
        error = float(np.abs(got - want).max()) if np.isfinite(got).all() else float("inf")
        if not error <= TOLERANCE:
            raise SystemExit(
                f"{database}, {layout}, {step} at L={point.length}, E={point.width} differs from NumPy by {error}"
            )
        seconds = time_query(conn, dialect, this.query, repeats) if repeats else None
        rows = plan_rows(conn, dialect, this)
    return {"seconds": seconds, "max_abs_error": error, "result_rows": _result_rows(this, point), **rows}


def _result_rows(this: Case, point: Point) -> int:
    if this.step == "scores":
        return point.heads * point.length * point.length
    return point.length * (point.width if this.layout == "long form" else 1)


def measure_point(connections: dict, length: int, width: int, heads: int, repeats: int) -> dict:
    point = make_point(length, width, heads)
    row = {"L": length, "E": width, "num_heads": heads, "d_head": point.d_head, "steps": {}}
    for step in STEPS:
        entry = {"numpy_seconds": time_numpy(numpy_call(point, step), max(repeats, 1)), "layouts": {}}
        for layout in LAYOUTS:
            entry["layouts"][layout] = {
                database: run_case(conn, database, step, layout, point, repeats)
                for database, conn in connections.items()
            }
        row["steps"][step] = entry
    return row


def points(lengths: list[int], widths: list[int], fixed_length: int, fixed_width: int) -> list[tuple[int, int, list]]:
    """The (L, E) sizes of both series, each once, with the series it belongs to."""
    found: dict[tuple[int, int], list[str]] = {}
    for length in lengths:
        found.setdefault((length, fixed_width), []).append("L")
    for width in widths:
        found.setdefault((fixed_length, width), []).append("E")
    return [(length, width, series) for (length, width), series in found.items()]


# --- the table


def print_table(result: dict) -> None:
    machine = result["machine"]
    settings = result["settings"]
    print(
        f"\nTable layouts: one multi-head attention layer's projection and scores, num_heads = "
        f"{settings['num_heads']}; median of {settings['repeats']} runs after a warm-up; ms"
    )
    print(
        f"machine: {machine['cpu']}, {machine['cores']} cores; load average before "
        f"{machine['load_before']}, after {machine['load_after']}"
    )
    print("versions: " + ", ".join(f"{k} {v}" for k, v in result["versions"].items()))
    print(f"NumPy's BLAS threads: {settings['blas_threads']}")
    short = {"SQLite": "SQLite", "PostgreSQL": "PG", "DuckDB": "Duck"}
    for step in STEPS:
        print(f"\n{step}: times (ms) and join rows as each database reports them")
        header = (
            f"{'L':>3} {'E':>3} {'layout':<10}"
            + "".join(f"{short[n] + ' ms':>11}" for n in DATABASES)
            + f"{'NumPy ms':>10}"
            + "".join(f"{short[n] + ' join':>12}" for n in DATABASES)
            + f"{'PG tuples':>11}{'Duck tuples':>12}{'SQLite VM':>11}"
        )
        print(header)
        print("-" * len(header))
        for row in result["rows"]:
            entry = row["steps"][step]
            for layout in LAYOUTS:
                cells = entry["layouts"][layout]
                line = f"{row['L']:>3} {row['E']:>3} {layout:<10}"
                line += "".join(f"{cells[n]['seconds'] * 1e3:>11.2f}" for n in DATABASES)
                line += f"{entry['numpy_seconds'] * 1e3:>10.4f}"
                line += "".join(f"{cells[n]['join_rows']:>12,}" for n in DATABASES)
                line += f"{cells['PostgreSQL']['tuples']:>11,}{cells['DuckDB']['tuples']:>12,}"
                line += f"{cells['SQLite']['vm_steps']:>11,}"
                print(line)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lengths", default="8,16,32,64", help="L values at E = --fixed-width")
    parser.add_argument("--widths", default="8,16,32,64", help="E values at L = --fixed-length")
    parser.add_argument("--fixed-length", type=int, default=16)
    parser.add_argument("--fixed-width", type=int, default=16)
    parser.add_argument("--heads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", type=Path, default=RESULT, help="where to write the JSON result")
    args = parser.parse_args()
    sizes = points(
        [int(s) for s in args.lengths.split(",")],
        [int(s) for s in args.widths.split(",")],
        args.fixed_length,
        args.fixed_width,
    )

    import duckdb
    import psycopg

    load_before = [round(x, 2) for x in os.getloadavg()]
    started = time.perf_counter()
    with ExitStack() as stack:
        server = stack.enter_context(running_postgres())
        connections = {
            "SQLite": stack.enter_context(sqlite3.connect(":memory:")),
            "PostgreSQL": stack.enter_context(psycopg.connect(**server.settings, autocommit=True)),
            "DuckDB": duckdb.connect(),
        }
        stack.callback(connections["DuckDB"].close)
        for conn in connections.values():
            _dialect.prepare_functions(conn, _dialect.dialect_of(conn))  # SQLite without math functions
        rows = []
        for length, width, series in sizes:
            rows.append({"series": series, **measure_point(connections, length, width, args.heads, args.repeats)})
            print(f"L={length} E={width} done ({time.perf_counter() - started:.0f} s)", file=sys.stderr)
        result = {
            "command": "make bench-layout",
            "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            "machine": {
                "cpu": cpu_model(),
                "cores": os.cpu_count(),
                "platform": platform.platform(),
                "load_before": load_before,
                "load_after": [round(x, 2) for x in os.getloadavg()],
            },
            "versions": versions(connections, server.version),
            "settings": {
                "what": "the projection x @ W_q.T + b_q and the per-head scores Q_h @ K_h.T / sqrt(d_head)",
                "num_heads": args.heads,
                "seed": SEED,
                "repeats": args.repeats,
                "warmup_runs": 1,
                "tolerance": TOLERANCE,
                "series": {"L": {"E": args.fixed_width}, "E": {"L": args.fixed_length}},
                "queries": {f"{step}, {layout}": QUERIES[(step, layout)] for step in STEPS for layout in LAYOUTS},
                "long_form_files": ["mha_tables.sql", "mha_project.sql", "mha_scores.sql"],
                "array_sql": {database: array_sql(database) for database in DATABASES},
                "sqlite_join_counts": {
                    f"{step}, {layout}": JOIN_COUNTS[(step, layout)] for step, layout in JOIN_COUNTS
                },
                "tiles": "not measured: see the module docstring",
                "numpy": {
                    "projection": "x @ W_q.T + b_q",
                    "scores": "Q_h @ K_h.transpose(0, 2, 1) / sqrt(d_head)",
                },
                "blas_threads": blas_threads(),
                "blas_environment": {var: os.environ.get(var) for var in BLAS_VARIABLES},
            },
            "wall_seconds": round(time.perf_counter() - started, 1),
            "rows": rows,
        }
    print_table(result)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"\nwrote {args.out.relative_to(ROOT) if args.out.is_relative_to(ROOT) else args.out}")


if __name__ == "__main__":
    main()
