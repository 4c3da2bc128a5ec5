-- The paper's sinusoidal table in long form (pos, dim, val), counted out by
-- recursive CTEs, so no table is needed:
--   PE(pos, 2i) = sin(pos * base^(-2i / d_model)),
--   PE(pos, 2i + 1) = cos(pos * base^(-2i / d_model)).
-- The CAST keeps -2i / d_model a float division: on integers SQLite and
-- PostgreSQL would truncate it to 0.
WITH RECURSIVE positions(pos) AS (
  SELECT 0
  UNION ALL
  SELECT pos + 1 FROM positions WHERE pos + 1 < :num_positions
), pairs(two_i) AS (
  SELECT 0
  UNION ALL
  SELECT two_i + 2 FROM pairs WHERE two_i + 2 < :d_model
), angles AS (
  SELECT pos, two_i,
         pos * power(:base, CAST(-two_i AS DOUBLE PRECISION) / :d_model) AS angle
  FROM positions CROSS JOIN pairs
)
SELECT pos, two_i AS dim, sin(angle) AS val FROM angles
UNION ALL
SELECT pos, two_i + 1 AS dim, cos(angle) AS val FROM angles
ORDER BY pos, dim;
