"""Runs a learner's SQL query in a process of its own (started by ``qkv.exercises.sql_softmax``).

The checker must not run the learner's query itself: one SQLite function
call (a ``LIKE`` on a megabyte-long string, say) can run for minutes without
giving the progress handler a chance, and the checker would wait as long.
This process can be killed at the time limit. It needs only the standard
library. The checker reads this file's text (and ``_confine.py``'s) when it
starts, and gives it to ``python -I -S`` on standard input: no working
directory, no user site, no ``PYTHON*`` variables, no ``.pth`` file of
site-packages, and no file the learner's code changed since, takes part.

Before it runs the query it confines itself (``_confine``): it dies with the
checker (``PR_SET_PDEATHSIG``), gets ``cpu_seconds`` of CPU and
``memory_bytes`` of address space, and, with Landlock, can write no file.

Request on stdin (after the program's own line), as JSON::

    {"sql": str, "rows": [[qpos, kpos, score], ...], "max_rows": int,
     "max_value_bytes": int, "memory_bytes": int, "cpu_seconds": int, "checker": pid}

Answer on stdout: a line ``ready`` once the table is filled (the query's
time starts there), then, as JSON, ``{"columns": [...], "rows": [[...], ...]}``
or ``{"error": "warning" | "denied" | "sqlite" | "no-result", "message": str}``.
Values that are not numbers, strings or NULL come back as their ``repr``.
"""

from __future__ import annotations

import json
import sqlite3
import sys

# What a read-only query needs; everything else (writing, ATTACH, PRAGMA,
# creating or dropping anything) is denied.
ALLOWED = {
    sqlite3.SQLITE_SELECT,
    sqlite3.SQLITE_READ,
    sqlite3.SQLITE_FUNCTION,
    getattr(sqlite3, "SQLITE_RECURSIVE", 33),  # WITH RECURSIVE; the constant is new in Python 3.11
}


def _authorize(action: int, *args: object) -> int:
    return sqlite3.SQLITE_OK if action in ALLOWED else sqlite3.SQLITE_DENY


def _plain(value: object) -> object:
    return value if value is None or isinstance(value, (int, float, str)) else repr(value)


def answer(request: dict, ready=lambda: None) -> dict:
    """Run the request's query on a fresh in-memory table ``scores``; never raises for SQL errors.

    ``ready()`` is called once the table is filled, just before the query runs.
    """
    con = sqlite3.connect(":memory:")
    try:
        con.execute("PRAGMA temp_store = MEMORY")  # no temporary files: this process may write none
        con.execute("CREATE TABLE scores (qpos INTEGER, kpos INTEGER, score DOUBLE PRECISION)")
        con.executemany("INSERT INTO scores VALUES (?, ?, ?)", request["rows"])
        con.commit()
        con.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, int(request["max_value_bytes"]))
        con.set_authorizer(_authorize)
        ready()
        try:
            cursor = con.execute(request["sql"])
            rows = cursor.fetchmany(int(request["max_rows"]))
        except sqlite3.Warning as exc:  # "You can only execute one statement at a time."
            return {"error": "warning", "message": str(exc)}
        except sqlite3.Error as exc:
            return {"error": "denied" if "not authorized" in str(exc) else "sqlite", "message": str(exc)}
        if cursor.description is None:
            return {"error": "no-result", "message": "the statement returned no result set"}
        columns = [str(d[0]).lower() for d in cursor.description]
        return {"columns": columns, "rows": [[_plain(v) for v in row] for row in rows]}
    finally:
        con.close()


def main(confine) -> None:
    """Read the request, confine this process with ``confine`` (the ``_confine`` module), answer."""
    request = json.loads(sys.stdin.read())
    confine.die_with_parent(int(request["checker"]))
    confine.limit(int(request.get("memory_bytes", 0)), int(request["cpu_seconds"]))
    confine.restrict_writes([])

    def ready() -> None:
        sys.stdout.write("ready\n")
        sys.stdout.flush()

    try:
        result = answer(request, ready)
    except MemoryError:
        result = {"error": "sqlite", "message": "out of memory"}
    sys.stdout.write(json.dumps(result))
