"""Tests for qkv.sql: one attention head as SQL on SQLite, PostgreSQL and DuckDB.

PostgreSQL is the real server from Debian's package, started once per
session by tests/support/postgres_server.py (the ``postgres`` fixture); DuckDB comes
from PyPI. Without them these tests skip locally and fail under CI=true.
"""

from __future__ import annotations

import importlib.util
import json
import math
import re
import socket
import sqlite3
import tomllib
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import qkv
import qkv.sql
from needs import require, require_modules
from qkv.sql import _dialect

ROOT = Path(__file__).resolve().parent.parent
DATABASES = ["SQLite", "PostgreSQL", "DuckDB"]
# derandomize: the same examples every run, so CI never flakes.
FAST = settings(derandomize=True, max_examples=40, deadline=None, database=None)
EXACT = {"rtol": 0, "atol": 1e-12}


def _duckdb():
    require(
        importlib.util.find_spec("duckdb") is not None,
        "duckdb is not installed: `pip install -e '.[test]'` installs it",
    )
    import duckdb

    return duckdb


def _open(name: str, request, autocommit: bool = True):
    if name == "SQLite":
        return sqlite3.connect(":memory:")
    if name == "DuckDB":
        return _duckdb().connect()
    import psycopg

    return psycopg.connect(**request.getfixturevalue("postgres").settings, autocommit=autocommit)


@pytest.fixture(scope="module", params=DATABASES)
def connection(request):
    """One open connection per database, shared by a module's tests.

    Sharing it is itself a test: a call that left a table or view behind
    would make the next call's CREATE fail.
    """
    conn = _open(request.param, request)
    yield conn
    conn.close()


@pytest.fixture(params=DATABASES)
def fresh_connection(request):
    """A new connection per test, for tests that change its state."""
    conn = _open(request.param, request, autocommit=False)
    yield conn
    conn.close()


@pytest.fixture(scope="module")
def pg(request):
    conn = _open("PostgreSQL", request)
    yield conn
    conn.close()


def kind(conn) -> str:
    return _dialect.dialect_of(conn).name


def temp_objects(conn) -> list[str]:
    """Names of the temporary tables and views that exist on ``conn``."""
    sql = {
        "SQLite": "SELECT name FROM sqlite_temp_master",
        "PostgreSQL": "SELECT relname FROM pg_class WHERE relnamespace = pg_my_temp_schema()",
        "DuckDB": "SELECT table_name FROM duckdb_tables() WHERE temporary "
        "UNION ALL SELECT view_name FROM duckdb_views() WHERE temporary AND NOT internal",
    }[kind(conn)]
    return sorted(row[0] for row in conn.execute(sql).fetchall())


def causal(l_q: int, l_k: int) -> np.ndarray:
    return np.arange(l_k)[None, :] <= np.arange(l_q)[:, None]  # (L_q, L_k)


def random_head(seed: int, l_q: int = 5, l_k: int = 6, d_k: int = 4, d_v: int = 3):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(l_q, d_k)), rng.normal(size=(l_k, d_k)), rng.normal(size=(l_k, d_v))


def assert_same_as_numpy(conn, q, k, v, mask=None):
    out, weights = qkv.sql.attention(conn, q, k, v, mask)
    expected_out, expected_weights = qkv.scaled_dot_product_attention(q, k, v, mask)
    assert out.shape == expected_out.shape and weights.shape == expected_weights.shape
    np.testing.assert_allclose(weights, expected_weights, **EXACT)
    np.testing.assert_allclose(out, expected_out, **EXACT)


# Entries far below 1e-150 in magnitude are drawn as 0: on PostgreSQL a
# product of two of them is an error (tested on its own below).
small = st.floats(min_value=-3.0, max_value=3.0, allow_nan=False, allow_infinity=False).map(
    lambda x: 0.0 if abs(x) < 1e-150 else x
)


@st.composite
def head_with_mask(draw):
    l_q, l_k = draw(st.integers(1, 5)), draw(st.integers(1, 5))
    d_k, d_v = draw(st.integers(1, 4)), draw(st.integers(1, 3))
    q = draw(arrays(np.float64, (l_q, d_k), elements=small))
    k = draw(arrays(np.float64, (l_k, d_k), elements=small))
    v = draw(arrays(np.float64, (l_k, d_v), elements=small))
    mask_kind = draw(st.sampled_from(["none", "causal", "padding", "pairs"]))
    mask = {
        "none": lambda: None,
        "causal": lambda: causal(l_q, l_k),
        "padding": lambda: draw(arrays(np.bool_, (l_k,))),  # broadcasts over queries
        "pairs": lambda: draw(arrays(np.bool_, (l_q, l_k))),  # fully masked rows included
    }[mask_kind]()
    return q, k, v, mask


class TestEqualsNumpy:
    @FAST
    @given(problem=head_with_mask())
    def test_random_heads_and_masks(self, connection, problem):
        assert_same_as_numpy(connection, *problem)

    @pytest.mark.parametrize(
        "mask, expected_file",
        [
            (None, "mask_none"),
            (causal(5, 6), "mask_causal"),
            (np.array([True, True, False, True, False, False]), "mask_padding"),
            (np.tile([True, False, True, True, True, False], (5, 1)), "mask_padding"),
            (np.eye(5, 6, dtype=bool), "mask_pairs"),
        ],
        ids=["none", "causal", "padding-1d", "padding-2d", "pairs"],
    )
    def test_each_mask_runs_as_its_own_sql(self, connection, mask, expected_file):
        q, k, v = random_head(1)
        with qkv.sql.attention_views(connection, q, k, v, mask) as views:
            assert views.mask_file == expected_file
        assert_same_as_numpy(connection, q, k, v, mask)

    def test_the_toy_bank_sentence(self, connection):
        x = qkv.toy.bank_sentence(["money", "bank", "grows"])
        q, k, v = x @ qkv.toy.W_QUERY, x @ qkv.toy.W_KEY, x @ qkv.toy.W_VALUE
        _, weights = qkv.sql.attention(connection, q, k, v)
        assert weights[1].round(4).tolist() == [0.6652, 0.09, 0.2447]
        assert_same_as_numpy(connection, q, k, v)

    @pytest.mark.parametrize(
        "mask",
        [np.zeros((3, 4), dtype=bool), np.array([[True] * 4, [False] * 4, [True, False] * 2])],
        ids=["all-masked", "one-row-masked"],
    )
    def test_fully_masked_row_is_zeros_not_nan(self, connection, mask):
        q, k, v = random_head(2, l_q=3, l_k=4)
        out, weights = qkv.sql.attention(connection, q, k, v, mask)
        blocked = ~mask.any(axis=1)
        assert np.all(out[blocked] == 0.0) and np.all(weights[blocked] == 0.0)
        assert not np.isnan(out).any()
        assert_same_as_numpy(connection, q, k, v, mask)

    def test_no_queries_gives_empty_arrays(self, connection):
        out, weights = qkv.sql.attention(connection, np.ones((0, 2)), np.ones((2, 2)), np.ones((2, 3)))
        assert out.shape == (0, 3) and weights.shape == (0, 2)

    def test_values_round_trip_exactly(self, connection):
        # Long form loses nothing: DOUBLE PRECISION holds every float64.
        values = np.array([[1 / 3, -(2.0**-40)], [1e300, 7.0]])
        with qkv.sql.attention_views(connection, values, values, values) as views:
            rows = views.rows("SELECT pos, dim, val FROM v")
        back = np.zeros_like(values)
        for pos, dim, val in rows:
            back[pos, dim] = val
        assert back.tolist() == values.tolist()


class TestDialectDifferences:
    """Each difference the module handles, shown to matter on the real databases."""

    LARGE = ([[40.0]], [[0.0], [30.0]], [[1.0], [2.0]])  # scores 0 and 1200: exp(-1200)

    def test_large_score_gaps_give_weight_zero(self, connection):
        out, weights = qkv.sql.attention(connection, *self.LARGE)
        assert weights.tolist() == [[0.0, 1.0]] and out.tolist() == [[2.0]]

    def test_without_the_guard_postgresql_raises_underflow(self, connection, monkeypatch):
        weights_sql = qkv.sql.query_text("weights")
        unguarded = re.sub(r"CASE WHEN .*? END", "exp(score - max_score)", weights_sql, flags=re.S)
        assert unguarded != weights_sql
        original = qkv.sql.query_text
        monkeypatch.setattr(qkv.sql, "query_text", lambda name: unguarded if name == "weights" else original(name))
        if kind(connection) == "PostgreSQL":
            import psycopg

            with pytest.raises(ValueError, match="underflow") as error:
                qkv.sql.attention(connection, *self.LARGE)
            assert isinstance(error.value.__cause__, psycopg.errors.NumericValueOutOfRange)
            assert temp_objects(connection) == []
        else:  # SQLite and DuckDB return 0 for exp(-1200)
            assert qkv.sql.attention(connection, *self.LARGE)[1].tolist() == [[0.0, 1.0]]

    def test_a_gap_between_the_cutoff_and_exps_limit(self, connection):
        # Scores 0 and 400: below the guard's -300, above exp's -745 limit.
        out, weights = qkv.sql.attention(connection, [[20.0]], [[0.0], [20.0]], [[1.0], [2.0]])
        assert weights.tolist() == [[0.0, 1.0]] and out.tolist() == [[2.0]]

    def test_scores_a_float64_range_apart(self, connection, monkeypatch):
        # Scores 1.7e308 and -1.7e308 are finite, but their gap is not: weights.sql must
        # never form score - max_score for a key below the cutoff (it did, and PostgreSQL
        # refused the input as an overflow of "query * key or weight * value products").
        far = ([[1.0]], [[1.7e308], [-1.7e308]], [[1.0], [2.0]])
        with np.errstate(over="ignore"):  # NumPy's own scores - peak is -inf, exp gives 0
            assert_same_as_numpy(connection, *far)
        out, weights = qkv.sql.attention(connection, *far)
        assert weights.tolist() == [[1.0, 0.0]] and out.tolist() == [[1.0]]
        # Planted: the old test score - max_score < -300 computes the gap first.
        weights_sql = qkv.sql.query_text("weights")
        old = weights_sql.replace("score < max_score - 300", "score - max_score < -300")
        assert old != weights_sql
        original = qkv.sql.query_text
        monkeypatch.setattr(qkv.sql, "query_text", lambda name: old if name == "weights" else original(name))
        if kind(connection) == "PostgreSQL":
            with pytest.raises(ValueError, match="PostgreSQL raised 'value out of range: overflow'"):
                qkv.sql.attention(connection, *far)
            assert temp_objects(connection) == []
        else:  # SQLite and DuckDB compute -inf < -300, which is true as well
            assert qkv.sql.attention(connection, *far)[1].tolist() == [[1.0, 0.0]]

    def test_weights_below_the_cutoff_are_zero_unlike_numpy(self, connection):
        # Scores 0 and 301: NumPy's weight exp(-301) = 1.9e-131 on a value of 1e140 is 1.9e9;
        # weights.sql drops it. The docstring's bound: 2 * (L_k - 1) * exp(-300) * max|value|.
        cut = ([[1.0]], [[0.0], [301.0]], [[1e140], [0.0]])
        out, weights = qkv.sql.attention(connection, *cut)
        expected_out, expected_weights = qkv.scaled_dot_product_attention(*cut)
        assert weights.tolist() == [[0.0, 1.0]] and out.tolist() == [[0.0]]
        assert 1.8e9 < expected_out[0, 0] < 2e9 and 1.8e-131 < expected_weights[0, 0] < 2e-131
        assert abs(out - expected_out).max() <= 2 * (2 - 1) * np.exp(-300) * 1e140

    def test_a_small_weight_times_a_tiny_value_underflows_only_on_postgresql(self, connection):
        # Scores 0 and 299, just inside the cutoff: weight 1.4e-130 times 1e-200 rounds to 0.
        tiny_value = ([[1.0]], [[0.0], [299.0]], [[1e-200], [1.0]])
        if kind(connection) == "PostgreSQL":
            with pytest.raises(
                ValueError,
                match=r"PostgreSQL raised 'value out of range: underflow'.*a weight \(down to exp\(-300\) / L_k, "
                r"about 5e-131 / L_k\) times a value entry \(value entries below about 1e-193 \* L_k\)",
            ):
                qkv.sql.attention(connection, *tiny_value)
            assert temp_objects(connection) == []
        else:
            assert_same_as_numpy(connection, *tiny_value)

    def test_tiny_inputs_underflow_only_on_postgresql(self, connection):
        tiny = ([[1e-170, 1.0]], [[1e-170, 1.0], [1.0, 0.0]], [[1.0], [2.0]])  # 1e-170 * 1e-170 -> 0
        if kind(connection) == "PostgreSQL":
            with pytest.raises(
                ValueError, match=r"PostgreSQL raised 'value out of range: underflow'.*far below 1e-150"
            ):
                qkv.sql.attention(connection, *tiny)
            assert temp_objects(connection) == []
        else:
            assert_same_as_numpy(connection, *tiny)

    def test_integer_division_truncates_except_in_duckdb(self, connection):
        # Why sinusoidal.sql CASTs before dividing: -2 / 8 is 0 in SQLite and PostgreSQL.
        truncated = _dialect.fetch(connection, _dialect.dialect_of(connection), "SELECT -2 / 8")[0][0]
        assert truncated == {"SQLite": 0, "PostgreSQL": 0, "DuckDB": -0.25}[kind(connection)]
        text = qkv.sql.query_text("sinusoidal")
        uncast = text.replace("CAST(-two_i AS DOUBLE PRECISION)", "-two_i")
        assert uncast != text
        dialect = _dialect.dialect_of(connection)
        _dialect.prepare_functions(connection, dialect)
        rows = _dialect.fetch(connection, dialect, uncast, {"num_positions": 4, "d_model": 4, "base": 10000.0})
        table = np.zeros((4, 4))
        for pos, dim, val in rows:
            table[pos, dim] = val
        matches = np.allclose(table, qkv.sinusoidal_encoding(4, 4), **EXACT)
        assert matches == (kind(connection) == "DuckDB")

    def test_real_would_lose_digits(self, connection):
        # Why tables.sql says DOUBLE PRECISION: REAL is 4 bytes in PostgreSQL and DuckDB.
        dialect = _dialect.dialect_of(connection)
        as_real = _dialect.fetch(connection, dialect, "SELECT CAST(:x AS REAL)", {"x": 1 / 3})[0][0]
        as_double = _dialect.fetch(connection, dialect, "SELECT CAST(:x AS DOUBLE PRECISION)", {"x": 1 / 3})[0][0]
        assert as_double == 1 / 3
        assert (abs(as_real - 1 / 3) > 1e-9) == (kind(connection) != "SQLite")

    def test_sqlite_without_math_functions_gets_them_registered(self, monkeypatch):
        # This SQLite has exp and sqrt built in; plant a build without them.
        calls: dict[str, int] = {}

        def counted(name, function):
            def wrapper(*args):
                calls[name] = calls.get(name, 0) + 1
                return function(*args)

            return wrapper

        planted = {name: (arity, counted(name, f)) for name, (arity, f) in _dialect.SQLITE_MATH.items()}
        monkeypatch.setattr(_dialect, "SQLITE_MATH", planted)
        monkeypatch.setattr(_dialect, "sqlite_has_math", lambda connection: False)
        conn = sqlite3.connect(":memory:")
        assert_same_as_numpy(conn, *random_head(3))
        table = qkv.sql.sinusoidal_encoding(conn, 5, 6)
        np.testing.assert_allclose(table, qkv.sinusoidal_encoding(5, 6), **EXACT)
        assert set(calls) == {"exp", "sqrt", "sin", "cos", "power"}

    def test_math_probe(self):
        class WithoutMath:
            def __init__(self, message):
                self.message = message

            def execute(self, sql):
                raise sqlite3.OperationalError(self.message)

        assert _dialect.sqlite_has_math(WithoutMath("no such function: exp")) is False
        with pytest.raises(sqlite3.OperationalError, match="disk I/O error"):
            _dialect.sqlite_has_math(WithoutMath("disk I/O error"))

    def test_postgresql_analyzes_the_loaded_tables(self, pg):
        # Without ANALYZE PostgreSQL would assume 1850 rows per temporary table.
        q, k, v = random_head(4, l_q=16, l_k=16, d_k=8)
        plan = qkv.sql.explain(pg, q, k, v)
        assert re.search(r"Seq Scan on q .*rows=128 ", plan), plan  # 16 positions x 8 dims

    def test_duckdb_cursor_is_another_connection(self):
        # Why qkv.sql uses the DuckDB connection itself, never conn.cursor().
        conn = _duckdb().connect()
        conn.execute("CREATE TEMP TABLE seen (x INTEGER)")
        with pytest.raises(Exception, match="seen"):
            conn.cursor().execute("SELECT * FROM seen")


class TestExplain:
    def test_plan_names_the_join_the_windows_and_the_group_by(self, connection):
        plan = qkv.sql.explain(connection, *random_head(5))
        expected = {
            "SQLite": [r"SCAN q", r"SEARCH k", r"SEARCH v", r"GROUP BY"],
            "PostgreSQL": [r"(Hash|Merge) Join|Nested Loop", r"\bdim = [qk]\.dim", r"WindowAgg", r"Aggregate"],
            "DuckDB": [r"Hash Join", r"dim = dim", r"Window", r"Group By"],
        }[kind(connection)]
        for pattern in expected:
            assert re.search(pattern, plan), f"{pattern!r} not in plan:\n{plan}"
        assert temp_objects(connection) == []

    def test_causal_mask_is_a_predicate_in_the_postgresql_plan(self, pg):
        q, k, v = random_head(6, l_q=6)
        assert "k.pos <= q.pos" in qkv.sql.explain(pg, q, k, v, causal(6, 6))
        assert "<=" not in qkv.sql.explain(pg, q, k, v)

    def test_postgresql_scores_only_the_newest_query_when_asked_for_its_row(self, pg):
        # Chapter 9: both windows partition by qpos, so PostgreSQL pushes a filter on
        # qpos below them to the join (allpaths.c, UNSAFE_NOTIN_PARTITIONBY_CLAUSE): the
        # newest token's row costs L * d_k joined rows, as a KV cache's lookup does.
        q, k, v = random_head(8, l_q=64, l_k=64, d_k=4)

        def largest_step(where: str) -> int:
            with qkv.sql.attention_views(pg, q, k, v) as views:
                plan = views.rows(f"EXPLAIN (ANALYZE, FORMAT JSON) SELECT * FROM output{where}")[0][0]
            nodes, rows = [plan[0]["Plan"]], []
            while nodes:
                node = nodes.pop()
                rows.append(node["Actual Rows"] * node["Actual Loops"])
                nodes.extend(node.get("Plans", []))
            return max(rows)

        assert largest_step("") == 64 * 64 * 4
        assert largest_step(" WHERE qpos = 63") == 64 * 4

    def test_sqlite_plan_is_indented_by_parent(self):
        plan = qkv.sql.explain(sqlite3.connect(":memory:"), *random_head(7))
        lines = plan.splitlines()
        assert lines[0] == "CO-ROUTINE output"
        assert any(line.startswith("  ") for line in lines)


class TestOverflow:
    """Scores past float64's range: the NumPy API's error, never NaN weights."""

    OVERFLOW = (
        r"the attention scores query @ key\.T / sqrt\(d_k\) overflow float64 at score index "
        r"\(0, 0\) \(\|score\| > 1\.8e308, or inf - inf inside a dot product\), so their "
        r"softmax cannot be computed: make query or key smaller"
    )
    PLANTED = ([[1e200]], [[-1e200]], [[1.0]])  # score -1e400: before, SQLite and DuckDB returned NaN
    TOP = np.finfo(np.float64).max
    # Eleven equal weights of 1/11 over the largest float64 round past it (as in test_attention).
    OUTPUT = (np.zeros((1, 1)), np.zeros((11, 1)), np.full((11, 1), TOP))

    @pytest.mark.parametrize(
        "args",
        [
            PLANTED,
            ([[1e200]], [[1e200], [1.0]], [[1.0], [2.0]]),  # +inf
            ([[1e200, 1e200]], [[1e200, -1e200]], [[1.0]]),  # inf - inf inside the dot product
        ],
        ids=["minus-inf", "plus-inf", "inf-minus-inf"],
    )
    def test_overflowing_scores_are_refused_before_the_database_runs(self, connection, args):
        with pytest.raises(ValueError, match=self.OVERFLOW):
            qkv.sql.attention(connection, *args)
        assert temp_objects(connection) == []

    def test_the_numpy_api_refuses_the_same_scores_in_the_same_words(self):
        with pytest.raises(ValueError) as numpy_error:
            qkv.scaled_dot_product_attention(*self.PLANTED)
        with pytest.raises(ValueError) as sql_error:
            qkv.sql.attention(sqlite3.connect(":memory:"), *self.PLANTED)
        # Only the scale differs: qkv.sql has no scale argument, it is always 1 / sqrt(d_k).
        assert str(sql_error.value) == str(numpy_error.value).replace("* scale", "/ sqrt(d_k)").replace(
            "query, key or scale", "query or key"
        )

    def test_explain_refuses_them_too(self):
        with pytest.raises(ValueError, match=self.OVERFLOW):
            qkv.sql.explain(sqlite3.connect(":memory:"), *self.PLANTED)

    def test_an_output_that_overflows_names_value(self, connection):
        if kind(connection) == "PostgreSQL":
            match = r"PostgreSQL raised 'value out of range: overflow'.*make query, key or value smaller"
        else:
            match = r"the output weights @ value overflows float64 at index \(0, 0\).*make value smaller"
        with pytest.raises(ValueError, match=match):
            qkv.sql.attention(connection, *self.OUTPUT)
        assert temp_objects(connection) == []

    # NumPy's dot product is 0 (its BLAS pairs the terms so they cancel); summed in
    # the databases' order -1e308 - 1e308 is already -inf. Against a zero key the
    # weights were [0, 1] instead of [0.5, 0.5] on SQLite and DuckDB, with no error.
    SUM_ORDER = (
        1e154 * np.ones((1, 4)),
        np.vstack([1e154 * np.array([-1.0, -1.0, 1.0, 1.0]), np.zeros(4)]),
        [[1.0], [2.0]],
    )
    DATABASE_SCORE = (
        r"the database's attention scores query @ key\.T / sqrt\(d_k\) are NaN, inf or NULL at "
        r"score index \(0, 0\), though NumPy's are finite: .* make query or key smaller"
    )
    POSTGRESQL_SCORE = (
        r"PostgreSQL raised 'value out of range: overflow' computing the attention scores "
        r"query @ key\.T / sqrt\(d_k\), though NumPy's are finite: .* make query or key smaller"
    )

    def test_a_score_that_overflows_only_in_the_databases_order_is_refused(self, connection):
        out, weights = qkv.scaled_dot_product_attention(*self.SUM_ORDER)
        assert weights.tolist() == [[0.5, 0.5]] and out.tolist() == [[1.5]]  # finite in NumPy
        match = self.POSTGRESQL_SCORE if kind(connection) == "PostgreSQL" else self.DATABASE_SCORE
        with pytest.raises(ValueError, match=match):
            qkv.sql.attention(connection, *self.SUM_ORDER)
        assert temp_objects(connection) == []

    def test_without_the_database_score_check_the_weights_were_silently_wrong(self, connection, monkeypatch):
        # Planted: the check of the database's scores is switched off.
        monkeypatch.setattr(qkv.sql, "_check_database_scores", lambda views: None)
        if kind(connection) == "PostgreSQL":  # raises from the output's read instead
            with pytest.raises(ValueError, match="PostgreSQL raised 'value out of range: overflow'"):
                qkv.sql.attention(connection, *self.SUM_ORDER)
        else:
            out, weights = qkv.sql.attention(connection, *self.SUM_ORDER)
            assert weights.tolist() == [[0.0, 1.0]] and out.tolist() == [[2.0]]

    def test_without_the_numpy_check_the_database_score_check_refuses_inf(self, connection, monkeypatch):
        # Planted: the check before the database runs is switched off, so the score
        # -1e400 reaches the database; the database's own score check names it.
        monkeypatch.setattr(qkv.sql, "_checked_scores", lambda *args, **kwargs: None)
        match = self.POSTGRESQL_SCORE if kind(connection) == "PostgreSQL" else self.DATABASE_SCORE
        with pytest.raises(ValueError, match=match):
            qkv.sql.attention(connection, *self.PLANTED)
        assert temp_objects(connection) == []

    def test_without_both_score_checks_the_read_back_check_refuses_nan(self, connection, monkeypatch):
        # Planted: both score checks are switched off; what comes back must still not be NaN weights.
        monkeypatch.setattr(qkv.sql, "_checked_scores", lambda *args, **kwargs: None)
        monkeypatch.setattr(qkv.sql, "_check_database_scores", lambda views: None)
        if kind(connection) == "PostgreSQL":  # PostgreSQL raises instead of returning -inf
            match = r"PostgreSQL raised 'value out of range: overflow'.*make query, key or value smaller"
        else:
            match = (
                r"the database returned a weight that is NaN, inf or NULL at weights index \(0, 0\).*"
                r"make query or key smaller"
            )
        with pytest.raises(ValueError, match=match):
            qkv.sql.attention(connection, *self.PLANTED)
        assert temp_objects(connection) == []


class TestCleanup:
    def test_nothing_is_left_behind(self, connection):
        qkv.sql.attention(connection, *random_head(8), mask=np.eye(5, 6, dtype=bool))
        qkv.sql.attention(connection, *random_head(8), mask=[True] * 6)
        assert temp_objects(connection) == []

    def test_an_error_midway_leaves_nothing_and_the_connection_works(self, fresh_connection, monkeypatch):
        conn = fresh_connection
        original = qkv.sql.query_text
        broken = "CREATE TEMP VIEW weights AS SELEC qpos FROM visible;"
        monkeypatch.setattr(qkv.sql, "query_text", lambda name: broken if name == "weights" else original(name))
        with pytest.raises(Exception, match="(?i)syntax|parser"):
            qkv.sql.attention(conn, *random_head(9))
        monkeypatch.undo()
        if kind(conn) == "PostgreSQL":  # checked first: the next query opens a transaction
            import psycopg

            assert conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
        assert temp_objects(conn) == []
        assert_same_as_numpy(conn, *random_head(9))

    def test_the_callers_transaction_is_left_open(self, fresh_connection):
        conn = fresh_connection
        conn.execute("CREATE TABLE mine (x INTEGER)")
        conn.commit()
        if kind(conn) == "DuckDB":  # autocommit unless told
            conn.execute("BEGIN TRANSACTION")
        conn.execute("INSERT INTO mine VALUES (1)")
        assert_same_as_numpy(conn, *random_head(10))
        assert conn.execute("SELECT COUNT(*) FROM mine").fetchone()[0] == 1  # still in it
        conn.rollback()  # qkv.sql neither committed nor ended it: the insert is undone
        assert conn.execute("SELECT COUNT(*) FROM mine").fetchone()[0] == 0

    def test_sqlite_out_of_memory_raises_the_memory_error(self, tmp_path):
        """Re-review 3b, S3: after SQLITE_NOMEM SQLite had rolled back the caller's whole
        transaction, and qkv.sql's ROLLBACK TO raised "no such savepoint" in place of the
        MemoryError. (A child process: the heap limit is SQLite's, for the whole process.)"""
        import subprocess
        import sys

        script = (
            "import sqlite3, numpy as np, qkv.sql\n"
            f"con = sqlite3.connect({str(tmp_path / 'u.db')!r})\n"
            "con.execute('CREATE TABLE notes(a)'); con.commit()\n"
            "con.execute('PRAGMA temp_store = FILE')\n"
            "con.execute(\"INSERT INTO notes VALUES ('uncommitted')\")\n"
            "con.execute('PRAGMA hard_heap_limit = 1500000')\n"
            "x = np.random.default_rng(0).standard_normal((400, 64))\n"
            "try:\n"
            "    qkv.sql.attention(con, x, x, x)\n"
            "except Exception as e:\n"
            "    print(type(e).__name__, e)\n"
        )
        result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
        assert result.stdout.startswith("MemoryError"), result.stdout + result.stderr

    @pytest.mark.parametrize("statement", ["INSERT INTO Q", "DROP VIEW"])  # re-review 8a, W1: the drops too
    def test_sqlite_interrupted_during_a_write_says_the_transaction_is_gone(self, statement):
        """Re-review 7a, V2: an interrupt while a call inserts its rows makes SQLite roll back the
        caller's whole transaction (its rule for interrupted writes). Nothing can keep the rows;
        the error now says they are gone. Planted deterministically: a progress handler that
        interrupts as soon as the statement inserting into q runs."""
        conn = sqlite3.connect(":memory:")
        conn.execute("CREATE TABLE notes (a TEXT)")
        conn.commit()
        conn.execute("INSERT INTO notes VALUES ('uncommitted')")
        running = [""]
        conn.set_trace_callback(lambda sql: running.__setitem__(0, sql))
        conn.set_progress_handler(lambda: int(running[0].lstrip().upper().startswith(statement)), 1)
        with pytest.raises(sqlite3.OperationalError, match="interrupted") as caught:
            qkv.sql.attention(conn, *random_head(13))
        conn.set_progress_handler(None, 1)
        assert caught.value.__notes__ == [
            "SQLite rolled back the whole transaction on this error (its rule for running out of memory "
            "or an interrupted write), so your uncommitted changes are gone too"
        ]
        assert not conn.in_transaction and conn.execute("SELECT * FROM notes").fetchall() == []

    def test_a_commit_inside_the_views_block_ends_cleanly(self):
        """Re-review 7a, L1: a commit inside attention_views' block took qkv.sql's savepoint with
        it, and leaving the block raised "no such savepoint". Now the block ends cleanly, its
        scratch objects dropped, and the committed row stays."""
        conn = sqlite3.connect(":memory:")
        conn.execute("CREATE TABLE notes (a TEXT)")
        conn.commit()
        conn.execute("INSERT INTO notes VALUES ('mine')")
        with qkv.sql.attention_views(conn, *random_head(14)) as views:
            assert len(views.rows("SELECT * FROM weights")) > 0
            conn.commit()
        assert temp_objects(conn) == []
        assert conn.execute("SELECT * FROM notes").fetchall() == [("mine",)]

    def test_no_transaction_is_left_open(self, fresh_connection):
        conn = fresh_connection
        assert_same_as_numpy(conn, *random_head(11))
        if kind(conn) == "SQLite":
            assert not conn.in_transaction
        elif kind(conn) == "PostgreSQL":
            import psycopg

            assert conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE

    def test_a_permanent_table_named_q_is_untouched(self, fresh_connection):
        conn = fresh_connection
        conn.execute("CREATE TABLE q (note TEXT)")
        conn.execute("INSERT INTO q VALUES ('mine')")
        assert_same_as_numpy(conn, *random_head(12))
        assert [tuple(row) for row in conn.execute("SELECT note FROM q").fetchall()] == [("mine",)]

    def test_the_review_case_loses_nothing(self, fresh_connection):
        """Issue 26.1, as found: DuckDB raised 'Table with name v already exists' and then dropped the
        user's temporary table v and view weights."""
        conn = fresh_connection
        conn.execute("CREATE TEMP TABLE v AS SELECT 42 AS mine")
        conn.execute("CREATE VIEW weights AS SELECT 7 AS mine")
        with pytest.raises(ValueError, match=r"already has temporary objects named v, which qkv.sql needs"):
            qkv.sql.attention(conn, *random_head(13))
        assert conn.execute("SELECT mine FROM v").fetchone()[0] == 42
        assert conn.execute("SELECT mine FROM weights").fetchone()[0] == 7
        conn.execute("DROP TABLE v")  # without the clash, the call runs beside the user's permanent view
        assert_same_as_numpy(conn, *random_head(13))
        assert conn.execute("SELECT mine FROM weights").fetchone()[0] == 7

    def test_the_users_temporary_objects_with_every_qkv_name_survive(self, fresh_connection):
        conn = fresh_connection
        names = {"q": "TABLE", "k": "TABLE", "v": "TABLE", "scores": "VIEW", "visible": "VIEW"}
        names |= {"weights": "VIEW", "output": "VIEW", "tokens": "TABLE", "allowed": "TABLE"}
        for name, what in names.items():
            conn.execute(f"CREATE TEMP {what} {name} AS SELECT 42 AS mine")
        for call in (
            lambda: qkv.sql.attention(conn, *random_head(14), mask=[True] * 6),
            lambda: qkv.sql.attention(conn, *random_head(14), mask=np.ones((5, 6), dtype=bool)),
            lambda: qkv.sql.explain(conn, *random_head(14)),
        ):
            with pytest.raises(ValueError, match="connection already has temporary objects named "):
                call()
            for name in names:
                assert conn.execute(f"SELECT mine FROM {name}").fetchone()[0] == 42, name

    def test_a_permanent_view_named_weights_survives_an_error_midway(self, fresh_connection, monkeypatch):
        conn = fresh_connection
        conn.execute("CREATE VIEW weights AS SELECT 7 AS mine")
        original = qkv.sql.query_text
        broken = "CREATE TEMP VIEW output AS SELEC 1;"
        monkeypatch.setattr(qkv.sql, "query_text", lambda name: broken if name == "output" else original(name))
        with pytest.raises(Exception, match="(?i)syntax|parser"):
            qkv.sql.attention(conn, *random_head(15))
        monkeypatch.undo()
        assert conn.execute("SELECT mine FROM weights").fetchone()[0] == 7
        assert temp_objects(conn) == []


# Every name qkv.sql gives a scratch object, and what it is.
SCRATCH = {"q": "TABLE", "k": "TABLE", "v": "TABLE", "tokens": "TABLE", "allowed": "TABLE"}
SCRATCH |= {"scores": "VIEW", "visible": "VIEW", "weights": "VIEW", "output": "VIEW"}
CASES = {"lower": str.lower, "upper": str.upper, "mixed": str.capitalize}


def begin(conn) -> None:
    """Open a transaction of the user's (SQLite and psycopg open one at the next INSERT)."""
    if kind(conn) == "DuckDB":
        conn.execute("BEGIN TRANSACTION")


def every_call(conn, head):
    """qkv.sql.attention with each mask file, and explain: every set of scratch names."""
    q, k, v = head
    return [
        lambda: qkv.sql.attention(conn, q, k, v),
        lambda: qkv.sql.attention(conn, q, k, v, mask=causal(len(q), len(k))),
        lambda: qkv.sql.attention(conn, q, k, v, mask=[True] * len(k)),
        lambda: qkv.sql.attention(conn, q, k, v, mask=np.eye(len(q), len(k), dtype=bool)),
        lambda: qkv.sql.explain(conn, q, k, v),
    ]


class TestUsersObjectsSurvive:
    """Security review H1, H2 and L10: qkv.sql never touches an object it did not create.

    Found: DuckDB compared the user's temporary names case-sensitively but
    resolves them ignoring case, so the user's "V" and "Weights" passed the
    clash check, CREATE TEMP TABLE v failed, and the cleanup dropped them (in
    the user's transaction the catalog error also lost their uncommitted
    rows); SQLite raised a raw OperationalError for "V"; PostgreSQL with
    search_path = public, pg_temp inserted into the user's own q and returned
    wrong weights.
    """

    @pytest.mark.parametrize("case", list(CASES))
    def test_every_name_in_every_case_survives_calls_that_fail_and_succeed(self, fresh_connection, case):
        conn = fresh_connection
        name_of = {ours: f'"{CASES[case](ours)}"' for ours in SCRATCH}  # quoted: the case is kept
        schema = {
            "SQLite": ("main.", "temp."),
            "PostgreSQL": ("public.", "pg_temp."),
            "DuckDB": ("memory.main.", "temp."),
        }
        permanent, temporary = schema[kind(conn)]
        try:
            conn.execute(f"CREATE TABLE {permanent}notes (note TEXT)")
            for ours, theirs in name_of.items():
                # A permanent table of each name, and a temporary object of the kind qkv.sql makes.
                conn.execute(f"CREATE TABLE {permanent}{theirs} (pos INTEGER, dim INTEGER, val DOUBLE PRECISION)")
                conn.execute(f"INSERT INTO {permanent}{theirs} VALUES (0, 0, 42.0)")
                conn.execute(f"CREATE TEMP {SCRATCH[ours]} {temporary}{theirs} AS SELECT 7 AS mine")
            if kind(conn) == "PostgreSQL":
                conn.execute("SET search_path = public, pg_temp")  # the review's: the user's tables first
            conn.commit()
            self.fail_and_succeed(conn, case, name_of, permanent, temporary)
        finally:
            if kind(conn) == "PostgreSQL":  # the server outlives the connection: drop what was committed
                conn.rollback()
                for theirs in [*name_of.values(), "notes"]:
                    conn.execute(f"DROP TABLE IF EXISTS public.{theirs}")
                conn.commit()

    @staticmethod
    def fail_and_succeed(conn, case, name_of, permanent, temporary):
        search_path = conn.execute("SHOW search_path").fetchone()[0] if kind(conn) == "PostgreSQL" else None
        begin(conn)
        conn.execute(f"INSERT INTO {permanent}notes VALUES ('uncommitted work')")

        def assert_all_survive(with_temporary: bool = True) -> None:
            for theirs in name_of.values():
                rows = [tuple(row) for row in conn.execute(f"SELECT * FROM {permanent}{theirs}").fetchall()]
                assert rows == [(0, 0, 42.0)], f"{permanent}{theirs}"
                if with_temporary:
                    assert conn.execute(f"SELECT mine FROM {temporary}{theirs}").fetchone()[0] == 7, theirs
            notes = [tuple(row) for row in conn.execute(f"SELECT note FROM {permanent}notes").fetchall()]
            assert notes == [("uncommitted work",)]
            if search_path is not None:
                assert conn.execute("SHOW search_path").fetchone()[0] == search_path

        head = random_head(20)
        clash = kind(conn) != "PostgreSQL" or case == "lower"  # PostgreSQL keeps "Q" and q apart
        for call in every_call(conn, head):
            if clash:
                with pytest.raises(Exception) as raised:
                    call()
                assert_all_survive()  # first: DuckDB used to drop "V" and lose the uncommitted row
                assert raised.type is ValueError, raised.value  # SQLite used to raise OperationalError
                assert "connection already has temporary objects named " in str(raised.value)
            else:
                call()
                assert_all_survive()
        if clash:
            with pytest.raises(ValueError) as refused:
                qkv.sql.attention(conn, *head)
            for ours in ("q", "k", "v", "scores", "visible", "weights", "output"):
                theirs = CASES[case](ours)
                same = f"{theirs} (to {kind(conn)} the same name as {ours})"
                assert (same if theirs != ours else f"{theirs},") in str(refused.value) + ","
        # Without the user's temporary objects the calls run beside their permanent
        # tables: they fail midway (a score that overflows in the database's order) and succeed.
        for ours, theirs in name_of.items():
            conn.execute(f"DROP {SCRATCH[ours]} {temporary}{theirs}")
        with pytest.raises(ValueError, match="overflow"):
            qkv.sql.attention(conn, *TestOverflow.SUM_ORDER)
        assert_all_survive(with_temporary=False)
        for call in every_call(conn, head):
            call()
            assert_all_survive(with_temporary=False)
        assert_same_as_numpy(conn, *head)
        assert temp_objects(conn) == []
        conn.commit()  # the user's transaction was still theirs to commit
        assert_all_survive(with_temporary=False)

    def test_the_reviews_duckdb_case_outside_a_transaction(self):
        conn = _duckdb().connect()
        conn.execute('CREATE TEMP TABLE "V" AS SELECT 42 AS answer')
        conn.execute('CREATE TEMP VIEW "Weights" AS SELECT 7 AS seven')
        with pytest.raises(Exception) as raised:
            qkv.sql.attention(conn, np.eye(2), np.eye(2), np.eye(2))
        assert conn.execute('SELECT * FROM "V"').fetchall() == [(42,)]
        assert conn.execute('SELECT * FROM "Weights"').fetchall() == [(7,)]
        assert str(raised.value).startswith(
            "connection already has temporary objects named V (to DuckDB the same name as v), "
            "Weights (to DuckDB the same name as weights), which qkv.sql needs"
        )

    def test_a_temporary_type_or_sequence_of_a_scratch_name_is_refused_on_postgresql(self, pg):
        pg.execute("CREATE TYPE pg_temp.q AS ENUM ('mine')")
        pg.execute("CREATE TEMP SEQUENCE weights")
        try:
            with pytest.raises(ValueError, match="connection already has temporary objects named q, weights, which"):
                qkv.sql.attention(pg, *random_head(21))
            assert pg.execute("SELECT nextval('pg_temp.weights')").fetchone()[0] == 1
        finally:
            pg.execute("DROP TYPE pg_temp.q")
            pg.execute("DROP SEQUENCE pg_temp.weights")

    def test_a_temporary_index_of_a_scratch_name_is_refused_on_sqlite(self):
        conn = sqlite3.connect(":memory:")
        conn.execute("CREATE TEMP TABLE mine (x INTEGER)")
        conn.execute("CREATE INDEX temp.K ON mine (x)")
        with pytest.raises(ValueError, match=r"named K \(to SQLite the same name as k\)"):
            qkv.sql.attention(conn, *random_head(22))

    def test_the_users_temporary_names_that_only_look_alike_do_not_clash(self):
        duckdb = _duckdb()
        conn = duckdb.connect()
        conn.execute('CREATE TEMP TABLE "\u212a" AS SELECT 1 AS mine')  # the Kelvin sign, not k
        assert_same_as_numpy(conn, *random_head(23))
        assert conn.execute('SELECT mine FROM "\u212a"').fetchone()[0] == 1

    def test_duckdb_search_path_cannot_send_the_scratch_names_to_the_users_tables(self):
        conn = _duckdb().connect()
        conn.execute("CREATE TABLE q (pos INTEGER, dim INTEGER, val DOUBLE PRECISION)")
        conn.execute("INSERT INTO q VALUES (0, 0, 42.0)")
        conn.execute("SET search_path = 'memory.main'")
        assert_same_as_numpy(conn, *random_head(24))
        assert conn.execute("SELECT * FROM memory.main.q").fetchall() == [(0, 0, 42.0)]


class TestPostgresqlSearchPath:
    """Security review H2: for a call, unqualified names resolve to pg_temp; the user's setting is restored."""

    USERS_PATH = "public, pg_temp"

    @pytest.fixture
    def users_q(self, request):
        """A connection whose search_path puts public before pg_temp, and a permanent q with a row."""
        conn = _open("PostgreSQL", request, autocommit=True)
        conn.execute("CREATE TABLE IF NOT EXISTS public.q (pos INTEGER, dim INTEGER, val DOUBLE PRECISION)")
        conn.execute("TRUNCATE public.q")
        conn.execute("INSERT INTO public.q VALUES (0, 0, 42.0)")
        conn.execute(f"SET search_path = {self.USERS_PATH}")
        yield conn
        conn.rollback()
        conn.execute("DROP TABLE public.q")
        conn.close()

    @staticmethod
    def search_path(conn) -> str:
        return conn.execute("SHOW search_path").fetchone()[0]

    def test_the_review_case_gets_right_weights_and_leaves_the_users_q_alone(self, users_q):
        assert_same_as_numpy(users_q, *random_head(30))
        assert users_q.execute("SELECT * FROM public.q").fetchall() == [(0, 0, 42.0)]

    @pytest.mark.parametrize("in_transaction", [False, True], ids=["outside", "inside"])
    @pytest.mark.parametrize("outcome", ["success", "database-error", "clash"])
    def test_the_users_search_path_is_restored(self, users_q, in_transaction, outcome):
        conn = users_q
        if in_transaction:
            conn.execute("BEGIN")
            conn.execute('SET LOCAL search_path = "$user", public, pg_temp')  # a local value of the user's
        before = self.search_path(conn)
        if outcome == "clash":
            conn.execute("CREATE TEMP TABLE IF NOT EXISTS pg_temp.output (mine INTEGER)")
        if outcome == "success":
            assert_same_as_numpy(conn, *random_head(31))
        else:
            args = TestOverflow.SUM_ORDER if outcome == "database-error" else random_head(31)
            with pytest.raises(ValueError, match="overflow" if outcome == "database-error" else "named output"):
                qkv.sql.attention(conn, *args)
        assert self.search_path(conn) == before
        if in_transaction:
            import psycopg

            assert conn.info.transaction_status == psycopg.pq.TransactionStatus.INTRANS
            conn.execute("ROLLBACK")
            assert self.search_path(conn) == self.USERS_PATH  # the user's SET LOCAL ended with their transaction
        assert conn.execute("SELECT * FROM public.q").fetchall() == [(0, 0, 42.0)]
        conn.execute("DROP TABLE IF EXISTS pg_temp.output")

    def test_the_users_functions_answer_for_none_of_the_queries_functions(self, users_q):
        """Found beside H2: with search_path = public, pg_catalog, a public.sin made the table's sin(1) 42."""
        conn = users_q
        for name, value in (("sin", 42.0), ("exp", 1.0)):
            conn.execute(
                f"CREATE FUNCTION public.{name}(double precision) RETURNS double precision LANGUAGE sql AS 'SELECT {value}::float8'"
            )
        conn.execute("SET search_path = public, pg_catalog")
        try:
            for method in ("recursive", "generate_series"):
                table = qkv.sql.sinusoidal_encoding(conn, 5, 6, method=method)
                np.testing.assert_allclose(table, qkv.sinusoidal_encoding(5, 6), **EXACT)
                assert self.search_path(conn) == "public, pg_catalog"
            assert_same_as_numpy(conn, *random_head(33))
            assert self.search_path(conn) == "public, pg_catalog"
        finally:
            conn.execute("DROP FUNCTION public.sin(double precision)")
            conn.execute("DROP FUNCTION public.exp(double precision)")

    def test_inside_attention_views_names_resolve_to_pg_temp_and_pg_catalog(self, users_q):
        with qkv.sql.attention_views(users_q, *random_head(32)) as views:
            assert views.rows("SHOW search_path") == [("pg_temp, pg_catalog",)]
            assert views.rows("SELECT COUNT(*) FROM q") == [(20,)]  # the scratch q: 5 x 4 rows
        assert self.search_path(users_q) == self.USERS_PATH


class TestUsersFunctions:
    """Security re-review N7: a function of the user's named like one the queries call is refused.

    Found: on DuckDB a macro ``exp`` (temporary, or saved in the database
    file) answered for the built-in, and on SQLite a function registered on
    the connection did: weights [0.3333, 0.3333, 0.3333] instead of
    [0.6652, 0.09, 0.2447], with no error.
    """

    MACROS = {
        "exp": "exp(x) AS 1.0",
        "sqrt": "sqrt(x) AS x",
        "sin": "sin(x) AS x",
        "cos": "cos(x) AS x",
        "power": "power(a, b) AS 1.0",
        "sum": "sum(x) AS 7",
        "max": "max(x) AS 7",
        "count": "count(x) AS 7",
        "generate_series": "generate_series(a, b, c) AS TABLE SELECT 1 AS g",
    }

    @staticmethod
    def users_macros(conn) -> list[tuple]:
        return conn.execute(
            "SELECT database_name, schema_name, function_name FROM duckdb_functions() WHERE NOT internal ORDER BY ALL"
        ).fetchall()

    @pytest.mark.parametrize("temporary", [False, True], ids=["saved", "temp"])
    @pytest.mark.parametrize("name", sorted(MACROS))
    def test_a_duckdb_macro_named_like_a_builtin_is_refused(self, name, temporary):
        conn = _duckdb().connect()
        conn.execute(f"CREATE {'TEMP ' if temporary else ''}MACRO {self.MACROS[name]}")
        macros = self.users_macros(conn)
        where = f"{'temp' if temporary else 'memory'}.main.{name}"
        for call in (
            lambda: qkv.sql.attention(conn, *random_head(40)),
            lambda: qkv.sql.sinusoidal_encoding(conn, 3, 4),
            lambda: qkv.sql.sinusoidal_encoding(conn, 3, 4, method="generate_series"),
        ):
            with pytest.raises(ValueError, match=rf"connection has functions of its own named {name} \({where}\)"):
                call()
        assert self.users_macros(conn) == macros  # left alone
        assert temp_objects(conn) == []

    def test_a_macro_saved_in_the_database_file_is_refused_when_it_is_opened_again(self, tmp_path):
        duckdb = _duckdb()
        path = str(tmp_path / "mine.duckdb")
        with duckdb.connect(path) as conn:
            conn.execute("CREATE MACRO exp(x) AS 1.0")
        with duckdb.connect(path) as conn:
            with pytest.raises(ValueError, match=r"named exp \(mine\.main\.exp\).*DROP MACRO"):
                qkv.sql.attention(conn, *random_head(41))

    def test_the_reviews_duckdb_case_without_the_check_gave_wrong_weights(self, monkeypatch):
        """Why the check exists: the macro answers for exp and nothing else notices."""
        conn = _duckdb().connect()
        conn.execute("CREATE MACRO exp(x) AS 1.0")
        monkeypatch.setattr(_dialect, "users_functions", lambda connection, dialect: [], raising=False)
        _, weights = qkv.sql.attention(conn, *random_head(42))
        np.testing.assert_allclose(weights, np.full((5, 6), 1 / 6), **EXACT)

    def test_other_macros_of_the_users_are_fine(self):
        conn = _duckdb().connect()
        conn.execute("CREATE MACRO my_exp(x) AS 1.0")
        conn.execute("CREATE TEMP MACRO expo(x) AS 1.0")
        assert_same_as_numpy(conn, *random_head(43))

    SQLITE_FUNCTIONS = {
        "exp": lambda conn: conn.create_function("exp", 1, lambda x: 1.0),
        "sqrt": lambda conn: conn.create_function("SQRT", 1, lambda x: x),
        "sin": lambda conn: conn.create_function("sin", 1, lambda x: x),
        "cos": lambda conn: conn.create_function("cos", 1, lambda x: x),
        "power": lambda conn: conn.create_function("power", 2, lambda a, b: 1.0),
        "sum": lambda conn: conn.create_aggregate("sum", 1, Seven),
        "max": lambda conn: conn.create_aggregate("max", 1, Seven),
        "count": lambda conn: conn.create_aggregate("count", 0, Seven),
    }

    @pytest.mark.parametrize("listed", [True, False], ids=["function-list", "probe"])
    @pytest.mark.parametrize("name", sorted(SQLITE_FUNCTIONS))
    def test_a_function_registered_on_a_sqlite_connection_is_refused(self, name, listed, monkeypatch):
        if not listed:  # a SQLite without PRAGMA function_list (before 3.30): the values tell
            monkeypatch.setattr(_dialect, "sqlite_function_list", lambda connection: None, raising=False)
        conn = sqlite3.connect(":memory:")
        self.SQLITE_FUNCTIONS[name](conn)
        for call in (
            lambda: qkv.sql.attention(conn, *random_head(44)),
            lambda: qkv.sql.sinusoidal_encoding(conn, 3, 4),
        ):
            with pytest.raises(
                ValueError, match=rf"connection has functions of its own named {name}\b.*another connection"
            ):
                call()
        assert temp_objects(conn) == [] and not conn.in_transaction

    def test_the_reviews_sqlite_case(self):
        conn = sqlite3.connect(":memory:")
        conn.create_function("exp", 1, lambda x: 1.0)
        with pytest.raises(ValueError, match=r"named exp\b.*registered on the sqlite3 connection"):
            qkv.sql.attention(conn, np.eye(2), np.eye(2), np.eye(2))

    def test_a_registered_function_that_is_pythons_own_math_is_fine(self):
        # Also what qkv.sql registers itself on a SQLite built without math functions.
        conn = sqlite3.connect(":memory:")
        conn.create_function("exp", 1, math.exp)
        conn.create_function("my_sum", 1, lambda x: 7)
        assert_same_as_numpy(conn, *random_head(45))

    def test_postgresql_needs_no_check(self, pg):
        # Its search_path (pg_temp, pg_catalog) keeps the user's functions out: TestPostgresqlSearchPath.
        assert _dialect.users_functions(pg, _dialect.POSTGRESQL) == []


class Seven:
    """An aggregate of the user's that always returns 7."""

    def step(self, *args):
        pass

    def finalize(self):
        return 7


class TestRowFactories:
    """Security re-review N8: the connection's row factory does not change what qkv.sql reads.

    Found: with psycopg's dict_row, attention raised an IndexError and left
    the user's open transaction with search_path = 'current_setting'.
    """

    @pytest.fixture(params=["dict_row", "namedtuple_row", "RawCursor"])
    def users_pg(self, request):
        """A PostgreSQL connection with another row factory (or cursor), inside the user's transaction."""
        import psycopg
        import psycopg.rows

        conn = _open("PostgreSQL", request, autocommit=False)
        if request.param == "RawCursor":
            conn.cursor_factory = psycopg.RawCursor
        else:
            conn.row_factory = getattr(psycopg.rows, request.param)
        conn.execute("CREATE TABLE notes (a text)")
        conn.execute("INSERT INTO notes VALUES ('mine')")
        yield conn
        conn.rollback()
        conn.close()

    @staticmethod
    def state(conn) -> tuple:
        """The search_path and the notes, read with a tuple cursor, and the transaction status."""
        import psycopg.rows

        with conn.cursor(row_factory=psycopg.rows.tuple_row) as cursor:
            path = cursor.execute("SHOW search_path").fetchall()
            notes = cursor.execute("SELECT * FROM notes").fetchall()
        return path, notes, conn.info.transaction_status.name

    def test_attention_and_its_table_work_and_leave_the_transaction_as_it_was(self, users_pg):
        before = self.state(users_pg)
        assert before[1:] == ([("mine",)], "INTRANS")
        assert_same_as_numpy(users_pg, *random_head(50))
        table = qkv.sql.sinusoidal_encoding(users_pg, 5, 6)
        np.testing.assert_allclose(table, qkv.sinusoidal_encoding(5, 6), **EXACT)
        with qkv.sql.attention_views(users_pg, *random_head(50)) as views:
            assert views.rows("SELECT COUNT(*) FROM q") == [(20,)]
            assert "Sort" in views.plan() or "Aggregate" in views.plan()
        assert "Aggregate" in qkv.sql.explain(users_pg, *random_head(50))
        assert self.state(users_pg) == before

    @pytest.mark.parametrize("autocommit", [True, False], ids=["session", "in-a-transaction"])
    def test_postgresql_reads_floats_exactly_whatever_extra_float_digits_says(self, request, autocommit):
        """Security re-review 2, P7: with extra_float_digits = -15 the weights came back rounded
        (row 1 read [0.7, 0.09, 0.2] for [0.6652, 0.09, 0.2447]), and no error said so."""
        conn = _open("PostgreSQL", request, autocommit=autocommit)
        try:
            conn.execute("SET extra_float_digits = -15")
            assert_same_as_numpy(conn, *random_head(54))
            np.testing.assert_allclose(qkv.sql.sinusoidal_encoding(conn, 5, 6), qkv.sinusoidal_encoding(5, 6), **EXACT)
            assert conn.execute("SHOW extra_float_digits").fetchone() == ("-15",)  # the user's own, kept
        finally:
            conn.close()

    @pytest.mark.parametrize("outcome", ["clash", "database-error", "error-in-the-block"])
    def test_the_search_path_is_restored_on_every_error(self, users_pg, outcome):
        before = self.state(users_pg)
        if outcome == "clash":
            users_pg.execute("CREATE TEMP TABLE output (mine INTEGER)")
            with pytest.raises(ValueError, match="named output"):
                qkv.sql.attention(users_pg, *random_head(51))
        elif outcome == "database-error":
            with pytest.raises(ValueError, match="overflow"):
                qkv.sql.attention(users_pg, *TestOverflow.SUM_ORDER)
        else:
            with pytest.raises(RuntimeError, match="the user's own"):
                with qkv.sql.attention_views(users_pg, *random_head(51)):
                    raise RuntimeError("the user's own error")
        assert self.state(users_pg) == before

    @pytest.mark.parametrize(
        "row_factory",
        [sqlite3.Row, lambda cursor, row: {d[0]: v for d, v in zip(cursor.description, row)}],
        ids=["sqlite3.Row", "dict"],
    )
    def test_sqlite_with_a_row_factory(self, row_factory):
        conn = sqlite3.connect(":memory:")
        conn.row_factory = row_factory
        conn.create_function("my_exp", 1, math.exp)  # so the function check reads rows too
        assert_same_as_numpy(conn, *random_head(52))
        table = qkv.sql.sinusoidal_encoding(conn, 5, 6)
        np.testing.assert_allclose(table, qkv.sinusoidal_encoding(5, 6), **EXACT)
        assert "USE TEMP B-TREE FOR GROUP BY" in qkv.sql.explain(conn, *random_head(52))
        assert conn.row_factory is row_factory

    @pytest.mark.parametrize(
        "text_factory", [bytes, lambda data: data.decode().upper()], ids=["bytes", "the user's decoder"]
    )
    def test_sqlite_with_a_text_factory(self, text_factory):
        """Security re-review 2, P6: text_factory = bytes gave AttributeError from fold_name before anything ran."""
        conn = sqlite3.connect(":memory:")
        conn.text_factory = text_factory
        conn.create_function("my_exp", 1, math.exp)  # so the function check reads names
        conn.execute("CREATE TABLE notes (a TEXT)")
        conn.execute("INSERT INTO notes VALUES ('mine')")
        assert_same_as_numpy(conn, *random_head(53))
        np.testing.assert_allclose(qkv.sql.sinusoidal_encoding(conn, 5, 6), qkv.sinusoidal_encoding(5, 6), **EXACT)
        assert "USE TEMP B-TREE FOR GROUP BY" in qkv.sql.explain(conn, *random_head(53))
        assert conn.text_factory is text_factory
        assert conn.execute("SELECT a FROM notes").fetchall() == [(text_factory(b"mine"),)]


class TestSizeUpFront:
    """Security review L9: qkv.sql.attention and explain refuse scores above the NumPy API's limit up front.

    Found: NumPy refused a (50000, 1) head at once ("would need ... 18.6 GiB");
    qkv.sql ran for more than 30 s and would then allocate the same weights.
    The limit is lowered here so that the unfixed code fails fast instead.
    """

    @pytest.mark.parametrize("function", [qkv.sql.attention, qkv.sql.explain])
    def test_the_same_limit_and_words_as_the_numpy_api(self, connection, function, monkeypatch):
        import qkv._checks

        head = (np.zeros((300, 1)), np.zeros((300, 1)), np.zeros((300, 1)))
        monkeypatch.setattr(qkv._checks, "MAX_ARRAY_BYTES", 300 * 300 * 8 - 1)
        with pytest.raises(ValueError) as numpy_error:
            qkv.scaled_dot_product_attention(*head)
        with pytest.raises(ValueError) as sql_error:
            function(connection, *head)
        assert str(sql_error.value) == str(numpy_error.value).replace("* scale", "/ sqrt(d_k)")
        assert "would need a float64 array of shape (300, 300): 720,000 bytes" in str(sql_error.value)
        assert temp_objects(connection) == []


class TestSinusoidal:
    @pytest.mark.parametrize("num_positions, d_model, base", [(1, 2, 10000.0), (7, 6, 10000.0), (50, 16, 100.0)])
    def test_recursive_cte_equals_qkv(self, connection, num_positions, d_model, base):
        table = qkv.sql.sinusoidal_encoding(connection, num_positions, d_model, base)
        np.testing.assert_allclose(table, qkv.sinusoidal_encoding(num_positions, d_model, base), **EXACT)

    @FAST
    @given(num_positions=st.integers(1, 40), half=st.integers(1, 12))
    def test_generate_series_equals_qkv(self, connection, num_positions, half):
        if kind(connection) == "SQLite":
            with pytest.raises(ValueError, match="method='generate_series' needs PostgreSQL or DuckDB"):
                qkv.sql.sinusoidal_encoding(connection, 3, 4, method="generate_series")
            return
        table = qkv.sql.sinusoidal_encoding(connection, num_positions, 2 * half, method="generate_series")
        np.testing.assert_allclose(table, qkv.sinusoidal_encoding(num_positions, 2 * half), **EXACT)

    @pytest.mark.parametrize(
        "args, kwargs, exc, match",
        [
            ((0, 4), {}, ValueError, "num_positions must be a positive integer"),
            ((2.0, 4), {}, TypeError, "num_positions must be an integer"),
            ((3, 5), {}, ValueError, "d_model must be even"),
            ((3, 4, 1.0), {}, ValueError, "base must be greater than 1"),
            ((3, 4), {"method": "loop"}, ValueError, "method must be 'recursive' or 'generate_series'"),
        ],
    )
    def test_bad_arguments(self, args, kwargs, exc, match):
        with pytest.raises(exc, match=match):
            qkv.sql.sinusoidal_encoding(sqlite3.connect(":memory:"), *args, **kwargs)


GOOD_Q, GOOD_K, GOOD_V = np.ones((2, 3)), np.ones((4, 3)), np.ones((4, 2))

# Faults both APIs reject with the very same error.
SHARED_FAULTS = {
    "non-numeric query": ([["a", "b", "c"]] * 2, GOOD_K, GOOD_V, None),
    "nan in key": (GOOD_Q, np.full((4, 3), np.nan), GOOD_V, None),
    "inf in value": (GOOD_Q, GOOD_K, np.full((4, 2), np.inf), None),
    "ragged query": ([[1.0], [1.0, 2.0]], GOOD_K, GOOD_V, None),
    "d_k mismatch": (GOOD_Q, np.ones((4, 2)), GOOD_V, None),
    "d_k zero": (np.ones((2, 0)), np.ones((4, 0)), GOOD_V, None),
    "L_k mismatch": (GOOD_Q, GOOD_K, np.ones((3, 2)), None),
    "ragged mask": (GOOD_Q, GOOD_K, GOOD_V, [[True], [True, False]]),
}


class TestErrors:
    @pytest.mark.parametrize("fault", SHARED_FAULTS, ids=list(SHARED_FAULTS))
    def test_same_error_as_the_numpy_api(self, fault):
        args = SHARED_FAULTS[fault]
        with pytest.raises((TypeError, ValueError)) as numpy_error:
            qkv.scaled_dot_product_attention(*args)
        with pytest.raises(type(numpy_error.value), match=re.escape(str(numpy_error.value))):
            qkv.sql.attention(sqlite3.connect(":memory:"), *args)

    @pytest.mark.parametrize(
        "args, exc, match",
        [
            (([["a"]], [[1.0]], [[1.0]]), TypeError, "query must contain real numbers"),
            (([[1.0]], [[np.nan]], [[1.0]]), ValueError, "key must be finite"),
            (([1.0, 2.0], [[1.0, 2.0]], [[1.0]]), ValueError, r"query must have shape \(L_q, d_k\) \(2-D\)"),
            (([[1.0]], [[1.0]], 3.0), ValueError, r"value must have shape \(L_k, d_v\) \(2-D\)"),
            ((np.ones((2, 3, 4)), np.ones((3, 4)), np.ones((3, 4))), ValueError, "query .*loop over a batch"),
            ((GOOD_Q, np.ones((4, 2)), GOOD_V), ValueError, "query and key must have the same last dimension d_k"),
            ((np.ones((2, 0)), np.ones((4, 0)), GOOD_V), ValueError, "d_k must be at least 1"),
            ((GOOD_Q, GOOD_K, np.ones((3, 2))), ValueError, "key and value must have the same length L_k"),
            ((GOOD_Q, np.ones((0, 3)), np.ones((0, 2))), ValueError, r"key must have at least one row \(L_k >= 1\)"),
        ],
    )
    def test_bad_inputs(self, args, exc, match):
        with pytest.raises(exc, match=match):
            qkv.sql.attention(sqlite3.connect(":memory:"), *args)

    @pytest.mark.parametrize(
        "mask, exc, match",
        [
            (np.ones((2, 4), dtype=int), TypeError, r"mask must be boolean .*mask\.astype\(bool\)"),
            (np.zeros((2, 4)), TypeError, "mask must be boolean .*no additive float masks"),
            (np.ones((3,), dtype=bool), ValueError, r"mask of shape \(3,\) does not broadcast .*\(2, 4\)"),
            (np.ones((2, 2, 4), dtype=bool), ValueError, r"mask of shape \(2, 2, 4\) does not broadcast"),
        ],
        ids=["int", "float", "wrong-length", "batched"],
    )
    def test_bad_masks(self, mask, exc, match):
        with pytest.raises(exc, match=match):
            qkv.sql.attention(sqlite3.connect(":memory:"), GOOD_Q, GOOD_K, GOOD_V, mask)

    @pytest.mark.parametrize(
        "connection, found",
        [
            (object(), "builtins.object"),
            (type("connection", (), {"__module__": "psycopg2.extensions"})(), "psycopg2.extensions.connection"),
            (sqlite3, "builtins.module"),
        ],
        ids=["object", "psycopg2", "a-module"],
    )
    @pytest.mark.parametrize("function", [qkv.sql.attention, qkv.sql.explain])
    def test_unsupported_connection_names_the_supported_kinds(self, function, connection, found):
        message = (
            r"connection must be a sqlite3\.Connection, a psycopg \(version 3\) Connection to "
            rf"PostgreSQL, or a duckdb\.DuckDBPyConnection; got {re.escape(found)}"
        )
        with pytest.raises(TypeError, match=message):
            function(connection, GOOD_Q, GOOD_K, GOOD_V)

    def test_unsupported_connection_for_the_sinusoidal_table(self):
        with pytest.raises(TypeError, match="connection must be a sqlite3.Connection"):
            qkv.sql.sinusoidal_encoding(object(), 3, 4)

    def test_unknown_query_name(self):
        with pytest.raises(ValueError, match="name must be one of tables, scores, .*; got 'attention'"):
            qkv.sql.query_text("attention")


class TestFiles:
    def test_every_file_is_named_and_every_name_has_a_file(self):
        files = {p.stem for p in (ROOT / "src" / "qkv" / "sql").glob("*.sql")}
        assert files == set(qkv.sql.QUERY_NAMES)

    def test_the_wheel_ships_the_sql_files(self):
        pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
        assert "*.sql" in pyproject["tool"]["setuptools"]["package-data"]["qkv.sql"]

    @pytest.mark.parametrize("name", qkv.sql.QUERY_NAMES)
    def test_statements_and_parameters(self, name):
        text = qkv.sql.query_text(name)
        count = {"tables": 3, "mask_padding": 2, "mask_pairs": 2, "mha_tables": 8, "mha_mask_pairs": 2}.get(name, 1)
        count = {"mha_project": 3, "mha_split": 3}.get(name, count)
        assert len(_dialect.statements(text)) == count
        expected = {"num_positions", "d_model", "base"} if name.startswith("sinusoidal") else set()
        assert _dialect.parameter_names(text) == expected

    def test_the_function_list_names_every_function_the_files_call(self):
        """users_functions looks for exactly these names (re-review N7): a new function in a file must be added."""
        words = set()
        for name in qkv.sql.QUERY_NAMES:
            code = _dialect._code_of(qkv.sql.query_text(name))
            words |= {word.lower() for word in re.findall(r"\b([A-Za-z_]\w*)\s*\(", code)}
        builtins = {
            row[0] for row in _duckdb().connect().execute("SELECT function_name FROM duckdb_functions()").fetchall()
        }
        assert words & builtins == set(_dialect.QUERY_FUNCTIONS)
        # The rest are tables, CTEs and keywords: CAST(x AS t) and OVER (...) are syntax, not calls.
        assert words - builtins == {
            "allowed",
            "as",
            "cast",
            "k",
            "key",
            "over",
            "pairs",
            "positions",
            "q",
            "tokens",
            "v",
            # multi_head_attention's tables, and FROM (SELECT DISTINCT ...) in mha_output.sql
            "from",
            "head_allowed",
            "in_bias",
            "in_proj",
            "key_in",
            "layer_shape",
            "out_bias",
            "out_proj",
            "query_in",
            "value_in",
        }

    def test_bind_writes_each_drivers_placeholders(self):
        sql = "SELECT :a, '%', x::INTEGER WHERE y < :b_2 -- time: now"
        assert _dialect.bind(sql, _dialect.SQLITE) == sql
        assert _dialect.bind(sql, _dialect.POSTGRESQL) == (
            "SELECT %(a)s, '%%', x::INTEGER WHERE y < %(b_2)s -- time: now"
        )
        assert _dialect.bind(sql, _dialect.DUCKDB) == "SELECT $a, '%', x::INTEGER WHERE y < $b_2 -- time: now"

    def test_statements_split_at_semicolons_that_end_a_line(self):
        text = "-- two\nCREATE TEMP TABLE a (x INTEGER);\nSELECT ';' ;  \n-- trailing comment\n"
        assert _dialect.statements(text) == ["-- two\nCREATE TEMP TABLE a (x INTEGER)", "SELECT ';'"]


class TestPostgresServer:
    def test_session_server_listens_on_loopback_only(self, pg):
        assert pg.execute("SHOW listen_addresses").fetchone()[0] == "127.0.0.1"
        assert pg.execute("SHOW fsync").fetchone()[0] == "off"

    def test_missing_postgresql_names_the_install_command(self, monkeypatch, tmp_path):
        from postgres_server import find_bin_dir, running_postgres

        monkeypatch.setenv("QKV_PG_BIN", str(tmp_path))
        assert find_bin_dir() is None
        with pytest.raises(RuntimeError, match="apt-get install postgresql"):
            with running_postgres():
                pass

    def test_server_stops_and_its_directory_is_deleted(self, postgres):
        import psycopg

        from postgres_server import running_postgres

        with running_postgres() as server:
            with psycopg.connect(**server.settings) as conn:
                assert conn.execute("SELECT 1").fetchone() == (1,)
            assert server.directory.is_dir()
        assert not server.directory.exists()
        with socket.socket() as sock:
            assert sock.connect_ex(("127.0.0.1", server.settings["port"])) != 0


class TestBenchmark:
    """benchmarks/sql_attention.py: its counts and its checks, not its timings."""

    @pytest.fixture
    def connections(self, request):
        opened = {name: _open(name, request) for name in DATABASES}
        yield opened
        for conn in opened.values():
            conn.close()

    def test_measure_counts_rows_and_checks_the_numbers(self, connections):
        import sql_attention as bench_sql

        row = bench_sql.measure(connections, 4, repeats=1)
        assert row["score_rows"] == 4 * 4 and row["join_rows"] == 4 * 4 * bench_sql.D
        assert set(row["seconds"]) == {*DATABASES, "NumPy"}
        assert all(error <= 1e-12 for error in row["max_abs_error"].values())

    def test_a_wrong_database_result_stops_the_benchmark(self, connections, monkeypatch):
        import sql_attention as bench_sql

        monkeypatch.setattr(qkv.sql, "READ_OUTPUT", "SELECT qpos, dim, 2 * val FROM output")
        with pytest.raises(SystemExit, match="SQLite differs from NumPy by .* at L=4"):
            bench_sql.measure(connections, 4, repeats=1)

    def test_the_committed_result_file(self):
        import sql_attention as bench_sql

        result = json.loads(bench_sql.RESULT.read_text())
        assert result["command"] == "make bench-sql"
        assert len(result["machine"]["load_before"]) == 3 and result["versions"]["postgresql"]
        d_k = result["settings"]["d_k"]
        assert [row["L"] for row in result["rows"]] == [16, 32, 64, 128, 256]
        for row in result["rows"]:
            assert row["score_rows"] == row["L"] ** 2 and row["join_rows"] == row["L"] ** 2 * d_k
            assert set(row["seconds"]) == {*DATABASES, "NumPy"}
            assert all(seconds > 0 for seconds in row["seconds"].values())


def test_a_huge_sql_table_is_refused_up_front_as_by_the_numpy_api():
    """Issue 26 (minor): qkv.sql.sinusoidal_encoding(con, 10**7, 512) raised a raw MemoryError."""
    import sqlite3

    with pytest.raises(ValueError) as numpy_error:
        qkv.sinusoidal_encoding(10**7, 512)
    with pytest.raises(ValueError) as sql_error:
        qkv.sql.sinusoidal_encoding(sqlite3.connect(":memory:"), 10**7, 512)
    assert str(sql_error.value) == str(numpy_error.value)
    assert "would need a float64 array of shape (10000000, 512)" in str(sql_error.value)


# ----------------------------------------------------------------------------
# qkv.sql.multi_head_attention: the whole layer (issue 29)
# ----------------------------------------------------------------------------


def random_layer(seed: int, l_q: int = 3, l_k: int = 5, num_heads: int = 2, d_head: int = 2, bias: bool = True):
    """Arguments of multi_head_attention after the connection: query ... out_proj_bias."""
    rng = np.random.default_rng(seed)
    d_model = num_heads * d_head
    return (
        rng.normal(size=(l_q, d_model)),
        rng.normal(size=(l_k, d_model)),
        rng.normal(size=(l_k, d_model)),
        num_heads,
        rng.normal(size=(3 * d_model, d_model)),
        rng.normal(size=(d_model, d_model)),
        rng.normal(size=3 * d_model) if bias else None,
        rng.normal(size=d_model) if bias else None,
    )


def assert_layer_same_as_numpy(conn, layer, mask=None):
    out, weights = qkv.sql.multi_head_attention(conn, *layer, mask=mask)
    expected_out, expected_weights = qkv.multi_head_attention(*layer, mask=mask)
    assert out.shape == expected_out.shape and weights.shape == expected_weights.shape
    np.testing.assert_allclose(weights, expected_weights, **EXACT)
    np.testing.assert_allclose(out, expected_out, **EXACT)
    return out, weights


@st.composite
def layer_with_mask(draw):
    num_heads = draw(st.sampled_from([1, 2, 4]))
    d_head = draw(st.integers(1, 3))
    d_model = num_heads * d_head
    l_q, l_k = draw(st.integers(1, 5)), draw(st.integers(1, 5))  # L_q != L_k: cross-attention
    query = draw(arrays(np.float64, (l_q, d_model), elements=small))
    key = draw(arrays(np.float64, (l_k, d_model), elements=small))
    value = draw(arrays(np.float64, (l_k, d_model), elements=small))
    in_proj = draw(arrays(np.float64, (3 * d_model, d_model), elements=small))
    out_proj = draw(arrays(np.float64, (d_model, d_model), elements=small))
    bias = draw(st.booleans())
    in_bias = draw(arrays(np.float64, (3 * d_model,), elements=small)) if bias else None
    out_bias = draw(arrays(np.float64, (d_model,), elements=small)) if bias else None
    mask = draw(
        st.sampled_from(["none", "pairs", "per-head", "padding"]).flatmap(
            lambda kind: {
                "none": st.none(),
                "pairs": arrays(np.bool_, (l_q, l_k)),  # fully masked rows included
                "per-head": arrays(np.bool_, (num_heads, l_q, l_k)),
                "padding": arrays(np.bool_, (l_k,)),
            }[kind]
        )
    )
    return (query, key, value, num_heads, in_proj, out_proj, in_bias, out_bias), mask


def test_a_heads_output_past_float64_is_refused_not_dropped_by_sum():
    """Re-review 9a, X1: a head's weighted sum past float64's range is inf; times an output weight
    of 0 it is NaN, which SQLite keeps as NULL and SUM skips, so a finite, wrong output came back
    where NumPy refuses. The step checks now read each head's output too."""
    big = np.finfo(float).max
    value = np.zeros((11, 2))
    value[:, 0], value[:, 1] = big, 1.0
    zeros = np.zeros((11, 2))
    in_proj = np.zeros((6, 2))
    in_proj[4:, :] = np.eye(2)  # W_q = W_k = 0, W_v = I
    out_proj = np.array([[0.0, 1.0], [0.0, 1.0]])  # the output never reads head dimension 0
    with pytest.raises(ValueError, match=r"^the database's per-head outputs weights_h @ V_h is NaN, inf or NULL"):
        qkv.sql.multi_head_attention(sqlite3.connect(":memory:"), zeros, zeros, value, 1, in_proj, out_proj)


class TestMultiHeadEqualsNumpy:
    """qkv.sql.multi_head_attention against qkv.multi_head_attention, to 1e-12, on each database."""

    # 15 examples, not FAST's 40: each runs ten views on the database (0.3 s on DuckDB), and the
    # fixed cases below cover heads x biases x self/cross x masks on every database.
    @settings(derandomize=True, max_examples=15, deadline=None, database=None)
    @given(problem=layer_with_mask())
    def test_random_layers_and_masks(self, connection, problem):
        layer, mask = problem
        assert_layer_same_as_numpy(connection, layer, mask)
        assert temp_objects(connection) == []

    @pytest.mark.parametrize("num_heads", [1, 2, 4])
    @pytest.mark.parametrize("bias", [True, False], ids=["bias", "no-bias"])
    @pytest.mark.parametrize(
        "l_q, l_k", [(4, 4), (3, 6), (6, 2)], ids=["self", "cross-longer-keys", "cross-fewer-keys"]
    )
    def test_heads_biases_and_cross_attention(self, connection, num_heads, bias, l_q, l_k):
        layer = random_layer(60 + num_heads, l_q=l_q, l_k=l_k, num_heads=num_heads, d_head=3, bias=bias)
        assert_layer_same_as_numpy(connection, layer)
        assert_layer_same_as_numpy(connection, layer, mask=causal(l_q, l_k))

    def test_a_fully_masked_row_gets_the_output_bias(self, connection):
        layer = random_layer(61, l_q=3, l_k=4, num_heads=2)
        mask = np.array([[True, False, True, True], [False] * 4, [True, True, False, False]])
        out, weights = assert_layer_same_as_numpy(connection, layer, mask)
        assert np.all(weights[:, 1] == 0.0)
        np.testing.assert_allclose(out[1], layer[7], **EXACT)  # out_proj_bias alone
        _, weights = assert_layer_same_as_numpy(connection, layer[:6], mask)  # no biases: a zero row
        assert np.all(weights[:, 1] == 0.0)

    def test_a_row_masked_in_one_head_only(self, connection):
        layer = random_layer(62, l_q=3, l_k=4, num_heads=2)
        mask = np.ones((2, 3, 4), dtype=bool)
        mask[1, 0] = False  # head 1 gives query 0 nothing; head 0 does
        _, weights = assert_layer_same_as_numpy(connection, layer, mask)
        assert np.all(weights[1, 0] == 0.0) and weights[0, 0].sum() == pytest.approx(1.0)

    def test_every_query_masked_everywhere(self, connection):
        layer = random_layer(63, l_q=2, l_k=3)
        out, weights = assert_layer_same_as_numpy(connection, layer, np.zeros((2, 3), dtype=bool))
        assert np.all(weights == 0.0)
        np.testing.assert_allclose(out, np.tile(layer[7], (2, 1)), **EXACT)

    def test_no_queries_and_no_keys(self, connection):
        layer = random_layer(64, l_q=3, l_k=5)
        no_queries = (np.zeros((0, 4)), *layer[1:])
        out, weights = assert_layer_same_as_numpy(connection, no_queries)
        assert out.shape == (0, 4) and weights.shape == (2, 0, 5)
        no_keys = (layer[0], np.zeros((0, 4)), np.zeros((0, 4)), *layer[3:])
        out, weights = assert_layer_same_as_numpy(connection, no_keys)
        assert weights.shape == (2, 3, 0)
        np.testing.assert_allclose(out, np.tile(layer[7], (3, 1)), **EXACT)  # no keys: b_o

    def test_the_docstrings_two_heads(self, connection):
        x = np.array([[4.0, 0.0, 0.0, 0.0], [0.0, 0.0, 4.0, 0.0], [4.0, 0.0, 4.0, 0.0]])
        eye = np.eye(4)
        _, weights = assert_layer_same_as_numpy(connection, (x, x, x, 2, np.concatenate([eye] * 3), eye))
        assert weights[0, 2].round(3).tolist() == [0.5, 0.0, 0.5]
        assert weights[1, 2].round(3).tolist() == [0.0, 0.5, 0.5]

    def test_a_wider_layer_with_weights_of_torchs_scale(self, connection):
        rng = np.random.default_rng(69)
        d_model, l_q, l_k = 64, 5, 7
        layer = (
            rng.normal(size=(l_q, d_model)),
            rng.normal(size=(l_k, d_model)),
            rng.normal(size=(l_k, d_model)),
            8,
            rng.normal(size=(3 * d_model, d_model)) / np.sqrt(d_model),
            rng.normal(size=(d_model, d_model)) / np.sqrt(d_model),
            rng.normal(size=3 * d_model),
            rng.normal(size=d_model),
        )
        assert_layer_same_as_numpy(connection, layer, causal(l_q, l_k))

    def test_lists_and_integers_are_taken_as_numpy_takes_them(self, connection):
        layer = random_layer(65)
        as_lists = tuple(a.tolist() if isinstance(a, np.ndarray) else a for a in layer)
        out, weights = qkv.sql.multi_head_attention(connection, *as_lists)
        expected_out, expected_weights = qkv.multi_head_attention(*layer)
        np.testing.assert_allclose(out, expected_out, **EXACT)
        np.testing.assert_allclose(weights, expected_weights, **EXACT)
        ints = (np.arange(12).reshape(3, 4) % 3, *layer[1:])
        assert_layer_same_as_numpy(connection, ints)


class TestMultiHeadSteps:
    """Every step runs in the database: each view holds what NumPy computes at that step."""

    def test_each_view_is_its_step(self, connection):
        query, key, value, num_heads, w_in, w_out, b_in, b_out = random_layer(66, l_q=3, l_k=4, num_heads=2)
        dialect = _dialect.dialect_of(connection)
        layer = (query, key, value, num_heads, w_in, w_out, b_in, b_out)

        def read(views, sql, shape):
            arr = np.full(shape, np.nan)
            for *index, val in views.rows(sql):
                arr[tuple(index)] = val
            return arr

        w_q, w_k, w_v = np.split(w_in, 3)
        b_q, b_k, b_v = np.split(b_in, 3)
        q, k, v = query @ w_q.T + b_q, key @ w_k.T + b_k, value @ w_v.T + b_v
        with qkv.sql._multi_head_views(connection, dialect, layer, None) as views:
            assert views.num_heads == 2 and (views.l_q, views.l_k, views.d_v) == (3, 4, 4)
            np.testing.assert_allclose(read(views, "SELECT pos, dim, val FROM q_proj", (3, 4)), q, **EXACT)
            np.testing.assert_allclose(read(views, "SELECT pos, dim, val FROM k_proj", (4, 4)), k, **EXACT)
            np.testing.assert_allclose(read(views, "SELECT pos, dim, val FROM v_proj", (4, 4)), v, **EXACT)
            heads = read(views, "SELECT head, pos, hdim, val FROM k_heads", (2, 4, 2))
            np.testing.assert_allclose(heads, k.reshape(4, 2, 2).transpose(1, 0, 2), **EXACT)
            q_h, k_h, v_h = (x.reshape(-1, 2, 2).transpose(1, 0, 2) for x in (q, k, v))
            scores = q_h @ k_h.transpose(0, 2, 1) / np.sqrt(2)
            sql_scores = read(views, "SELECT head, qpos, kpos, score FROM head_scores", (2, 3, 4))
            np.testing.assert_allclose(sql_scores, scores, **EXACT)
            weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
            weights /= weights.sum(axis=-1, keepdims=True)
            sql_weights = read(views, "SELECT head, qpos, kpos, weight FROM head_weights", (2, 3, 4))
            np.testing.assert_allclose(sql_weights, weights, **EXACT)
            head_out = weights @ v_h
            sql_head_out = read(views, "SELECT head, qpos, hdim, val FROM head_output", (2, 3, 2))
            np.testing.assert_allclose(sql_head_out, head_out, **EXACT)
            concat = head_out.transpose(1, 0, 2).reshape(3, 4)
            np.testing.assert_allclose(read(views, "SELECT pos, dim, val FROM concatenated", (3, 4)), concat, **EXACT)
            out = read(views, "SELECT pos, dim, val FROM mha_output", (3, 4))
            np.testing.assert_allclose(out, concat @ w_out.T + b_out, **EXACT)
        assert temp_objects(connection) == []

    def test_no_numpy_arithmetic_between_loading_and_reading(self, monkeypatch):
        """Planted: the database's output rows are doubled on the way; the result must follow them."""
        layer = random_layer(67)
        conn = sqlite3.connect(":memory:")
        monkeypatch.setattr(qkv.sql, "READ_LAYER_OUTPUT", "SELECT pos, dim, 2 * val FROM mha_output")
        out, _ = qkv.sql.multi_head_attention(conn, *layer)
        np.testing.assert_allclose(out, 2 * qkv.multi_head_attention(*layer)[0], **EXACT)

    def test_the_plan_of_the_projection_join(self, connection):
        layer = random_layer(68, l_q=4, l_k=4)
        dialect = _dialect.dialect_of(connection)
        with qkv.sql._multi_head_views(connection, dialect, layer, None) as views:
            plan = views.plan("SELECT * FROM q_proj")
            whole = views.plan()
        expected = {
            "SQLite": r"SCAN|SEARCH",
            "PostgreSQL": r"Hash Join|Merge Join|Nested Loop",
            "DuckDB": r"HASH_JOIN|Hash Join|NESTED_LOOP_JOIN|CROSS_PRODUCT",
        }[kind(connection)]
        assert re.search(expected, plan), plan
        assert re.search(r"(?i)window|partition|temp b-tree", whole), whole

    def test_multi_head_views_is_the_public_way_to_query_each_step(self, connection):
        """The chapter's context manager: the same views, checked arguments, nothing left afterwards."""
        layer = random_layer(69, l_q=3, l_k=4)
        expected_out, expected_weights = qkv.multi_head_attention(*layer)
        with qkv.sql.multi_head_views(connection, *layer) as views:
            assert views.num_heads == 2 and (views.l_q, views.l_k, views.d_v) == (3, 4, 4)
            out = np.full(expected_out.shape, np.nan)
            for pos, dim, val in views.rows("SELECT pos, dim, val FROM mha_output"):
                out[pos, dim] = val
            weights = np.full(expected_weights.shape, np.nan)
            for head, qpos, kpos, weight in views.rows("SELECT head, qpos, kpos, weight FROM head_weights"):
                weights[head, qpos, kpos] = weight
        np.testing.assert_allclose(out, expected_out, **EXACT)
        np.testing.assert_allclose(weights, expected_weights, **EXACT)
        assert temp_objects(connection) == []
        query, key, value, _, *weights_and_biases = layer
        with pytest.raises(ValueError, match="num_heads"):
            with qkv.sql.multi_head_views(connection, query, key, value, 3, *weights_and_biases):
                pass
        assert temp_objects(connection) == []


def _torch_layer(seed: int, embed: int, num_heads: int, bias: bool):
    """A float64 torch.nn.MultiheadAttention with random parameters, and its parameters as NumPy."""
    require_modules("torch")
    import torch

    torch.manual_seed(seed)
    module = torch.nn.MultiheadAttention(embed, num_heads, bias=bias, batch_first=True, dtype=torch.float64)
    if bias:  # torch initialises the biases to 0: make them matter
        with torch.no_grad():
            module.in_proj_bias.normal_()
            module.out_proj.bias.normal_()

    def arr(t):
        return None if t is None else t.detach().numpy().copy()

    weights = (arr(module.in_proj_weight), arr(module.out_proj.weight), arr(module.in_proj_bias))
    return module, (*weights, arr(module.out_proj.bias))


def _run_torch(module, query, key, value, **kwargs):
    import torch

    with torch.no_grad():
        out, weights = module(
            *(torch.from_numpy(x[None]) for x in (query, key, value)),
            need_weights=True,
            average_attn_weights=False,
            **kwargs,
        )
    return out[0].numpy(), weights[0].numpy()


class TestMultiHeadEqualsTorch:
    """Against torch.nn.MultiheadAttention itself (float64, its own weights), on each database."""

    @pytest.mark.parametrize("num_heads", [1, 2, 4])
    @pytest.mark.parametrize("bias", [True, False], ids=["bias", "no-bias"])
    def test_self_and_cross_attention(self, connection, num_heads, bias):
        module, (w_in, w_out, b_in, b_out) = _torch_layer(70 + num_heads, 8, num_heads, bias)
        rng = np.random.default_rng(70)
        for l_q, l_k in ((5, 5), (3, 6)):
            query, key, value = rng.normal(size=(l_q, 8)), rng.normal(size=(l_k, 8)), rng.normal(size=(l_k, 8))
            torch_out, torch_weights = _run_torch(module, query, key, value)
            out, weights = qkv.sql.multi_head_attention(
                connection, query, key, value, num_heads, w_in, w_out, b_in, b_out
            )
            np.testing.assert_allclose(weights, torch_weights, **EXACT)
            np.testing.assert_allclose(out, torch_out, **EXACT)

    def test_masks_in_torchs_words(self, connection):
        # torch's True = may NOT attend: attn_mask=m is mask=~m here, key_padding_mask=pad is ~pad.
        module, (w_in, w_out, b_in, b_out) = _torch_layer(75, 4, 2, True)
        rng = np.random.default_rng(75)
        query, key, value = rng.normal(size=(4, 4)), rng.normal(size=(6, 4)), rng.normal(size=(6, 4))
        blocked = ~causal(4, 6)
        pad = np.array([False, False, False, True, False, True])
        import torch

        for kwargs, mask in (
            ({"attn_mask": torch.from_numpy(blocked)}, ~blocked),
            ({"key_padding_mask": torch.from_numpy(pad[None])}, ~pad),
        ):
            torch_out, torch_weights = _run_torch(module, query, key, value, **kwargs)
            out, weights = qkv.sql.multi_head_attention(
                connection, query, key, value, 2, w_in, w_out, b_in, b_out, mask=mask
            )
            np.testing.assert_allclose(weights, torch_weights, **EXACT)
            np.testing.assert_allclose(out, torch_out, **EXACT)


LAYER = random_layer(80, l_q=2, l_k=3)  # d_model 4, 2 heads


def _with(**changes):
    """LAYER's arguments with some replaced, by name."""
    names = ("query", "key", "value", "num_heads", "in_proj_weight", "out_proj_weight", "in_proj_bias", "out_proj_bias")
    args = dict(zip(names, LAYER))
    args.update(changes)
    return args


# Faults that qkv.multi_head_attention refuses: the SQL layer must refuse them in the same words.
LAYER_FAULTS = {
    "num_heads does not divide d_model": _with(num_heads=3),
    "num_heads zero": _with(num_heads=0),
    "num_heads a float": _with(num_heads=2.0),
    "key of another width": _with(key=np.ones((3, 5))),
    "value of another width": _with(value=np.ones((3, 3))),
    "key and value of other lengths": _with(value=np.ones((4, 4))),
    "query 1-D": _with(query=np.ones(4)),
    "query of width 0": _with(query=np.ones((2, 0))),
    "in_proj_weight shape": _with(in_proj_weight=np.ones((4, 4))),
    "in_proj_weight transposed": _with(in_proj_weight=np.ones((4, 12))),
    "out_proj_weight shape": _with(out_proj_weight=np.ones((4, 3))),
    "in_proj_bias shape": _with(in_proj_bias=np.ones(4)),
    "out_proj_bias shape": _with(out_proj_bias=np.ones(12)),
    "nan in value": _with(value=np.full((3, 4), np.nan)),
    "inf in in_proj_weight": _with(in_proj_weight=np.full((12, 4), np.inf)),
    "text query": _with(query=[["a"] * 4] * 2),
}
# The word each message must name.
LAYER_FAULT_NAMES = {
    "num_heads does not divide d_model": "num_heads=3 must divide the model width d_model=4",
    "num_heads zero": "num_heads",
    "num_heads a float": "num_heads",
    "key of another width": "key must have the same last dimension d_model as query",
    "value of another width": "value must have the same last dimension d_model as query",
    "key and value of other lengths": "key and value must have the same length L_k",
    "query 1-D": "query must have shape",
    "query of width 0": r"d_model \(query's last dimension\) must be at least 1",
    "in_proj_weight shape": r"in_proj_weight must have shape \(3 \* d_model, d_model\) = \(12, 4\)",
    "in_proj_weight transposed": "in_proj_weight must have shape",
    "out_proj_weight shape": r"out_proj_weight must have shape \(d_model, d_model\) = \(4, 4\)",
    "in_proj_bias shape": r"in_proj_bias must have shape \(3 \* d_model,\)",
    "out_proj_bias shape": r"out_proj_bias must have shape \(d_model,\)",
    "nan in value": "value must be finite",
    "inf in in_proj_weight": "in_proj_weight must be finite",
    "text query": "query must contain real numbers",
}


class TestMultiHeadErrors:
    @pytest.mark.parametrize("fault", LAYER_FAULTS, ids=list(LAYER_FAULTS))
    def test_the_same_error_as_the_numpy_layer_naming_the_argument(self, fault):
        args = LAYER_FAULTS[fault]
        with pytest.raises((TypeError, ValueError)) as numpy_error:
            qkv.multi_head_attention(**args)
        conn = sqlite3.connect(":memory:")
        with pytest.raises(type(numpy_error.value), match=LAYER_FAULT_NAMES[fault]) as sql_error:
            qkv.sql.multi_head_attention(conn, **args)
        assert str(sql_error.value) == str(numpy_error.value)
        assert temp_objects(conn) == [] and not conn.in_transaction

    def test_shape_faults_and_a_bad_num_heads_are_value_errors(self):
        for fault in LAYER_FAULTS:
            if fault not in ("num_heads a float", "text query"):
                with pytest.raises(ValueError):
                    qkv.sql.multi_head_attention(sqlite3.connect(":memory:"), **LAYER_FAULTS[fault])

    @pytest.mark.parametrize(
        "connection, found",
        [
            (object(), "builtins.object"),
            (type("connection", (), {"__module__": "psycopg2.extensions"})(), "psycopg2.extensions.connection"),
            (sqlite3, "builtins.module"),
            (None, "builtins.NoneType"),
        ],
        ids=["object", "psycopg2", "a-module", "none"],
    )
    def test_an_unsupported_connection_is_a_value_error_naming_connection(self, connection, found):
        message = (
            r"connection must be a sqlite3\.Connection, a psycopg \(version 3\) Connection to "
            rf"PostgreSQL, or a duckdb\.DuckDBPyConnection; got {re.escape(found)}"
        )
        with pytest.raises(ValueError, match=message) as raised:
            qkv.sql.multi_head_attention(connection, **_with())
        assert isinstance(raised.value, TypeError)  # what qkv.sql.attention has always raised
        with pytest.raises(ValueError, match=message):
            qkv.sql.attention(connection, GOOD_Q, GOOD_K, GOOD_V)

    def test_the_connection_is_checked_before_the_arrays(self):
        with pytest.raises(ValueError, match="connection must be"):
            qkv.sql.multi_head_attention(object(), **_with(num_heads=3))

    @pytest.mark.parametrize(
        "name, shape",
        [("query", (1, 2, 4)), ("key", (1, 3, 4)), ("value", (2, 3, 4))],
    )
    def test_a_batch_is_refused_naming_the_argument(self, name, shape):
        with pytest.raises(ValueError, match=rf"{name} must have shape .* \(2-D\).*loop over a batch"):
            qkv.sql.multi_head_attention(sqlite3.connect(":memory:"), **_with(**{name: np.ones(shape)}))

    @pytest.mark.parametrize(
        "mask, exc, match",
        [
            (np.ones((2, 3), dtype=int), TypeError, r"mask must be boolean .*mask\.astype\(bool\)"),
            (np.zeros((2, 3)), TypeError, "mask must be boolean .*no additive float masks"),
            (np.ones((4,), dtype=bool), ValueError, r"mask of shape \(4,\) does not broadcast .*\(2, 2, 3\), i\.e\. "),
            (np.ones((3, 2, 3), dtype=bool), ValueError, r"\(num_heads, L_q, L_k\)"),
            (np.ones((1, 2, 2, 3), dtype=bool), ValueError, r"mask of shape \(1, 2, 2, 3\) does not broadcast"),
            ([[True], [True, False]], ValueError, "mask could not be converted to an array"),
        ],
        ids=["int", "float", "wrong-length", "wrong-heads", "batched", "ragged"],
    )
    def test_bad_masks(self, mask, exc, match):
        conn = sqlite3.connect(":memory:")
        with pytest.raises(exc, match=match):
            qkv.sql.multi_head_attention(conn, **_with(), mask=mask)
        assert temp_objects(conn) == []

    def test_weights_too_large_are_refused_up_front(self, connection, monkeypatch):
        import qkv._checks

        monkeypatch.setattr(qkv._checks, "MAX_ARRAY_BYTES", 2 * 2 * 3 * 8 - 1)
        with pytest.raises(ValueError, match=r"the per-head attention weights of num_heads=2 would need"):
            qkv.sql.multi_head_attention(connection, **_with())
        assert temp_objects(connection) == []

    # query 1e200 times a weight of 1e200: the projection overflows (finite inputs).
    OVERFLOWING_PROJECTION = _with(query=np.full((2, 4), 1e200), in_proj_weight=np.full((12, 4), 1e200))
    OVERFLOWING_OUTPUT = _with(out_proj_weight=np.full((4, 4), 1.7e308), out_proj_bias=np.full(4, 1.7e308))

    def test_a_projection_that_overflows_is_named(self, connection):
        if kind(connection) == "PostgreSQL":
            match = r"PostgreSQL raised 'value out of range: overflow' computing the multi-head attention layer"
        else:
            match = (
                r"the database's projection query @ W_q\.T \+ b_q is NaN, inf or NULL at index \(0, 0\) "
                r"\(pos, dim\).*make query, in_proj_weight or in_proj_bias smaller"
            )
        with pytest.raises(ValueError, match=match):
            qkv.sql.multi_head_attention(connection, **self.OVERFLOWING_PROJECTION)
        assert temp_objects(connection) == []

    def test_an_output_that_overflows_is_refused(self, connection):
        with np.errstate(over="ignore", invalid="ignore"):
            numpy_out, _ = qkv.multi_head_attention(**self.OVERFLOWING_OUTPUT)
        assert not np.isfinite(numpy_out).all()  # NumPy returns inf here; qkv.sql refuses it
        if kind(connection) == "PostgreSQL":
            match = r"PostgreSQL raised 'value out of range: overflow'"
        else:
            match = r"the database's output of the layer is NaN, inf or NULL at index \(0, 0\)"
        with pytest.raises(ValueError, match=match):
            qkv.sql.multi_head_attention(connection, **self.OVERFLOWING_OUTPUT)
        assert temp_objects(connection) == []

    def test_the_step_checks_catch_what_the_read_back_would_too(self, connection, monkeypatch):
        """Planted: the step checks off; the read-back check still refuses what the database returned."""
        monkeypatch.setattr(qkv.sql, "LAYER_STEP_CHECKS", ())
        if kind(connection) == "PostgreSQL":
            match = "PostgreSQL raised 'value out of range: overflow'"
        else:
            match = r"the database returned a weight that is NaN, inf or NULL|the database's output of the layer"
        with pytest.raises(ValueError, match=match):
            qkv.sql.multi_head_attention(connection, **self.OVERFLOWING_PROJECTION)
        assert temp_objects(connection) == []

    def test_tiny_entries_underflow_only_on_postgresql(self, connection):
        tiny = _with(query=np.full((2, 4), 1e-170), in_proj_weight=np.full((12, 4), 1e-170))
        if kind(connection) == "PostgreSQL":
            with pytest.raises(ValueError, match=r"'value out of range: underflow'.*set such entries to 0 first"):
                qkv.sql.multi_head_attention(connection, **tiny)
            assert temp_objects(connection) == []
        else:
            out, weights = qkv.sql.multi_head_attention(connection, **tiny)
            expected_out, expected_weights = qkv.multi_head_attention(**tiny)
            np.testing.assert_allclose(out, expected_out, **EXACT)
            np.testing.assert_allclose(weights, expected_weights, **EXACT)


class TestMultiHeadFiles:
    def test_the_steps_are_files_run_in_order(self):
        order = [*qkv.sql.LAYER_FILES[:4], "mha_mask_none", *qkv.sql.LAYER_FILES[4:], "mha_output"]
        assert order == [
            "mha_tables",
            "mha_project",
            "mha_split",
            "mha_scores",
            "mha_mask_none",
            "mha_weights",
            "mha_weighted_sum",
            "mha_concat",
            "mha_output",
        ]
        assert {name for name in qkv.sql.QUERY_NAMES if name.startswith("mha_")} == {*order, "mha_mask_pairs"}

    def test_every_view_and_table_the_files_create_is_a_scratch_name(self):
        created = set()
        for name in qkv.sql.QUERY_NAMES:
            if name.startswith("mha_"):
                created |= set(re.findall(r"CREATE TEMP (?:TABLE|VIEW) (\w+)", qkv.sql.query_text(name)))
        scratch = {*qkv.sql.LAYER_TABLES, *qkv.sql.LAYER_VIEWS, *qkv.sql.LAYER_MASK_TABLES["mha_mask_pairs"]}
        assert created == scratch
        assert not scratch & {*qkv.sql.INPUT_TABLES, *qkv.sql.VIEWS, "tokens", "allowed"}

    def test_the_module_docstring_lists_every_scratch_name(self):
        doc = " ".join(qkv.sql.__doc__.split())
        for name in (*qkv.sql.LAYER_TABLES, *qkv.sql.LAYER_VIEWS, "head_allowed"):
            assert f"``{name}``" in doc, name


# Every scratch name of multi_head_attention, and what it is.
LAYER_SCRATCH = {name: "TABLE" for name in (*qkv.sql.LAYER_TABLES, "head_allowed")}
LAYER_SCRATCH |= {name: "VIEW" for name in qkv.sql.LAYER_VIEWS}


class TestMultiHeadLeavesTheConnectionAsFound:
    """The module docstring's promises, for multi_head_attention on each database."""

    def test_nothing_is_left_behind(self, connection):
        layer = random_layer(90)
        qkv.sql.multi_head_attention(connection, *layer)
        qkv.sql.multi_head_attention(connection, *layer, mask=causal(3, 5))
        assert temp_objects(connection) == []

    def test_the_callers_transaction_is_left_open(self, fresh_connection):
        conn = fresh_connection
        conn.execute("CREATE TABLE layer_notes (x INTEGER)")  # on PostgreSQL's server: dropped below
        conn.commit()
        try:
            begin(conn)
            conn.execute("INSERT INTO layer_notes VALUES (1)")
            assert_layer_same_as_numpy(conn, random_layer(91))
            with pytest.raises(ValueError):  # an error that qkv.sql foresees, midway in the database
                qkv.sql.multi_head_attention(conn, **TestMultiHeadErrors.OVERFLOWING_PROJECTION)
            if kind(conn) == "PostgreSQL":
                import psycopg

                assert conn.info.transaction_status == psycopg.pq.TransactionStatus.INTRANS
            elif kind(conn) == "SQLite":
                assert conn.in_transaction
            assert conn.execute("SELECT COUNT(*) FROM layer_notes").fetchone()[0] == 1  # still in it
            conn.rollback()  # qkv.sql neither committed nor ended it: the insert is undone
            assert conn.execute("SELECT COUNT(*) FROM layer_notes").fetchone()[0] == 0
            assert temp_objects(conn) == []
        finally:
            if kind(conn) == "PostgreSQL":  # the server outlives the connection
                conn.rollback()
                conn.execute("DROP TABLE layer_notes")
                conn.commit()

    def test_no_transaction_is_left_open(self, fresh_connection):
        conn = fresh_connection
        assert_layer_same_as_numpy(conn, random_layer(92))
        if kind(conn) == "SQLite":
            assert not conn.in_transaction
        elif kind(conn) == "PostgreSQL":
            import psycopg

            assert conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE

    def test_an_error_midway_leaves_nothing_and_the_connection_works(self, fresh_connection, monkeypatch):
        conn = fresh_connection
        original = qkv.sql.query_text
        broken = "CREATE TEMP VIEW concatenated AS SELEC 1;"
        monkeypatch.setattr(qkv.sql, "query_text", lambda name: broken if name == "mha_concat" else original(name))
        with pytest.raises(Exception, match="(?i)syntax|parser"):
            qkv.sql.multi_head_attention(conn, *random_layer(93))
        monkeypatch.undo()
        if kind(conn) == "PostgreSQL":
            import psycopg

            assert conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
        assert temp_objects(conn) == []
        assert_layer_same_as_numpy(conn, random_layer(93))

    @pytest.mark.parametrize("case", list(CASES))
    def test_the_users_objects_with_every_scratch_name_are_refused_and_untouched(self, fresh_connection, case):
        conn = fresh_connection
        name_of = {ours: f'"{CASES[case](ours)}"' for ours in LAYER_SCRATCH}  # quoted: the case is kept
        permanent, temporary = {
            "SQLite": ("main.", "temp."),
            "PostgreSQL": ("public.", "pg_temp."),
            "DuckDB": ("memory.main.", "temp."),
        }[kind(conn)]
        try:
            for ours, theirs in name_of.items():
                conn.execute(f"CREATE TABLE {permanent}{theirs} (pos INTEGER, dim INTEGER, val DOUBLE PRECISION)")
                conn.execute(f"INSERT INTO {permanent}{theirs} VALUES (0, 0, 42.0)")
                conn.execute(f"CREATE TEMP {LAYER_SCRATCH[ours]} {temporary}{theirs} AS SELECT 7 AS mine")
            if kind(conn) == "PostgreSQL":
                conn.execute("SET search_path = public, pg_temp")  # the user's tables first
            conn.commit()
            begin(conn)

            def assert_all_survive(with_temporary: bool = True) -> None:
                for theirs in name_of.values():
                    rows = [tuple(row) for row in conn.execute(f"SELECT * FROM {permanent}{theirs}").fetchall()]
                    assert rows == [(0, 0, 42.0)], f"{permanent}{theirs}"
                    if with_temporary:
                        assert conn.execute(f"SELECT mine FROM {temporary}{theirs}").fetchone()[0] == 7, theirs

            clash = kind(conn) != "PostgreSQL" or case == "lower"  # PostgreSQL keeps "Q_PROJ" and q_proj apart
            for mask in (None, causal(3, 5)):
                if clash:
                    with pytest.raises(ValueError, match="connection already has temporary objects named ") as refused:
                        qkv.sql.multi_head_attention(conn, *random_layer(94), mask=mask)
                    for ours in LAYER_SCRATCH:
                        if ours != "head_allowed" or mask is not None:
                            assert CASES[case](ours) in str(refused.value), ours
                else:
                    assert_layer_same_as_numpy(conn, random_layer(94), mask)
                assert_all_survive()
            for ours, theirs in name_of.items():
                conn.execute(f"DROP {LAYER_SCRATCH[ours]} {temporary}{theirs}")
            for mask in (None, causal(3, 5)):  # beside the user's permanent tables of every name
                assert_layer_same_as_numpy(conn, random_layer(94), mask)
                assert_all_survive(with_temporary=False)
            with pytest.raises(ValueError):
                qkv.sql.multi_head_attention(conn, **TestMultiHeadErrors.OVERFLOWING_PROJECTION)
            assert_all_survive(with_temporary=False)
            assert temp_objects(conn) == []
            conn.commit()
        finally:
            if kind(conn) == "PostgreSQL":  # the server outlives the connection: drop what was committed
                conn.rollback()
                for theirs in name_of.values():
                    conn.execute(f"DROP TABLE IF EXISTS public.{theirs}")
                conn.commit()

    def test_postgresql_search_path_is_pg_temp_during_the_call_and_the_users_afterwards(self, request):
        conn = _open("PostgreSQL", request, autocommit=True)
        try:
            conn.execute(
                "CREATE FUNCTION public.exp(double precision) RETURNS double precision "
                "LANGUAGE sql AS 'SELECT 1.0::float8'"
            )
            conn.execute("CREATE TABLE public.in_proj (out_dim INTEGER, in_dim INTEGER, val DOUBLE PRECISION)")
            conn.execute("INSERT INTO public.in_proj VALUES (0, 0, 42.0)")
            conn.execute("SET search_path = public, pg_catalog, pg_temp")
            assert_layer_same_as_numpy(conn, random_layer(95))
            with pytest.raises(ValueError, match="overflow"):
                qkv.sql.multi_head_attention(conn, **TestMultiHeadErrors.OVERFLOWING_PROJECTION)
            assert conn.execute("SHOW search_path").fetchone()[0] == "public, pg_catalog, pg_temp"
            assert conn.execute("SELECT * FROM public.in_proj").fetchall() == [(0, 0, 42.0)]
        finally:
            conn.execute("DROP FUNCTION IF EXISTS public.exp(double precision)")
            conn.execute("DROP TABLE IF EXISTS public.in_proj")
            conn.close()

    def test_the_users_functions_are_refused_on_sqlite_and_duckdb(self):
        conn = sqlite3.connect(":memory:")
        conn.create_function("exp", 1, lambda x: 1.0)
        with pytest.raises(ValueError, match=r"connection has functions of its own named exp\b"):
            qkv.sql.multi_head_attention(conn, *random_layer(96))
        assert temp_objects(conn) == [] and not conn.in_transaction
        duck = _duckdb().connect()
        duck.execute("CREATE MACRO sum(x) AS 7")
        with pytest.raises(ValueError, match=r"named sum \(memory\.main\.sum\)"):
            qkv.sql.multi_head_attention(duck, *random_layer(96))
        assert temp_objects(duck) == []

    def test_a_row_factory_of_the_users_changes_nothing(self, request):
        import psycopg.rows

        conn = sqlite3.connect(":memory:")
        conn.row_factory = sqlite3.Row
        assert_layer_same_as_numpy(conn, random_layer(97), causal(3, 5))
        assert conn.row_factory is sqlite3.Row
        pg_conn = _open("PostgreSQL", request, autocommit=False)
        try:
            pg_conn.row_factory = psycopg.rows.dict_row
            pg_conn.execute("SET extra_float_digits = -15")
            assert_layer_same_as_numpy(pg_conn, random_layer(97), causal(3, 5))
            assert pg_conn.info.transaction_status == psycopg.pq.TransactionStatus.INTRANS
            assert pg_conn.execute("SHOW extra_float_digits").fetchone() == {"extra_float_digits": "-15"}
        finally:
            pg_conn.close()
