-- The same table with generate_series, which PostgreSQL and DuckDB have
-- (SQLite only as an extension that Python's sqlite3 does not load).
-- generate_series includes its end; the step 2 counts 2i directly.
WITH angles AS (
  SELECT positions.pos, pairs.two_i,
         positions.pos * power(:base, CAST(-pairs.two_i AS DOUBLE PRECISION) / :d_model) AS angle
  FROM generate_series(0, :num_positions - 1) AS positions(pos)
  CROSS JOIN generate_series(0, :d_model - 2, 2) AS pairs(two_i)
)
SELECT pos, two_i AS dim, sin(angle) AS val FROM angles
UNION ALL
SELECT pos, two_i + 1 AS dim, cos(angle) AS val FROM angles
ORDER BY pos, dim;
