"""Exercise 3, faults the checker must contain; the test picks one by FAULT."""

import os

FAULT = os.environ.get("QKV_SQL_FAULT", "endless")

QUERIES = {
    # An endless recursive CTE: the checker stops it after its time limit.
    "endless": "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT qpos, kpos, 1.0 AS weight FROM scores, (SELECT MAX(i) FROM n)",
    # Writing is refused: the query may only read.
    "writes": "DELETE FROM scores",
    "attach": "ATTACH DATABASE '/tmp/qkv-sql-softmax-attack.db' AS other",
    # Two statements: SQLite runs one at a time.
    "two": "SELECT qpos, kpos, 1.0 AS weight FROM scores; DROP TABLE scores",
    # A huge string: the length limit stops it.
    "huge": "SELECT qpos, kpos, length(zeroblob(1000000000)) AS weight FROM scores",
}


def softmax_query():
    return QUERIES[FAULT]
