"""The three databases ``qkv.sql`` talks to, and everything that differs.

The ``.sql`` files are one text for all three. What cannot be one text
lives here, each difference once:

==========================  ===============  ===============  ==============
                            SQLite           PostgreSQL       DuckDB
==========================  ===============  ===============  ==============
connection                  ``sqlite3``      ``psycopg`` 3    ``duckdb``
named parameter             ``:name``        ``%(name)s``     ``$name``
loading rows                executemany      ``UNNEST`` of    ``UNNEST`` of
                                             arrays           lists
``exp``, ``sqrt``, ...      only if built    built in         built in
                            with math
                            functions:
                            registered here
                            otherwise
plan of a query             ``EXPLAIN QUERY  ``EXPLAIN``      ``EXPLAIN``
                            PLAN``
undo on error               ``SAVEPOINT``    a transaction    drop what was
                                             (or savepoint)   made
statistics after loading    kept by itself   ``ANALYZE``      kept by itself
==========================  ===============  ===============  ==============

Two more differences are handled in the SQL text itself, the same way for
all three (see the comments in the files): PostgreSQL raises "value out of
range: underflow" where a float result rounds to 0 (``exp`` below about
-745, ``1e-200 * 1e-200``) and the others return 0, so ``weights.sql``
zeroes weights below ``exp(-300)`` itself; and ``/`` on two integers
truncates in SQLite and PostgreSQL but not in DuckDB, so ``sinusoidal.sql``
casts first. An underflow that only the inputs can cause (a product of a
query and a key entry, or of a weight and a value entry, below about
1e-323) becomes the ValueError of ``explain_out_of_range``, and so does
PostgreSQL's "value out of range: overflow" (a sum past 1.8e308, where
SQLite and DuckDB give inf or NaN; ``qkv.sql.attention`` refuses
overflowing scores in NumPy before the query runs, scores the database
computed as NaN or inf, and NaN or inf read back afterwards).
"""

from __future__ import annotations

import contextlib
import math
import re
import sqlite3
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

SUPPORTED = "a sqlite3.Connection, a psycopg (version 3) Connection to PostgreSQL, or a duckdb.DuckDBPyConnection"

# What SQLite needs when it was built without its math functions.
SQLITE_MATH = {
    "exp": (1, math.exp),
    "sqrt": (1, math.sqrt),
    "sin": (1, math.sin),
    "cos": (1, math.cos),
    "power": (2, math.pow),
}

# ":name" in the .sql files; not "::" (a PostgreSQL cast, never used in them).
_PARAMETER = re.compile(r"(?<![:\w]):([A-Za-z_]\w*)")


@dataclass(frozen=True)
class Dialect:
    """What one kind of database needs done its own way."""

    name: str
    explain: str  # the statement prefix that returns a plan
    has_generate_series: bool
    # PostgreSQL plans from statistics, and autovacuum never analyzes a
    # temporary table (PostgreSQL docs, CREATE TABLE): without ANALYZE it
    # assumes 1850 rows whatever was loaded.
    analyze_after_load: bool = False


SQLITE = Dialect("SQLite", "EXPLAIN QUERY PLAN", has_generate_series=False)
POSTGRESQL = Dialect("PostgreSQL", "EXPLAIN", has_generate_series=True, analyze_after_load=True)
DUCKDB = Dialect("DuckDB", "EXPLAIN", has_generate_series=True)


def dialect_of(connection: Any) -> Dialect:
    """The dialect of a DB-API connection; TypeError naming the supported kinds."""
    if isinstance(connection, sqlite3.Connection):
        return SQLITE
    # Import a driver only when the connection comes from it: psycopg and
    # duckdb are optional (the test extra installs them).
    module = type(connection).__module__.split(".")[0]
    if module == "psycopg":
        import psycopg

        if isinstance(connection, psycopg.Connection):
            return POSTGRESQL
    if module in ("duckdb", "_duckdb"):
        import duckdb

        if isinstance(connection, duckdb.DuckDBPyConnection):
            return DUCKDB
    kind = f"{type(connection).__module__}.{type(connection).__qualname__}"
    raise TypeError(f"connection must be {SUPPORTED}; got {kind}")


def bind(sql: str, dialect: Dialect) -> str:
    """Rewrite the files' ``:name`` parameters in the driver's own style."""
    if dialect is POSTGRESQL:
        # psycopg reads every % as a placeholder: escape the literal ones first.
        return _PARAMETER.sub(r"%(\1)s", sql.replace("%", "%%"))
    if dialect is DUCKDB:
        return _PARAMETER.sub(r"$\1", sql)
    return sql


def parameter_names(sql: str) -> set[str]:
    """The ``:name`` parameters a file's text uses."""
    return set(_PARAMETER.findall(sql))


def statements(text: str) -> list[str]:
    """Split a file into statements: each one ends with ``;`` at a line end.

    Drivers run one statement per call (``sqlite3`` refuses more), and
    ``executescript`` would commit the caller's transaction first.
    """
    parts = re.split(r";[ \t]*(?:\n|$)", text)
    return [part.strip() for part in parts if _code_of(part)]


def _code_of(sql: str) -> str:
    return "\n".join(line for line in sql.splitlines() if not line.lstrip().startswith("--")).strip()


def fetch(connection: Any, dialect: Dialect, sql: str, params: dict | None = None) -> list[tuple]:
    """Run one statement (``:name`` parameters) and return its rows."""
    cursor = connection.execute(bind(sql, dialect), params or {})
    # DuckDB returns the connection itself; all three have fetchall.
    description = cursor.description
    return [tuple(row) for row in cursor.fetchall()] if description else []


def run(connection: Any, dialect: Dialect, sql: str, params: dict | None = None) -> None:
    """Run one statement that returns no rows."""
    connection.execute(bind(sql, dialect), params or {})


def load(connection: Any, dialect: Dialect, table: str, columns: Sequence[str], data: Sequence[list]) -> None:
    """Insert column lists ``data`` into ``table`` (a fixed name, never user text).

    SQLite takes a row per call (fast in-process); PostgreSQL and DuckDB
    take whole columns as arrays in one statement: for 2048 rows that took
    0.023 s instead of executemany's 0.097 s on PostgreSQL, and 0.013 s
    instead of 1.06 s on DuckDB (one run each, on a busy 2-core machine).
    """
    if not data[0]:
        return  # nothing to insert (and PostgreSQL cannot type an empty array)
    names = ", ".join(columns)
    if dialect is SQLITE:
        placeholders = ", ".join(f":{c}" for c in columns)
        rows = [dict(zip(columns, values)) for values in zip(*data)]
        connection.executemany(f"INSERT INTO {table} ({names}) VALUES ({placeholders})", rows)
        return
    unnest = ", ".join(f"UNNEST(:{c})" for c in columns)
    run(connection, dialect, f"INSERT INTO {table} ({names}) SELECT {unnest}", dict(zip(columns, data)))


def ensure_math(connection: Any, dialect: Dialect) -> None:
    """Give SQLite ``exp``, ``sqrt``, ``sin``, ``cos``, ``power`` if it lacks them.

    SQLite has them only when built with SQLITE_ENABLE_MATH_FUNCTIONS
    (3.35 or later); Python's own math is the same C library's.
    """
    if dialect is not SQLITE or sqlite_has_math(connection):
        return
    for name, (arity, function) in SQLITE_MATH.items():
        connection.create_function(name, arity, function, deterministic=True)


def sqlite_has_math(connection: sqlite3.Connection) -> bool:
    try:
        connection.execute("SELECT exp(0.0), sqrt(1.0), sin(0.0), cos(0.0), power(2.0, 1.0)")
    except sqlite3.OperationalError as exc:
        if "no such function" in str(exc):
            return False
        raise
    return True


#: Temporary objects with given names, per database (the names are ours, never user text).
_TEMP_OBJECTS = {
    "SQLite": "SELECT name FROM sqlite_temp_master WHERE name IN ({names})",
    "PostgreSQL": (
        "SELECT c.relname FROM pg_class c WHERE c.relnamespace = pg_my_temp_schema() AND c.relname IN ({names})"
    ),
    "DuckDB": "SELECT table_name FROM information_schema.tables WHERE table_catalog = 'temp' AND table_name IN ({names})",
}
#: How a drop names an object in the connection's temporary schema only.
_TEMP_SCHEMA = {"SQLite": "temp.", "PostgreSQL": "pg_temp.", "DuckDB": "temp.main."}


def existing_scratch(connection: Any, dialect: Dialect, names: Sequence[str]) -> list[str]:
    """Which of ``names`` already exist as temporary tables or views on ``connection``."""
    quoted = ", ".join(f"'{name}'" for name in names)  # fixed identifiers of this package
    cursor = connection.execute(_TEMP_OBJECTS[dialect.name].format(names=quoted))
    return sorted(row[0] for row in cursor.fetchall())


@contextlib.contextmanager
def scratch(connection: Any, dialect: Dialect, views: Sequence[str], tables: Sequence[str]) -> Iterator[None]:
    """Run a block whose temporary ``views`` and ``tables`` are gone afterwards.

    It touches nothing it did not create: if the connection already has a
    temporary table or view with one of those names (the user's own), it
    raises a ValueError before running anything, and afterwards it drops
    only objects of the connection's temporary schema (a user's permanent
    table of the same name is never dropped). On success they are dropped;
    on an error SQLite and PostgreSQL roll back to before the block (their
    DDL is transactional), and DuckDB, which has no savepoints, drops what
    exists of them. The caller's own open transaction is neither committed
    nor rolled back.
    """

    def refuse_a_clash() -> None:
        taken = existing_scratch(connection, dialect, [*views, *tables])
        if taken:
            raise ValueError(
                f"connection already has temporary tables or views named {', '.join(taken)}, which qkv.sql "
                "uses for its own work; qkv.sql leaves them alone: drop or rename them, or pass another connection"
            )

    schema = _TEMP_SCHEMA[dialect.name]
    drops = [f"DROP VIEW IF EXISTS {schema}{name}" for name in views]
    drops += [f"DROP TABLE IF EXISTS {schema}{name}" for name in tables]
    if dialect is POSTGRESQL:
        # A transaction, or a savepoint inside the caller's transaction.
        with connection.transaction():  # the check too: a query would leave a transaction open
            refuse_a_clash()
            yield
            for drop in drops:
                run(connection, dialect, drop)
        return
    refuse_a_clash()
    if dialect is SQLITE:
        connection.execute("SAVEPOINT qkv_sql")
        try:
            yield
        except BaseException:
            connection.execute("ROLLBACK TO qkv_sql")
            connection.execute("RELEASE qkv_sql")
            raise
        for drop in drops:
            run(connection, dialect, drop)
        connection.execute("RELEASE qkv_sql")
        return
    try:
        yield
    finally:
        for drop in drops:
            with contextlib.suppress(Exception):  # keep the error that got us here
                run(connection, dialect, drop)


def explain_out_of_range(exc: Exception, dialect: Dialect) -> ValueError | None:
    """A clear ValueError for PostgreSQL's underflow or overflow error, or None for others."""
    if dialect is not POSTGRESQL or getattr(exc, "sqlstate", None) != "22003":
        return None
    if "overflow" in str(exc):
        # The scores were checked in NumPy first, so a sum in PostgreSQL's own order did it.
        return ValueError(
            "PostgreSQL raised 'value out of range: overflow': a float result passed float64's "
            "range (1.8e308) where SQLite and DuckDB return inf or NaN. The scores "
            "query @ key.T / sqrt(d_k) were checked in NumPy before the query ran, so one of "
            "PostgreSQL's sums of query * key or weight * value products overflowed; make query, "
            "key or value smaller"
        )
    if "underflow" not in str(exc):
        return None
    return ValueError(
        "PostgreSQL raised 'value out of range: underflow': a float result rounded to 0, "
        "which PostgreSQL treats as an error where SQLite, DuckDB and NumPy return 0. "
        "weights.sql sets weights below exp(-300) to 0 itself, so a product of two nonzero "
        "numbers did it: a query entry times a key entry below about 1e-323 (entries far "
        "below 1e-150), or a weight (down to exp(-300) / L_k, about 5e-131 / L_k) times a "
        "value entry (value entries below about 1e-193 * L_k); set such entries to 0 first"
    )


def plan_text(connection: Any, dialect: Dialect, sql: str) -> str:
    """The database's plan for ``sql``, as text."""
    rows = fetch(connection, dialect, f"{dialect.explain} {sql}")
    if dialect is SQLITE:
        # Rows are (id, parent, notused, detail): indent each under its parent.
        depth = {0: -1}
        lines = []
        for node, parent, _, detail in rows:
            depth[node] = depth.get(parent, -1) + 1
            lines.append("  " * depth[node] + detail)
        return "\n".join(lines)
    if dialect is DUCKDB:
        return "\n".join(row[1] for row in rows).rstrip()  # rows: (kind, boxed tree)
    return "\n".join(row[0] for row in rows)
