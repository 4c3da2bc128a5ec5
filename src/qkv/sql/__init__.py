"""Attention is a query: one head of scaled dot-product attention in SQL.

The same numbers as ``qkv.scaled_dot_product_attention``, computed by a
database from tables in long form, one row per (position, dimension)::

    q(pos, dim, val)   k(pos, dim, val)   v(pos, dim, val)

Each step is a view in its own ``.sql`` file (package data, shown verbatim
on the site and run unchanged by SQLite, PostgreSQL and DuckDB):

* ``tables.sql``: the three input tables;
* ``scores.sql``: a join on ``dim`` and ``SUM(q.val * k.val) / sqrt(d_k)``
  per ``(qpos, kpos)`` group, which is ``Q @ K.T / sqrt(d_k)``;
* ``mask_none.sql``, ``mask_causal.sql`` (``WHERE kpos <= qpos``),
  ``mask_padding.sql`` (a join with the valid tokens), ``mask_pairs.sql``
  (a join with the allowed pairs): the scores a query may see, ``visible``;
* ``weights.sql``: the stable softmax as window aggregates,
  ``MAX(score) OVER (PARTITION BY qpos)`` and ``SUM(...) OVER (...)``;
* ``output.sql``: ``SUM(weight * v.val) ... GROUP BY qpos, dim``, which is
  ``weights @ V``;
* ``sinusoidal.sql`` (recursive CTEs) and ``sinusoidal_series.sql``
  (``generate_series``): the positional-encoding table.

Run them in that order, insert rows into q, k and v, and
``SELECT * FROM output`` is the attention output. The functions below do
exactly that on a connection you pass: ``sqlite3`` (standard library),
``psycopg`` 3 (PostgreSQL) or ``duckdb``. Where the three databases differ,
``qkv.sql._dialect`` says how and handles it.

``multi_head_attention`` runs a whole layer the same way, with
``torch.nn.MultiheadAttention``'s weights loaded in long form too
(``in_proj(out_dim, in_dim, val)``), one step per ``mha_*.sql`` file:

* ``mha_tables.sql``: the inputs ``query_in``, ``key_in``, ``value_in``,
  the weights ``in_proj``, ``in_bias``, ``out_proj``, ``out_bias`` and the
  one-row ``layer_shape`` (``d_model``, ``d_head``);
* ``mha_project.sql``: ``q_proj``, ``k_proj``, ``v_proj``, each
  ``x @ W.T + b`` as a join on ``in_dim`` and a ``GROUP BY``, ``W_q``,
  ``W_k`` and ``W_v`` cut from the packed ``in_proj`` by ranges of rows;
* ``mha_split.sql``: ``q_heads``, ``k_heads``, ``v_heads``, each row's
  ``head`` and its dimension ``hdim`` inside the head;
* ``mha_scores.sql``: ``head_scores``, the join of ``scores.sql`` on
  ``(head, hdim)``, grouped by ``(head, qpos, kpos)``;
* ``mha_mask_none.sql``, ``mha_mask_pairs.sql`` (a join with the allowed
  ``(head, qpos, kpos)`` in ``head_allowed``): ``head_visible``;
* ``mha_weights.sql``: ``head_weights``, the softmax
  ``PARTITION BY head, qpos``;
* ``mha_weighted_sum.sql``: ``head_output``, every head's ``weights @ V``;
* ``mha_concat.sql``: ``concatenated``, the heads side by side;
* ``mha_output.sql``: ``mha_output``, ``concatenated @ W_o.T + b_o``.

The connection is left as it was found, and no object that a call did not
create is read, written or dropped:

* The scratch tables and views are temporary, and dropped afterwards:
  ``q``, ``k``, ``v``, ``scores``, ``visible``, ``weights``, ``output``,
  ``tokens``, ``allowed`` for one head, and ``query_in``, ``key_in``,
  ``value_in``, ``in_proj``, ``in_bias``, ``out_proj``, ``out_bias``,
  ``layer_shape``, ``head_allowed``, ``q_proj``, ``k_proj``, ``v_proj``,
  ``q_heads``, ``k_heads``, ``v_heads``, ``head_scores``,
  ``head_visible``, ``head_weights``, ``head_output``, ``concatenated``,
  ``mha_output`` for ``multi_head_attention``. Their names are fixed,
  because the files above are what runs and ``attention_views`` and
  ``multi_head_views`` let you
  query them by name.
* A call refuses to start, with a ValueError that names the object and
  before it runs anything (so your transaction is untouched), if the
  connection's temporary schema already holds an object that the database
  would take for one of those names. SQLite and DuckDB ignore case in
  names, so your ``"V"`` or ``"Weights"`` is refused too; PostgreSQL keeps
  ``"V"`` apart from ``v``.
* An unqualified name reaches only the temporary schema: SQLite and DuckDB
  always search it first, and on PostgreSQL ``search_path`` is
  ``pg_temp, pg_catalog`` during a call (inside ``attention_views``'s
  block too), so no table, function or operator of yours (a ``sin`` or
  ``exp`` in ``public``) answers for one of the queries' names. Your own
  setting is restored afterwards, on success or error.
* The queries' functions (``exp``, ``sqrt``, ``sin``, ``cos``, ``power``,
  ``sum``, ``max``, ``count``, ``generate_series``) are the database's
  own. SQLite and DuckDB would run a function of yours of the same name
  instead (a DuckDB macro, ``CREATE MACRO exp(x) AS ...``, temporary or
  saved in the database file; a function registered on a ``sqlite3``
  connection with ``create_function`` or ``create_aggregate``), so a call
  refuses to start, with a ValueError that names it, if the connection
  has one. On SQLite a registered function that gives Python's ``math``
  value is allowed (that is what qkv.sql registers itself on a SQLite
  built without math functions).
* Rows are read through a cursor of qkv.sql's own, so your connection's
  ``row_factory`` (psycopg's ``dict_row``, a ``sqlite3`` dict factory) or
  psycopg ``cursor_factory`` does not change what a call reads; it stays
  set on your connection.
* Your own open transaction is neither committed nor rolled back. A call
  that fails on SQLite or PostgreSQL rolls back to a savepoint. DuckDB has
  no savepoints and aborts a transaction on any database error, so if the
  database itself fails inside your transaction (out of memory, an
  interrupt), that transaction is lost. SQLite does the same when it runs
  out of memory (``PRAGMA hard_heap_limit``) or is interrupted while a
  call writes its scratch tables (``connection.interrupt()``, a progress
  handler that stops it): its own rule for those errors. The error is
  raised with a note saying your uncommitted changes are gone. On DuckDB a
  commit that fails for lack of memory (a ``max_memory`` of a few MB) can
  also invalidate the whole database, and an in-memory one is then lost.
  The errors that qkv.sql foresees (a clash, a bad input, a score that
  overflows) are raised by qkv.sql, not by the database, and leave your
  transaction open there too. (``multi_head_attention`` checks its
  projections and scores in the database, after it computed them: it
  refuses a NaN or inf there itself, and PostgreSQL's own overflow error
  rolls back to its savepoint, as above.)

One call uses the connection throughout: do not share a connection between
threads while a call runs (none of the three drivers makes a connection
safe for that, and the scratch names would clash); give each thread its
own.

Examples
--------
>>> import sqlite3
>>> import numpy as np
>>> import qkv
>>> import qkv.sql
>>> x = qkv.toy.bank_sentence(["money", "bank", "grows"])
>>> q, k, v = x @ qkv.toy.W_QUERY, x @ qkv.toy.W_KEY, x @ qkv.toy.W_VALUE
>>> out, weights = qkv.sql.attention(sqlite3.connect(":memory:"), q, k, v)
>>> weights[1].round(4).tolist()
[0.6652, 0.09, 0.2447]
>>> expected_out, expected_weights = qkv.scaled_dot_product_attention(q, k, v)
>>> bool(np.allclose(out, expected_out, rtol=0, atol=1e-12))
True
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from importlib import resources
from typing import Any

import numpy as np

from qkv._checks import as_finite_float_array, check_array_bytes, check_ndim, check_positive_int
from qkv.attention import (
    _check_d_and_length,
    _check_output,
    _check_scores_size,
    _checked_scores,
    _first_index,
    _scores_cannot_overflow,
)
from qkv.multihead import _check_layer
from qkv.positional import _check_base, _check_d_model
from qkv.sql import _dialect

__all__ = [
    "attention",
    "explain",
    "attention_views",
    "multi_head_attention",
    "multi_head_views",
    "sinusoidal_encoding",
    "query_text",
    "QUERY_NAMES",
]

QUERY_NAMES = (
    "tables",
    "scores",
    "mask_none",
    "mask_causal",
    "mask_padding",
    "mask_pairs",
    "weights",
    "output",
    "sinusoidal",
    "sinusoidal_series",
    *(
        "mha_tables",
        "mha_project",
        "mha_split",
        "mha_scores",
        "mha_mask_none",
        "mha_mask_pairs",
        "mha_weights",
        "mha_weighted_sum",
        "mha_concat",
        "mha_output",
    ),
)
INPUT_TABLES = ("q", "k", "v")
VIEWS = ("output", "weights", "visible", "scores")  # dependants first: the drop order
MASK_TABLES = {"mask_none": (), "mask_causal": (), "mask_padding": ("tokens",), "mask_pairs": ("allowed",)}
READ_OUTPUT = "SELECT qpos, dim, val FROM output"
READ_WEIGHTS = "SELECT qpos, kpos, weight FROM weights"
# The first score the database computed as NaN, +-inf or NULL (SQLite returns
# NaN as NULL); NaN compares above every number in PostgreSQL and DuckDB.
FIRST_BAD_SCORE = (
    "SELECT qpos, kpos FROM visible WHERE score IS NULL OR NOT "
    "(score BETWEEN -1.7976931348623157e308 AND 1.7976931348623157e308) "
    "ORDER BY qpos, kpos LIMIT 1"
)

# multi_head_attention's scratch objects (mha_*.sql).
LAYER_FILES = ("mha_tables", "mha_project", "mha_split", "mha_scores", "mha_weights", "mha_weighted_sum", "mha_concat")
LAYER_TABLES = ("query_in", "key_in", "value_in", "in_proj", "in_bias", "out_proj", "out_bias", "layer_shape")
LAYER_VIEWS = (  # dependants first: the drop order
    "mha_output",
    "concatenated",
    "head_output",
    "head_weights",
    "head_visible",
    "head_scores",
    "v_heads",
    "k_heads",
    "q_heads",
    "v_proj",
    "k_proj",
    "q_proj",
)
LAYER_MASK_TABLES = {"mha_mask_none": (), "mha_mask_pairs": ("head_allowed",)}
READ_LAYER_OUTPUT = "SELECT pos, dim, val FROM mha_output"
READ_HEAD_WEIGHTS = "SELECT head, qpos, kpos, weight FROM head_weights"
#: What the database computed in each step before the softmax, checked for
#: NaN, inf and NULL in this order: (view, index columns, value column,
#: the step in NumPy's words, the arguments that set it).
LAYER_STEP_CHECKS = (
    ("q_proj", "pos, dim", "val", "projection query @ W_q.T + b_q", "query, in_proj_weight or in_proj_bias"),
    ("k_proj", "pos, dim", "val", "projection key @ W_k.T + b_k", "key, in_proj_weight or in_proj_bias"),
    ("v_proj", "pos, dim", "val", "projection value @ W_v.T + b_v", "value, in_proj_weight or in_proj_bias"),
    (
        "head_visible",
        "head, qpos, kpos",
        "score",
        "per-head scores Q_h @ K_h.T / sqrt(d_head)",
        "query, key or in_proj_weight",
    ),
    # Each head's weighted sum: inf there times a zero output weight is NaN, which SQLite keeps
    # as NULL and SUM skips, giving a finite, wrong output (security re-review 9a, X1).
    ("head_output", "head, qpos, hdim", "val", "per-head outputs weights_h @ V_h", "value or in_proj_weight"),
)


def query_text(name: str) -> str:
    """The text of one of the package's ``.sql`` files, e.g. ``"scores"``.

    Parameters
    ----------
    name : str
        One of ``QUERY_NAMES``.

    Returns
    -------
    str
        The file's text, comments included (the site shows its statements without the comments).

    Raises
    ------
    ValueError
        If ``name`` is not one of ``QUERY_NAMES``.

    Examples
    --------
    >>> import qkv.sql
    >>> print(qkv.sql.query_text("mask_causal"))
    -- The causal mask is a predicate: a query sees its own position and the
    -- ones before it, never the future.
    CREATE TEMP VIEW visible AS
    SELECT qpos, kpos, score
    FROM scores
    WHERE kpos <= qpos;
    """
    if name not in QUERY_NAMES:
        raise ValueError(f"name must be one of {', '.join(QUERY_NAMES)}; got {name!r}")
    return resources.files(__name__).joinpath(f"{name}.sql").read_text(encoding="utf-8").rstrip("\n")


def _check_head(query: Any, key: Any, value: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The input checks of ``scaled_dot_product_attention``, for one 2-D head.

    Same messages as the NumPy API for the same faults (tests compare them);
    batches are refused with a message that says so.
    """
    arrays = []
    for name, arr_in, shape_text in (
        ("query", query, "(L_q, d_k)"),
        ("key", key, "(L_k, d_k)"),
        ("value", value, "(L_k, d_v)"),
    ):
        arr = as_finite_float_array(arr_in, name)
        if arr.ndim > 2:
            raise ValueError(
                f"{name} must have shape {shape_text} (2-D), got shape {arr.shape} ({arr.ndim}-D): "
                "qkv.sql runs one head on one sequence, so loop over a batch"
            )
        check_ndim(arr, name, 2, shape_text)
        arrays.append(arr)
    q, k, v = arrays
    _check_d_and_length(q, k, v, "d_k")
    if k.shape[0] == 0:
        raise ValueError(f"key must have at least one row (L_k >= 1), got key shape {k.shape}")
    return q, k, v


def _check_scores(connection: Any, query: Any, key: Any, value: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``_check_head``, then the scores NumPy would compute, checked by NumPy's own helpers.

    A score matrix above ``qkv._checks.MAX_ARRAY_BYTES`` is refused first,
    as ``scaled_dot_product_attention`` refuses it: the database would
    compute every score, and ``attention`` returns weights of that shape.
    A score past float64's range (query 1e200 against key -1e200) is refused
    here in the words of ``scaled_dot_product_attention`` (the score matrix is
    computed only when the rows' norms cannot rule overflow out), before a database
    turns it into NaN (SQLite, DuckDB) or an error (PostgreSQL). The
    connection's kind is checked first, as in ``attention_views``.
    """
    _dialect.dialect_of(connection)
    q, k, v = _check_head(query, key, value)
    _check_scores_size(q, k, scale_name=None)
    scale = 1.0 / np.sqrt(q.shape[1])
    if not _scores_cannot_overflow(q, k, scale, np.dtype(np.float64)):  # O(L d); else O(L^2 d)
        _checked_scores(q, k, scale, scale_name=None)
    return q, k, v


def _check_bool_mask(mask: Any, scores_shape: tuple[int, ...], shape_text: str = "(L_q, L_k)") -> np.ndarray:
    """The mask broadcast to ``scores_shape``, written ``shape_text``; only booleans (True = may attend)."""
    try:
        arr = np.asarray(mask)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"mask could not be converted to an array: {exc}") from exc
    if arr.dtype.kind != "b":
        hint = (
            "for a 0/1 mask use mask.astype(bool)"
            if arr.dtype.kind in "iu"
            else ("qkv.sql has no additive float masks: pass mask == 0 for a 0/-inf mask")
        )
        raise TypeError(f"mask must be boolean (True = may attend), got dtype {arr.dtype}; {hint}")
    try:
        return np.broadcast_to(arr, scores_shape)
    except ValueError:
        raise ValueError(
            f"mask of shape {arr.shape} does not broadcast to the attention scores "
            f"shape {scores_shape}, i.e. {shape_text}"
        ) from None


def _mask_file(mask: np.ndarray | None) -> str:
    """Which ``mask_*.sql`` says the same as ``mask``, shape (L_q, L_k).

    The causal pattern becomes the predicate ``kpos <= qpos``; a mask that
    is the same for every query (padding) a join with the valid tokens;
    anything else a join with the allowed pairs. All give the same weights.
    """
    if mask is None:
        return "mask_none"
    l_q, l_k = mask.shape
    causal = np.arange(l_k)[None, :] <= np.arange(l_q)[:, None]  # (L_q, L_k): kpos <= qpos
    if np.array_equal(mask, causal):
        return "mask_causal"
    if l_q > 0 and np.all(mask == mask[:1]):
        return "mask_padding"
    return "mask_pairs"


def _long_form(arr: np.ndarray) -> tuple[list, list, list]:
    """(L, d) -> columns pos, dim, val with one entry per element."""
    pos, dim = np.indices(arr.shape)
    return pos.ravel().tolist(), dim.ravel().tolist(), arr.ravel().tolist()


class AttentionViews:
    """The connection while the tables and views exist: run SELECTs on them."""

    def __init__(self, connection: Any, dialect: _dialect.Dialect, mask_file: str, shape: tuple):
        self.connection = connection
        self.dialect = dialect.name
        self.mask_file = mask_file
        self.l_q, self.l_k, self.d_v = shape
        self._dialect = dialect

    def rows(self, sql: str) -> list[tuple]:
        """The rows of one parameterless SELECT, e.g. ``"SELECT * FROM scores"``, as tuples.

        Tuples whatever the connection's ``row_factory``.
        """
        return _dialect.fetch(self.connection, self._dialect, sql)

    def plan(self, sql: str = READ_OUTPUT) -> str:
        """The database's plan for ``sql`` (by default the attention output)."""
        return _dialect.plan_text(self.connection, self._dialect, sql)


@contextlib.contextmanager
def attention_views(connection: Any, query: Any, key: Any, value: Any, mask: Any = None) -> Iterator[AttentionViews]:
    """Load one head into temporary tables and create the step views.

    Inside the ``with`` block the connection holds tables ``q``, ``k``,
    ``v`` (and ``tokens`` or ``allowed`` for a mask) and views ``scores``,
    ``visible``, ``weights`` and ``output``; afterwards none of them exist.
    What you run on the connection inside the block is part of the call:
    on SQLite and PostgreSQL an error in the block rolls it back with the
    scratch objects. On PostgreSQL, ``search_path`` is
    ``pg_temp, pg_catalog`` inside the block, so name your own tables with
    their schema there (``public.notes``); your setting comes back
    afterwards.

    Parameters
    ----------
    connection : sqlite3.Connection, psycopg.Connection or duckdb.DuckDBPyConnection
        An open connection; it is left as it was found.
    query, key, value, mask
        As for ``attention``.

    Yields
    ------
    AttentionViews
        ``.rows(sql)`` runs a SELECT, ``.plan(sql)`` returns its plan,
        ``.dialect`` names the database, ``.mask_file`` the mask step used,
        ``.l_q``, ``.l_k``, ``.d_v`` are the sizes.

    Raises
    ------
    TypeError, ValueError
        As for ``attention``, except that the scores are not checked for
        overflow here: with inputs such as a query of 1e200 against a key
        of -1e200 the ``scores`` view holds -inf (SQLite, DuckDB) or a
        SELECT on it raises (PostgreSQL); ``attention`` and ``explain``
        refuse such inputs before the database runs.

    Examples
    --------
    >>> import sqlite3
    >>> import qkv.sql
    >>> ones = [[1.0, 1.0], [1.0, 1.0]]
    >>> with qkv.sql.attention_views(sqlite3.connect(":memory:"), ones, ones, ones) as views:
    ...     views.rows("SELECT qpos, kpos, score FROM scores ORDER BY qpos, kpos")
    [(0, 0, 1.414...), (0, 1, 1.414...), (1, 0, 1.414...), (1, 1, 1.414...)]
    """
    dialect = _dialect.dialect_of(connection)
    q, k, v = _check_head(query, key, value)
    mask_arr = None if mask is None else _check_bool_mask(mask, (q.shape[0], k.shape[0]))
    mask_file = _mask_file(mask_arr)
    _dialect.prepare_functions(connection, dialect)
    try:
        with _dialect.scratch(connection, dialect, VIEWS, INPUT_TABLES + MASK_TABLES[mask_file]):
            yield from _create_and_load(connection, dialect, q, k, v, mask_arr, mask_file)
    except Exception as exc:
        clearer = _dialect.explain_out_of_range(exc, dialect)
        if clearer is None:
            raise
        raise clearer from exc


def _create_and_load(connection, dialect, q, k, v, mask_arr, mask_file) -> Iterator[AttentionViews]:
    """Run the step files, load the rows, then yield (the body of attention_views)."""
    for name in ("tables", "scores", mask_file, "weights", "output"):
        for statement in _dialect.statements(query_text(name)):
            _dialect.run(connection, dialect, statement)
    for table, arr in zip(INPUT_TABLES, (q, k, v)):
        _dialect.load(connection, dialect, table, ("pos", "dim", "val"), _long_form(arr))
    if mask_file == "mask_padding":
        valid = mask_arr[0].tolist()
        _dialect.load(connection, dialect, "tokens", ("pos", "valid"), (list(range(len(valid))), valid))
    elif mask_file == "mask_pairs":
        qpos, kpos = np.nonzero(mask_arr)
        _dialect.load(connection, dialect, "allowed", ("qpos", "kpos"), (qpos.tolist(), kpos.tolist()))
    if dialect.analyze_after_load:
        for table in INPUT_TABLES + MASK_TABLES[mask_file]:
            _dialect.run(connection, dialect, f"ANALYZE {table}")
    yield AttentionViews(connection, dialect, mask_file, (q.shape[0], k.shape[0], v.shape[1]))


def attention(connection: Any, query: Any, key: Any, value: Any, mask: Any = None) -> tuple[np.ndarray, np.ndarray]:
    """Scaled dot-product attention computed by a database, with the weights.

    The arrays go into temporary tables in long form, the views of the
    package's ``.sql`` files compute scores, softmax and output, and the
    rows come back as arrays. The result equals
    ``qkv.scaled_dot_product_attention(query, key, value, mask)``: the tests
    hold all three databases to 1e-12 (the sums run in another order, so
    the last bits can differ), except that ``weights.sql`` sets the weight
    of a key more than 300 below its row's best score to 0 (its exact
    weight is below ``exp(-300)``, about 5.1e-131). The weights so dropped
    total less than ``(L_k - 1) * exp(-300)``, so an output entry can
    differ from NumPy's by at most twice that times ``max|value|``: a
    weight of 1.9e-131 on a value of 1e140 is 1.9e9 in NumPy and 0 here.

    Parameters
    ----------
    connection : sqlite3.Connection, psycopg.Connection or duckdb.DuckDBPyConnection
        An open connection to SQLite, PostgreSQL (psycopg 3) or DuckDB. Its
        temporary tables are dropped again and its own open transaction, if
        any, is neither committed nor rolled back; no object of yours is
        read, written or dropped (see the module docstring, which also says
        why a connection must not be shared between threads).
    query : array_like, shape (L_q, d_k)
    key : array_like, shape (L_k, d_k)
    value : array_like, shape (L_k, d_v)
        One head on one sequence: batches are not supported (loop over them).
    mask : array_like of bool, optional
        Broadcastable to ``(L_q, L_k)``; ``True`` means the query may attend
        to that key, as in ``qkv.scaled_dot_product_attention``. A causal
        mask runs as ``WHERE kpos <= qpos``, one that is the same for every
        query (padding) as a join with the valid tokens, any other as a join
        with the allowed pairs. Float (additive) masks are not supported.

    Returns
    -------
    output : numpy.ndarray, shape (L_q, d_v), float64
    weights : numpy.ndarray, shape (L_q, L_k), float64
        A query whose every key is masked gets no rows from the database,
        and so weights and output all 0, as in qkv (not NaN).

    Raises
    ------
    TypeError
        If ``connection`` is of another kind (the message names the
        supported ones), an input is not numeric, or ``mask`` is not boolean.
    ValueError
        If an input is not 2-D or holds NaN/inf; ``query`` and ``key``
        differ in ``d_k``; ``key`` and ``value`` differ in ``L_k``; ``key``
        has no rows; ``mask`` does not broadcast to ``(L_q, L_k)``; the
        ``(L_q, L_k)`` scores would exceed ``qkv._checks.MAX_ARRAY_BYTES``
        (2 GiB; refused before the database runs, in the words of
        ``qkv.scaled_dot_product_attention``); the connection already has a
        temporary object whose name clashes with a scratch name, or (SQLite,
        DuckDB) a function of its own named like one the queries call
        (both refused before anything runs; the message names it); a score
        ``query @ key.T / sqrt(d_k)`` overflows float64 (checked before the
        database runs: the rows' norms rule overflow out in O(L d) work;
        where they cannot, NumPy computes the scores with
        ``qkv.scaled_dot_product_attention``'s helper, held to
        ``qkv._checks.MAX_ARRAY_BYTES``); or the database's own scores hold
        NaN, inf or NULL although NumPy's are finite (it sums the
        ``query * key`` products in another order, and a partial sum
        overflowed: the message names query and key and the score index);
        or it returns a weight or an output entry that is NaN, inf or NULL,
        or raises PostgreSQL's "value out of range" (its sums overflowed,
        or a product underflowed, float64).

    Examples
    --------
    >>> import sqlite3
    >>> import qkv.sql
    >>> keys = [[1.0, 0.0], [0.0, 1.0]]
    >>> values = [[10.0], [20.0]]
    >>> out, weights = qkv.sql.attention(sqlite3.connect(":memory:"), [[4.0, 0.0]], keys, values)
    >>> weights.round(4).tolist(), out.round(4).tolist()
    ([[0.9442, 0.0558]], [[10.5581]])
    """
    query, key, value = _check_scores(connection, query, key, value)
    with attention_views(connection, query, key, value, mask) as views:
        _check_database_scores(views)
        weight_rows = views.rows(READ_WEIGHTS)
        output_rows = views.rows(READ_OUTPUT)
    # Rows absent from the result (fully masked queries) stay 0.
    weights = np.zeros((views.l_q, views.l_k))
    output = np.zeros((views.l_q, views.d_v))
    for qpos, kpos, weight in weight_rows:
        weights[qpos, kpos] = np.nan if weight is None else weight  # SQLite returns NaN as NULL
    for qpos, dim, val in output_rows:
        output[qpos, dim] = np.nan if val is None else val
    _check_read_back(weights, output)
    return output, weights


def _check_database_scores(views: AttentionViews) -> None:
    """Refuse scores that the database computed as NaN, inf or NULL.

    NumPy's scores were checked before the database ran, but the database
    sums the ``query * key`` products in its own order: with query
    ``1e154 * [1, 1, 1, 1]`` and key ``1e154 * [-1, -1, 1, 1]`` NumPy's dot
    product is 0 while SQLite and DuckDB reach -inf on the way, and would
    return weights [0, 1] instead of [0.5, 0.5] against a zero key, with no
    NaN anywhere to show it. PostgreSQL raises "value out of range:
    overflow" instead; that gets the same explanation.
    """
    try:
        bad = views.rows(FIRST_BAD_SCORE)
    except Exception as exc:
        if views.dialect != "PostgreSQL" or getattr(exc, "sqlstate", None) != "22003" or "overflow" not in str(exc):
            raise
        raise ValueError(
            "PostgreSQL raised 'value out of range: overflow' computing the attention scores "
            "query @ key.T / sqrt(d_k), though NumPy's are finite: the database sums the "
            "query * key products in its own order, and a partial sum passed float64's range "
            "(|sum| > 1.8e308); make query or key smaller"
        ) from exc
    if bad:
        raise ValueError(
            f"the database's attention scores query @ key.T / sqrt(d_k) are NaN, inf or NULL at "
            f"score index {tuple(bad[0])}, though NumPy's are finite: the database sums the "
            "query * key products in its own order, and a partial sum overflowed float64 "
            "(|sum| > 1.8e308), which would silently change the weights; make query or key smaller"
        )


def _check_read_back(weights: np.ndarray, output: np.ndarray) -> None:
    """Refuse weights or an output that the database returned as NaN, inf or NULL.

    The scores were checked before the database ran, but the database sums
    in its own order: a sum that overflows there (where NumPy's did not)
    must not come back as NaN weights.
    """
    bad = ~np.isfinite(weights)
    if bad.any():
        raise ValueError(
            f"the database returned a weight that is NaN, inf or NULL at weights index "
            f"{_first_index(bad)}: its sums of query * key products overflowed float64 "
            "(|score| > 1.8e308) in an order NumPy did not use; make query or key smaller"
        )
    _check_output(output, "value")


def explain(connection: Any, query: Any, key: Any, value: Any, mask: Any = None) -> str:
    """The database's plan for the attention query, as text.

    ``EXPLAIN QUERY PLAN`` in SQLite (indented by parent), ``EXPLAIN`` in
    PostgreSQL and DuckDB, of ``SELECT qpos, dim, val FROM output`` with the
    inputs loaded (the plan depends on the data only through the sizes).

    Parameters
    ----------
    connection, query, key, value, mask
        As for ``attention``.

    Returns
    -------
    str
        The plan, one node per line.

    Raises
    ------
    TypeError, ValueError
        As for ``attention``.

    Examples
    --------
    >>> import sqlite3
    >>> import qkv.sql
    >>> plan = qkv.sql.explain(sqlite3.connect(":memory:"), [[1.0]], [[1.0]], [[1.0]])
    >>> "USE TEMP B-TREE FOR GROUP BY" in plan
    True
    """
    query, key, value = _check_scores(connection, query, key, value)
    with attention_views(connection, query, key, value, mask) as views:
        return views.plan()


class MultiHeadViews(AttentionViews):
    """``AttentionViews`` for ``multi_head_attention``'s steps; ``.num_heads`` too.

    ``.l_q``, ``.l_k`` and ``.d_v`` (here ``d_model``) are the sizes, and
    ``.plan()`` is by default the plan of the layer's output.
    """

    def __init__(self, connection: Any, dialect: _dialect.Dialect, mask_file: str, shape: tuple, num_heads: int):
        super().__init__(connection, dialect, mask_file, shape)
        self.num_heads = num_heads

    def plan(self, sql: str = READ_LAYER_OUTPUT) -> str:
        """The database's plan for ``sql`` (by default the layer's output)."""
        return _dialect.plan_text(self.connection, self._dialect, sql)


def _check_layer_args(
    connection, query, key, value, num_heads, in_proj_weight, out_proj_weight, in_proj_bias, out_proj_bias, mask
) -> tuple:
    """The connection's dialect, then ``qkv.multi_head_attention``'s checks, then qkv.sql's own.

    One sequence (2-D inputs) and a boolean mask only; the per-head weights
    are held to ``qkv._checks.MAX_ARRAY_BYTES`` before the database runs.
    """
    dialect = _dialect.dialect_of(connection)
    q, k, v, num_heads, w_in, w_out, b_in, b_out, _ = _check_layer(
        query, key, value, num_heads, in_proj_weight, out_proj_weight, in_proj_bias, out_proj_bias
    )
    for name, arr, shape_text in (
        ("query", q, "(L_q, d_model)"),
        ("key", k, "(L_k, d_model)"),
        ("value", v, "(L_k, d_model)"),
    ):
        if arr.ndim != 2:
            raise ValueError(
                f"{name} must have shape {shape_text} (2-D), got shape {arr.shape} ({arr.ndim}-D): "
                "qkv.sql runs the layer on one sequence, so loop over a batch"
            )
    weights_shape = (num_heads, q.shape[0], k.shape[0])
    check_array_bytes(weights_shape, np.float64, f"the per-head attention weights of num_heads={num_heads}")
    mask_arr = None
    if mask is not None:
        mask_arr = _check_bool_mask(mask, weights_shape, "(num_heads, L_q, L_k)")
    return dialect, (q, k, v, num_heads, w_in, w_out, b_in, b_out), mask_arr


@contextlib.contextmanager
def _multi_head_views(connection: Any, dialect: _dialect.Dialect, layer: tuple, mask_arr) -> Iterator[MultiHeadViews]:
    """Load a checked layer into temporary tables and create its step views (``attention_views``'s twin).

    Afterwards none of them exist; the promises of the module docstring hold
    as for ``attention_views`` (the same ``scratch``).
    """
    mask_file = "mha_mask_none" if mask_arr is None else "mha_mask_pairs"
    _dialect.prepare_functions(connection, dialect)
    try:
        with _dialect.scratch(connection, dialect, LAYER_VIEWS, LAYER_TABLES + LAYER_MASK_TABLES[mask_file]):
            yield from _create_and_load_layer(connection, dialect, layer, mask_arr, mask_file)
    except Exception as exc:
        clearer = _dialect.layer_out_of_range(exc, dialect)
        if clearer is None:
            raise
        raise clearer from exc


def _create_and_load_layer(connection, dialect, layer, mask_arr, mask_file) -> Iterator[MultiHeadViews]:
    """Run the mha_*.sql files, load the rows, then yield (the body of ``_multi_head_views``)."""
    q, k, v, num_heads, w_in, w_out, b_in, b_out = layer
    d_model = q.shape[1]
    files = LAYER_FILES[:4] + (mask_file,) + LAYER_FILES[4:] + ("mha_output",)
    for name in files:
        for statement in _dialect.statements(query_text(name)):
            _dialect.run(connection, dialect, statement)
    for table, arr in (("query_in", q), ("key_in", k), ("value_in", v)):
        _dialect.load(connection, dialect, table, ("pos", "dim", "val"), _long_form(arr))
    for table, arr in (("in_proj", w_in), ("out_proj", w_out)):
        _dialect.load(connection, dialect, table, ("out_dim", "in_dim", "val"), _long_form(arr))
    for table, arr in (("in_bias", b_in), ("out_bias", b_out)):
        _dialect.load(connection, dialect, table, ("out_dim", "val"), (list(range(arr.size)), arr.tolist()))
    _dialect.load(connection, dialect, "layer_shape", ("d_model", "d_head"), ([d_model], [d_model // num_heads]))
    if mask_file == "mha_mask_pairs":
        head, qpos, kpos = np.nonzero(mask_arr)
        columns = ("head", "qpos", "kpos")
        _dialect.load(connection, dialect, "head_allowed", columns, (head.tolist(), qpos.tolist(), kpos.tolist()))
    if dialect.analyze_after_load:
        for table in LAYER_TABLES + LAYER_MASK_TABLES[mask_file]:
            _dialect.run(connection, dialect, f"ANALYZE {table}")
    yield MultiHeadViews(connection, dialect, mask_file, (q.shape[0], k.shape[0], d_model), num_heads)


@contextlib.contextmanager
def multi_head_views(
    connection: Any,
    query: Any,
    key: Any,
    value: Any,
    num_heads: int,
    in_proj_weight: Any,
    out_proj_weight: Any,
    in_proj_bias: Any = None,
    out_proj_bias: Any = None,
    mask: Any = None,
) -> Iterator[MultiHeadViews]:
    """Load a whole layer into temporary tables and create its step views (``attention_views`` for a layer).

    Inside the ``with`` block the connection holds the tables of
    ``mha_tables.sql`` (``query_in``, ``key_in``, ``value_in``, ``in_proj``,
    ``in_bias``, ``out_proj``, ``out_bias``, ``layer_shape``, and
    ``head_allowed`` for a mask) and the views of the other ``mha_*.sql``
    files, from ``q_proj`` to ``mha_output``, so each step can be queried
    or explained; afterwards none of them exist. What the block runs on the
    connection is part of the call, as for ``attention_views``.

    Parameters
    ----------
    connection, query, key, value, num_heads, in_proj_weight, out_proj_weight, in_proj_bias, out_proj_bias, mask
        As for ``multi_head_attention``.

    Yields
    ------
    MultiHeadViews
        ``.rows(sql)`` runs a SELECT, ``.plan(sql)`` returns its plan (by
        default of ``SELECT pos, dim, val FROM mha_output``), ``.dialect``
        names the database, ``.num_heads``, ``.l_q``, ``.l_k`` and ``.d_v``
        (``d_model``) are the sizes.

    Raises
    ------
    TypeError, ValueError
        As for ``multi_head_attention``, except that the steps are not
        checked for NaN or inf: query them yourself.

    Examples
    --------
    >>> import sqlite3
    >>> import numpy as np
    >>> import qkv.sql
    >>> x = np.array([[4.0, 0.0], [0.0, 4.0]])
    >>> eye = np.eye(2)
    >>> in_proj = np.concatenate([eye, eye, eye])  # [W_q; W_k; W_v]: (6, 2)
    >>> with qkv.sql.multi_head_views(sqlite3.connect(":memory:"), x, x, x, 2, in_proj, eye) as views:
    ...     views.rows("SELECT head, qpos, kpos FROM head_scores WHERE qpos = 0 ORDER BY head, kpos")
    [(0, 0, 0), (0, 0, 1), (1, 0, 0), (1, 0, 1)]
    """
    dialect, layer, mask_arr = _check_layer_args(
        connection, query, key, value, num_heads, in_proj_weight, out_proj_weight, in_proj_bias, out_proj_bias, mask
    )
    with _multi_head_views(connection, dialect, layer, mask_arr) as views:
        yield views


def multi_head_attention(
    connection: Any,
    query: Any,
    key: Any,
    value: Any,
    num_heads: int,
    in_proj_weight: Any,
    out_proj_weight: Any,
    in_proj_bias: Any = None,
    out_proj_bias: Any = None,
    mask: Any = None,
) -> tuple[np.ndarray, np.ndarray]:
    """A whole multi-head attention layer computed by a database, with every head's weights.

    The same arguments, layout and result as ``qkv.multi_head_attention``
    (``torch.nn.MultiheadAttention``'s weights) for one sequence. The inputs
    and the weights go into temporary tables in long form, one value per
    row, and every step after that is a view of one of the package's
    ``mha_*.sql`` files: the three projections and their biases as joins
    (``mha_project``), the split into heads (``mha_split``), the scaled
    scores of every head (``mha_scores``, grouped by head), the mask
    (``mha_mask_none``, ``mha_mask_pairs``), the softmax
    (``mha_weights``, ``PARTITION BY head, qpos``), the weighted sum
    (``mha_weighted_sum``), the concatenation (``mha_concat``) and the
    output projection (``mha_output``). Only the rows of ``head_weights``
    and ``mha_output`` come back; NumPy computes nothing in between.

    The result equals ``qkv.multi_head_attention(query, key, value,
    num_heads, in_proj_weight, out_proj_weight, in_proj_bias,
    out_proj_bias, mask)``: the tests hold all three databases to 1e-12
    (the sums run in another order, so the last bits can differ), except
    that, as in ``attention``, a key more than 300 below its row's best
    score gets weight 0 (its exact weight is below ``exp(-300)``). The
    rounding of the sums grows with ``d_model`` and the size of the
    entries: with weights of the scale torch initialises (about
    ``1 / sqrt(d_model)``) the difference stays near 1e-15 at
    ``d_model = 128``, but with standard-normal weights at ``d_model = 64``
    (outputs near 230) NumPy itself is 1e-12 from the exact result, and the
    database as far again.

    Parameters
    ----------
    connection : sqlite3.Connection, psycopg.Connection or duckdb.DuckDBPyConnection
        An open connection, left as it was found (see the module docstring).
    query : array_like, shape (L_q, d_model)
    key : array_like, shape (L_k, d_model)
    value : array_like, shape (L_k, d_model)
        One sequence: batches are not supported (loop over them). ``L_q``
        and ``L_k`` may differ (cross-attention).
    num_heads : int
        Number of heads; must divide ``d_model``.
    in_proj_weight : array_like, shape (3 * d_model, d_model)
        ``[W_q; W_k; W_v]`` stacked by rows, applied as ``x @ W.T``.
    out_proj_weight : array_like, shape (d_model, d_model)
        ``W_o``, applied as ``concat @ W_o.T``.
    in_proj_bias : array_like, shape (3 * d_model,), optional
    out_proj_bias : array_like, shape (d_model,), optional
        No bias when omitted (loaded as zeros, as NumPy adds zeros).
    mask : array_like of bool, optional
        Broadcastable to ``(num_heads, L_q, L_k)``; ``True`` means the query
        may attend to that key. It runs as a join with the allowed
        ``(head, qpos, kpos)`` triples. Float (additive) masks are not
        supported.

    Returns
    -------
    output : numpy.ndarray, shape (L_q, d_model), float64
    weights : numpy.ndarray, shape (num_heads, L_q, L_k), float64
        A query that may attend to no key in a head gets weights 0 and head
        output 0 there, as in qkv; one masked in every head gets the output
        row ``out_proj_bias`` (zeros without it).

    Raises
    ------
    TypeError
        If an input is not numeric, ``num_heads`` is not an integer, or
        ``mask`` is not boolean.
    ValueError
        If ``connection`` is of another kind (the exception is also a
        TypeError; the message names the supported kinds); any fault that
        ``qkv.multi_head_attention`` refuses, in its words (``num_heads``
        that does not divide ``d_model``, ``key`` or ``value`` of another
        width, ``key`` and ``value`` of other lengths, a weight or a bias
        of the wrong shape, NaN or inf); an input that is not 2-D; a mask
        that does not broadcast to ``(num_heads, L_q, L_k)``; per-head
        weights above ``qkv._checks.MAX_ARRAY_BYTES``; a clash with a
        temporary object of the connection, or (SQLite, DuckDB) a function
        of its own named like one the queries call (refused before anything
        runs); or a step that the database computed as NaN, inf or NULL (a
        projection or a score; the message names the step and the
        arguments), or an output or weight that comes back so, or
        PostgreSQL's "value out of range" (a sum or product overflowed, or
        underflowed, float64).

    Examples
    --------
    >>> import sqlite3
    >>> import numpy as np
    >>> import qkv
    >>> import qkv.sql
    >>> x = np.array([[4.0, 0.0, 0.0, 0.0], [0.0, 0.0, 4.0, 0.0], [4.0, 0.0, 4.0, 0.0]])
    >>> eye = np.eye(4)
    >>> in_proj = np.concatenate([eye, eye, eye])  # [W_q; W_k; W_v]: (12, 4)
    >>> out, weights = qkv.sql.multi_head_attention(sqlite3.connect(":memory:"), x, x, x, 2, in_proj, eye)
    >>> out.shape, weights.shape
    ((3, 4), (2, 3, 3))
    >>> weights[0, 2].round(3).tolist(), weights[1, 2].round(3).tolist()
    ([0.5, 0.0, 0.5], [0.0, 0.5, 0.5])
    >>> expected_out, expected_weights = qkv.multi_head_attention(x, x, x, 2, in_proj, eye)
    >>> bool(np.allclose(out, expected_out, rtol=0, atol=1e-12))
    True
    """
    dialect, layer, mask_arr = _check_layer_args(
        connection, query, key, value, num_heads, in_proj_weight, out_proj_weight, in_proj_bias, out_proj_bias, mask
    )
    with _multi_head_views(connection, dialect, layer, mask_arr) as views:
        _check_layer_steps(views)
        weight_rows = views.rows(READ_HEAD_WEIGHTS)
        output_rows = views.rows(READ_LAYER_OUTPUT)
    # Rows absent from head_weights (a query that sees no key in a head) stay 0;
    # mha_output has a row for every (query, dimension).
    weights = np.zeros((views.num_heads, views.l_q, views.l_k))
    output = np.full((views.l_q, views.d_v), np.nan)
    for head, qpos, kpos, weight in weight_rows:
        weights[head, qpos, kpos] = np.nan if weight is None else weight  # SQLite returns NaN as NULL
    for pos, dim, val in output_rows:
        output[pos, dim] = np.nan if val is None else val
    _check_layer_read_back(weights, output)
    return output, weights


def _check_layer_steps(views: MultiHeadViews) -> None:
    """Refuse a projection or a score that the database computed as NaN, inf or NULL, naming the step.

    Finite inputs can still overflow float64 in a product or a sum (an input
    of 1e200 times a weight of 1e200); SQLite and DuckDB then carry inf or
    NaN on, PostgreSQL raises (``_dialect.layer_out_of_range``). The first
    step that went wrong is the one named.
    """
    for view, index, column, step, arguments in LAYER_STEP_CHECKS:
        bad = views.rows(
            f"SELECT {index} FROM {view} WHERE {column} IS NULL OR NOT "
            f"({column} BETWEEN -1.7976931348623157e308 AND 1.7976931348623157e308) "
            f"ORDER BY {index} LIMIT 1"
        )
        if bad:
            raise ValueError(
                f"the database's {step} is NaN, inf or NULL at index {tuple(bad[0])} ({index}): "
                f"a product or a sum passed float64's range (|x| > 1.8e308); make {arguments} smaller"
            )


def _check_layer_read_back(weights: np.ndarray, output: np.ndarray) -> None:
    """Refuse weights or an output that the database returned as NaN, inf, NULL (or not at all)."""
    bad = ~np.isfinite(weights)
    if bad.any():
        raise ValueError(
            f"the database returned a weight that is NaN, inf or NULL at weights index {_first_index(bad)} "
            "(head, qpos, kpos): its scores overflowed float64 in a sum; make query, key or in_proj_weight smaller"
        )
    bad = ~np.isfinite(output)
    if bad.any():
        raise ValueError(
            f"the database's output of the layer is NaN, inf or NULL at index {_first_index(bad)} "
            "(a weighted sum of the projected values or the output projection passed float64's range, "
            "|x| > 1.8e308); make value, in_proj_weight, out_proj_weight or out_proj_bias smaller"
        )


def sinusoidal_encoding(
    connection: Any,
    num_positions: int,
    d_model: int,
    base: float = 10000.0,
    *,
    method: str = "recursive",
) -> np.ndarray:
    """The sinusoidal positional-encoding table, computed by a database.

    Parameters
    ----------
    connection : sqlite3.Connection, psycopg.Connection or duckdb.DuckDBPyConnection
    num_positions : int
        Number of positions ``P``.
    d_model : int
        Model width; positive and even.
    base : float, default 10000.0
        Must be greater than 1.
    method : {"recursive", "generate_series"}
        ``sinusoidal.sql`` counts positions and pairs with recursive CTEs
        (every database); ``sinusoidal_series.sql`` uses ``generate_series``
        (PostgreSQL and DuckDB only).

    Returns
    -------
    numpy.ndarray, shape (num_positions, d_model), float64
        Equal to ``qkv.sinusoidal_encoding(num_positions, d_model, base)``.

    Raises
    ------
    TypeError
        If ``connection`` is of another kind, or a size is not an integer.
    ValueError
        If a size is not positive, ``d_model`` is odd, ``base <= 1``, the
        table would exceed ``qkv._checks.MAX_ARRAY_BYTES`` (as in
        :func:`qkv.sinusoidal_encoding`), ``method`` is unknown or
        ``"generate_series"`` on SQLite, or (SQLite, DuckDB) the connection
        has a function of its own named like one the query calls (``sin``,
        ``cos``, ``power``, ...; the message names it).

    Examples
    --------
    >>> import sqlite3
    >>> import qkv.sql
    >>> print(qkv.sql.sinusoidal_encoding(sqlite3.connect(":memory:"), 3, 6).round(4).tolist())
    [[0.0, 1.0, 0.0, 1.0, 0.0, 1.0],
     [0.8415, 0.5403, 0.0464, 0.9989, 0.0022, 1.0],
     [0.9093, -0.4161, 0.0927, 0.9957, 0.0043, 1.0]]
    """
    dialect = _dialect.dialect_of(connection)
    num_positions = check_positive_int(num_positions, "num_positions")
    d_model = _check_d_model(d_model)
    base = _check_base(base)
    # The same limit as the NumPy API, before the database computes anything.
    check_array_bytes((num_positions, d_model), np.float64, f"num_positions={num_positions} and d_model={d_model}")
    files = {"recursive": "sinusoidal", "generate_series": "sinusoidal_series"}
    if method not in files:
        raise ValueError(f"method must be 'recursive' or 'generate_series', got {method!r}")
    if method == "generate_series" and not dialect.has_generate_series:
        raise ValueError(f"method='generate_series' needs PostgreSQL or DuckDB: {dialect.name} has no generate_series")
    _dialect.prepare_functions(connection, dialect)
    params = {"num_positions": num_positions, "d_model": d_model, "base": base}
    table = np.zeros((num_positions, d_model))
    with _dialect.scratch_search_path(connection, dialect):  # PostgreSQL: only its own sin and cos
        rows = _dialect.fetch(connection, dialect, query_text(files[method]), params)
    for pos, dim, val in rows:
        table[pos, dim] = val
    return table
