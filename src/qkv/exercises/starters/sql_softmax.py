"""Exercise 3: the softmax as a window query.

Chapter 9, "Attention is a query", computes one attention head in SQL.
Write its step 2 yourself: given a table

    scores(qpos, kpos, score)     -- one row per (query, key) pair

return the text of ONE SELECT statement whose result has the columns

    qpos, kpos, weight

with one row per row of scores, where each query's weights are the
softmax of its scores: exp(score) / the sum of exp over the same qpos.
Use window functions (MAX(...) OVER (...), SUM(...) OVER (...)), and keep
large scores from overflowing exp.

The checks run your SQL in an in-memory SQLite (version 3.35 or newer,
with exp) that may only read. Check your work from a terminal:

    qkv-exercise check sql-softmax this_file.py

or, in a notebook, after the cell that defines the function:

    from qkv.exercises import check
    check("sql-softmax", globals())
"""


def softmax_query() -> str:
    """The softmax of each query's scores, as one SQL SELECT.

    Returns
    -------
    str
        One SELECT over the table scores(qpos, kpos, score) returning the
        columns qpos, kpos, weight. Bank's scores [2, 0, 1] must give the
        weights [0.6652, 0.0900, 0.2447].
    """
    raise NotImplementedError("write softmax_query(): return your SELECT as a string")
