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
a function of the user's    registered on    in ``public``:   a macro (temp
named ``exp`` (or ``sum``)  the connection:  ``search_path``  or saved):
                            answers for      keeps it out     answers for
                            the built-in:                     the built-in:
                            refused                           refused
plan of a query             ``EXPLAIN QUERY  ``EXPLAIN``      ``EXPLAIN``
                            PLAN``
undo on error               ``SAVEPOINT``    a transaction    drop what was
                                             (or savepoint)   made
statistics after loading    kept by itself   ``ANALYZE``      kept by itself
an unqualified name         ``temp`` first,  ``pg_temp``      ``temp`` first,
(``FROM q``)                always           first: the call  always, whatever
                                             sets             the
                                             ``search_path``  ``search_path``
                                             (then restores
                                             it)
names that clash            ``V`` and ``v``  ``"V"`` and      ``V`` and ``v``
                            (ASCII case is   ``v`` differ     (ASCII case is
                            ignored, quoted  (unquoted names  ignored, quoted
                            or not)          fold to lower    or not)
                                             case)
==========================  ===============  ===============  ==============

So the scratch names ``q``, ``k``, ``v``, ... reach only the scratch
objects. They are fixed names, not unique ones per call: the ``.sql``
files that chapter 9 shows are the text that runs, and readers query
``scores`` or ``weights`` by name inside ``attention_views``; rewriting
names per call would show one query and run another. Fixed names are safe
because ``scratch`` refuses to start if the temporary schema already holds
an object that the database would take for one of them (compared the
database's way, ``fold_name``), and on PostgreSQL it points ``search_path``
at ``pg_temp`` first (and ``pg_catalog`` for functions and operators, so
no function of the user's can answer for ``exp`` or ``sqrt``) and restores
the user's value afterwards. On SQLite and DuckDB, where nothing keeps a
function of the user's from coming before the built-in of its name,
``prepare_functions`` refuses a connection on which
a function of the user's would answer for one the files call
(``users_functions``); the files stay one text, unqualified.

Two more differences are handled in the SQL text itself, the same way for
all three (see the comments in the files): PostgreSQL raises "value out of
range: underflow" where a float result rounds to 0 (``exp`` below about
-745, ``1e-200 * 1e-200``) and the others return 0, so ``weights.sql``
zeroes weights below ``exp(-300)`` itself; and ``/`` on two integers
truncates in SQLite and PostgreSQL but not in DuckDB, so ``sinusoidal.sql``
casts first, and ``mha_split.sql`` divides only exact multiples and casts
the quotient back to an integer. An underflow that only the inputs can
cause (a product of a query and a key entry, or of a weight and a value
entry, below about 1e-323) becomes the ValueError of ``explain_out_of_range`` (of
``layer_out_of_range`` for ``multi_head_attention``), and so does
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
    # SQLite and DuckDB take "V" for v, quoted or not (ASCII letters only:
    # the Kelvin sign is not k); PostgreSQL folds unquoted names to lower
    # case and then compares exactly, so "V" is another name than v.
    names_ignore_ascii_case: bool = True


SQLITE = Dialect("SQLite", "EXPLAIN QUERY PLAN", has_generate_series=False)
POSTGRESQL = Dialect(
    "PostgreSQL", "EXPLAIN", has_generate_series=True, analyze_after_load=True, names_ignore_ascii_case=False
)
DUCKDB = Dialect("DuckDB", "EXPLAIN", has_generate_series=True)


class UnsupportedConnectionError(TypeError, ValueError):
    """A connection of a kind qkv.sql does not talk to.

    Both a TypeError (what ``attention`` has always raised for it) and a
    ValueError (what ``multi_head_attention``'s contract names for a bad
    argument), so that either ``except`` catches it.
    """


def dialect_of(connection: Any) -> Dialect:
    """The dialect of a DB-API connection; UnsupportedConnectionError (a TypeError and a ValueError) naming the supported kinds."""
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
    raise UnsupportedConnectionError(f"connection must be {SUPPORTED}; got {kind}")


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


@contextlib.contextmanager
def _cursor(connection: Any, dialect: Dialect) -> Iterator[Any]:
    """A cursor that returns plain tuples of str and numbers and binds ``bind``'s placeholders, whatever the connection's settings.

    The connection's own ``row_factory`` (psycopg's ``dict_row``, a
    ``sqlite3`` dict factory) would turn ``tuple(row)`` into column names,
    and a psycopg ``cursor_factory`` such as ``RawCursor`` would want ``$1``
    placeholders: a cursor of the driver's own class with the tuple factory
    is neither. DuckDB's rows are always tuples, and its ``cursor()`` is
    another connection (without the temporary tables), so it gets the
    connection itself.
    """
    if dialect is POSTGRESQL:
        import psycopg
        from psycopg.rows import tuple_row

        with psycopg.Cursor(connection, row_factory=tuple_row) as cursor:
            yield cursor
    elif dialect is SQLITE:
        # text_factory is the connection's, read at each fetch: with bytes
        # (or the user's own decoder) names would not be str. It is put back
        # as soon as the statement's rows are read.
        text_factory = connection.text_factory
        cursor = sqlite3.Cursor(connection)
        cursor.row_factory = None
        connection.text_factory = str
        try:
            yield cursor
        finally:
            cursor.close()
            connection.text_factory = text_factory
    else:
        yield connection


def fetch(connection: Any, dialect: Dialect, sql: str, params: dict | None = None) -> list[tuple]:
    """Run one statement (``:name`` parameters) and return its rows as tuples."""
    with _cursor(connection, dialect) as cursor:
        cursor.execute(bind(sql, dialect), params or {})
        return [tuple(row) for row in cursor.fetchall()] if cursor.description else []


def run(connection: Any, dialect: Dialect, sql: str, params: dict | None = None) -> None:
    """Run one statement that returns no rows."""
    with _cursor(connection, dialect) as cursor:
        cursor.execute(bind(sql, dialect), params or {})


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


def prepare_functions(connection: Any, dialect: Dialect) -> None:
    """Make the queries' functions the database's own, before a call runs anything.

    First ``refuse_users_functions``: a ValueError if a function of the
    user's would answer for one of ``QUERY_FUNCTIONS``. Then give SQLite
    ``exp``, ``sqrt``, ``sin``, ``cos``, ``power`` if it lacks them: SQLite
    has them only when built with SQLITE_ENABLE_MATH_FUNCTIONS (3.35 or
    later); Python's own math is the same C library's.
    """
    refuse_users_functions(connection, dialect)
    if dialect is not SQLITE or sqlite_has_math(connection):
        return
    for name, (arity, function) in SQLITE_MATH.items():
        connection.create_function(name, arity, function, deterministic=True)


#: Every function the ``.sql`` files call (tests/test_sql.py checks the files
#: against it). On DuckDB a macro of the user's (``CREATE MACRO exp(x) AS
#: 1.0``, temporary or saved in the database file) answers for the built-in
#: of its name, aggregates and ``generate_series`` too; on SQLite so does a
#: function registered on the connection (``create_function``,
#: ``create_aggregate``). ``users_functions`` finds them.
QUERY_FUNCTIONS = ("count", "cos", "exp", "generate_series", "max", "power", "sin", "sqrt", "sum")

# Arguments at which a registered math function must give Python's value
# exactly (what prepare_functions registers is Python's math itself).
_MATH_PROBES = {"exp": (0.7,), "sqrt": (2.0,), "sin": (0.7,), "cos": (0.7,), "power": (10000.0, -0.25)}
# The aggregates and windows the files use, over the values 1.5 and 2.25.
_AGGREGATE_PROBES = {
    "sum": ("SELECT sum(x) FROM t", 3.75),
    "max": ("SELECT max(x) FROM t", 2.25),
    "count": ("SELECT count(*) FROM t", 2),
}


def users_functions(connection: Any, dialect: Dialect) -> list[str]:
    """The functions of the user's on ``connection`` that would answer for one of ``QUERY_FUNCTIONS``.

    Each one as ``database.schema.name`` (DuckDB) or its name (SQLite),
    sorted. DuckDB lists them in ``duckdb_functions()`` as not internal
    (a Python function cannot take a built-in's name there). SQLite lists
    them in ``PRAGMA function_list`` (3.30 and later) as not built in; a
    math function that gives Python's value is allowed, since that is what
    ``prepare_functions`` registers on a SQLite built without them. Where the
    pragma lists nothing, each function is tried on a few values instead.
    PostgreSQL needs none of this: during a call its ``search_path`` finds
    functions only in ``pg_catalog`` (``scratch_search_path``).
    """
    if dialect is DUCKDB:
        rows = fetch(
            connection,
            dialect,
            "SELECT database_name, schema_name, function_name FROM system.main.duckdb_functions() WHERE NOT internal",
        )
        return sorted(
            {
                f"{database}.{schema}.{name}"
                for database, schema, name in rows
                if fold_name(name, dialect) in QUERY_FUNCTIONS
            }
        )
    if dialect is not SQLITE:
        return []
    listed = sqlite_function_list(connection)
    if listed is None:
        suspects = set(QUERY_FUNCTIONS) - {"generate_series"}  # which Python's sqlite3 does not have
    else:
        suspects = {fold_name(name, dialect) for name, builtin in listed if not builtin} & set(QUERY_FUNCTIONS)
    return sorted(name for name in suspects if not _gives_the_builtins_value(connection, name))


def sqlite_function_list(connection: sqlite3.Connection) -> list[tuple[str, bool]] | None:
    """``PRAGMA function_list`` as (name, built in) pairs, or None where it lists nothing (before 3.30)."""
    with _cursor(connection, SQLITE) as cursor:
        cursor.execute("PRAGMA function_list")
        columns = [column[0] for column in cursor.description or ()]
        rows = cursor.fetchall()
    if not rows or "builtin" not in columns:
        return None
    name, builtin = columns.index("name"), columns.index("builtin")
    return [(row[name], bool(row[builtin])) for row in rows]


def _gives_the_builtins_value(connection: sqlite3.Connection, name: str) -> bool:
    """Whether SQLite's ``name`` gives what the built-in (Python's math, for math) gives on a few values."""
    if name in _MATH_PROBES:
        args = _MATH_PROBES[name]
        sql = f"SELECT {name}({', '.join('?' * len(args))})"
        expected = getattr(math, {"power": "pow"}.get(name, name))(*args)
    else:
        sql, expected = _AGGREGATE_PROBES[name]
        sql = f"WITH t(x) AS (VALUES (1.5), (2.25)) {sql}"
        args = ()
    try:
        with _cursor(connection, SQLITE) as cursor:
            got = cursor.execute(sql, args).fetchall()
    except sqlite3.OperationalError as exc:
        # No such function: prepare_functions registers Python's own.
        return "no such function" in str(exc)
    except Exception:  # the user's function raised: not the built-in
        return False
    return got == [(expected,)]


def refuse_users_functions(connection: Any, dialect: Dialect) -> None:
    """Raise a ValueError naming the user's functions that ``users_functions`` finds, before anything runs."""
    found = users_functions(connection, dialect)
    if not found:
        return
    if dialect is DUCKDB:
        how = "DuckDB would run yours instead of its built-in"
        remedy = "drop them (DROP MACRO name, or DROP MACRO TABLE for a table macro) or pass another connection"
    else:
        how = "SQLite would run the one registered on the sqlite3 connection instead of its built-in"
        remedy = "a function cannot be unregistered from a sqlite3 connection: pass another connection"
    names = ", ".join(name if "." not in name else f"{name.rsplit('.', 1)[1]} ({name})" for name in found)
    raise ValueError(
        f"connection has functions of its own named {names}, which qkv.sql's queries call: {how}, and "
        f"the weights or the table would be silently wrong; qkv.sql has run nothing: {remedy}"
    )


def sqlite_has_math(connection: sqlite3.Connection) -> bool:
    try:
        connection.execute("SELECT exp(0.0), sqrt(1.0), sin(0.0), cos(0.0), power(2.0, 1.0)")
    except sqlite3.OperationalError as exc:
        if "no such function" in str(exc):
            return False
        raise
    return True


#: Every name in the temporary schema that a CREATE TEMP TABLE or VIEW of the
#: same name would collide with, per database. SQLite: tables, views and
#: indexes share one namespace (triggers have their own). PostgreSQL: every
#: relation (tables, views, indexes, sequences) and every type (a table is
#: also a type; an enum or domain in pg_temp blocks a table of its name);
#: the catalogs are qualified, so no table of the user's can answer for
#: them. DuckDB: tables and views (sequences, macros, types and indexes have
#: namespaces of their own); its temporary catalog has only the schema main.
_TEMP_OBJECTS = {
    "SQLite": "SELECT name FROM temp.sqlite_master WHERE type IN ('table', 'view', 'index')",
    "PostgreSQL": (
        "SELECT relname FROM pg_catalog.pg_class WHERE relnamespace = pg_catalog.pg_my_temp_schema() "
        "UNION SELECT typname FROM pg_catalog.pg_type WHERE typnamespace = pg_catalog.pg_my_temp_schema()"
    ),
    "DuckDB": "SELECT table_name FROM information_schema.tables WHERE table_catalog = 'temp'",
}
#: How a drop names an object in the connection's temporary schema only.
_TEMP_SCHEMA = {"SQLite": "temp.", "PostgreSQL": "pg_temp.", "DuckDB": "temp.main."}
#: PostgreSQL's search_path during a call: relations and types resolve to the
#: session's temporary schema first (``pg_temp`` is never searched for
#: functions or operators), then to the system catalog, and nothing else.
PG_SCRATCH_SEARCH_PATH = "pg_temp, pg_catalog"


#: PostgreSQL's extra_float_digits during a call: any value above 0 prints a
#: float8 exactly (the shortest text that reads back as the same double).
PG_EXTRA_FLOAT_DIGITS = "1"


def fold_name(name: str, dialect: Dialect) -> str:
    """``name`` as ``dialect`` compares it: ASCII letters lowered for SQLite and DuckDB.

    >>> fold_name("Weights", SQLITE), fold_name("Weights", POSTGRESQL)
    ('weights', 'Weights')
    """
    if dialect.names_ignore_ascii_case:
        return name.encode("utf-8", "surrogatepass").lower().decode("utf-8", "surrogatepass")
    return name


def existing_scratch(connection: Any, dialect: Dialect, names: Sequence[str]) -> list[tuple[str, str]]:
    """The temporary objects on ``connection`` that clash with ``names``, as (theirs, ours) pairs.

    Sorted by their name. An object clashes if the database would take its
    name for one of ``names`` (``fold_name``): the user's ``"V"`` for ``v`` on
    SQLite and DuckDB, but not on PostgreSQL.
    """
    ours = {fold_name(name, dialect): name for name in names}
    theirs = {row[0] for row in fetch(connection, dialect, _TEMP_OBJECTS[dialect.name])}
    return sorted((name, ours[fold_name(name, dialect)]) for name in theirs if fold_name(name, dialect) in ours)


def clash_message(dialect: Dialect, taken: Sequence[tuple[str, str]], names: Sequence[str]) -> str:
    """The ValueError's text for ``existing_scratch``'s pairs: it names each of the user's objects."""
    described = [
        theirs if theirs == ours else f"{theirs} (to {dialect.name} the same name as {ours})" for theirs, ours in taken
    ]
    return (
        f"connection already has temporary objects named {', '.join(described)}, which qkv.sql "
        f"needs for its own scratch tables and views ({', '.join(names)}); qkv.sql has run nothing "
        "and leaves them alone: drop or rename them, or pass another connection"
    )


@contextlib.contextmanager
def scratch_search_path(connection: Any, dialect: Dialect) -> Iterator[None]:
    """On PostgreSQL, run a block with ``search_path`` set to ``PG_SCRATCH_SEARCH_PATH`` (and floats read exactly).

    The block is a transaction, or a savepoint inside the caller's
    transaction (a query outside one would leave a transaction open). The
    user's value is read first and set back at the end; on an error the
    rollback sets it back. It is a SET LOCAL, which ends with the
    transaction, so the session's own value is never changed. The value is
    read through ``fetch``'s tuple cursor: with the connection's own
    ``dict_row`` it would read the column's name. ``extra_float_digits`` is
    set the same way, to ``PG_EXTRA_FLOAT_DIGITS``: a user's value below 1
    rounds every float8 read back as text (``-15`` read the weight 0.6652 as
    0.7). On SQLite and DuckDB,
    which search their temporary schema first anyway, it does nothing; the
    user's functions there are refused by ``prepare_functions``.
    """
    if dialect is not POSTGRESQL:
        yield
        return
    read = "SELECT pg_catalog.current_setting('search_path'), pg_catalog.current_setting('extra_float_digits')"
    set_local = "SELECT pg_catalog.set_config(:name, :value, true)"  # true: SET LOCAL
    with connection.transaction():
        users_path, users_digits = fetch(connection, dialect, read)[0]
        run(connection, dialect, set_local, {"name": "search_path", "value": PG_SCRATCH_SEARCH_PATH})
        run(connection, dialect, set_local, {"name": "extra_float_digits", "value": PG_EXTRA_FLOAT_DIGITS})
        yield
        run(connection, dialect, set_local, {"name": "search_path", "value": users_path})
        run(connection, dialect, set_local, {"name": "extra_float_digits", "value": users_digits})


@contextlib.contextmanager
def scratch(connection: Any, dialect: Dialect, views: Sequence[str], tables: Sequence[str]) -> Iterator[None]:
    """Run a block whose temporary ``views`` and ``tables`` are gone afterwards.

    It touches nothing it did not create. If the connection's temporary
    schema already holds an object that the database would take for one of
    those names (``existing_scratch``: on SQLite and DuckDB also the user's
    ``"V"`` or ``"Weights"``), it raises a ValueError that names it before
    running anything, so the caller's transaction stays as it was. Inside,
    an unqualified name resolves to the temporary schema first: SQLite and
    DuckDB always search it first, and on PostgreSQL ``search_path`` is
    ``PG_SCRATCH_SEARCH_PATH`` during the block (the user's own setting is
    read first and restored on the way out; on an error, the rollback
    restores it). Afterwards it drops only objects of the connection's
    temporary schema, and only the names it created. On success they are
    dropped; on an error SQLite and PostgreSQL roll back to before the block
    (their DDL is transactional), and DuckDB, which has no savepoints, drops
    what exists of them. The caller's own open transaction is neither
    committed nor rolled back; on DuckDB, which aborts a transaction on any
    error, a database error inside the block (out of memory, an interrupt)
    aborts it, and SQLite does the same when it runs out of memory or is
    interrupted during a write (the error then carries a note that says so).
    """
    names = [*views, *tables]

    def refuse_a_clash() -> None:
        taken = existing_scratch(connection, dialect, names)
        if taken:
            raise ValueError(clash_message(dialect, taken, names))

    schema = _TEMP_SCHEMA[dialect.name]
    drops = [f"DROP VIEW IF EXISTS {schema}{name}" for name in views]
    drops += [f"DROP TABLE IF EXISTS {schema}{name}" for name in tables]
    if dialect is POSTGRESQL:
        with scratch_search_path(connection, dialect):  # the check too: see there
            refuse_a_clash()
            yield
            for drop in drops:
                run(connection, dialect, drop)
        return
    refuse_a_clash()
    if dialect is SQLITE:
        callers = connection.in_transaction
        ours = True  # the savepoint is still there (the block itself may commit or roll back)
        connection.execute("SAVEPOINT qkv_sql")
        try:
            yield
            ours = connection.in_transaction
            # The drops inside the try: an interrupt on one of them rolls back as much as one
            # on a write does (security re-review 8a, W1).
            for drop in drops:
                run(connection, dialect, drop)
            if ours:
                connection.execute("RELEASE qkv_sql")
        except BaseException as error:
            # SQLite itself rolls back the whole transaction on some errors (out of memory, an
            # interrupt during a write): the savepoint went with it, and the error that did it
            # is the one to raise, saying what went with it.
            if connection.in_transaction:
                connection.execute("ROLLBACK TO qkv_sql")
                connection.execute("RELEASE qkv_sql")
            elif callers and ours:
                error.add_note(
                    "SQLite rolled back the whole transaction on this error (its rule for running "
                    "out of memory or an interrupted write), so your uncommitted changes are gone too"
                )
            raise
        return
    try:
        yield
    finally:
        # None of these names existed (refuse_a_clash), so what exists now is ours.
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


def layer_out_of_range(exc: Exception, dialect: Dialect) -> ValueError | None:
    """``explain_out_of_range`` for ``multi_head_attention``: a clear ValueError, or None for other errors.

    The layer's steps multiply and sum in four places (the projections, the
    scores, the weighted sum, the output projection), and PostgreSQL raises
    where SQLite and DuckDB return inf, NaN or 0; the message says which
    arguments can cause it.
    """
    if dialect is not POSTGRESQL or getattr(exc, "sqlstate", None) != "22003":
        return None
    if "overflow" in str(exc):
        return ValueError(
            "PostgreSQL raised 'value out of range: overflow' computing the multi-head attention layer: "
            "a product or a sum in one of its steps (the projections x @ W.T + b, the scores, the weighted "
            "sum, the output projection) passed float64's range (1.8e308), where SQLite and DuckDB return "
            "inf or NaN; make query, key, value, in_proj_weight, out_proj_weight or the biases smaller"
        )
    if "underflow" not in str(exc):
        return None
    return ValueError(
        "PostgreSQL raised 'value out of range: underflow' computing the multi-head attention layer: "
        "a product of two nonzero numbers rounded to 0, which PostgreSQL treats as an error where "
        "SQLite, DuckDB and NumPy return 0 (mha_weights.sql sets weights below exp(-300) to 0 itself): "
        "an entry of query, key or value times one of in_proj_weight, or of the heads' output times "
        "one of out_proj_weight, below about 1e-323 (entries far below 1e-150), or a weight (down to "
        "exp(-300) / L_k) times a projected value entry below about 1e-193 * L_k; set such entries to 0 first"
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
