"""How one attention head costs in SQL: rows and time for growing L.

Not a test (timings vary from run to run): a benchmark that prints a table
and writes the result file the chapter draws from. Run it with
``make bench-sql`` on a quiet machine. For each sequence length L (with
d_k = d_v = 8) it loads one random head into SQLite (in memory), a
throw-away PostgreSQL (tests/support/postgres_server.py) and DuckDB (in memory),
counts the rows of the score relation (L * L) and of the join before the
GROUP BY (L * L * d_k), and times the whole head as one query,
``SELECT qpos, dim, val FROM output``, from the client: one warm-up run,
then the median of ``--repeats`` runs. Loading the tables is not timed.
NumPy's time is ``qkv.scaled_dot_product_attention`` on the same arrays
(each sample the mean of enough calls to last 0.2 s), on one BLAS thread
(``OMP_NUM_THREADS``, ``OPENBLAS_NUM_THREADS`` and ``MKL_NUM_THREADS`` are
set to 1 before NumPy is imported, and the result file records them): at
these sizes NumPy's products take microseconds, and with OpenBLAS's default
of one thread per core on a busy 2-core machine NumPy's time once grew about
30 times from L = 128 to 256, for 4 times the work. Every database's result is
checked against NumPy's to 1e-12 before its time counts.

Options: ``--sizes 16,32`` ``--repeats 5`` ``--out PATH``.
"""

from __future__ import annotations

import os
import sys

#: NumPy's BLAS threads, fixed before NumPy is imported (OpenBLAS reads them once, at load).
BLAS_THREADS = "1"
BLAS_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
if __name__ == "__main__":  # not on import: the tests import measure() and must keep their own settings
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
from contextlib import ExitStack  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

import qkv  # noqa: E402
import qkv.sql  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "support"))
from postgres_server import running_postgres  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from machine import cpu_model  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
RESULT = ROOT / "benchmarks" / "results" / "sql-attention.json"
D = 8
SEED = 0
DATABASES = ("SQLite", "PostgreSQL", "DuckDB")


def blas_threads() -> int | None:
    """How many threads NumPy's bundled OpenBLAS uses, asked of the library; None if unknown."""
    import ctypes

    libs = sorted((Path(np.__file__).parent.parent / "numpy.libs").glob("*openblas*"))
    for lib in libs:
        library = ctypes.CDLL(str(lib))
        for symbol in ("scipy_openblas_get_num_threads64_", "openblas_get_num_threads64_", "openblas_get_num_threads"):
            if hasattr(library, symbol):
                return int(getattr(library, symbol)())
    return None


def time_query(views, repeats: int) -> float:
    views.rows(qkv.sql.READ_OUTPUT)  # warm-up: caches, plans
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        views.rows(qkv.sql.READ_OUTPUT)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def time_numpy(q, k, v, repeats: int) -> float:
    timer = timeit.Timer(lambda: qkv.scaled_dot_product_attention(q, k, v))
    number, _ = timer.autorange()  # enough calls to last 0.2 s
    number = max(number, int(number * 0.2 / max(timer.timeit(number), 1e-9)))
    return statistics.median(t / number for t in timer.repeat(repeat=repeats, number=number))


def measure(connections: dict, length: int, repeats: int) -> dict:
    rng = np.random.default_rng(SEED)
    q, k, v = (rng.normal(size=(length, D)) for _ in range(3))
    expected, _ = qkv.scaled_dot_product_attention(q, k, v)
    row = {"L": length, "seconds": {}, "max_abs_error": {}}
    for name, conn in connections.items():
        with qkv.sql.attention_views(conn, q, k, v) as views:
            score_rows = views.rows("SELECT COUNT(*) FROM scores")[0][0]
            join_rows = views.rows("SELECT COUNT(*) FROM q JOIN k ON k.dim = q.dim")[0][0]
            if (
                row.setdefault("score_rows", score_rows) != score_rows
                or row.setdefault("join_rows", join_rows) != join_rows
            ):
                raise SystemExit(f"{name} counts {score_rows}/{join_rows} rows, others {row}")
            output = np.zeros((length, D))
            for qpos, dim, val in views.rows(qkv.sql.READ_OUTPUT):
                output[qpos, dim] = val
            error = float(np.abs(output - expected).max())
            if error > 1e-12:
                raise SystemExit(f"{name} differs from NumPy by {error} at L={length}")
            row["max_abs_error"][name] = error
            row["seconds"][name] = time_query(views, repeats)
    row["seconds"]["NumPy"] = time_numpy(q, k, v, repeats)
    return row


def versions(connections: dict, postgres_version: str) -> dict:
    import duckdb
    import psycopg

    return {
        "python": platform.python_version(),
        "numpy": np.__version__,
        "sqlite": sqlite3.sqlite_version,
        "postgresql": postgres_version,
        "psycopg": psycopg.__version__,
        "duckdb": duckdb.__version__,
        "duckdb_threads": connections["DuckDB"].execute("SELECT current_setting('threads')").fetchone()[0],
    }


def print_table(result: dict) -> None:
    machine = result["machine"]
    print(f"\nqkv.sql attention, d_k = d_v = {D}: one query, median of {result['settings']['repeats']} runs")
    print(
        f"machine: {machine['cpu']}, {machine['cores']} cores; load average before "
        f"{machine['load_before']}, after {machine['load_after']}"
    )
    print("versions: " + ", ".join(f"{k} {v}" for k, v in result["versions"].items()))
    print(f"NumPy's BLAS threads: {result['settings']['blas_threads']}")
    header = f"{'L':>5} {'score rows':>11} {'join rows':>10}" + "".join(
        f"{n + ' ms':>15}" for n in (*DATABASES, "NumPy")
    )
    print(header)
    print("-" * len(header))
    for row in result["rows"]:
        times = "".join(f"{row['seconds'][n] * 1e3:>15.3f}" for n in (*DATABASES, "NumPy"))
        print(f"{row['L']:>5} {row['score_rows']:>11,} {row['join_rows']:>10,}{times}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="16,32,64,128,256", help="comma-separated L values")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", type=Path, default=RESULT, help="where to write the JSON result")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]

    import duckdb
    import psycopg

    load_before = [round(x, 2) for x in os.getloadavg()]
    with ExitStack() as stack:
        server = stack.enter_context(running_postgres())
        connections = {
            "SQLite": stack.enter_context(sqlite3.connect(":memory:")),
            "PostgreSQL": stack.enter_context(psycopg.connect(**server.settings, autocommit=True)),
            "DuckDB": duckdb.connect(),
        }
        stack.callback(connections["DuckDB"].close)
        rows = []
        for length in sizes:
            rows.append(measure(connections, length, args.repeats))
            print(f"L={length} done", file=sys.stderr)
        result = {
            "command": "make bench-sql",
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
                "d_k": D,
                "d_v": D,
                "seed": SEED,
                "repeats": args.repeats,
                "warmup_runs": 1,
                "timed_query": qkv.sql.READ_OUTPUT,
                "numpy": "qkv.scaled_dot_product_attention(q, k, v)",
                "blas_threads": blas_threads(),
                "blas_environment": {var: os.environ.get(var) for var in BLAS_VARIABLES},
            },
            "rows": rows,
        }
    print_table(result)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"\nwrote {args.out.relative_to(ROOT) if args.out.is_relative_to(ROOT) else args.out}")


if __name__ == "__main__":
    main()
