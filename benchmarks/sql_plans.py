"""The plans three databases choose for one attention head, written to a file.

Not a test: PostgreSQL is not on every reader's machine, so the chapter
"Attention is a query" reads PostgreSQL's plan (and DuckDB's) from the file
this script writes, ``benchmarks/results/sql-plans.json``, and runs only
SQLite's itself. Run it with ``make plans-sql``. For each sequence length
(the three-word bank sentence of the toy head, and a random head of
``L = 256``, ``d_k = d_v = 8``, the largest size of ``make bench-sql``) it
loads the head with ``qkv.sql.attention_views`` into SQLite (in memory), a
throw-away PostgreSQL (tests/support/postgres_server.py, ``ANALYZE`` after
loading) and DuckDB (in memory) and records ``views.plan()``: ``EXPLAIN
QUERY PLAN`` in SQLite, ``EXPLAIN`` in PostgreSQL and DuckDB, of
``SELECT qpos, dim, val FROM output``. Plans depend on the data only
through the sizes (PostgreSQL's through its statistics).

For the aside "The whole layer is a query" it also records each database's
plan of the projection join, ``SELECT pos, dim, val FROM q_proj`` (step 1
of ``qkv.sql.multi_head_attention``, ``mha_project.sql``), for a random
layer of ``L = 256``, ``d_model = 64`` and 8 heads (``d_head = 8``, the
``d_k`` of the head above), loaded with ``qkv.sql.multi_head_views``:
``layer_plans`` in the same file.

Options: ``--out PATH``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import platform
import sqlite3
import sys
from contextlib import ExitStack
from pathlib import Path

import numpy as np

import qkv
import qkv.sql

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "support"))
from postgres_server import running_postgres  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
RESULT = ROOT / "benchmarks" / "results" / "sql-plans.json"
BANK = ("money", "bank", "grows")
RANDOM_L = 256
D = 8
SEED = 0
LAYER_D_MODEL, LAYER_HEADS = 64, 8
PROJECTION_QUERY = "SELECT pos, dim, val FROM q_proj"


def heads() -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    x = qkv.toy.bank_sentence(list(BANK))  # (3, 4)
    rng = np.random.default_rng(SEED)
    return {
        "bank": (x @ qkv.toy.W_QUERY, x @ qkv.toy.W_KEY, x @ qkv.toy.W_VALUE),
        f"random L={RANDOM_L}": tuple(rng.normal(size=(RANDOM_L, D)) for _ in range(3)),
    }


def layers() -> dict[str, tuple]:
    """The layer whose projection join is explained: self-attention, weights of torch's scale."""
    rng = np.random.default_rng(SEED)
    x = rng.normal(size=(RANDOM_L, LAYER_D_MODEL))
    scale = 1 / np.sqrt(LAYER_D_MODEL)
    in_proj = rng.normal(scale=scale, size=(3 * LAYER_D_MODEL, LAYER_D_MODEL))
    out_proj = rng.normal(scale=scale, size=(LAYER_D_MODEL, LAYER_D_MODEL))
    name = f"random L={RANDOM_L} d_model={LAYER_D_MODEL} heads={LAYER_HEADS}"
    return {name: (x, x, x, LAYER_HEADS, in_proj, out_proj)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=RESULT, help="where to write the JSON result")
    args = parser.parse_args()

    import duckdb
    import psycopg

    with ExitStack() as stack:
        server = stack.enter_context(running_postgres())
        connections = {
            "SQLite": stack.enter_context(sqlite3.connect(":memory:")),
            "PostgreSQL": stack.enter_context(psycopg.connect(**server.settings, autocommit=True)),
            "DuckDB": duckdb.connect(),
        }
        stack.callback(connections["DuckDB"].close)
        plans = []
        for name, (q, k, v) in heads().items():
            entry = {"head": name, "L": q.shape[0], "d_k": q.shape[1], "d_v": v.shape[1], "plans": {}}
            for database, conn in connections.items():
                with qkv.sql.attention_views(conn, q, k, v) as views:
                    entry["plans"][database] = views.plan()
            plans.append(entry)
        layer_plans = []
        for name, layer in layers().items():
            x, num_heads = layer[0], layer[3]
            entry = {"layer": name, "L": x.shape[0], "d_model": x.shape[1], "heads": num_heads, "plans": {}}
            for database, conn in connections.items():
                with qkv.sql.multi_head_views(conn, *layer) as views:
                    entry["plans"][database] = views.plan(PROJECTION_QUERY)
            layer_plans.append(entry)
        result = {
            "command": "make plans-sql",
            "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            "query": qkv.sql.READ_OUTPUT,
            "versions": {
                "python": platform.python_version(),
                "sqlite": sqlite3.sqlite_version,
                "postgresql": server.version,
                "psycopg": psycopg.__version__,
                "duckdb": duckdb.__version__,
            },
            "plans": plans,
            "layer_query": PROJECTION_QUERY,
            "layer_plans": layer_plans,
        }
    for entry in result["plans"] + result["layer_plans"]:
        for database, plan in entry["plans"].items():
            print(f"--- {entry.get('head') or entry['layer']}: {database}\n{plan}\n")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.out.relative_to(ROOT) if args.out.is_relative_to(ROOT) else args.out}")


if __name__ == "__main__":
    main()
